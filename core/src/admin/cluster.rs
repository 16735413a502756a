//! The clients registered in a schema and the leader among them.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// A client registered in the schema, as [`Client::client_list`](crate::Client::client_list)
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientRow {
    /// The client's id (as recorded in `attempted_by`).
    pub id: String,
    /// The host it runs on.
    pub hostname: String,
    /// Its process id.
    pub pid: i32,
    /// When it registered.
    pub started_at: DateTime<Utc>,
    /// Its last heartbeat.
    pub heartbeat_at: DateTime<Utc>,
    /// How long ago its last heartbeat was, by the database clock.
    pub heartbeat_age: Duration,
    /// True while its heartbeat is within the rescuer's client timeout: a client past it is
    /// presumed dead and its running jobs are rescued.
    pub live: bool,
    /// True when it holds the current, unexpired leader lease.
    pub leader: bool,
    /// The queues it works (empty for a client that only inserts, or one too old to say).
    pub queues: Vec<String>,
    /// The job kinds it has workers for: it claims only jobs of these kinds (empty for a client
    /// that only inserts, or one too old to say).
    pub kinds: Vec<String>,
}

/// One leadership term: who leads, since when (which names the term), and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderRow {
    /// The leader's client id.
    pub leader_id: String,
    /// When the term began; with the id it identifies the term.
    pub elected_at: DateTime<Utc>,
    /// When the lease runs out unless renewed.
    pub expires_at: DateTime<Utc>,
}
