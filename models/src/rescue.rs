//! Heartbeats and the rescue of a dead (or presumed dead) client's jobs, with a clock.
//!
//! Client W holds a running job. Its heartbeats may stall, fail or land late at any time (a
//! frozen process, a stuck connection, a process killed), and it may still finish the work long
//! after its job was rescued: a client presumed dead that is still running. The leader (always
//! up here; its own failover is [`crate::leader`]'s) runs the rescuer, which passes when its
//! timer says: at the next client timeout (`client_next_timeout.sql`), at most an interval
//! later. A survivor, S, claims what the rescuer gives back. Each heartbeat writes its
//! statement's `now()` (`heartbeat_at`), which becomes visible only when it commits; the rescue
//! is one statement, reading the heartbeats committed at its start.
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `HeartbeatSend`, `HeartbeatCommit`, `HeartbeatFail` | `client_heartbeat.sql` | `Heartbeat::beat` |
//! | `Pass` (and, broken, `PassRead` + `PassWrite`) | `job_rescue.sql`, then `client_next_timeout.sql` for the next wake | `JobRescuer::pass`, `JobRescuer::next_pass_in` |
//! | `Finish` (W, late) | `job_set_completed_many.sql` | `BatchCompleter::flush` |
//! | `SurvivorClaim`, `SurvivorFinish` | `job_get_available.sql`, `job_set_completed_many.sql` | `Producer::fill_slots`, `BatchCompleter::flush` |
//! | `Tick` | the clock | |
//!
//! A rescue of a job with no attempt left discards it and moves it to the dead-letter queue in
//! the same statement (reason `rescued`); W's job here has attempts left, so it is given back.
//! Left out: which running rows a pass reads for the other two causes, jobs past their hard
//! deadline (a band of attempt times from the last pass's reach, less a margin, and all of them
//! every so many passes) and jobs of clients with no row (a scan spaced by its own cost): both
//! are `JobRescuer::pass`'s `Scans`. The jobs of a client whose heartbeat expired, the cause
//! modelled here, are looked for by every pass.
//!
//! Ticks: client timeout `T` = 3, rescuer interval `I` = 2. The comparison is strict
//! (`heartbeat_at < now() - T`), so a job whose client last heartbeated at `h` is rescued at
//! `h + T + 1` at the latest: the bound (the engine wakes 50 ms past the timeout).
//!
//! Properties: a job never stays running under a client whose last committed heartbeat is
//! older than the bound; no outcome of a superseded claim lands (W's late result after the
//! rescue); no job is rescued from a client whose committed heartbeat is within the timeout when
//! the rescue writes. Examples: W's late outcome dropped; the rescued job completed by S.

use stateright::{Model, Property};

use crate::row::{Fence, JobState, Row};

/// The client timeout, in ticks.
const T: u8 = 3;
/// The rescuer's interval between passes, in ticks.
const I: u8 = 2;
/// The clock stops here.
const HORIZON: u8 = 8;

const W: u8 = 0;
const S: u8 = 1;

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The rescuer reads the heartbeat ages in one statement and rescues in a later one without
    /// looking again: a heartbeat that commits in between does not save the client.
    StaleHeartbeatRead,
    /// The rescuer passes on its interval alone, not at the next client timeout: a dead client's
    /// job waits up to an interval past the bound.
    FixedInterval,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 2] = [Broken::StaleHeartbeatRead, Broken::FixedInterval];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::StaleHeartbeatRead => NO_LIVE_CLIENT_RESCUED,
            Broken::FixedInterval => RESCUED_WITHIN_BOUND,
        }
    }
}

/// A job never stays running under a client past its last committed heartbeat plus `T + 1`.
pub const RESCUED_WITHIN_BOUND: &str = "a dead client's job is rescued within the bound";
/// No rescue takes a job from a client whose committed heartbeat is within the timeout.
pub const NO_LIVE_CLIENT_RESCUED: &str =
    "no job is rescued from a client whose committed heartbeat is within the timeout";
