//! Claims, fencing tokens, completion batches and late results.
//!
//! Two clients claim two jobs, work them, and record outcomes in batches, while everything that
//! can take a claim away from its holder happens at any moment: the rescuer gives a running job
//! back (its client is presumed dead, though it may be running still: frozen, or cut off), the
//! claiming client's own heartbeat releases a claim it does not hold (a fetch whose reply was
//! lost, or arrives later than the fresh-claim margin: see [`crate::orphan`] for the margin
//! itself). A client may stop acting at any point (a crash, a freeze): every behaviour where it
//! acts no more is a prefix of one where it does, and the rescuer takes its jobs back. The claim's reply may arrive after its rows were released and
//! claimed again; the client then works the job anyway, as the producer does, and its outcome
//! must change nothing.
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `Claim` | `job_get_available.sql`, `job_get_available_after.sql` | `Producer::fill_slots` → `query::job_get_available` |
//! | `Register` | (none: the reply's claims enter `InFlight`) | `Producer::fill_slots` → `InFlight::add_all` |
//! | `LoseReply` | (none: the fetch failed after committing) | `Producer::run` → `InFlight::request_reconcile` |
//! | `Finish` | (none: the executor hands its outcome to the completer) | `JobExecutor`, `Completion` |
//! | `Flush` | `job_set_completed_many.sql` (or `job_set_completed_many_count.sql`, without rows) when every outcome is a completion, else `job_set_state_if_running_many.sql` | `BatchCompleter::flush`, then `InFlight::remove_all` |
//! | `ReleaseOrphans` | `job_release_orphaned.sql` | `Heartbeat::release_orphaned` |
//! | `Rescue` | `job_rescue.sql` | `JobRescuer::pass` |
//! | `Schedule` | `job_schedule.sql` | `JobScheduler::run_once` |
//!
//! Each batch is one statement, so its rows change together; each row is fenced on its own.
//!
//! Properties: no outcome of a superseded claim lands; a row is running exactly while it carries
//! a claim's token; a finished job is never moved again. Examples the bounds must reach: a late
//! outcome dropped, an attempt number claimed a second time (what makes the attempt alone unfit
//! as a fence), both jobs completed.
//!
//! Outcomes: a completion, a retry (attempt kept), and an interrupt (a hard stop, or a buffered
//! job given back), which gives the attempt back. (A snooze gives it back too, to `scheduled`;
//! cancel and discard end the job like a completion.)
//!
//! Bounds: 2 clients, 2 jobs, 2 claims (tokens) in all, 3 attempts per job.

use stateright::{Model, Property};

use crate::row::{Fence, JobState, Outcome, Row};

const CLIENTS: usize = 2;
const JOBS: usize = 2;
const MAX_TOKENS: i64 = 2;
const MAX_ATTEMPTS: i32 = 3;

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// Outcomes fenced on the attempt number alone (schema version 1): a claim given back returns
    /// its attempt, so the next claim runs under the same number and a late outcome of the
    /// earlier claim lands on it.
    AttemptOnlyFence,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 1] = [Broken::AttemptOnlyFence];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::AttemptOnlyFence => NO_SUPERSEDED_OUTCOME,
        }
    }
}

/// No outcome of a claim that is no longer the row's current claim changes the row.
pub const NO_SUPERSEDED_OUTCOME: &str = "no outcome of a superseded claim lands";
const RUNNING_HAS_TOKEN: &str = "a row is running exactly while it carries a token";
const FINAL_STAYS_FINAL: &str = "a finished job is never moved again";
const LATE_OUTCOME_DROPPED: &str = "a late outcome of a superseded claim is dropped";
const ATTEMPT_REUSED: &str = "an attempt number is claimed a second time";
const BOTH_COMPLETE: &str = "both jobs complete";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct ClaimModel {
    /// `None` for the engine as written.
    pub broken: Option<Broken>,
}

impl ClaimModel {
    /// The engine as written.
    pub fn correct() -> Self {
        ClaimModel { broken: None }
    }

    /// Broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        ClaimModel { broken: Some(b) }
    }

    fn fence(&self) -> Fence {
        match self.broken {
            Some(Broken::AttemptOnlyFence) => Fence::AttemptOnly,
            None => Fence::AttemptAndToken,
        }
    }
}

