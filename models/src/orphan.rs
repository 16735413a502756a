//! The orphan release and its fresh-claim margin.
//!
//! A client's heartbeat releases running rows attributed to it under claims it does not hold
//! (`job_release_orphaned.sql`): claims whose fetch reply was lost, outcomes lost in a restart.
//! But a fetch whose claim has committed is not held until its reply has been taken in, so a
//! release could take a claim from under the producer about to run it. The margin leaves claims
//! younger than it alone. This model has a clock and one client with one job: the producer claims
//! and takes the reply in within `R` ticks of the claim's `now()`, the heartbeat snapshots the
//! held claims and runs the release within `L` ticks, and the margin is `M`.
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `Claim` | `job_get_available.sql` | `Producer::fill_slots` → `query::job_get_available` |
//! | `Register` | (none) | `Producer::fill_slots` → `InFlight::add_all` |
//! | `LoseReply` | (none) | `Producer::run` → `InFlight::request_reconcile` |
//! | `Complete` | `job_set_completed_many.sql` (the job moves to the history in the same statement) | `BatchCompleter::flush`, then `InFlight::remove_all` |
//! | `Snapshot` | (none: the held claims are read) | `Heartbeat::release_orphaned` → `InFlight::snapshot` |
//! | `Release` | `job_release_orphaned.sql` | `Heartbeat::release_orphaned` → `query::job_release_orphaned` |
//! | `Tick` | the clock | |
//!
//! The timing assumption the correct configuration checks is `M ≥ R + L`: the margin must cover
//! the time from a claim's `now()` to its reply being registered, plus the time from the
//! heartbeat's snapshot of its held claims to its release statement's `now()`. In the engine the
//! margin is 1 s during recovery (`FRESH_CLAIM`) and 60 s for the minute sweep (`SWEEP_MARGIN`,
//! twice the 30 s after which a fetch is given up on); both times are normally milliseconds.
//! Breaking it only costs a second run (the released claim's outcome is dropped by the fence),
//! never a wrong outcome, which the model checks too.
//!
//! A completed job leaves the job table in the statement that completes it, so no later release
//! can match it ([`Row::release_orphaned`] reads the job table only); the move itself is
//! [`crate::storage`]'s. The release's announcement of the jobs it gave back (the rewind topic)
//! changes no row.
//!
//! Properties: no claim the producer holds or is about to register is released; no outcome of
//! a superseded claim lands. Example the bounds must reach: an orphaned claim (its reply lost)
//! released.

use stateright::{Model, Property};

use crate::row::{Fence, JobState, Row};

/// Ticks from a claim's `now()` to its reply being registered, at most.
const R: u8 = 1;
/// Ticks from the heartbeat's snapshot to its release statement's `now()`, at most.
const L: u8 = 1;
/// The margin of the correct configuration.
const MARGIN: u8 = R + L;
/// The clock stops here.
const HORIZON: u8 = 5;
/// Claims in all.
const MAX_TOKENS: i64 = 2;

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The release ignores the fresh-claim margin: a claim committed just before the heartbeat's
    /// snapshot, whose reply is registered just after it, is released from under its producer.
    NoMargin,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 1] = [Broken::NoMargin];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::NoMargin => NO_LIVE_CLAIM_RELEASED,
        }
    }
}

/// No claim that the producer holds or is about to register is released.
pub const NO_LIVE_CLAIM_RELEASED: &str =
    "no claim its producer holds or is registering is released";
const NO_SUPERSEDED_OUTCOME: &str = "no outcome of a superseded claim lands";
const ORPHAN_RELEASED: &str = "an orphaned claim is released";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct OrphanModel {
    /// `None` for the engine as written.
    pub broken: Option<Broken>,
    /// The margin, in ticks.
    pub margin: u8,
}

impl OrphanModel {
    /// The engine as written (with its timing assumption, `M ≥ R + L`).
    pub fn correct() -> Self {
        OrphanModel {
            broken: None,
            margin: MARGIN,
        }
    }

    /// Broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        let margin = match b {
            Broken::NoMargin => 0,
        };
        OrphanModel {
            broken: Some(b),
            margin,
        }
    }
}

/// Where the producer is with its claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Producer {
    /// Holding nothing.
    Idle,
    /// The claim committed at `at`; its reply is on its way.
    Fetched {
        /// The claim's token.
        token: i64,
        /// The claim's `now()`.
        at: u8,
    },
    /// The claim is held and its work runs.
    Holding {
        /// The claim's token.
        token: i64,
    },
}

/// The database, the producer and the heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrphanState {
    /// The clock.
    pub now: u8,
    /// The job row (one client, index 0).
    pub row: Row<u8, u8>,
    /// Tokens handed out.
    pub tokens: i64,
    /// The producer.
    pub producer: Producer,
    /// The heartbeat's snapshot of the held claims and when it was taken, while its release is
    /// on its way.
    pub snapshot: Option<(Option<i64>, u8)>,
    /// Ghost: a claim the producer held or was registering was released.
    pub live_released: bool,
    /// Ghost: a claim nobody would run was released.
    pub orphan_released: bool,
    /// Ghost: a superseded claim's outcome landed.
    pub stale_landed: bool,
}

