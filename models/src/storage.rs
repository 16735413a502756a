//! Where finished jobs go: the move out of the job table at completion, and the history ring's
//! rotation by `TRUNCATE` of a slot, with a snapshot held open across both.
//!
//! A statement that finishes a job moves it in the same statement: it locks the job's row, deletes
//! it from `pgmill_job` and writes it to the history (`pgmill_job_done`, completed and cancelled
//! jobs) in the ring slot of its `now()`, or to the dead-letter queue (`pgmill_job_dead`,
//! discarded jobs). The history is a ring of list partitions, one per slot of time; the cleaner
//! empties a slot whose rows are all past their retention with `TRUNCATE`, which removes no row
//! version by version: a snapshot that has not yet read the slot finds it empty. So what the
//! rotation must never do is remove a row still within its retention, and what the move must
//! never do is leave a job in no table or in two, for the committed state or for any snapshot.
//!
//! The rotation (`pgmill_job_done_truncate_expired`, migration 009) looks at each slot but the
//! one of its own `now()` without a lock first, passes over slots that are empty or hold a row
//! within retention, then locks a candidate `ACCESS EXCLUSIVE` (waiting at most its lock timeout:
//! the lock waits for the slot's writers and readers, and a slot not locked in time is left for
//! the next pass), looks again in a statement started under the lock, and truncates only if that
//! look finds no row within retention. A writer's slot is that of its own transaction's `now()`,
//! which may be a slot the clock has already left (a transaction that began before the slot
//! boundary): skipping the rotation's current slot does not keep writers out of the slot it
//! truncates; the lock and the look under it do.
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `Begin` | the finishing transaction starts: its `now()` decides the slot and `finalized_at` | `BatchCompleter::flush`, `JobRescuer::pass` |
//! | `Move` | `job_set_completed_many.sql` (and `job_set_completed_many_count.sql`), `job_set_state_if_running_many.sql`, `job_rescue.sql`, `job_cancel.sql`: lock, delete from `pgmill_job`, insert into `pgmill_job_done` (slot of `now()`) or `pgmill_job_dead`, one statement | `BatchCompleter::flush` → `query::job_set_completed_many`, `BatchCompleter::record_outcomes` |
//! | `Commit`, `Abort` | the finishing transaction's end (an abort is a crash or a lost connection: the move rolls back whole) | |
//! | `Look` | `storage_done_truncate_expired.sql` → `pgmill_job_done_truncate_expired` (`009_finished_jobs_leave_the_job_table.up.sql`): the look without a lock | `JobCleaner::run_once` → `query::storage_done_truncate_expired` |
//! | `Lock`, `LockTimeout` | the same function: `LOCK TABLE ... IN ACCESS EXCLUSIVE MODE` under `lock_timeout` | `JobCleaner::run_once` (`TRUNCATE_LOCK_WAIT`) |
//! | `Truncate` | the same function: the look under the lock, then `TRUNCATE` of the slot, committed | `JobCleaner::run_once` |
//! | `Open`, `Read` | a reader's `REPEATABLE READ` transaction (a report): its first statement takes the snapshot (reading the job table only), a later one reads every job wherever it is (`pgmill_job_all`); a single statement reading `pgmill_job_all` is `Open` and `Read` at once | `Client::job_get`, `Client::job_list` (single statements) |
//! | `Tick` | the clock | |
//!
//! The database is row versions, each made by a transaction and perhaps deleted by a later one,
//! visible to a snapshot when made by a transaction committed before it and not deleted by one:
//! Postgres' MVCC, less what no modelled statement relies on. A transaction takes
//! `ROW EXCLUSIVE` on the slot it writes and holds it to its end; a reader's `Read` takes
//! `ACCESS SHARE` on every slot; the rotation's `ACCESS EXCLUSIVE` conflicts with both. `TRUNCATE`
//! removes every version of the slot at its commit, whatever snapshot could see them.
//!
//! Properties: every job is in exactly one table in the committed state (none lost, none
//! duplicated), unless its history row was truncated; a truncation removes no row within its
//! retention at the rotation's `now()`; a snapshot sees each job exactly once (in the job table
//! while its move committed after the snapshot), unless its history row was truncated past its
//! retention. Examples the bounds must reach: a slot truncated; a slot found expired by the look
//! without the lock and within retention by the look under it (a writer with an older `now()`
//! wrote to it meanwhile); a snapshot reading a job as unfinished after its move committed; a job
//! moved to the dead-letter queue; a move rolled back.
//!
//! Left out: the width of a slot changing (a slot then holds rows of two laps for a while, which
//! the look under the lock treats like any other row within retention); the dead-letter queue's
//! own retention (`job_dead_delete_expired.sql`, a `DELETE`, which MVCC keeps from any snapshot
//! that still sees the row), and likewise the history rows of queues kept for less than the
//! longest retention, deleted ahead of their slot's truncation (`job_done_delete_expired.sql`;
//! the truncation waits for the longest retention any queue has); jobs kept in the job table when finished (their unique key stays
//! taken: [`crate::row`]'s `KeptIn`); retries and redrives back into the job table (the reverse
//! move, also one statement, checked by [`crate::trace`]); version 8 clients finishing jobs in
//! place.
//!
//! Bounds: 2 jobs, a ring of 2 slots 1 tick wide, a retention of 1 tick (a row is within it while
//! `finalized_at ≥ now() - 1`), the clock up to 4, one rotation pass per tick, one reader, one
//! aborted move.