const NO_SUPERSEDED_OUTCOME: &str = "no outcome of a superseded claim lands";
const LATE_OUTCOME_DROPPED: &str = "a presumed-dead client's late outcome is dropped";
const RESCUED_JOB_COMPLETES: &str = "the rescued job is completed by the survivor";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct RescueModel {
    /// `None` for the engine as written.
    pub broken: Option<Broken>,
}

impl RescueModel {
    /// The engine as written.
    pub fn correct() -> Self {
        RescueModel { broken: None }
    }

    /// Broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        RescueModel { broken: Some(b) }
    }
}

/// The database, W, S and the rescuer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RescueState {
    /// The clock.
    pub now: u8,
    /// The job row.
    pub row: Row<u8, u8>,
    /// W's committed `heartbeat_at`.
    pub w_heartbeat: u8,
    /// W's heartbeat statement on its way, with its `now()`.
    pub w_in_flight: Option<u8>,
    /// W still holds its claim (token 1) and will report its outcome.
    pub w_holds: bool,
    /// S holds a claim of the job, under this token.
    pub s_holds: Option<i64>,
    /// When the rescuer passes next.
    pub next_pass: u8,
    /// Broken variant: the clients the last read found dead, waiting for the write.
    pub read_dead: Option<[bool; 2]>,
    /// Ghost: a rescue took a job from a client whose committed heartbeat was within `T`.
    pub live_rescued: bool,
    /// Ghost: a superseded claim's outcome landed.
    pub stale_landed: bool,
    /// Ghost: a superseded claim's outcome was dropped.
    pub stale_dropped: bool,
}

/// A step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The clock moves on (not past the rescuer's timer).
    Tick,
    /// W sends a heartbeat.
    HeartbeatSend,
    /// W's heartbeat commits.
    HeartbeatCommit,
    /// W's heartbeat fails.
    HeartbeatFail,
    /// W's work ends and its completion is flushed (perhaps long after a rescue).
    Finish,
    /// The rescuer's pass: the rescue statement, then the next wake.
    Pass,
    /// Broken: the pass's read of the heartbeats.
    PassRead,
    /// Broken: the pass's rescue, on the earlier read.
    PassWrite,
    /// S claims the available job.
    SurvivorClaim,
    /// S completes it.
    SurvivorFinish,
}

impl RescueModel {
    fn heartbeat_of(s: &RescueState, client: u8) -> u8 {
        // S heartbeats on time throughout.
        if client == S { s.now } else { s.w_heartbeat }
    }

    fn dead(s: &RescueState, client: u8) -> bool {
        u16::from(Self::heartbeat_of(s, client)) + u16::from(T) < u16::from(s.now)
    }

    fn rescue(&self, n: &mut RescueState, dead: [bool; 2]) {
        if n.row.state != JobState::Running {
            return;
        }
        let Some(owner) = n.row.owner else { return };
        if !dead[owner as usize] {
            return;
        }
        if !Self::dead(n, owner) {
            n.live_rescued = true;
        }
        n.row = n.row.rescue().expect("running");
    }

    /// `client_next_timeout.sql`, then `JobRescuer::next_pass_in`.
    fn next_wake(&self, s: &RescueState) -> u8 {
        if self.broken == Some(Broken::FixedInterval) {
            return s.now + I;
        }
        let owner = (s.row.state == JobState::Running)
            .then_some(s.row.owner)
            .flatten();
        let timeouts = [W, S].into_iter().filter_map(|c| {
            let live = !Self::dead(s, c);
            (live || owner == Some(c)).then(|| Self::heartbeat_of(s, c) + T)
        });
        match timeouts.min() {
            // An expired client still owns a running job: look again soon.
            Some(t) if t < s.now => s.now + 1,
            // Just past the timeout: the comparison is strict.
            Some(t) => (t + 1).min(s.now + I),
            None => s.now + I,
        }
    }
}

impl Model for RescueModel {
    type State = RescueState;
    type Action = Action;

    fn init_states(&self) -> Vec<RescueState> {
        let row = Row::inserted(0, 10)
            .claim(W, 1, 0)
            .expect("an inserted row is available");
        vec![RescueState {
            now: 0,
            row,
            w_heartbeat: 0,
            w_in_flight: None,
            w_holds: true,
            s_holds: None,
            next_pass: 0,
            read_dead: None,
            live_rescued: false,
            stale_landed: false,
            stale_dropped: false,
        }]
    }

