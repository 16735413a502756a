//! Unique inserts racing: two transactions insert a job with the same unique key.
//!
//! The unique index (`pgmill_job_unique_idx`, migration 001: unique on `unique_key` among rows
//! whose state is one of the job's unique states) decides: an insert whose key another
//! transaction has inserted and not yet committed waits for it; if that one commits, the insert
//! conflicts and `ON CONFLICT ... DO UPDATE` locks and returns the existing job; if it rolls
//! back, the insert goes ahead. A job that leaves its unique states (it completes, when
//! `completed` is not among them) frees the key: it leaves the job table for the history in the
//! statement that completes it, and the index no longer sees it. A job whose unique states keep
//! `completed` is left running by the lean completion and completed in place by
//! `job_set_state_if_running_many.sql`, holding its key (that split is [`crate::claim`]'s; the
//! moves are [`crate::storage`]'s).
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `Insert` | `job_insert_unique_many.sql` and the unique index of `001_create_tables.up.sql` | `Inserter::insert_many` (unique jobs) |
//! | `Commit`, `Abort` | the inserting transaction's end (the application's own transaction) | |
//! | `Finish` | `job_set_completed_many.sql` (a job out of its unique states, moved to the history) | `BatchCompleter::flush` |
//!
//! Properties: at most one committed job per key is in a unique state; an insert that reports
//! a duplicate names a job that exists. Example: an insert told apart as a duplicate.
//!
//! Bounds: 2 inserting transactions, 2 inserts each.

use stateright::{Model, Property};

const INSERTERS: usize = 2;
const INSERTS_EACH: u8 = 2;

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The insert first looks for a job with the key (in its snapshot) and inserts without the
    /// index when it finds none: two transactions both find none and both insert.
    CheckThenInsert,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 1] = [Broken::CheckThenInsert];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::CheckThenInsert => ONE_LIVE_JOB_PER_KEY,
        }
    }
}

/// At most one committed job with the key is in one of its unique states.
pub const ONE_LIVE_JOB_PER_KEY: &str = "at most one committed job per key is in a unique state";
const DUPLICATE_EXISTS: &str = "an insert reporting a duplicate names a job that exists";
const DUPLICATE_TOLD_APART: &str = "an insert is told apart as a duplicate";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct UniqueModel {
    /// `None` for the engine as written.
    pub broken: Option<Broken>,
}

impl UniqueModel {
    /// The engine as written.
    pub fn correct() -> Self {
        UniqueModel { broken: None }
    }

    /// Broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        UniqueModel { broken: Some(b) }
    }
}

/// A job row with the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyedJob {
    /// The inserting transaction, while it has not committed.
    pub inserted_by: Option<u8>,
    /// In one of its unique states (not yet completed).
    pub live: bool,
    /// Locked by this transaction's `DO UPDATE`.
    pub locked_by: Option<u8>,
    /// Rolled back: the row never existed for anyone else.
    pub rolled_back: bool,
}

/// One inserting transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tx {
    /// No transaction open.
    Idle,
    /// Broken variant: looked for the key in its snapshot and found none.
    Checked,
    /// Inserted (or found) the job at this index.
    Done {
        /// Index of the job in [`UniqueState::jobs`].
        job: u8,
        /// Whether it reported a duplicate.
        duplicate: bool,
    },
}

/// The rows and the transactions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UniqueState {
    /// The jobs with the key, in insertion order.
    pub jobs: Vec<KeyedJob>,
    /// The transactions.
    pub txs: [Tx; INSERTERS],
    /// Inserts begun per transaction.
    pub begun: [u8; INSERTERS],
    /// Ghost: an insert reported a duplicate.
    pub told_apart: bool,
    /// Ghost: a committed insert's reported job is gone.
    pub dangling: bool,
}

/// A step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The transaction runs the insert (correct: through the index; broken: the look-up).
    Insert(u8),
    /// Broken: the plain insert after the look-up.
    InsertPlain(u8),
    /// The transaction commits.
    Commit(u8),
    /// The transaction rolls back.
    Abort(u8),
    /// A committed job leaves its unique states (it completed).
    Finish(u8),
}

impl Model for UniqueModel {
    type State = UniqueState;
    type Action = Action;

    fn init_states(&self) -> Vec<UniqueState> {
        vec![UniqueState {
            jobs: Vec::new(),
            txs: [Tx::Idle; INSERTERS],
            begun: [0; INSERTERS],
            told_apart: false,
            dangling: false,
        }]
    }

