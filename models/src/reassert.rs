//! The re-assert after a failover, including an id handed out again by the promoted replica.
//!
//! An asynchronous replica lags its primary; a failover promotes it, losing every commit it had
//! not received. Clients keep their held claims across it. A client's heartbeat that finds its
//! row gone (the client table is UNLOGGED, and the promoted replica's is empty) re-asserts the
//! claims it still runs (`job_reassert_running.sql`): a lost claim puts its row back to running
//! under the client, with the claim's attempt, token and start time. The promoted replica's id
//! sequence continues from what it replayed, so the ids of lost inserts go to the next jobs
//! inserted; the row with a lost job's id may be another job, created later.
//!
//! | action | statement | Rust |
//! |---|---|---|
//! | `Insert` | `job_insert_one.sql` (any insert: a new id from the sequence, `created_at = now()`) | `Inserter` |
//! | `Replicate` | (streaming replication up to now) | |
//! | `Failover` | (the replica is promoted) | |
//! | `Claim` | `job_get_available.sql` | `Producer::fill_slots` |
//! | `Complete` | `job_set_completed_many.sql` | `BatchCompleter::flush` |
//! | `Reassert` | `client_heartbeat.sql` finds no row, `client_register.sql`, `job_reassert_running.sql` | `Heartbeat::beat` |
//!
//! A completed job leaves the job table in the statement that completes it; a re-assert reads
//! the job table only, so it can never put a completed job back to running.
//!
//! Properties: an outcome lands only on the job its claim ran (the row's `created_at` is the
//! claimed job's); no outcome of a superseded claim lands. Examples: a lost claim re-asserted; a
//! lost job's id handed out again.
//!
//! Bounds: 2 clients, 2 inserts, 3 claims, one failover.

use stateright::{Model, Property};

use crate::row::{Fence, HeldClaim, JobState, Row};

const CLIENTS: usize = 2;
const MAX_INSERTS: u8 = 2;
const MAX_TOKENS: i64 = 3;

/// The ways this model can be broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Broken {
    /// The re-assert matches the job by id alone, not by id and `created_at`: a later job that
    /// the promoted replica gave the lost job's id is taken over, and completed with the lost
    /// job's outcome without ever running.
    IdOnly,
}

impl Broken {
    /// Every broken variant.
    pub const ALL: [Broken; 1] = [Broken::IdOnly];

    /// The property the checker must find a counterexample to.
    pub fn violates(self) -> &'static str {
        match self {
            Broken::IdOnly => OUTCOME_ON_ITS_JOB,
        }
    }
}

/// An outcome lands only on the job (id and `created_at`) its claim ran.
pub const OUTCOME_ON_ITS_JOB: &str = "an outcome lands only on the job its claim ran";
const NO_SUPERSEDED_OUTCOME: &str = "no outcome of a superseded claim lands";
const CLAIM_REASSERTED: &str = "a lost claim is re-asserted";
const ID_HANDED_OUT_AGAIN: &str = "a lost job's id is handed out again";

/// The model: correct, or broken one way.
#[derive(Debug, Clone)]
pub struct ReassertModel {
    /// `None` for the engine as written.
    pub broken: Option<Broken>,
}

impl ReassertModel {
    /// The engine as written.
    pub fn correct() -> Self {
        ReassertModel { broken: None }
    }

    /// Broken as `b` says.
    pub fn broken(b: Broken) -> Self {
        ReassertModel { broken: Some(b) }
    }
}

/// One database: the job rows by id, and the id sequence.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Db {
    /// `(id, row)`, by id.
    pub rows: Vec<(u8, Row<u8, u8>)>,
    /// The next id the sequence hands out.
    pub next_id: u8,
}

impl Db {
    fn row_mut(&mut self, id: u8) -> Option<&mut Row<u8, u8>> {
        self.rows.iter_mut().find(|(i, _)| *i == id).map(|(_, r)| r)
    }
}

/// A client: the claims it holds, and whether it has yet to notice the failover.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Client {
    /// `(job id, claim)`.
    pub held: Vec<(u8, HeldClaim<u8>)>,
    /// Its heartbeat has not yet found its row gone since the failover.
    pub must_reassert: bool,
}

/// The primary, the replica and the clients.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReassertState {
    /// What clients talk to.
    pub primary: Db,
    /// What the replica has replayed.
    pub replica: Db,
    /// The wall clock: every insert and claim reads a later `now()`.
    pub clock: u8,
    /// Inserts so far.
    pub inserts: u8,
    /// Tokens handed out.
    pub tokens: i64,
    /// The clients.
    pub clients: [Client; CLIENTS],
    /// Whether the failover happened.
    pub failed_over: bool,
    /// Ghost: an outcome landed on a job other than the one its claim ran.
    pub wrong_job: bool,
    /// Ghost: a superseded claim's outcome landed.
    pub stale_landed: bool,
    /// Ghost: a lost claim was re-asserted.
    pub reasserted: bool,
    /// Ghost: an id was handed out to two jobs.
    pub id_reused: bool,
}

