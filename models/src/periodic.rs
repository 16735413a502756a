//! The periodic enqueuer: each tick of a schedule enqueued at most once, across leader changes.
//!
//! Two enqueuers run passes at the same time, as an old leader finishing a pass and its
//! successor starting one would (the model lets them overlap freely: it does not rely on
//! [`crate::leader`]'s timing). A pass is one transaction: it locks the due schedule row
//! (`periodic_get_due.sql`, `FOR UPDATE SKIP LOCKED`), inserts the tick's job, advances the
//! schedule guarded on the tick it consumed (`periodic_advance.sql`) and commits; a failure at any
//! point (a lost connection, a crash) rolls all of it back.
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `Lock` | `periodic_get_due.sql` (in the pass's transaction) | `PeriodicEnqueuer::run_once` |
//! | `Insert` | `job_insert_many.sql` (in the same transaction) | `PeriodicEnqueuer::run_once` → `Inserter::insert_many` |
//! | `Advance` | `periodic_advance.sql` (in the same transaction) | `PeriodicEnqueuer::run_once` |
//! | `Commit`, `Abort` | the transaction's end | `PeriodicEnqueuer::run_once` |
//!
//! A pass that catches up missed ticks one by one (`MissedTicks::CatchUpEach`) enqueues the
//! missed ticks up to the database's `now()` (the latest ones, at most its maximum) in the same
//! insert, and advances past `now()` with the same guard: the ticks of one pass lie from the next
//! run it consumed to before the next run it advances to, ranges no two passes share, so the
//! model's tick stands for the range. A schedule in a time zone keeps
//! its next run in `zoned_next_run_at`; both statements read the next run as
//! `coalesce(zoned_next_run_at, next_run_at)`, so the lock and the guard see the same value.
//!
//! Properties: no tick is enqueued twice. Example: every tick up to the bound enqueued.
//!
//! Bounds: 2 enqueuers, 2 ticks, 2 failed passes.

use stateright::{Model, Property};

const ENQUEUERS: usize = 2;
const TICKS: u8 = 2;
const MAX_ABORTS: u8 = 2;

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The job is inserted and committed in one transaction, and the schedule advanced in
    /// another: between the two the row is unlocked and still due, so the other enqueuer (a new
    /// leader) enqueues the same tick, as does the same one after a failure before the advance.
    AdvanceInSeparateTransaction,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 1] = [Broken::AdvanceInSeparateTransaction];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::AdvanceInSeparateTransaction => NO_TICK_TWICE,
        }
    }
}

/// No tick of the schedule is enqueued twice.
pub const NO_TICK_TWICE: &str = "no tick is enqueued twice";
const ALL_TICKS: &str = "every tick is enqueued";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct PeriodicModel {
    /// `None` for the engine as written.
    pub broken: Option<Broken>,
}

impl PeriodicModel {
    /// The engine as written.
    pub fn correct() -> Self {
        PeriodicModel { broken: None }
    }

    /// Broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        PeriodicModel { broken: Some(b) }
    }
}

/// Where an enqueuer's pass is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pass {
    /// Between passes.
    Idle,
    /// Holds the schedule row's lock, having read tick `tick` due.
    Locked {
        /// The tick consumed.
        tick: u8,
    },
    /// Has inserted the tick's job (uncommitted, in the correct engine).
    Inserted {
        /// The tick consumed.
        tick: u8,
    },
    /// Has advanced the schedule (uncommitted).
    Advanced {
        /// The tick consumed.
        tick: u8,
    },
}

/// The schedule row, the jobs, and the enqueuers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PeriodicState {
    /// The committed `next_run_at`, as a tick number.
    pub next_tick: u8,
    /// Which enqueuer holds the row lock.
    pub locked_by: Option<u8>,
    /// Committed jobs per tick.
    pub jobs: [u8; TICKS as usize],
    /// The enqueuers' passes.
    pub passes: [Pass; ENQUEUERS],
    /// Failed passes so far.
    pub aborts: u8,
}

