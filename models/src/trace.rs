//! The trace check: replays the row changes recorded during a real run through the models'
//! statement functions ([`crate::row`]) and reports every step no modelled statement explains.
//!
//! A recorder (the fault tests install triggers on the job and lease tables of their own test
//! schema) writes each change of a job's state, attempt or token, and each change of the lease, as
//! an [`Event`] numbered by one database sequence; the workers record each attempt's start and
//! finish under the same sequence. Changes of one row are serialised by its row lock, so their
//! numbers follow their commit order.
//!
//! Each job change must be one of: a claim (`job_get_available*.sql`: available to running,
//! attempt + 1, a token this job never carried), an outcome fenced on the current claim
//! (`job_set_state_if_running_many.sql`, `job_set_completed_many.sql`), a rescue
//! (`job_rescue.sql`, recorded reason `rescued: ...`), an orphan release
//! (`job_release_orphaned.sql`, reason `released: ...`), a re-assert of a claim this job carried
//! (`job_reassert_running.sql`), or the scheduler's (`job_schedule.sql`). Across events:
//!
//! - a completion lands only after the work of the claim it fenced on has finished: a completion
//!   on claim `t` before `t`'s work finished is another claim's outcome landing (a stale outcome);
//! - work starts only under a claim that was made for that job;
//! - a lease changes hands only once the old term expired (or, before expiry, to take over a
//!   leader whose heartbeat stopped: counted, not checked, since the trace does not hold which
//!   heartbeats the election's snapshot saw); it is renewed only by its own term while
//!   unexpired; terms start later and later.

use std::collections::HashMap;

use crate::row::{Fence, HeldClaim, JobState, Outcome, Row};

/// A job row as a trigger saw it (times in microseconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobImage {
    /// `state`.
    pub state: String,
    /// `attempt`.
    pub attempt: i32,
    /// `max_attempts`.
    pub max_attempts: i32,
    /// `claim_token`.
    pub token: Option<i64>,
    /// `attempted_by`'s last element.
    pub owner: Option<String>,
    /// `attempted_at`.
    pub attempted_at: Option<i64>,
    /// `created_at`.
    pub created_at: i64,
}

/// The lease row as a trigger saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseImage {
    /// `leader_id`.
    pub leader: String,
    /// `elected_at`, microseconds.
    pub elected_at: i64,
    /// `expires_at`, microseconds.
    pub expires_at: i64,
}

/// One recorded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A job row changed its state, attempt or token.
    Job {
        /// Its number in the recorder's sequence.
        seq: i64,
        /// The job.
        job: i64,
        /// The row before.
        old: JobImage,
        /// The row after.
        new: JobImage,
        /// The error the change appended, if any (`rescued: ...`, `released: ...`, a worker's).
        reason: Option<String>,
    },
    /// A worker started the work of a claim.
    AttemptStart {
        /// Its number in the sequence.
        seq: i64,
        /// The job.
        job: i64,
        /// The claim's token as the worker saw it.
        token: Option<i64>,
    },
    /// A worker finished the work of a claim (before sending its outcome).
    AttemptFinish {
        /// Its number in the sequence.
        seq: i64,
        /// The job.
        job: i64,
        /// The claim's token.
        token: Option<i64>,
    },
    /// The lease row was inserted, updated or deleted.
    Lease {
        /// Its number in the sequence.
        seq: i64,
        /// The changing statement's `now()`, microseconds.
        at: i64,
        /// The row before (none for an insert).
        old: Option<LeaseImage>,
        /// The row after (none for a delete).
        new: Option<LeaseImage>,
    },
}

impl Event {
    fn seq(&self) -> i64 {
        match self {
            Event::Job { seq, .. }
            | Event::AttemptStart { seq, .. }
            | Event::AttemptFinish { seq, .. }
            | Event::Lease { seq, .. } => *seq,
        }
    }
}