    fn actions(&self, s: &UniqueState, actions: &mut Vec<Action>) {
        for (t, tx) in s.txs.iter().enumerate() {
            let t = t as u8;
            match tx {
                Tx::Idle if s.begun[t as usize] < INSERTS_EACH => actions.push(Action::Insert(t)),
                Tx::Idle => {}
                Tx::Checked => {
                    actions.push(Action::InsertPlain(t));
                    actions.push(Action::Abort(t));
                }
                Tx::Done { .. } => {
                    actions.push(Action::Commit(t));
                    actions.push(Action::Abort(t));
                }
            }
        }
        for (j, job) in s.jobs.iter().enumerate() {
            if job.live && job.inserted_by.is_none() && job.locked_by.is_none() {
                // Rolled-back rows are not live.
                actions.push(Action::Finish(j as u8));
            }
        }
    }

    fn next_state(&self, s: &UniqueState, action: Action) -> Option<UniqueState> {
        let mut n = s.clone();
        match action {
            Action::Insert(t) => {
                n.begun[t as usize] += 1;
                if self.broken == Some(Broken::CheckThenInsert) {
                    // A snapshot sees committed rows only.
                    match s
                        .jobs
                        .iter()
                        .position(|j| j.live && j.inserted_by.is_none())
                    {
                        Some(j) => {
                            n.txs[t as usize] = Tx::Done {
                                job: j as u8,
                                duplicate: true,
                            };
                            n.told_apart = true;
                        }
                        None => n.txs[t as usize] = Tx::Checked,
                    }
                    return Some(n);
                }
                // The index: wait for another transaction's uncommitted entry.
                if s.jobs
                    .iter()
                    .any(|j| j.live && j.inserted_by.is_some_and(|by| by != t))
                {
                    return None;
                }
                match s.jobs.iter().position(|j| j.live) {
                    Some(j) => {
                        // ON CONFLICT DO UPDATE: the existing job, locked and returned.
                        if s.jobs[j].locked_by.is_some_and(|by| by != t) {
                            return None;
                        }
                        n.jobs[j].locked_by = Some(t);
                        n.txs[t as usize] = Tx::Done {
                            job: j as u8,
                            duplicate: true,
                        };
                        n.told_apart = true;
                    }
                    None => {
                        n.jobs.push(KeyedJob {
                            inserted_by: Some(t),
                            live: true,
                            locked_by: None,
                            rolled_back: false,
                        });
                        n.txs[t as usize] = Tx::Done {
                            job: (n.jobs.len() - 1) as u8,
                            duplicate: false,
                        };
                    }
                }
            }
            Action::InsertPlain(t) => {
                n.jobs.push(KeyedJob {
                    inserted_by: Some(t),
                    live: true,
                    locked_by: None,
                    rolled_back: false,
                });
                n.txs[t as usize] = Tx::Done {
                    job: (n.jobs.len() - 1) as u8,
                    duplicate: false,
                };
            }
            Action::Commit(t) => {
                let Tx::Done { job, .. } = s.txs[t as usize] else {
                    return None;
                };
                if n.jobs[job as usize].rolled_back {
                    n.dangling = true;
                }
                for j in &mut n.jobs {
                    if j.inserted_by == Some(t) {
                        j.inserted_by = None;
                    }
                    if j.locked_by == Some(t) {
                        j.locked_by = None;
                    }
                }
                n.txs[t as usize] = Tx::Idle;
            }
            Action::Abort(t) => {
                for j in &mut n.jobs {
                    if j.inserted_by == Some(t) {
                        *j = KeyedJob {
                            inserted_by: None,
                            live: false,
                            locked_by: None,
                            rolled_back: true,
                        };
                    }
                    if j.locked_by == Some(t) {
                        j.locked_by = None;
                    }
                }
                n.txs[t as usize] = Tx::Idle;
            }
            Action::Finish(j) => n.jobs[j as usize].live = false,
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(ONE_LIVE_JOB_PER_KEY, |_, s: &UniqueState| {
                s.jobs
                    .iter()
                    .filter(|j| j.live && j.inserted_by.is_none())
                    .count()
                    <= 1
            }),
            Property::always(DUPLICATE_EXISTS, |_, s: &UniqueState| !s.dangling),
            Property::sometimes(DUPLICATE_TOLD_APART, |_, s: &UniqueState| s.told_apart),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn unique_inserts_racing_leave_one_job_per_key() {
        let v = assert_holds("unique", UniqueModel::correct());
        eprintln!("unique: {} states", v.states);
    }

    #[test]
    fn every_broken_unique_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample("unique", UniqueModel::broken(b), b.violates());
            eprintln!("unique {b:?} breaks {:?}: {steps:?}", b.violates());
        }
    }
}