/// A step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The enqueuer reads and locks the due schedule.
    Lock(u8),
    /// It inserts the tick's job.
    Insert(u8),
    /// It advances the schedule, guarded on the consumed tick.
    Advance(u8),
    /// It commits.
    Commit(u8),
    /// Its pass fails: the open transaction rolls back.
    Abort(u8),
}

impl Model for PeriodicModel {
    type State = PeriodicState;
    type Action = Action;

    fn init_states(&self) -> Vec<PeriodicState> {
        vec![PeriodicState {
            next_tick: 0,
            locked_by: None,
            jobs: [0; TICKS as usize],
            passes: [Pass::Idle; ENQUEUERS],
            aborts: 0,
        }]
    }

    fn actions(&self, s: &PeriodicState, actions: &mut Vec<Action>) {
        for (e, pass) in s.passes.iter().enumerate() {
            let e = e as u8;
            match pass {
                // SKIP LOCKED: a locked row is not due for this pass.
                Pass::Idle if s.next_tick < TICKS && s.locked_by.is_none() => {
                    actions.push(Action::Lock(e))
                }
                Pass::Idle => {}
                Pass::Locked { .. } => actions.push(Action::Insert(e)),
                Pass::Inserted { .. } => actions.push(Action::Advance(e)),
                Pass::Advanced { .. } => actions.push(Action::Commit(e)),
            }
            if *pass != Pass::Idle && s.aborts < MAX_ABORTS {
                actions.push(Action::Abort(e));
            }
        }
    }

    fn next_state(&self, s: &PeriodicState, action: Action) -> Option<PeriodicState> {
        let mut n = s.clone();
        let separate = self.broken == Some(Broken::AdvanceInSeparateTransaction);
        match action {
            Action::Lock(e) => {
                n.locked_by = Some(e);
                n.passes[e as usize] = Pass::Locked { tick: s.next_tick };
            }
            Action::Insert(e) => {
                let Pass::Locked { tick } = s.passes[e as usize] else {
                    return None;
                };
                n.passes[e as usize] = Pass::Inserted { tick };
                if separate {
                    // The insert's transaction commits, and the lock goes with it.
                    n.jobs[tick as usize] += 1;
                    n.locked_by = None;
                }
            }
            Action::Advance(e) => {
                let Pass::Inserted { tick } = s.passes[e as usize] else {
                    return None;
                };
                if separate {
                    // A transaction of its own, guarded on the consumed tick.
                    if s.next_tick == tick {
                        n.next_tick = tick + 1;
                    }
                    n.passes[e as usize] = Pass::Idle;
                } else {
                    // Guarded on the consumed tick: the lock held since `Lock` keeps it so.
                    if s.next_tick != tick {
                        return None;
                    }
                    n.passes[e as usize] = Pass::Advanced { tick };
                }
            }
            Action::Commit(e) => {
                let Pass::Advanced { tick } = s.passes[e as usize] else {
                    return None;
                };
                n.jobs[tick as usize] += 1;
                n.next_tick = tick + 1;
                n.locked_by = None;
                n.passes[e as usize] = Pass::Idle;
            }
            Action::Abort(e) => {
                n.aborts += 1;
                n.passes[e as usize] = Pass::Idle;
                if s.locked_by == Some(e) {
                    n.locked_by = None;
                }
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(NO_TICK_TWICE, |_, s: &PeriodicState| {
                s.jobs.iter().all(|&j| j <= 1)
            }),
            Property::sometimes(ALL_TICKS, |_, s: &PeriodicState| {
                s.jobs.iter().all(|&j| j == 1)
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn each_tick_is_enqueued_at_most_once() {
        let v = assert_holds("periodic", PeriodicModel::correct());
        eprintln!("periodic: {} states", v.states);
    }

    #[test]
    fn every_broken_periodic_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample("periodic", PeriodicModel::broken(b), b.violates());
            eprintln!("periodic {b:?} breaks {:?}: {steps:?}", b.violates());
        }
    }
}