/// What the check counted, and what it found wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceReport {
    /// Claims replayed.
    pub claims: u64,
    /// Outcomes replayed.
    pub outcomes: u64,
    /// Rescues replayed.
    pub rescues: u64,
    /// Orphan releases replayed.
    pub releases: u64,
    /// Re-asserts replayed.
    pub reasserts: u64,
    /// Scheduler moves replayed.
    pub schedules: u64,
    /// Attempt starts and finishes matched to their claims.
    pub attempts: u64,
    /// Terms begun.
    pub terms: u64,
    /// Of those, taken over before the old lease expired (a stale leader's).
    pub early_takeovers: u64,
    /// Lease renewals.
    pub renewals: u64,
    /// Resignations (and other deletes of the lease).
    pub resignations: u64,
    /// Every step the models do not allow, with its sequence number.
    pub violations: Vec<String>,
}

type TraceRow = Row<u32, i64>;

fn row(image: &JobImage, clients: &mut HashMap<String, u32>) -> Option<TraceRow> {
    let mut intern = |c: &String| {
        let n = clients.len() as u32;
        *clients.entry(c.clone()).or_insert(n)
    };
    Some(Row {
        state: JobState::parse(&image.state)?,
        attempt: image.attempt,
        max_attempts: image.max_attempts,
        token: image.token,
        owner: image.owner.as_ref().map(&mut intern),
        attempted_at: image.attempted_at,
        created_at: image.created_at,
    })
}

/// Per job: the tokens it was claimed under, and the claims whose work finished, by sequence.
#[derive(Debug, Default)]
struct JobHistory {
    claimed: Vec<i64>,
    finished: Vec<i64>,
}

/// Checks `events` (in any order; they are sorted by sequence number).
pub fn check(events: &mut [Event]) -> TraceReport {
    events.sort_by_key(Event::seq);
    let mut report = TraceReport::default();
    let mut clients = HashMap::new();
    let mut jobs: HashMap<i64, JobHistory> = HashMap::new();
    let mut last_term: Option<i64> = None;
    for event in events.iter() {
        match event {
            Event::Job {
                seq,
                job,
                old,
                new,
                reason,
            } => {
                let history = jobs.entry(*job).or_default();
                let (Some(before), Some(after)) = (row(old, &mut clients), row(new, &mut clients))
                else {
                    report.violations.push(format!(
                        "#{seq} job {job}: a state no modelled statement writes ({} -> {})",
                        old.state, new.state
                    ));
                    continue;
                };
                match replay(&before, &after, reason.as_deref(), history) {
                    Ok(Step::Claim(token)) => {
                        report.claims += 1;
                        history.claimed.push(token);
                    }
                    Ok(Step::Outcome { completed, token }) => {
                        report.outcomes += 1;
                        if completed && !history.finished.contains(&token) {
                            report.violations.push(format!(
                                "#{seq} job {job}: completed under claim {token}, whose work had \
                                 not finished: another claim's outcome landed"
                            ));
                        }
                    }
                    Ok(Step::Rescue) => report.rescues += 1,
                    Ok(Step::Release) => report.releases += 1,
                    Ok(Step::Reassert) => report.reasserts += 1,
                    Ok(Step::Schedule) => report.schedules += 1,
                    Err(why) => report.violations.push(format!(
                        "#{seq} job {job}: {why}: {old:?} -> {new:?} (reason {reason:?})"
                    )),
                }
            }
            Event::AttemptStart { seq, job, token } => {
                report.attempts += 1;
                let claimed =
                    token.is_some_and(|t| jobs.get(job).is_some_and(|h| h.claimed.contains(&t)));
                if !claimed {
                    report.violations.push(format!(
                        "#{seq} job {job}: work started under claim {token:?}, which no recorded \
                         claim of the job made"
                    ));
                }
            }
            Event::AttemptFinish { job, token, .. } => {
                if let Some(t) = token {
                    jobs.entry(*job).or_default().finished.push(*t);
                }
            }
            Event::Lease { seq, at, old, new } => check_lease(
                *seq,
                *at,
                old.as_ref(),
                new.as_ref(),
                &mut last_term,
                &mut report,
            ),
        }
    }
    report
}

enum Step {
    Claim(i64),
    Outcome { completed: bool, token: i64 },
    Rescue,
    Release,
    Reassert,
    Schedule,
}