/// A step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The application inserts a job.
    Insert,
    /// The replica catches up.
    Replicate,
    /// The replica is promoted; the primary's later commits are lost.
    Failover,
    /// A client claims the job with this id.
    Claim {
        /// The client.
        client: u8,
        /// The job's id.
        id: u8,
    },
    /// A client's work on the job with this id ends and its completion is flushed.
    Complete {
        /// The client.
        client: u8,
        /// The job's id.
        id: u8,
    },
    /// A client's heartbeat finds its row gone and re-asserts its held claims.
    Reassert {
        /// The client.
        client: u8,
    },
}

impl Model for ReassertModel {
    type State = ReassertState;
    type Action = Action;

    fn init_states(&self) -> Vec<ReassertState> {
        let db = Db {
            rows: Vec::new(),
            next_id: 1,
        };
        let client = Client {
            held: Vec::new(),
            must_reassert: false,
        };
        vec![ReassertState {
            primary: db.clone(),
            replica: db,
            clock: 1,
            inserts: 0,
            tokens: 0,
            clients: [client.clone(), client],
            failed_over: false,
            wrong_job: false,
            stale_landed: false,
            reasserted: false,
            id_reused: false,
        }]
    }

    fn actions(&self, s: &ReassertState, actions: &mut Vec<Action>) {
        if s.inserts < MAX_INSERTS {
            actions.push(Action::Insert);
        }
        if s.replica != s.primary && !s.failed_over {
            actions.push(Action::Replicate);
        }
        if !s.failed_over {
            actions.push(Action::Failover);
        }
        for (c, cl) in s.clients.iter().enumerate() {
            let client = c as u8;
            if s.tokens < MAX_TOKENS {
                for (id, r) in &s.primary.rows {
                    if r.state == JobState::Available {
                        actions.push(Action::Claim { client, id: *id });
                    }
                }
            }
            for (id, _) in &cl.held {
                actions.push(Action::Complete { client, id: *id });
            }
            if cl.must_reassert {
                actions.push(Action::Reassert { client });
            }
        }
    }

    fn next_state(&self, s: &ReassertState, action: Action) -> Option<ReassertState> {
        let mut n = s.clone();
        match action {
            Action::Insert => {
                let id = n.primary.next_id;
                n.primary.next_id += 1;
                n.inserts += 1;
                n.primary.rows.push((id, Row::inserted(n.clock, 10)));
                n.clock += 1;
                if s.failed_over && s.replica.next_id <= id {
                    n.id_reused = true;
                }
            }
            Action::Replicate => n.replica = s.primary.clone(),
            Action::Failover => {
                n.primary = s.replica.clone();
                n.failed_over = true;
                for c in &mut n.clients {
                    c.must_reassert = true;
                }
            }
            Action::Claim { client, id } => {
                n.tokens += 1;
                let now = n.clock;
                n.clock += 1;
                let row = n.primary.row_mut(id)?;
                *row = row.claim(client, n.tokens, now)?;
                let claim = HeldClaim {
                    attempt: row.attempt,
                    token: n.tokens,
                    attempted_at: now,
                    created_at: row.created_at,
                };
                n.clients[client as usize].held.push((id, claim));
                n.clients[client as usize].held.sort();
            }
            Action::Complete { client, id } => {
                let held = &mut n.clients[client as usize].held;
                let at = held.iter().position(|(i, _)| *i == id)?;
                let (_, claim) = held.remove(at);
                if let Some(row) = n.primary.row_mut(id) {
                    let current = row.state == JobState::Running && row.token == Some(claim.token);
                    if let Some(done) =
                        row.set_completed(claim.attempt, claim.token, Fence::AttemptAndToken)
                    {
                        n.stale_landed |= !current;
                        n.wrong_job |= row.created_at != claim.created_at;
                        *row = done;
                    }
                }
            }
            Action::Reassert { client } => {
                n.clients[client as usize].must_reassert = false;
                let check_created = self.broken != Some(Broken::IdOnly);
                for (id, claim) in s.clients[client as usize].held.clone() {
                    if let Some(row) = n.primary.row_mut(id)
                        && let Some(r) = row.reassert(client, claim, check_created)
                    {
                        *row = r;
                        n.reasserted = true;
                    }
                }
            }
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(OUTCOME_ON_ITS_JOB, |_, s: &ReassertState| !s.wrong_job),
            Property::always(NO_SUPERSEDED_OUTCOME, |_, s: &ReassertState| {
                !s.stale_landed
            }),
            Property::sometimes(CLAIM_REASSERTED, |_, s: &ReassertState| s.reasserted),
            Property::sometimes(ID_HANDED_OUT_AGAIN, |_, s: &ReassertState| s.id_reused),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checking::{assert_counterexample, assert_holds};

    #[test]
    fn reassert_takes_back_only_the_claimed_job() {
        let v = assert_holds("reassert", ReassertModel::correct());
        eprintln!("reassert: {} states", v.states);
    }

    #[test]
    fn every_broken_reassert_variant_has_its_counterexample() {
        for b in Broken::ALL {
            let steps = assert_counterexample("reassert", ReassertModel::broken(b), b.violates());
            eprintln!("reassert {b:?} breaks {:?}: {steps:?}", b.violates());
        }
    }
}
