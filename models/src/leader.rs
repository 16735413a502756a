//! Leader election: a lease with terms, renewal, resignation, takeover of a leader whose heartbeat
//! stopped, and the leader's own trust windows.
//!
//! One row holds the lease; `(leader_id, elected_at)` names the term. A follower takes the lease
//! when it expired or its leader's client row has not heartbeated for the client timeout
//! (`leader_attempt_elect.sql`), and only while its own heartbeat lands. A leader renews only its
//! own term (`leader_attempt_reelect.sql`), resigns only its own term when it stops
//! (`leader_resign.sql`), and trusts its term only until 3/4 of a lease after sending its last
//! successful renewal and 3/4 of the client timeout after sending its last successful heartbeat.
//! Statements a process gave up on or sent as it stopped still run on the server, later. Process
//! P0 may stop and start again under the same client id (an id set in the configuration), while
//! its resignation is still on its way.
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `HeartbeatSend`, `HeartbeatLand` | `client_heartbeat.sql` (`client_register.sql` after a start) | `Heartbeat::run` → `LastBeat::record` |
//! | `Elect` | `leader_attempt_elect.sql` | `Elector::run` (follower) |
//! | `ReelectSend`, `ReelectRun` | `leader_attempt_reelect.sql` | `Elector::run` (leader) |
//! | `StepDown` | (none: the trust window ended) | `Elector::step_down` |
//! | `Stop`, `ResignRun` | `leader_resign.sql` | `Elector::resign` |
//! | `Restart` | (a new process with the same client id) | `Client::start` |
//! | `Tick` | the clock | |
//!
//! A process leads while it holds a term and trusts it (`now` before its trust windows end);
//! its maintenance services follow the `is_leader` flag, which the elector clears when it wakes at
//! the end of the window (a process frozen past its window clears it when it resumes: the
//! services it runs are safe when two leaders overlap, see [`crate::periodic`]).
//!
//! Ticks: lease 4 (trusted 3), client timeout 4 (trusted 3), horizon 5; at most one renewal of
//! each process on its way at a time. The database compares
//! strictly (`expires_at < now()`, `heartbeat_at < now() - timeout`).
//!
//! Properties: at most one process leads at a time; a lease ends no later than one lease after
//! its own term's last renewal ran (so a dead leader is replaced on time). Examples: leadership
//! changes hands; a resignation hands over before the lease ends; a leader whose heartbeat
//! stopped is taken over before its lease ends.

use stateright::{Model, Property};

const LEASE: u8 = 4;
const LEASE_TRUST: u8 = 3;
const TIMEOUT: u8 = 4;
const HEARTBEAT_TRUST: u8 = 3;
const HORIZON: u8 = 5;

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// Resignation deletes the lease by leader id alone, not by term: a stopped process's late
    /// resignation ends the term its restarted successor (same id) won, and another client is
    /// elected while that successor still leads.
    ResignNotScopedToTerm,
    /// Renewal extends whatever unexpired term the row holds: a deposed leader's late renewal
    /// extends its successor's lease past one lease from the successor's own renewal.
    ReelectAnyTerm,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 2] = [Broken::ResignNotScopedToTerm, Broken::ReelectAnyTerm];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::ResignNotScopedToTerm => AT_MOST_ONE_LEADER,
            Broken::ReelectAnyTerm => LEASE_BOUNDED,
        }
    }
}

/// At most one process leads (holds a term it trusts) at any time.
pub const AT_MOST_ONE_LEADER: &str = "at most one process leads at a time";
/// A lease ends within one lease of its own term's last renewal.
pub const LEASE_BOUNDED: &str = "a lease ends within one lease of its own last renewal";
const HANDS_CHANGE: &str = "leadership changes hands";
const RESIGN_HANDS_OVER: &str = "a resignation hands over before the lease ends";
const STALE_LEADER_TAKEN_OVER: &str = "a leader whose heartbeat stopped is taken over early";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct LeaderModel {
    /// `None` for the engine as written.
    pub broken: Option<Broken>,
}

impl LeaderModel {
    /// The engine as written.
    pub fn correct() -> Self {
        LeaderModel { broken: None }
    }

    /// Broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        LeaderModel { broken: Some(b) }
    }
}

/// The lease row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lease {
    /// `leader_id`: a client id (0 or 1).
    pub leader: u8,
    /// `elected_at`.
    pub elected_at: u8,
    /// `expires_at`.
    pub expires_at: u8,
    /// Ghost: when the term's own election or renewal last ran.
    pub own_renewal: u8,
}

/// A statement on its way to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pending {
    /// A renewal of the term `(leader, elected_at)`, sent at `sent` by process generation `by`.
    Reelect {
        /// The process (its index and generation).
        by: (u8, u8),
        /// The term's leader id.
        leader: u8,
        /// The term's start.
        elected_at: u8,
        /// When it was sent.
        sent: u8,
    },
    /// A resignation of the term `(leader, elected_at)`.
    Resign {
        /// The term's leader id.
        leader: u8,
        /// The term's start.
        elected_at: u8,
    },
}