/// Which statement turned `before` into `after`, by the models' statement functions.
fn replay(
    before: &TraceRow,
    after: &TraceRow,
    reason: Option<&str>,
    history: &JobHistory,
) -> Result<Step, &'static str> {
    if let Some(reason) = reason {
        if reason.starts_with("rescued:") {
            return (before.rescue().as_ref() == Some(after))
                .then_some(Step::Rescue)
                .ok_or("not what job_rescue.sql writes");
        }
        if reason.starts_with("released:") {
            let released = after
                .owner
                .and_then(|owner| before.release_orphaned(owner, |_| false, true));
            return (released.as_ref() == Some(after))
                .then_some(Step::Release)
                .ok_or("not what job_release_orphaned.sql writes");
        }
    }
    if before.state == JobState::Running {
        let token = before.token.ok_or("a running row without a token")?;
        let landed = Outcome::ALL.iter().any(|&o| {
            before.set_state_if_running(before.attempt, token, o, Fence::AttemptAndToken)
                == Some(*after)
        }) || before.set_completed(before.attempt, token, Fence::AttemptAndToken)
            == Some(*after);
        return landed
            .then_some(Step::Outcome {
                completed: after.state == JobState::Completed,
                token,
            })
            .ok_or("not an outcome fenced on the row's claim");
    }
    if after.state == JobState::Running {
        let (Some(owner), Some(token), Some(at)) = (after.owner, after.token, after.attempted_at)
        else {
            return Err("running without an owner, token or claim time");
        };
        if before.claim(owner, token, at).as_ref() == Some(after) {
            return if history.claimed.contains(&token) {
                Err("a claim under a token this job carried before")
            } else {
                Ok(Step::Claim(token))
            };
        }
        let claim = HeldClaim {
            attempt: after.attempt,
            token,
            attempted_at: at,
            created_at: before.created_at,
        };
        if before.reassert(owner, claim, true).as_ref() == Some(after) {
            return if history.claimed.contains(&token) {
                Ok(Step::Reassert)
            } else {
                Err("a re-assert of a claim this job never carried")
            };
        }
        return Err("neither a claim nor a re-assert");
    }
    if before.schedule().as_ref() == Some(after) {
        return Ok(Step::Schedule);
    }
    Err("no modelled statement makes this change")
}