    fn actions(&self, s: &RescueState, actions: &mut Vec<Action>) {
        let passing = s.read_dead.is_some();
        if s.now < HORIZON && s.now < s.next_pass && !passing {
            actions.push(Action::Tick);
        }
        if s.w_in_flight.is_none() {
            actions.push(Action::HeartbeatSend);
        } else {
            actions.push(Action::HeartbeatCommit);
            actions.push(Action::HeartbeatFail);
        }
        if s.w_holds {
            actions.push(Action::Finish);
        }
        if s.now >= s.next_pass {
            match (self.broken, passing) {
                (Some(Broken::StaleHeartbeatRead), false) => actions.push(Action::PassRead),
                (Some(Broken::StaleHeartbeatRead), true) => actions.push(Action::PassWrite),
                _ => actions.push(Action::Pass),
            }
        }
        if s.s_holds.is_none() && s.row.state == JobState::Available {
            actions.push(Action::SurvivorClaim);
        }
        if s.s_holds.is_some() {
            actions.push(Action::SurvivorFinish);
        }
    }

    fn next_state(&self, s: &RescueState, action: Action) -> Option<RescueState> {
        let mut n = s.clone();
        match action {
            Action::Tick => n.now += 1,
            Action::HeartbeatSend => n.w_in_flight = Some(s.now),
            Action::HeartbeatCommit => {
                n.w_heartbeat = s.w_in_flight?.max(s.w_heartbeat);
                n.w_in_flight = None;
            }
            Action::HeartbeatFail => n.w_in_flight = None,
            Action::Finish => {
                n.w_holds = false;
                let current = s.row.state == JobState::Running && s.row.token == Some(1);
                match s.row.set_completed(1, 1, Fence::AttemptAndToken) {
                    Some(row) => {
                        n.stale_landed |= !current;
                        n.row = row;
                    }
                    None => n.stale_dropped |= !current,
                }
            }
            Action::Pass => {
                let dead = [Self::dead(s, W), Self::dead(s, S)];
                self.rescue(&mut n, dead);
                n.next_pass = self.next_wake(&n);
            }
            Action::PassRead => n.read_dead = Some([Self::dead(s, W), Self::dead(s, S)]),
            Action::PassWrite => {
                let dead = s.read_dead?;
                n.read_dead = None;
                self.rescue(&mut n, dead);
                n.next_pass = self.next_wake(&n);
            }
            Action::SurvivorClaim => {
                n.row = s.row.claim(S, 2, s.now)?;
                n.s_holds = Some(2);
            }
            Action::SurvivorFinish => {
                let token = s.s_holds?;
                n.s_holds = None;
                let current = s.row.state == JobState::Running && s.row.token == Some(token);
                if let Some(row) = s
                    .row
                    .set_completed(s.row.attempt, token, Fence::AttemptAndToken)
                {
                    n.stale_landed |= !current;
                    n.row = row;
                }
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(RESCUED_WITHIN_BOUND, |_, s: &RescueState| {
                !(s.row.state == JobState::Running
                    && s.row.owner == Some(W)
                    && u16::from(s.w_heartbeat) + u16::from(T) + 1 < u16::from(s.now))
            }),
            Property::always(NO_LIVE_CLIENT_RESCUED, |_, s: &RescueState| !s.live_rescued),
            Property::always(NO_SUPERSEDED_OUTCOME, |_, s: &RescueState| !s.stale_landed),
            Property::sometimes(LATE_OUTCOME_DROPPED, |_, s: &RescueState| s.stale_dropped),
            Property::sometimes(RESCUED_JOB_COMPLETES, |_, s: &RescueState| {
                s.row.state == JobState::Completed && s.row.owner == Some(S)
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn rescue_meets_its_bound_and_fences_the_presumed_dead() {
        let v = assert_holds("rescue", RescueModel::correct());
        eprintln!("rescue: {} states", v.states);
    }

    #[test]
    fn every_broken_rescue_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample("rescue", RescueModel::broken(b), b.violates());
            eprintln!("rescue {b:?} breaks {:?}: {steps:?}", b.violates());
        }
    }
}
