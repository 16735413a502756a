//! Claims, fencing tokens, completion batches and late results.
//!
//! Two clients claim two jobs, work them, and record outcomes in batches, while everything that
//! can take a claim away from its holder happens at any moment: the rescuer gives a running job
//! back (its client is presumed dead, though it may be running still: frozen, or cut off), the
//! claiming client's own heartbeat releases a claim it does not hold (a fetch whose reply was
//! lost, or arrives later than the fresh-claim margin: see [`crate::orphan`] for the margin
//! itself). A client may stop acting at any point (a crash, a freeze): every behaviour where it
//! acts no more is a prefix of one where it does, and the rescuer takes its jobs back. The
//! claim's reply may arrive after its rows were released and claimed again; the client then works
//! the job anyway, as the producer does, and its outcome must change nothing. A producer sends its
//! next claim as soon as the last one's reply arrived, before that reply's claims are registered,
//! so a client may have two fetches committed and not yet registered.
//!
//! Job 1 is a unique job whose key stays taken when completed (the default unique states): its
//! completion keeps it, completed, in the job table, so the lean completion leaves it running and
//! the completer records it with the general statement, a statement of its own after the lean
//! one. Job 0 is a plain job: a completion moves it to the history in the statement that
//! completes it ([`Row::table`]).
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `Claim` | `job_get_available.sql`, `job_get_available_after.sql`, `job_get_available_between.sql` | `Producer::fill_slots` → `Producer::send_claim` → `query::job_get_available` |
//! | `Register` | (none: the reply's claims enter `InFlight`) | `Producer::fill_slots` → `InFlight::add_all` |
//! | `LoseReply` | (none: the fetch failed after committing) | `Producer::run` → `InFlight::request_reconcile` |
//! | `Finish` | (none: the executor hands its outcome to the completer) | `JobExecutor`, `Completion` |
//! | `Flush` | `job_set_completed_many.sql` (or `job_set_completed_many_count.sql`, without rows) when every outcome is a completion, else `job_set_state_if_running_many.sql` | `BatchCompleter::flush`, then `InFlight::remove_all` unless a general statement follows |
//! | `FlushRest` | `job_set_state_if_running_many.sql` for the whole batch, when the lean statement recorded fewer outcomes than the batch holds | `BatchCompleter::flush` → `BatchCompleter::record_outcomes`, then `InFlight::remove_all` |
//! | `ReleaseOrphans` | `job_release_orphaned.sql` | `Heartbeat::release_orphaned` |
//! | `Rescue` | `job_rescue.sql` | `JobRescuer::pass` |
//! | `Schedule` | `job_schedule.sql` | `JobScheduler::run_once` |
//!
//! Each batch statement is one statement, so its rows change together; each row is fenced on its
//! own. A claim here takes any subset of the available jobs: where a claim's scan starts and
//! stops (the producer's position, its detours behind it after a rewind, the claims from the
//! head) decides only which available jobs a claim can reach, which guards no transition of a
//! job and is left out; so is the scheduler's band of due times (`job_schedule.sql`'s `$3`: where
//! its scan of due rows starts), which decides which due rows a pass looks at, not what it does
//! to one; the rewind announcements the outcome, release, rescue and scheduler statements send
//! change no row.
//!
//! Properties: no outcome of a superseded claim lands; a row is running exactly while it carries
//! a claim's token; a finished job is never moved again; an outcome the completer flushed for the
//! claim its job still runs lands before the completer forgets the claim. Examples the bounds must
//! reach: a late outcome dropped, an attempt number claimed a second time (what makes the attempt
//! alone unfit as a fence), both jobs completed (job 0 moved to the history, job 1 kept in the job
//! table).
//!
//! Outcomes: a completion, a retry (attempt kept), and an interrupt (a hard stop, or a buffered
//! job given back), which gives the attempt back. (A snooze gives it back too, to `scheduled`;
//! cancel and discard end the job like a completion, for the history or the dead-letter queue:
//! the moves themselves are [`crate::storage`]'s.)
//!
//! Bounds: 2 clients, 2 jobs, 2 claims (tokens) in all, 3 attempts per job.

use stateright::{Model, Property};

use crate::row::{Fence, JobState, KeptIn, Outcome, Row, Table};

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
    /// The completer trusts the lean completion alone and forgets the batch's claims after it:
    /// the unique job it leaves running (its key stays taken when completed) is never recorded,
    /// and stays running under a claim nobody holds.
    NoGeneralFallback,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 2] = [Broken::AttemptOnlyFence, Broken::NoGeneralFallback];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::AttemptOnlyFence => NO_SUPERSEDED_OUTCOME,
            Broken::NoGeneralFallback => NO_CURRENT_OUTCOME_LOST,
        }
    }
}

/// No outcome of a claim that is no longer the row's current claim changes the row.
pub const NO_SUPERSEDED_OUTCOME: &str = "no outcome of a superseded claim lands";
/// The completer forgets a claim only once its outcome landed, or the claim was superseded.
pub const NO_CURRENT_OUTCOME_LOST: &str =
    "an outcome flushed for its job's current claim lands before the claim is forgotten";