/// One process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Proc {
    /// Running (not stopped).
    pub up: bool,
    /// Starts so far, less one.
    pub generation: u8,
    /// The term it holds: its start, and when its last successful renewal was sent.
    pub term: Option<(u8, u8)>,
    /// When its last successful heartbeat was sent.
    pub last_beat: Option<u8>,
    /// Its heartbeat on its way, with its `now()`.
    pub beat_in_flight: Option<u8>,
    /// It has a renewal on its way.
    pub renewing: bool,
}

/// The database and the processes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeaderState {
    /// The clock.
    pub now: u8,
    /// The lease row.
    pub lease: Option<Lease>,
    /// Committed `heartbeat_at` per client id.
    pub heartbeat_at: [Option<u8>; 2],
    /// The processes; process `i` has client id `i`.
    pub procs: [Proc; 2],
    /// Statements sent and not yet run, sorted.
    pub pending: Vec<Pending>,
    /// Ghost: elections so far, up to 2.
    pub elections: u8,
    /// Ghost: an election right after a resignation, before the lease would have expired.
    pub resign_handed_over: bool,
    /// Ghost: an election over an unexpired lease whose leader's heartbeat was stale.
    pub stale_taken_over: bool,
}

/// A step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The clock moves on.
    Tick,
    /// A process sends a heartbeat.
    HeartbeatSend(u8),
    /// Its heartbeat commits and succeeds.
    HeartbeatLand(u8),
    /// A follower tries to take the lease.
    Elect(u8),
    /// The leader sends a renewal.
    ReelectSend(u8),
    /// A pending renewal runs (and its reply reaches its process, if it still waits).
    ReelectRun(usize),
    /// A leader past its trust window steps down.
    StepDown(u8),
    /// A process stops: it stops leading and sends its resignation.
    Stop(u8),
    /// A pending resignation runs.
    ResignRun(usize),
    /// Process 0 starts again with the same client id.
    Restart,
}

impl LeaderModel {
    fn trust_until(p: &Proc) -> Option<u8> {
        let (_, renewed) = p.term?;
        let beat = p.last_beat?;
        Some((renewed + LEASE_TRUST).min(beat + HEARTBEAT_TRUST))
    }

    fn leads(s: &LeaderState, p: &Proc) -> bool {
        p.up && Self::trust_until(p).is_some_and(|t| s.now < t)
    }
}

impl Model for LeaderModel {
    type State = LeaderState;
    type Action = Action;

    fn init_states(&self) -> Vec<LeaderState> {
        let p = Proc {
            up: true,
            generation: 0,
            term: None,
            last_beat: None,
            beat_in_flight: None,
            renewing: false,
        };
        vec![LeaderState {
            now: 0,
            lease: None,
            heartbeat_at: [None; 2],
            procs: [p, p],
            pending: Vec::new(),
            elections: 0,
            resign_handed_over: false,
            stale_taken_over: false,
        }]
    }

    fn actions(&self, s: &LeaderState, actions: &mut Vec<Action>) {
        if s.now < HORIZON {
            actions.push(Action::Tick);
        }
        for (i, p) in s.procs.iter().enumerate() {
            let i = i as u8;
            if !p.up {
                if i == 0 && p.generation == 0 {
                    actions.push(Action::Restart);
                }
                continue;
            }
            if p.beat_in_flight.is_none() {
                actions.push(Action::HeartbeatSend(i));
            } else {
                // A heartbeat that fails is one that never lands; sending another later is the
                // same as having sent this one later.
                actions.push(Action::HeartbeatLand(i));
            }
            match p.term {
                None => {
                    if p.last_beat.is_some_and(|b| s.now < b + HEARTBEAT_TRUST) {
                        actions.push(Action::Elect(i));
                    }
                }
                Some(_) => {
                    if Self::leads(s, p) && !p.renewing {
                        // One renewal on its way at a time per process (a bound of the model:
                        // the engine may send another once it gave up on one).
                        actions.push(Action::ReelectSend(i));
                    }
                    if !Self::leads(s, p) {
                        actions.push(Action::StepDown(i));
                    }
                }
            }
            actions.push(Action::Stop(i));
        }
        for (k, stmt) in s.pending.iter().enumerate() {
            match stmt {
                Pending::Reelect { .. } => actions.push(Action::ReelectRun(k)),
                Pending::Resign { .. } => actions.push(Action::ResignRun(k)),
            }
        }
    }