use stateright::{Model, Property};

const JOBS: usize = 2;
/// Slots in the ring.
const SLOTS: u8 = 2;
/// Ticks a slot is wide.
const WIDTH: u8 = 1;
/// A history row is within its retention while `finalized_at + RETENTION >= now()`.
const RETENTION: u8 = 1;
/// The clock stops here.
const HORIZON: u8 = 4;
/// Moves rolled back, at most.
const MAX_ABORTS: u8 = 1;

/// `pgmill_job_done_slot`: the slot of the history a job finished at `at` goes to.
fn slot_of(at: u8) -> u8 {
    (at / WIDTH) % SLOTS
}

/// Whether a row finished at `fin` is within its retention at `now`.
fn within_retention(fin: u8, now: u8) -> bool {
    fin + RETENTION >= now
}

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The move as two transactions, the delete from the job table committed first: a crash, or
    /// any moment, between them has the job in no table.
    DeleteThenInsert,
    /// The move as two transactions, the insert into the history committed first: the job is in
    /// two tables between them.
    InsertThenDelete,
    /// The rotation decides on its look without the lock and truncates once it holds the lock,
    /// without looking again: a writer whose `now()` is in that slot writes between the look and
    /// the lock, and its row, within retention, goes with the truncation.
    LookBeforeLockOnly,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 3] = [
        Broken::DeleteThenInsert,
        Broken::InsertThenDelete,
        Broken::LookBeforeLockOnly,
    ];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::DeleteThenInsert => NO_JOB_LOST,
            Broken::InsertThenDelete => NO_JOB_DUPLICATED,
            Broken::LookBeforeLockOnly => NOTHING_WITHIN_RETENTION_TRUNCATED,
        }
    }
}

/// In the committed state, every job is in some table, unless its history row was truncated.
pub const NO_JOB_LOST: &str = "no job is lost: every job is in a table unless truncated";
/// In the committed state, no job is in two tables.
pub const NO_JOB_DUPLICATED: &str = "no job is in two tables";
/// A truncation removes only rows past their retention at the rotation's `now()`.
pub const NOTHING_WITHIN_RETENTION_TRUNCATED: &str =
    "a truncation removes no row within its retention";
/// Every read under a snapshot sees each job exactly once, unless its history row was truncated
/// past its retention.
pub const SNAPSHOT_SEES_EACH_JOB_ONCE: &str = "a snapshot sees each job exactly once";
const SLOT_TRUNCATED: &str = "a history slot is truncated";
const YOUNG_UNDER_LOCK: &str =
    "a slot expired at the look without the lock is within retention under it";
const SNAPSHOT_SAW_MOVED_JOB_UNFINISHED: &str =
    "a snapshot reads a job as unfinished after its move committed";
const DEAD_LETTERED: &str = "a job is moved to the dead-letter queue";
const MOVE_ROLLED_BACK: &str = "a move is rolled back";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct StorageModel {
    broken: Option<Broken>,
}

impl StorageModel {
    /// The protocol as the engine runs it.
    pub fn correct() -> Self {
        StorageModel { broken: None }
    }