fn check_lease(
    seq: i64,
    at: i64,
    old: Option<&LeaseImage>,
    new: Option<&LeaseImage>,
    last_term: &mut Option<i64>,
    report: &mut TraceReport,
) {
    match (old, new) {
        (_, Some(n))
            if old.is_none_or(|o| o.leader != n.leader || o.elected_at != n.elected_at) =>
        {
            report.terms += 1;
            if n.elected_at != at {
                report.violations.push(format!(
                    "#{seq}: a term that did not start at its election's now()"
                ));
            }
            if last_term.is_some_and(|t| t >= n.elected_at) {
                report.violations.push(format!(
                    "#{seq}: a term starting no later than the one before it"
                ));
            }
            *last_term = Some(n.elected_at);
            if let Some(o) = old
                && o.expires_at >= at
            {
                report.early_takeovers += 1;
            }
        }
        (Some(o), Some(n)) => {
            report.renewals += 1;
            if o.expires_at < at {
                report
                    .violations
                    .push(format!("#{seq}: a lease renewed after it expired"));
            }
            if n.expires_at < o.expires_at {
                report
                    .violations
                    .push(format!("#{seq}: a renewal that shortened the lease"));
            }
        }
        (Some(_), None) => report.resignations += 1,
        (None, _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(
        state: &str,
        attempt: i32,
        token: Option<i64>,
        owner: Option<&str>,
        at: Option<i64>,
    ) -> JobImage {
        JobImage {
            state: state.into(),
            attempt,
            max_attempts: 25,
            token,
            owner: owner.map(str::to_owned),
            attempted_at: at,
            created_at: 0,
        }
    }

    fn job(seq: i64, old: JobImage, new: JobImage, reason: Option<&str>) -> Event {
        Event::Job {
            seq,
            job: 1,
            old,
            new,
            reason: reason.map(str::to_owned),
        }
    }

    /// A claim given back by the orphan release, claimed again under the same attempt number;
    /// the first claim's work finishes, then the job completes: under the second claim, whose
    /// work has not finished when `second_finishes_first` is false.
    fn released_and_claimed_again(second_finishes_first: bool) -> Vec<Event> {
        let available = image("available", 0, None, None, None);
        let first = image("running", 1, Some(10), Some("a"), Some(100));
        let released = image("available", 0, None, Some("a"), Some(100));
        let second = image("running", 1, Some(20), Some("b"), Some(200));
        let completed = image("completed", 1, None, Some("b"), Some(200));
        let mut events = vec![
            job(1, available, first.clone(), None),
            job(2, first, released.clone(), Some("released: orphaned")),
            job(3, released, second.clone(), None),
            Event::AttemptStart {
                seq: 4,
                job: 1,
                token: Some(10),
            },
            Event::AttemptStart {
                seq: 5,
                job: 1,
                token: Some(20),
            },
            Event::AttemptFinish {
                seq: 6,
                job: 1,
                token: Some(10),
            },
            job(8, second, completed, None),
        ];
        if second_finishes_first {
            events.push(Event::AttemptFinish {
                seq: 7,
                job: 1,
                token: Some(20),
            });
        }
        events
    }

    #[test]
    fn a_run_the_models_allow_passes() {
        let report = check(&mut released_and_claimed_again(true));
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!((report.claims, report.releases, report.outcomes), (2, 1, 1));
    }

    #[test]
    fn a_stale_outcome_landing_is_caught() {
        let report = check(&mut released_and_claimed_again(false));
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert!(report.violations[0].contains("another claim's outcome landed"));
    }

    #[test]
    fn an_outcome_not_fenced_on_the_current_claim_is_caught() {
        // The row shows claim 20, the change clears the token and gives the attempt back as an
        // interrupt of the first claim's attempt would under an attempt-only fence, but with the
        // attempt of neither: no statement writes that.
        let running = image("running", 2, Some(20), Some("b"), Some(200));
        let bogus = image("available", 0, None, Some("b"), Some(200));
        let report = check(&mut [job(1, running, bogus, None)]);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    }

    #[test]
    fn a_reused_token_and_work_without_a_claim_are_caught() {
        let available = image("available", 0, None, None, None);
        let first = image("running", 1, Some(10), Some("a"), Some(100));
        let rescued = image("available", 1, None, Some("a"), Some(100));
        let again = image("running", 2, Some(10), Some("b"), Some(200));
        let report = check(&mut [
            job(1, available, first.clone(), None),
            job(
                2,
                first,
                rescued.clone(),
                Some("rescued: its client stopped heartbeating"),
            ),
            job(3, rescued, again, None),
            Event::AttemptStart {
                seq: 4,
                job: 1,
                token: Some(99),
            },
        ]);
        assert_eq!(report.violations.len(), 2, "{:?}", report.violations);
    }

    #[test]
    fn lease_changes_are_checked() {
        let lease = |leader: &str, elected_at, expires_at| LeaseImage {
            leader: leader.into(),
            elected_at,
            expires_at,
        };
        let mut events = [
            Event::Lease {
                seq: 1,
                at: 0,
                old: None,
                new: Some(lease("a", 0, 15)),
            },
            Event::Lease {
                seq: 2,
                at: 5,
                old: Some(lease("a", 0, 15)),
                new: Some(lease("a", 0, 20)),
            },
            // Renewed after it expired.
            Event::Lease {
                seq: 3,
                at: 21,
                old: Some(lease("a", 0, 20)),
                new: Some(lease("a", 0, 36)),
            },
            Event::Lease {
                seq: 4,
                at: 40,
                old: Some(lease("a", 0, 36)),
                new: Some(lease("b", 40, 55)),
            },
            Event::Lease {
                seq: 5,
                at: 41,
                old: Some(lease("b", 40, 55)),
                new: None,
            },
        ];
        let report = check(&mut events);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert_eq!(
            (report.terms, report.renewals, report.resignations),
            (2, 2, 1)
        );
    }
}