    fn next_state(&self, s: &LeaderState, action: Action) -> Option<LeaderState> {
        let mut n = s.clone();
        let now = s.now;
        match action {
            Action::Tick => n.now += 1,
            Action::HeartbeatSend(i) => n.procs[i as usize].beat_in_flight = Some(now),
            Action::HeartbeatLand(i) => {
                let p = &mut n.procs[i as usize];
                let sent = p.beat_in_flight.take()?;
                p.last_beat = Some(sent);
                let hb = &mut n.heartbeat_at[i as usize];
                *hb = Some(hb.map_or(sent, |h| h.max(sent)));
            }
            Action::Elect(i) => {
                let takeover = match s.lease {
                    None => true,
                    Some(l) => {
                        let expired = l.expires_at < now;
                        let stale = s.heartbeat_at[l.leader as usize]
                            .is_some_and(|h| u16::from(h) + u16::from(TIMEOUT) < u16::from(now));
                        if !expired && stale {
                            n.stale_taken_over = true;
                        }
                        expired || stale
                    }
                };
                if !takeover {
                    return None;
                }
                n.lease = Some(Lease {
                    leader: i,
                    elected_at: now,
                    expires_at: now + LEASE,
                    own_renewal: now,
                });
                n.procs[i as usize].term = Some((now, now));
                n.elections = (n.elections + 1).min(2);
            }
            Action::ReelectSend(i) => {
                let p = &mut n.procs[i as usize];
                let (elected_at, _) = p.term?;
                p.renewing = true;
                n.pending.push(Pending::Reelect {
                    by: (i, p.generation),
                    leader: i,
                    elected_at,
                    sent: now,
                });
                n.pending.sort();
            }
            Action::ReelectRun(k) => {
                let Pending::Reelect {
                    by,
                    leader,
                    elected_at,
                    sent,
                } = n.pending.remove(k)
                else {
                    return None;
                };
                let renewed = match n.lease.as_mut() {
                    Some(l) if l.expires_at >= now => {
                        let own = l.leader == leader && l.elected_at == elected_at;
                        if own || self.broken == Some(Broken::ReelectAnyTerm) {
                            l.expires_at = now + LEASE;
                            if own {
                                l.own_renewal = now;
                            }
                            true
                        } else {
                            false
                        }
                    }
                    _ => false,
                };
                // The reply reaches the process that sent it, if it still waits: it gave up at
                // the end of its trust window.
                let (i, generation) = by;
                let trusted = Self::leads(&n, &n.procs[i as usize]);
                let p = &mut n.procs[i as usize];
                if p.up && p.generation == generation {
                    p.renewing = false;
                    if p.term.is_some_and(|(e, _)| e == elected_at) && trusted {
                        p.term = if renewed {
                            Some((elected_at, sent))
                        } else {
                            None
                        };
                    }
                }
            }
            // A renewal still on its way stays so: the process sends no other until it has run.
            Action::StepDown(i) => n.procs[i as usize].term = None,
            Action::Stop(i) => {
                let p = &mut n.procs[i as usize];
                if let Some((elected_at, _)) = p.term {
                    n.pending.push(Pending::Resign {
                        leader: i,
                        elected_at,
                    });
                    n.pending.sort();
                }
                *p = Proc {
                    up: false,
                    term: None,
                    beat_in_flight: None,
                    renewing: false,
                    ..*p
                };
            }
            Action::ResignRun(k) => {
                let Pending::Resign { leader, elected_at } = n.pending.remove(k) else {
                    return None;
                };
                if let Some(l) = s.lease {
                    let matches = l.leader == leader
                        && (l.elected_at == elected_at
                            || self.broken == Some(Broken::ResignNotScopedToTerm));
                    if matches {
                        n.lease = None;
                        if l.expires_at >= now {
                            n.resign_handed_over = true;
                        }
                    }
                }
            }
            Action::Restart => {
                let p = &mut n.procs[0];
                *p = Proc {
                    up: true,
                    generation: p.generation + 1,
                    term: None,
                    last_beat: None,
                    beat_in_flight: None,
                    renewing: false,
                };
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(AT_MOST_ONE_LEADER, |_, s: &LeaderState| {
                s.procs.iter().filter(|p| Self::leads(s, p)).count() <= 1
            }),
            Property::always(LEASE_BOUNDED, |_, s: &LeaderState| {
                s.lease
                    .is_none_or(|l| l.expires_at <= l.own_renewal + LEASE)
            }),
            Property::sometimes(HANDS_CHANGE, |_, s: &LeaderState| s.elections >= 2),
            Property::sometimes(RESIGN_HANDS_OVER, |_, s: &LeaderState| {
                s.resign_handed_over && s.elections >= 2
            }),
            Property::sometimes(STALE_LEADER_TAKEN_OVER, |_, s: &LeaderState| {
                s.stale_taken_over
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn one_leader_at_a_time_and_leases_end_on_time() {
        let v = assert_holds("leader", LeaderModel::correct());
        eprintln!("leader: {} states", v.states);
    }

    #[test]
    fn every_broken_leader_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample("leader", LeaderModel::broken(b), b.violates());
            eprintln!("leader {b:?} breaks {:?}: {steps:?}", b.violates());
        }
    }
}