    /// The protocol broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        StorageModel { broken: Some(b) }
    }

    fn split(&self) -> bool {
        matches!(
            self.broken,
            Some(Broken::DeleteThenInsert | Broken::InsertThenDelete)
        )
    }
}

/// Where a row version is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// `pgmill_job`.
    Job,
    /// `pgmill_job_done`, the slot.
    Done(u8),
    /// `pgmill_job_dead`.
    Dead,
}

/// Who made or deleted a version: a committed transaction (its place in commit order), or the
/// open transaction of a job's mover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stamp {
    /// Committed, `n`-th.
    Committed(u8),
    /// By the open transaction moving job `j`.
    Open(u8),
}

/// One row version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version {
    /// The job.
    pub job: u8,
    /// The table (or history slot).
    pub place: Place,
    /// `finalized_at`, for a finished job.
    pub fin: Option<u8>,
    /// The transaction that wrote it.
    pub made: Stamp,
    /// The transaction that deleted it, if any.
    pub deleted: Option<Stamp>,
}

impl Version {
    fn committed_live(&self) -> bool {
        matches!(self.made, Stamp::Committed(_))
            && !matches!(self.deleted, Some(Stamp::Committed(_)))
    }

    fn visible_to(&self, snapshot: u8) -> bool {
        let made = matches!(self.made, Stamp::Committed(n) if n <= snapshot);
        let deleted = matches!(self.deleted, Some(Stamp::Committed(n)) if n <= snapshot);
        made && !deleted
    }
}

/// Where a finished job goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dest {
    /// Completed or cancelled: the history.
    Done,
    /// Discarded: the dead-letter queue.
    Dead,
}

/// One job's finishing transaction (or, broken, transactions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mover {
    /// The job runs; nothing begun.
    Idle,
    /// Begun at `now`.
    Begun {
        /// The transaction's `now()`.
        now: u8,
        /// Where it goes.
        dest: Dest,
    },
    /// The move statement ran, not committed: holds `ROW EXCLUSIVE` on its slot.
    Moved {
        /// The transaction's `now()`.
        now: u8,
        /// Where it goes.
        dest: Dest,
    },
    /// Broken: the first of the two transactions committed.
    Half {
        /// The first transaction's `now()`.
        now: u8,
        /// Where it goes.
        dest: Dest,
    },
    /// Committed.
    Finished,
}

/// The cleaner's rotation pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rotation {
    /// Between passes.
    Idle,
    /// The look without the lock found `slot` past retention; the lock is being asked for.
    Looked {
        /// The pass's `now()`.
        now: u8,
        /// The candidate slot.
        slot: u8,
    },
    /// Holds `ACCESS EXCLUSIVE` on `slot`.
    Locked {
        /// The pass's `now()`.
        now: u8,
        /// The slot.
        slot: u8,
    },
}

/// A reader holding a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reader {
    /// Not yet begun.
    Idle,
    /// Its snapshot: every transaction committed up to this one.
    Open(u8),
    /// Read.
    Closed,
}

/// The database, the movers, the rotation and the reader.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StorageState {
    /// The clock.
    pub clock: u8,
    /// Transactions committed so far.
    pub commits: u8,
    /// Every row version not truncated, sorted.
    pub versions: Vec<Version>,
    /// Each job's mover.
    pub movers: [Mover; JOBS],
    /// Moves rolled back.
    pub aborts: u8,
    /// The rotation.
    pub rotation: Rotation,
    /// The tick of the last rotation pass.
    pub last_pass: Option<u8>,
    /// The reader.
    pub reader: Reader,
    /// Ghost: per job, whether its history row was truncated, and if so whether within its
    /// retention.
    pub truncated: [Option<bool>; JOBS],
    /// Ghost: a truncation happened.
    pub truncations: u8,
    /// Ghost: the look under the lock found a row within retention the look before had not.
    pub young_under_lock: bool,
    /// Ghost: a read saw some job other than exactly once, not explained by a truncation past
    /// retention.
    pub bad_read: bool,
    /// Ghost: a read saw a job in the job table whose move had committed after the snapshot.
    pub saw_moved_unfinished: bool,
}

impl StorageState {
    fn live(&self, job: u8) -> usize {
        self.versions
            .iter()
            .filter(|v| v.job == job && v.committed_live())
            .count()
    }