/// A claim as a client knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Claimed {
    /// The job.
    pub job: u8,
    /// The attempt the claim made.
    pub attempt: i32,
    /// Its token.
    pub token: i64,
    /// `None` while the work runs, then the outcome waiting for the completer.
    pub outcome: Option<Outcome>,
}

/// One client process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Client {
    /// Claims committed whose reply the producer has not taken in yet.
    pub in_transit: Vec<Claimed>,
    /// The claims the client holds (`InFlight`): working, or their outcome queued.
    pub held: Vec<Claimed>,
}

/// The database and the clients.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimState {
    /// The job rows (`owner` is a client's index, the clock is the token count).
    pub rows: [Row<u8, u8>; JOBS],
    /// The clients.
    pub clients: [Client; CLIENTS],
    /// Tokens handed out so far (tokens are 1, 2, ...).
    pub tokens: i64,
    /// Ghost: per job, bit `a` set once a claim ran under attempt `a`.
    pub attempts_claimed: [u8; JOBS],
    /// Ghost: a claim ran under an attempt number an earlier claim of its job ran under.
    pub attempt_reused: bool,
    /// Ghost: an outcome landed on a row whose current claim was another.
    pub stale_landed: bool,
    /// Ghost: a superseded claim's outcome was dropped.
    pub stale_dropped: bool,
    /// Ghost: a finished row changed.
    pub final_moved: bool,
}

/// A step of a client, the leader, or the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A fetch claims the available jobs in `jobs` (a bit per job) under one new token.
    Claim {
        /// The claiming client.
        client: u8,
        /// Bit per job.
        jobs: u8,
    },
    /// The fetch's reply is taken in: its claims enter the held set and their work starts.
    Register {
        /// The client.
        client: u8,
    },
    /// The fetch's reply is lost (connection, timeout); the claims stay running in the table.
    LoseReply {
        /// The client.
        client: u8,
    },
    /// A held claim's work ends with an outcome, queued for the completer.
    Finish {
        /// The client.
        client: u8,
        /// The claim's token.
        token: i64,
        /// The job.
        job: u8,
        /// What the work ended with.
        outcome: Outcome,
    },
    /// The completer flushes every queued outcome in one statement, then forgets those claims.
    Flush {
        /// The client.
        client: u8,
    },
    /// The client's heartbeat releases running rows under its name it does not hold.
    ReleaseOrphans {
        /// The client.
        client: u8,
    },
    /// The rescuer gives a running job back (its client is presumed dead).
    Rescue {
        /// The job.
        job: u8,
    },
    /// The scheduler makes a retryable job available.
    Schedule {
        /// The job.
        job: u8,
    },
}

impl Model for ClaimModel {
    type State = ClaimState;
    type Action = Action;

    fn init_states(&self) -> Vec<ClaimState> {
        let client = Client {
            in_transit: Vec::new(),
            held: Vec::new(),
        };
        vec![ClaimState {
            rows: [Row::inserted(0, MAX_ATTEMPTS); JOBS],
            clients: [client.clone(), client],
            tokens: 0,
            attempts_claimed: [0; JOBS],
            attempt_reused: false,
            stale_landed: false,
            stale_dropped: false,
            final_moved: false,
        }]
    }

