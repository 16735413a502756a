//! Where jobs are kept, as operators see it: what holds vacuum back on the job tables.

use std::fmt;
use std::time::Duration;

/// What holds vacuum back: the sessions, replication slots and prepared transactions whose
/// oldest snapshot is older than the newest, oldest first
/// ([`Client::vacuum_horizon`](crate::Client::vacuum_horizon)).
///
/// While one of them holds an old snapshot, vacuum removes no row that was updated or deleted
/// after it was taken, in any table of the database: the job table's dead rows pile up, and every
/// scan that walks them slows down. A long report, a session left idle inside a transaction that
/// took a transaction id, a replication slot nobody reads, or a standby with
/// `hot_standby_feedback` are the usual holders. pgmill's claims keep their cost while one holds
/// (they start from positions, not from the head of a queue), and finished jobs leave the job
/// table, but the cause is outside pgmill: this names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VacuumHorizon {
    /// The holders, oldest first.
    pub holders: Vec<VacuumHolder>,
}

impl VacuumHorizon {
    /// The oldest holder, if any holds an old snapshot.
    pub fn oldest(&self) -> Option<&VacuumHolder> {
        self.holders.first()
    }

    /// How long the oldest holder whose start time this role may see has held it. `None` when
    /// nothing holds, or when no holder's start time is visible (a session of another role,
    /// seen without `pg_read_all_stats`, or a replication slot, which has no start time).
    pub fn held_for(&self) -> Option<Duration> {
        self.holders.iter().filter_map(|h| h.held_for).max()
    }

    /// True when some holder is a session of another role whose details this role may not see
    /// (it lacks `pg_read_all_stats`): its age in transactions and its role are known, not since
    /// when it holds or what it is doing.
    pub fn has_hidden_holders(&self) -> bool {
        self.holders.iter().any(|h| !h.visible)
    }
}

/// One thing holding vacuum back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VacuumHolder {
    /// A session, a replication slot or a prepared transaction.
    pub kind: HolderKind,
    /// The session's process id, the slot's name or the prepared transaction's id.
    pub holder: String,
    /// How many transactions old its snapshot is.
    pub xmin_age: i64,
    /// How long it has held it: the session's transaction (or query) so far, the prepared
    /// transaction's age; `None` for a slot, or a session this role may not see.
    pub held_for: Option<Duration>,
    /// The role running it (a session's role is shown to every role; `None` for a slot).
    pub role: Option<String>,
    /// The session's `application_name` (shown to every role).
    pub application_name: Option<String>,
    /// What the session is doing (`active`, `idle in transaction`, ...), whether the slot is
    /// `active`, or `prepared`; `None` for a session this role may not see.
    pub state: Option<String>,
    /// False for a session of another role this role may not see the details of (it lacks
    /// `pg_read_all_stats`): then its process id, role, application name and age are known, not
    /// since when it holds or what it is doing.
    pub visible: bool,
}

/// What kind of thing holds vacuum back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HolderKind {
    /// A database session (a backend, or a standby's walsender with `hot_standby_feedback`).
    Session,
    /// A replication slot.
    ReplicationSlot,
    /// A prepared (two-phase) transaction.
    PreparedTransaction,
}

impl HolderKind {
    /// `session`, `replication_slot` or `prepared_transaction`.
    pub fn as_str(self) -> &'static str {
        match self {
            HolderKind::Session => "session",
            HolderKind::ReplicationSlot => "replication_slot",
            HolderKind::PreparedTransaction => "prepared_transaction",
        }
    }
}

impl fmt::Display for HolderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