    /// Whether any transaction other than the rotation holds a lock on `slot`: a mover that wrote
    /// to it and has not ended, or the reader, which locks every slot when it reads.
    fn slot_in_use(&self, slot: u8) -> bool {
        self.versions.iter().any(|v| {
            v.place == Place::Done(slot)
                && (matches!(v.made, Stamp::Open(_)) || matches!(v.deleted, Some(Stamp::Open(_))))
        })
    }

    fn locked_by_rotation(&self, slot: u8) -> bool {
        matches!(self.rotation, Rotation::Locked { slot: s, .. } if s == slot)
    }

    /// Whether the committed rows of `slot` include one within its retention at `now`, and
    /// whether it has any committed row (a statement's fresh snapshot).
    fn look(&self, slot: u8, now: u8) -> (bool, bool) {
        let rows: Vec<&Version> = self
            .versions
            .iter()
            .filter(|v| v.place == Place::Done(slot) && v.committed_live())
            .collect();
        let young = rows
            .iter()
            .any(|v| v.fin.is_some_and(|f| within_retention(f, now)));
        (!rows.is_empty(), young)
    }

    fn commit(&mut self, job: u8) {
        self.commits += 1;
        let n = self.commits;
        for v in &mut self.versions {
            if v.made == Stamp::Open(job) {
                v.made = Stamp::Committed(n);
            }
            if v.deleted == Some(Stamp::Open(job)) {
                v.deleted = Some(Stamp::Committed(n));
            }
        }
    }

    fn rollback(&mut self, job: u8) {
        self.versions.retain(|v| v.made != Stamp::Open(job));
        for v in &mut self.versions {
            if v.deleted == Some(Stamp::Open(job)) {
                v.deleted = None;
            }
        }
    }

    /// The delete half of a move: the job's row in the job table, deleted by `job`'s open
    /// transaction.
    fn delete_from_job_table(&mut self, job: u8) {
        for v in &mut self.versions {
            if v.job == job && v.place == Place::Job && v.committed_live() {
                v.deleted = Some(Stamp::Open(job));
            }
        }
    }

    /// The insert half of a move, by `job`'s open transaction at `now`.
    fn insert_finished(&mut self, job: u8, now: u8, dest: Dest) {
        self.versions.push(Version {
            job,
            place: match dest {
                Dest::Done => Place::Done(slot_of(now)),
                Dest::Dead => Place::Dead,
            },
            fin: Some(now),
            made: Stamp::Open(job),
            deleted: None,
        });
        self.versions.sort();
    }

    /// Whether the insert of a move at `now` to `dest` must wait for the rotation's lock.
    fn insert_blocked(&self, now: u8, dest: Dest) -> bool {
        dest == Dest::Done && self.locked_by_rotation(slot_of(now))
    }
}

/// A step of a mover, the rotation, the reader or the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Job `job`'s finishing transaction begins at the clock, for `dest`.
    Begin {
        /// The job.
        job: u8,
        /// Where it goes.
        dest: Dest,
    },
    /// The move statement (broken: the first transaction, committed).
    Move {
        /// The job.
        job: u8,
    },
    /// The finishing transaction commits (broken: the second transaction, committed).
    Commit {
        /// The job.
        job: u8,
    },
    /// The finishing transaction rolls back (a crash, a lost connection).
    Abort {
        /// The job.
        job: u8,
    },
    /// The rotation's look without a lock at `slot`, at the clock.
    Look {
        /// The slot.
        slot: u8,
    },
    /// The rotation takes `ACCESS EXCLUSIVE` on its candidate slot.
    Lock,
    /// The rotation's lock timeout passes: the slot is left for the next pass.
    LockTimeout,
    /// The look under the lock, then the truncation (when it finds nothing within retention),
    /// committed.
    Truncate,
    /// The reader's first statement: its snapshot.
    Open,
    /// The reader reads every job wherever it is.
    Read,
    /// The clock advances.
    Tick,
}

impl Model for StorageModel {
    type State = StorageState;
    type Action = Action;

    fn init_states(&self) -> Vec<StorageState> {
        let versions = (0..JOBS as u8)
            .map(|job| Version {
                job,
                place: Place::Job,
                fin: None,
                made: Stamp::Committed(0),
                deleted: None,
            })
            .collect();
        vec![StorageState {
            clock: 0,
            commits: 0,
            versions,
            movers: [Mover::Idle; JOBS],
            aborts: 0,
            rotation: Rotation::Idle,
            last_pass: None,
            reader: Reader::Idle,
            truncated: [None; JOBS],
            truncations: 0,
            young_under_lock: false,
            bad_read: false,
            saw_moved_unfinished: false,
        }]
    }