    fn actions(&self, s: &ClaimState, actions: &mut Vec<Action>) {
        for (c, cl) in s.clients.iter().enumerate() {
            let client = c as u8;
            let available = s
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.state == JobState::Available)
                .fold(0u8, |m, (j, _)| m | 1 << j);
            if s.tokens < MAX_TOKENS && cl.in_transit.is_empty() {
                for jobs in 1..=available {
                    if jobs & !available == 0 {
                        actions.push(Action::Claim { client, jobs });
                    }
                }
            }
            if !cl.in_transit.is_empty() {
                actions.push(Action::Register { client });
                actions.push(Action::LoseReply { client });
            }
            for h in cl.held.iter().filter(|h| h.outcome.is_none()) {
                for outcome in [Outcome::Complete, Outcome::Retry, Outcome::Interrupt] {
                    actions.push(Action::Finish {
                        client,
                        token: h.token,
                        job: h.job,
                        outcome,
                    });
                }
            }
            if cl.held.iter().any(|h| h.outcome.is_some()) {
                actions.push(Action::Flush { client });
            }
            actions.push(Action::ReleaseOrphans { client });
        }
        for (j, r) in s.rows.iter().enumerate() {
            if r.state == JobState::Running {
                actions.push(Action::Rescue { job: j as u8 });
            }
            if matches!(r.state, JobState::Retryable | JobState::Scheduled) {
                actions.push(Action::Schedule { job: j as u8 });
            }
        }
    }

    fn next_state(&self, s: &ClaimState, action: Action) -> Option<ClaimState> {
        let mut n = s.clone();
        match action {
            Action::Claim { client, jobs } => {
                n.tokens += 1;
                let token = n.tokens;
                for j in 0..JOBS {
                    if jobs & (1 << j) == 0 {
                        continue;
                    }
                    let row = n.rows[j].claim(client, token, token as u8)?;
                    if n.attempts_claimed[j] & (1 << row.attempt) != 0 {
                        n.attempt_reused = true;
                    }
                    n.attempts_claimed[j] |= 1 << row.attempt;
                    n.rows[j] = row;
                    n.clients[client as usize].in_transit.push(Claimed {
                        job: j as u8,
                        attempt: row.attempt,
                        token,
                        outcome: None,
                    });
                }
            }
            Action::Register { client } => {
                let cl = &mut n.clients[client as usize];
                let arrived = std::mem::take(&mut cl.in_transit);
                cl.held.extend(arrived);
                cl.held.sort();
            }
            Action::LoseReply { client } => {
                n.clients[client as usize].in_transit.clear();
            }
            Action::Finish {
                client,
                token,
                job,
                outcome,
            } => {
                let h = n.clients[client as usize]
                    .held
                    .iter_mut()
                    .find(|h| h.token == token && h.job == job && h.outcome.is_none())?;
                h.outcome = Some(outcome);
                n.clients[client as usize].held.sort();
            }
            Action::Flush { client } => {
                let (batch, kept): (Vec<Claimed>, Vec<Claimed>) = n.clients[client as usize]
                    .held
                    .iter()
                    .partition(|h| h.outcome.is_some());
                let lean = batch.iter().all(|h| h.outcome == Some(Outcome::Complete));
                for h in &batch {
                    let j = h.job as usize;
                    let before = n.rows[j];
                    let outcome = h.outcome.expect("partitioned on it");
                    let after = if lean {
                        before.set_completed(h.attempt, h.token, self.fence())
                    } else {
                        before.set_state_if_running(h.attempt, h.token, outcome, self.fence())
                    };
                    let current =
                        before.state == JobState::Running && before.token == Some(h.token);
                    match after {
                        Some(row) => {
                            if !current {
                                n.stale_landed = true;
                            }
                            n.rows[j] = row;
                        }
                        None if !current => n.stale_dropped = true,
                        None => {}
                    }
                }
                n.clients[client as usize].held = kept;
            }
            Action::ReleaseOrphans { client } => {
                let held = n.clients[client as usize].held.clone();
                for row in &mut n.rows {
                    if let Some(r) =
                        row.release_orphaned(client, |t| held.iter().any(|h| h.token == t), true)
                    {
                        *row = r;
                    }
                }
            }
            Action::Rescue { job } => n.rows[job as usize] = n.rows[job as usize].rescue()?,
            Action::Schedule { job } => n.rows[job as usize] = n.rows[job as usize].schedule()?,
        }
        for j in 0..JOBS {
            if s.rows[j].state.is_final() && n.rows[j] != s.rows[j] {
                n.final_moved = true;
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(NO_SUPERSEDED_OUTCOME, |_, s: &ClaimState| !s.stale_landed),
            Property::always(RUNNING_HAS_TOKEN, |_, s: &ClaimState| {
                s.rows
                    .iter()
                    .all(|r| (r.state == JobState::Running) == r.token.is_some())
            }),
            Property::always(FINAL_STAYS_FINAL, |_, s: &ClaimState| !s.final_moved),
            Property::sometimes(LATE_OUTCOME_DROPPED, |_, s: &ClaimState| s.stale_dropped),
            Property::sometimes(ATTEMPT_REUSED, |_, s: &ClaimState| s.attempt_reused),
            Property::sometimes(BOTH_COMPLETE, |_, s: &ClaimState| {
                s.rows.iter().all(|r| r.state == JobState::Completed)
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn claims_and_outcomes_keep_the_fence() {
        let v = assert_holds("claim", ClaimModel::correct());
        eprintln!("claim: {} states", v.states);
    }

    #[test]
    fn every_broken_claim_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample("claim", ClaimModel::broken(b), b.violates());
            eprintln!("claim {b:?} breaks {:?}: {steps:?}", b.violates());
        }
    }
}