/// A step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The clock moves on, within the timing assumptions.
    Tick,
    /// A fetch claims the job.
    Claim,
    /// The fetch's reply is registered.
    Register,
    /// The fetch's reply is lost: the claim is an orphan.
    LoseReply,
    /// The work ends and its completion is recorded.
    Complete,
    /// The heartbeat reads the claims held.
    Snapshot,
    /// The heartbeat's release statement runs.
    Release,
}

impl Model for OrphanModel {
    type State = OrphanState;
    type Action = Action;

    fn init_states(&self) -> Vec<OrphanState> {
        vec![OrphanState {
            now: 0,
            row: Row::inserted(0, 10),
            tokens: 0,
            producer: Producer::Idle,
            snapshot: None,
            live_released: false,
            orphan_released: false,
            stale_landed: false,
        }]
    }

    fn actions(&self, s: &OrphanState, actions: &mut Vec<Action>) {
        let registering_late =
            matches!(s.producer, Producer::Fetched { at, .. } if s.now >= at + R);
        let releasing_late = matches!(s.snapshot, Some((_, at)) if s.now >= at + L);
        if s.now < HORIZON && !registering_late && !releasing_late {
            actions.push(Action::Tick);
        }
        match s.producer {
            Producer::Idle if s.tokens < MAX_TOKENS && s.row.state == JobState::Available => {
                actions.push(Action::Claim)
            }
            Producer::Idle => {}
            Producer::Fetched { .. } => {
                actions.push(Action::Register);
                actions.push(Action::LoseReply);
            }
            Producer::Holding { .. } => actions.push(Action::Complete),
        }
        if s.snapshot.is_none() {
            actions.push(Action::Snapshot);
        } else {
            actions.push(Action::Release);
        }
    }

    fn next_state(&self, s: &OrphanState, action: Action) -> Option<OrphanState> {
        let mut n = s.clone();
        match action {
            Action::Tick => n.now += 1,
            Action::Claim => {
                n.tokens += 1;
                n.row = s.row.claim(0, n.tokens, s.now)?;
                n.producer = Producer::Fetched {
                    token: n.tokens,
                    at: s.now,
                };
            }
            Action::Register => {
                let Producer::Fetched { token, .. } = s.producer else {
                    return None;
                };
                n.producer = Producer::Holding { token };
            }
            Action::LoseReply => n.producer = Producer::Idle,
            Action::Complete => {
                let Producer::Holding { token } = s.producer else {
                    return None;
                };
                let current = s.row.state == JobState::Running && s.row.token == Some(token);
                if let Some(row) = s
                    .row
                    .set_completed(s.row.attempt, token, Fence::AttemptAndToken)
                {
                    n.stale_landed |= !current;
                    n.row = row;
                }
                n.producer = Producer::Idle;
            }
            Action::Snapshot => {
                let held = match s.producer {
                    Producer::Holding { token } => Some(token),
                    _ => None,
                };
                n.snapshot = Some((held, s.now));
            }
            Action::Release => {
                let (held, _) = s.snapshot?;
                n.snapshot = None;
                // attempted_at < now() - margin
                let old_enough = s
                    .row
                    .attempted_at
                    .is_some_and(|at| u16::from(at) + u16::from(self.margin) < u16::from(s.now));
                if let Some(row) = s.row.release_orphaned(0, |t| held == Some(t), old_enough) {
                    let live = match s.producer {
                        Producer::Fetched { token, .. } | Producer::Holding { token } => {
                            s.row.token == Some(token)
                        }
                        Producer::Idle => false,
                    };
                    if live {
                        n.live_released = true;
                    } else {
                        n.orphan_released = true;
                    }
                    n.row = row;
                }
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(NO_LIVE_CLAIM_RELEASED, |_, s: &OrphanState| {
                !s.live_released
            }),
            Property::always(NO_SUPERSEDED_OUTCOME, |_, s: &OrphanState| !s.stale_landed),
            Property::sometimes(ORPHAN_RELEASED, |_, s: &OrphanState| s.orphan_released),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn the_margin_keeps_claims_being_registered() {
        let v = assert_holds("orphan", OrphanModel::correct());
        eprintln!("orphan: {} states", v.states);
    }

    #[test]
    fn every_broken_orphan_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample("orphan", OrphanModel::broken(b), b.violates());
            eprintln!("orphan {b:?} breaks {:?}: {steps:?}", b.violates());
        }
    }

    #[test]
    fn a_margin_shorter_than_registration_and_lag_is_not_enough() {
        // The assumption M >= R + L is tight: one tick less and the checker finds the race.
        let short = OrphanModel {
            broken: None,
            margin: MARGIN - 1,
        };
        assert_counterexample("orphan", short, NO_LIVE_CLAIM_RELEASED);
    }
}