    fn actions(&self, s: &StorageState, actions: &mut Vec<Action>) {
        for job in 0..JOBS as u8 {
            match s.movers[job as usize] {
                Mover::Idle => {
                    for dest in [Dest::Done, Dest::Dead] {
                        actions.push(Action::Begin { job, dest });
                    }
                }
                Mover::Begun { now, dest } => {
                    // The correct move's statement inserts, so it waits for a lock on its slot;
                    // so does the broken move that inserts first.
                    let inserts_first = self.broken != Some(Broken::DeleteThenInsert);
                    if !(inserts_first && s.insert_blocked(now, dest)) {
                        actions.push(Action::Move { job });
                    }
                }
                Mover::Moved { .. } => {
                    actions.push(Action::Commit { job });
                    if s.aborts < MAX_ABORTS {
                        actions.push(Action::Abort { job });
                    }
                }
                Mover::Half { dest, .. } => {
                    // The second transaction: the broken move that deleted first inserts now, at
                    // its own now().
                    let inserts_now = self.broken == Some(Broken::DeleteThenInsert);
                    if !(inserts_now && s.insert_blocked(s.clock, dest)) {
                        actions.push(Action::Commit { job });
                    }
                }
                Mover::Finished => {}
            }
        }
        match s.rotation {
            Rotation::Idle if s.last_pass != Some(s.clock) => {
                for slot in 0..SLOTS {
                    if slot != slot_of(s.clock) {
                        actions.push(Action::Look { slot });
                    }
                }
            }
            Rotation::Idle => {}
            Rotation::Looked { slot, .. } => {
                if !s.slot_in_use(slot) {
                    actions.push(Action::Lock);
                }
                actions.push(Action::LockTimeout);
            }
            Rotation::Locked { .. } => actions.push(Action::Truncate),
        }
        match s.reader {
            Reader::Idle => actions.push(Action::Open),
            // Reading the history takes ACCESS SHARE on each slot: it waits for the rotation.
            Reader::Open(_) if !matches!(s.rotation, Rotation::Locked { .. }) => {
                actions.push(Action::Read)
            }
            _ => {}
        }
        if s.clock < HORIZON {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, s: &StorageState, action: Action) -> Option<StorageState> {
        let mut n = s.clone();
        match action {
            Action::Begin { job, dest } => {
                n.movers[job as usize] = Mover::Begun { now: s.clock, dest };
            }
            Action::Move { job } => {
                let Mover::Begun { now, dest } = s.movers[job as usize] else {
                    return None;
                };
                match self.broken {
                    Some(Broken::DeleteThenInsert) => {
                        n.delete_from_job_table(job);
                        n.commit(job);
                        n.movers[job as usize] = Mover::Half { now, dest };
                    }
                    Some(Broken::InsertThenDelete) => {
                        n.insert_finished(job, now, dest);
                        n.commit(job);
                        n.movers[job as usize] = Mover::Half { now, dest };
                    }
                    _ => {
                        // One statement: the row locked, deleted and written to its new table.
                        n.delete_from_job_table(job);
                        n.insert_finished(job, now, dest);
                        n.movers[job as usize] = Mover::Moved { now, dest };
                    }
                }
            }
            Action::Commit { job } => {
                match s.movers[job as usize] {
                    Mover::Moved { .. } => n.commit(job),
                    Mover::Half { dest, .. } => {
                        // The second transaction, at its own now().
                        match self.broken {
                            Some(Broken::DeleteThenInsert) => n.insert_finished(job, s.clock, dest),
                            _ => n.delete_from_job_table(job),
                        }
                        n.commit(job);
                    }
                    _ => return None,
                }
                n.movers[job as usize] = Mover::Finished;
            }
            Action::Abort { job } => {
                n.rollback(job);
                n.aborts += 1;
                n.movers[job as usize] = Mover::Idle;
            }
            Action::Look { slot } => {
                n.last_pass = Some(s.clock);
                let (any, young) = s.look(slot, s.clock);
                if any && !young {
                    n.rotation = Rotation::Looked { now: s.clock, slot };
                }
            }
            Action::Lock => {
                let Rotation::Looked { now, slot } = s.rotation else {
                    return None;
                };
                n.rotation = Rotation::Locked { now, slot };
            }
            Action::LockTimeout => n.rotation = Rotation::Idle,
            Action::Truncate => {
                let Rotation::Locked { now, slot } = s.rotation else {
                    return None;
                };
                n.rotation = Rotation::Idle;
                let (_, young) = s.look(slot, now);
                if young {
                    n.young_under_lock = true;
                    if self.broken != Some(Broken::LookBeforeLockOnly) {
                        return Some(n);
                    }
                }
                // Every version of the slot goes, whatever snapshot could see it. (Under the
                // lock, no open transaction has written there.)
                for v in s.versions.iter().filter(|v| v.place == Place::Done(slot)) {
                    let within = v.fin.is_some_and(|f| within_retention(f, now));
                    let t = &mut n.truncated[v.job as usize];
                    *t = Some(t.unwrap_or(false) || within);
                }
                n.versions.retain(|v| v.place != Place::Done(slot));
                n.truncations += 1;
                n.commits += 1;
            }
            Action::Open => n.reader = Reader::Open(s.commits),
            Action::Read => {
                let Reader::Open(snapshot) = s.reader else {
                    return None;
                };
                for job in 0..JOBS as u8 {
                    let seen: Vec<&Version> = s
                        .versions
                        .iter()
                        .filter(|v| v.job == job && v.visible_to(snapshot))
                        .collect();
                    let explained = s.truncated[job as usize] == Some(false);
                    if seen.len() > 1 || (seen.is_empty() && !explained) {
                        n.bad_read = true;
                    }
                    if seen.iter().any(|v| {
                        v.place == Place::Job && matches!(v.deleted, Some(Stamp::Committed(_)))
                    }) {
                        n.saw_moved_unfinished = true;
                    }
                }
                n.reader = Reader::Closed;
            }
            Action::Tick => n.clock += 1,
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always(NO_JOB_LOST, |_, s: &StorageState| {
                (0..JOBS as u8).all(|j| s.live(j) >= 1 || s.truncated[j as usize].is_some())
            }),
            Property::always(NO_JOB_DUPLICATED, |_, s: &StorageState| {
                (0..JOBS as u8).all(|j| s.live(j) <= 1)
            }),
            Property::always(NOTHING_WITHIN_RETENTION_TRUNCATED, |_, s: &StorageState| {
                !s.truncated.contains(&Some(true))
            }),
            Property::always(SNAPSHOT_SEES_EACH_JOB_ONCE, |_, s: &StorageState| {
                !s.bad_read
            }),
            Property::sometimes(SLOT_TRUNCATED, |_, s: &StorageState| s.truncations > 0),
            Property::sometimes(SNAPSHOT_SAW_MOVED_JOB_UNFINISHED, |_, s: &StorageState| {
                s.saw_moved_unfinished
            }),
            Property::sometimes(DEAD_LETTERED, |_, s: &StorageState| {
                s.versions
                    .iter()
                    .any(|v| v.place == Place::Dead && v.committed_live())
            }),
            Property::sometimes(MOVE_ROLLED_BACK, |_, s: &StorageState| s.aborts > 0),
        ];
        if !self.split() {
            // The race the look under the lock is for; the split moves reach it too, but need
            // not.
            properties.push(Property::sometimes(
                YOUNG_UNDER_LOCK,
                |_, s: &StorageState| s.young_under_lock,
            ));
        }
        properties
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn moves_and_rotation_lose_nothing_and_truncate_nothing_young() {
        let verdict = assert_holds("storage", StorageModel::correct());
        eprintln!("storage: {} states", verdict.states);
    }

    #[test]
    fn every_broken_storage_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample(
                &format!("storage {b:?}"),
                StorageModel::broken(b),
                b.violates(),
            );
            eprintln!("storage {b:?}: {}\n  {}", b.violates(), steps.join("\n  "));
        }
        // A snapshot between the two halves of a split move sees the job twice, or not at all.
        for b in [Broken::DeleteThenInsert, Broken::InsertThenDelete] {
            assert_counterexample(
                &format!("storage {b:?}"),
                StorageModel::broken(b),
                SNAPSHOT_SEES_EACH_JOB_ONCE,
            );
        }
    }
}