const RUNNING_HAS_TOKEN: &str = "a row is running exactly while it carries a token";
const FINAL_STAYS_FINAL: &str = "a finished job is never moved again";
const LATE_OUTCOME_DROPPED: &str = "a late outcome of a superseded claim is dropped";
const ATTEMPT_REUSED: &str = "an attempt number is claimed a second time";
const BOTH_COMPLETE: &str =
    "both jobs complete, the plain one in the history, the unique one in the job table";

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
            _ => Fence::AttemptAndToken,
        }
    }

    /// Applies one statement's outcome for `h` to its row, recording in the ghosts whether it
    /// landed on the current claim or a superseded one.
    fn record(n: &mut ClaimState, h: &Claimed, after: Option<Row<u8, u8>>) {
        let j = h.job as usize;
        let before = n.rows[j];
        let current = before.state == JobState::Running && before.token == Some(h.token);
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

    /// The completer forgets the claims of `batch` (`InFlight::remove_all`): any whose job still
    /// runs that claim lost its outcome.
    fn forget(n: &mut ClaimState, client: u8, batch: &[Claimed]) {
        for h in batch {
            let row = n.rows[h.job as usize];
            if row.state == JobState::Running && row.token == Some(h.token) {
                n.current_lost = true;
            }
        }
        n.clients[client as usize]
            .held
            .retain(|c| !batch.iter().any(|b| b.token == c.token && b.job == c.job));
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
    /// Claims committed whose reply the producer has not taken in yet, oldest fetch first.
    pub in_transit: Vec<Claimed>,
    /// The claims the client holds (`InFlight`): working, or their outcome queued or being
    /// recorded.
    pub held: Vec<Claimed>,
    /// A flush whose lean statement recorded fewer outcomes than its batch holds: the batch,
    /// for the general statement that follows, each with whether the lean statement recorded it.
    pub flushing: Option<Vec<(Claimed, bool)>>,
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
    /// Ghost: the completer forgot a claim its job still ran, its outcome not recorded.
    pub current_lost: bool,
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
    /// The completer flushes every queued outcome in one statement, then forgets those claims,
    /// unless the lean statement recorded fewer than the batch holds.
    Flush {
        /// The client.
        client: u8,
    },
    /// The completer records the rest of the batch with the general statement, then forgets
    /// the batch's claims.
    FlushRest {
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
            flushing: None,
        };
        let plain = Row::inserted(0, MAX_ATTEMPTS);
        vec![ClaimState {
            rows: [plain, plain.with_unique(KeptIn::COMPLETED)],
            clients: [client.clone(), client],
            tokens: 0,
            attempts_claimed: [0; JOBS],
            attempt_reused: false,
            stale_landed: false,
            stale_dropped: false,
            final_moved: false,
            current_lost: false,
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
            // At most two fetches on their way: the next claim is sent once the last one's reply
            // arrived, before its claims are registered.
            let fetches = cl.in_transit.iter().map(|c| c.token).collect::<Vec<_>>();
            let in_transit = fetches.first().map_or(0, |first| {
                if fetches.iter().all(|t| t == first) {
                    1
                } else {
                    2
                }
            });
            if s.tokens < MAX_TOKENS && in_transit < 2 {
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
            if cl.flushing.is_some() {
                actions.push(Action::FlushRest { client });
            } else if cl.held.iter().any(|h| h.outcome.is_some()) {
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
                // The oldest fetch's claims.
                let cl = &mut n.clients[client as usize];
                let oldest = cl.in_transit.first()?.token;
                let (arrived, later) = cl.in_transit.iter().partition(|c| c.token == oldest);
                cl.in_transit = later;
                cl.held.extend::<Vec<Claimed>>(arrived);
                cl.held.sort();
            }
            Action::LoseReply { client } => {
                // The newest fetch's reply (an earlier one arrived before it was sent).
                let cl = &mut n.clients[client as usize];
                let newest = cl.in_transit.last()?.token;
                cl.in_transit.retain(|c| c.token != newest);
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
                let batch: Vec<Claimed> = n.clients[client as usize]
                    .held
                    .iter()
                    .filter(|h| h.outcome.is_some())
                    .copied()
                    .collect();
                let lean = batch.iter().all(|h| h.outcome == Some(Outcome::Complete));
                let mut recorded = Vec::new();
                for h in &batch {
                    let before = n.rows[h.job as usize];
                    let outcome = h.outcome.expect("filtered on it");
                    let after = if lean {
                        before.set_completed(h.attempt, h.token, self.fence())
                    } else {
                        before.set_state_if_running(h.attempt, h.token, outcome, self.fence())
                    };
                    recorded.push((*h, after.is_some()));
                    Self::record(&mut n, h, after);
                }
                if lean
                    && recorded.iter().any(|(_, r)| !r)
                    && self.broken != Some(Broken::NoGeneralFallback)
                {
                    n.clients[client as usize].flushing = Some(recorded);
                } else {
                    Self::forget(&mut n, client, &batch);
                }
            }
            Action::FlushRest { client } => {
                let flushing = n.clients[client as usize].flushing.take()?;
                for (h, recorded) in &flushing {
                    let before = n.rows[h.job as usize];
                    let outcome = h.outcome.expect("a flushed outcome");
                    let after =
                        before.set_state_if_running(h.attempt, h.token, outcome, self.fence());
                    match after {
                        // Recorded by the lean statement: its row left the job table, and the
                        // general statement finds nothing to do (landing again is stale).
                        None if *recorded => {}
                        Some(row) if *recorded => {
                            n.stale_landed = true;
                            n.rows[h.job as usize] = row;
                        }
                        _ => Self::record(&mut n, h, after),
                    }
                }
                let batch: Vec<Claimed> = flushing.iter().map(|(h, _)| *h).collect();
                Self::forget(&mut n, client, &batch);
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
            Property::always(NO_CURRENT_OUTCOME_LOST, |_, s: &ClaimState| !s.current_lost),
            Property::sometimes(BOTH_COMPLETE, |_, s: &ClaimState| {
                s.rows.iter().all(|r| r.state == JobState::Completed)
                    && s.rows[0].table == Table::Done
                    && s.rows[1].table == Table::Job
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
