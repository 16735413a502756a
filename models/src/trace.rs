//! The trace check: replays the row changes recorded during a real run through the models'
//! statement functions ([`crate::row`]) and reports every step no modelled statement explains.
//!
//! A recorder (the fault tests install triggers on the job tables and the lease table of their
//! own test schema) writes each change of a job row's state, attempt or token in the job table,
//! each row a statement writes to or deletes from the job table, the history or the dead-letter
//! queue (with the transaction and the statement's start, which tell the two halves of one move
//! apart from others), and each change of the lease, as an [`Event`] numbered by one database
//! sequence; the workers record each attempt's start and finish under the same sequence. Changes
//! of one job are serialised by its row lock, so their numbers follow their commit order.
//!
//! A row deleted from one table and written to another by the same statement is one move of that
//! job; a row written with none deleted is a new job (or one the trace saw no earlier trace of); a
//! row deleted with none written is a job removed (an operator's delete, the cleaner's retention).
//! Each job is followed from table to table: it must never enter a table while it is in another,
//! nor leave or change in a table it is not in (a job in two tables, or in none, shows as one of
//! these). A job the trace saw nothing of before is taken to be where its first event says.
//!
//! Each change of a job, in place or a move, must be one of: a claim (`job_get_available*.sql`:
//! available to running, attempt + 1, a token this job never carried), an outcome fenced on the
//! current claim (`job_set_state_if_running_many.sql`, `job_set_completed_many.sql`: in place, or
//! a move to the history or the dead-letter queue), a rescue (`job_rescue.sql`, recorded reason
//! `rescued: ...`), an orphan release (`job_release_orphaned.sql`, reason `released: ...`), a
//! re-assert of a claim this job carried (`job_reassert_running.sql`), the scheduler's
//! (`job_schedule.sql`), a cancel (`job_cancel.sql`), a retry (`job_retry.sql`) or a redrive
//! (`job_dead_redrive.sql`). A running job is never removed. Across events:
//!
//! - a completion lands only after the work of the claim it fenced on has finished: a completion
//!   on claim `t` before `t`'s work finished is another claim's outcome landing (a stale outcome);
//! - work starts only under a claim that was made for that job;
//! - a lease changes hands only once the old term expired (or, before expiry, to take over a
//!   leader whose heartbeat stopped: counted, not checked, since the trace does not hold which
//!   heartbeats the election's snapshot saw); it is renewed only by its own term while
//!   unexpired; terms start later and later.
//!
//! Not recorded: a history slot emptied by `TRUNCATE` (row triggers do not fire; the fault runs
//! keep their history far shorter than its retention).

use std::collections::HashMap;

use crate::row::{Fence, HeldClaim, JobState, KeptIn, Outcome, Row, Table};

/// A job row as a trigger saw it (times in microseconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobImage {
    /// The table it is in (`pgmill_job`, `pgmill_job_done` or one of its partitions,
    /// `pgmill_job_dead`).
    pub table: String,
    /// `state`.
    pub state: String,
    /// `attempt`.
    pub attempt: i32,
    /// `max_attempts`.
    pub max_attempts: i32,
    /// `claim_token` (the history and the dead-letter queue have none).
    pub token: Option<i64>,
    /// `attempted_by`'s last element.
    pub owner: Option<String>,
    /// `attempted_at`.
    pub attempted_at: Option<i64>,
    /// `created_at`.
    pub created_at: i64,
    /// For a unique job, the finished states among its `unique_states` (by name); `None` for a
    /// job without a unique key.
    pub kept_in: Option<Vec<String>>,
    /// How many errors the row holds.
    pub errors: i32,
    /// The last error's message.
    pub last_error: Option<String>,
}

impl JobImage {
    /// The error this image added to `old`'s, if it holds more.
    fn added_error<'a>(&'a self, old: &JobImage) -> Option<&'a str> {
        (self.errors > old.errors)
            .then_some(self.last_error.as_deref())
            .flatten()
    }
}

/// Which statement wrote a row: its transaction and when the statement started (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatementId {
    /// The transaction's id.
    pub xact: i64,
    /// `statement_timestamp()`.
    pub at: i64,
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
    /// A row of the job table changed its state, attempt or token in place.
    Job {
        /// Its number in the recorder's sequence.
        seq: i64,
        /// The job.
        job: i64,
        /// The row before.
        old: JobImage,
        /// The row after.
        new: JobImage,
    },
    /// A job's row was deleted from a table: half of a move, or a removal.
    Left {
        /// Its number in the sequence.
        seq: i64,
        /// The job.
        job: i64,
        /// The statement that deleted it.
        statement: StatementId,
        /// The row deleted.
        old: JobImage,
    },
    /// A job's row was written to a table: half of a move, or a new job.
    Entered {
        /// Its number in the sequence.
        seq: i64,
        /// The job.
        job: i64,
        /// The statement that wrote it.
        statement: StatementId,
        /// The row written.
        new: JobImage,
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
            | Event::Left { seq, .. }
            | Event::Entered { seq, .. }
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
    /// Cancels replayed.
    pub cancels: u64,
    /// Retries and redrives replayed (of finished jobs: moves back into the job table).
    pub retries: u64,
    /// Of the changes above, moves from one table to another (finished jobs leaving the job
    /// table, retried or redriven ones coming back).
    pub moves: u64,
    /// Jobs written with no earlier trace (new jobs).
    pub inserts: u64,
    /// Jobs deleted without being written elsewhere.
    pub removals: u64,
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
    let unique = match &image.kept_in {
        None => None,
        Some(states) => Some(states.iter().try_fold(KeptIn::NONE, |kept, s| {
            JobState::parse(s).map(|s| kept.with(s))
        })?),
    };
    Some(Row {
        state: JobState::parse(&image.state)?,
        attempt: image.attempt,
        max_attempts: image.max_attempts,
        token: image.token,
        owner: image.owner.as_ref().map(&mut intern),
        attempted_at: image.attempted_at,
        created_at: image.created_at,
        table: Table::parse(&image.table)?,
        unique,
    })
}

/// A job's change as the check replays it: in place, a move, a new row or a removal.
#[derive(Debug)]
enum Change<'a> {
    Rewrite {
        old: &'a JobImage,
        new: &'a JobImage,
        moved: bool,
    },
    Insert(&'a JobImage),
    Remove(&'a JobImage),
}

/// One event to replay, by sequence number: a job's change (with the job), or an attempt or lease
/// event as recorded.
type Replayed<'a> = (i64, Result<(i64, Change<'a>), &'a Event>);

/// The rows one statement deleted and wrote for one job, each with its sequence number.
type Halves<'a> = (Vec<(i64, &'a JobImage)>, Vec<(i64, &'a JobImage)>);

/// Pairs the rows each statement deleted and wrote, per job: returns every job change and
/// attempt or lease event in sequence order, each change numbered by its first event.
fn changes<'a>(events: &'a [Event], violations: &mut Vec<String>) -> Vec<Replayed<'a>> {
    let mut halves: HashMap<(i64, StatementId), Halves<'a>> = HashMap::new();
    let mut out = Vec::new();
    for event in events {
        match event {
            Event::Job { seq, job, old, new } => out.push((
                *seq,
                Ok((
                    *job,
                    Change::Rewrite {
                        old,
                        new,
                        moved: false,
                    },
                )),
            )),
            Event::Left {
                seq,
                job,
                statement,
                old,
            } => halves
                .entry((*job, *statement))
                .or_default()
                .0
                .push((*seq, old)),
            Event::Entered {
                seq,
                job,
                statement,
                new,
            } => halves
                .entry((*job, *statement))
                .or_default()
                .1
                .push((*seq, new)),
            _ => out.push((event.seq(), Err(event))),
        }
    }
    for ((job, _), (left, entered)) in halves {
        match (left.as_slice(), entered.as_slice()) {
            ([(a, old)], [(b, new)]) => out.push((
                (*a).min(*b),
                Ok((
                    job,
                    Change::Rewrite {
                        old,
                        new,
                        moved: true,
                    },
                )),
            )),
            ([], [(seq, new)]) => out.push((*seq, Ok((job, Change::Insert(new))))),
            ([(seq, old)], []) => out.push((*seq, Ok((job, Change::Remove(old))))),
            _ => violations.push(format!(
                "#{} job {job}: one statement deleted {} rows of the job and wrote {}",
                left.iter()
                    .chain(&entered)
                    .map(|(s, _)| *s)
                    .min()
                    .unwrap_or(0),
                left.len(),
                entered.len()
            )),
        }
    }
    out.sort_by_key(|(seq, _)| *seq);
    out
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
    // Where each job is, as far as the trace says (`None`: removed).
    let mut located: HashMap<i64, Option<Table>> = HashMap::new();
    let mut last_term: Option<i64> = None;
    for (seq, change) in changes(events, &mut report.violations) {
        let (job, change) = match change {
            Ok(c) => c,
            Err(Event::AttemptStart { job, token, .. }) => {
                report.attempts += 1;
                let claimed =
                    token.is_some_and(|t| jobs.get(job).is_some_and(|h| h.claimed.contains(&t)));
                if !claimed {
                    report.violations.push(format!(
                        "#{seq} job {job}: work started under claim {token:?}, which no recorded \
                         claim of the job made"
                    ));
                }
                continue;
            }
            Err(Event::AttemptFinish { job, token, .. }) => {
                if let Some(t) = token {
                    jobs.entry(*job).or_default().finished.push(*t);
                }
                continue;
            }
            Err(Event::Lease { at, old, new, .. }) => {
                check_lease(
                    seq,
                    *at,
                    old.as_ref(),
                    new.as_ref(),
                    &mut last_term,
                    &mut report,
                );
                continue;
            }
            Err(_) => continue,
        };
        let (from, to) = match &change {
            Change::Rewrite { old, new, .. } => (Some(&old.table), Some(&new.table)),
            Change::Insert(new) => (None, Some(&new.table)),
            Change::Remove(old) => (Some(&old.table), None),
        };
        let parse = |t: Option<&String>| match t {
            None => Ok(None),
            Some(t) => Table::parse(t).map(Some).ok_or(()),
        };
        let (Ok(from), Ok(to)) = (parse(from), parse(to)) else {
            report.violations.push(format!(
                "#{seq} job {job}: a table no job is kept in ({from:?} -> {to:?})"
            ));
            continue;
        };
        match (located.get(&job).copied(), from) {
            (Some(Some(at)), Some(from)) if at != from => report.violations.push(format!(
                "#{seq} job {job}: changed in {} while it was in {}",
                from.as_str(),
                at.as_str()
            )),
            (Some(Some(at)), None) => report.violations.push(format!(
                "#{seq} job {job}: written to {} while it was in {}: in two tables",
                to.map_or("", Table::as_str),
                at.as_str()
            )),
            (Some(None), Some(from)) => report.violations.push(format!(
                "#{seq} job {job}: changed in {} after it was removed",
                from.as_str()
            )),
            (Some(None), None) => report.violations.push(format!(
                "#{seq} job {job}: written to {} after it was removed: it was in no table \
                 meanwhile",
                to.map_or("", Table::as_str)
            )),
            _ => {}
        }
        located.insert(job, to);
        let (old, new) = match change {
            Change::Insert(_) => {
                report.inserts += 1;
                continue;
            }
            Change::Remove(old) => {
                report.removals += 1;
                if old.state == JobState::Running.as_str() {
                    report.violations.push(format!(
                        "#{seq} job {job}: a running job removed from {}",
                        old.table
                    ));
                }
                continue;
            }
            Change::Rewrite { old, new, moved } => {
                report.moves += u64::from(moved);
                (old, new)
            }
        };
        let history = jobs.entry(job).or_default();
        let (Some(before), Some(after)) = (row(old, &mut clients), row(new, &mut clients)) else {
            report.violations.push(format!(
                "#{seq} job {job}: a state no modelled statement writes ({} -> {})",
                old.state, new.state
            ));
            continue;
        };
        let reason = new.added_error(old);
        match replay(&before, &after, reason, history) {
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
            Ok(Step::Cancel) => report.cancels += 1,
            Ok(Step::Retry) => report.retries += 1,
            Err(why) => report.violations.push(format!(
                "#{seq} job {job}: {why}: {old:?} -> {new:?} (reason {reason:?})"
            )),
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
    Cancel,
    Retry,
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
    if before.cancel().as_ref() == Some(after) {
        return Ok(Step::Cancel);
    }
    if before.retry().as_ref() == Some(after) || before.redrive().as_ref() == Some(after) {
        return Ok(Step::Retry);
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
            table: "pgmill_job".into(),
            state: state.into(),
            attempt,
            max_attempts: 25,
            token,
            owner: owner.map(str::to_owned),
            attempted_at: at,
            created_at: 0,
            kept_in: None,
            errors: 0,
            last_error: None,
        }
    }

    /// `image` in `table`.
    fn in_table(table: &str, image: JobImage) -> JobImage {
        JobImage {
            table: table.into(),
            ..image
        }
    }

    /// `new` with one more error than `old`, reading `reason`, when there is one.
    fn with_reason(old: &JobImage, new: JobImage, reason: Option<&str>) -> JobImage {
        match reason {
            Some(r) => JobImage {
                errors: old.errors + 1,
                last_error: Some(r.to_owned()),
                ..new
            },
            None => JobImage {
                errors: old.errors,
                ..new
            },
        }
    }

    fn job(seq: i64, old: JobImage, new: JobImage, reason: Option<&str>) -> Event {
        let new = with_reason(&old, new, reason);
        Event::Job {
            seq,
            job: 1,
            old,
            new,
        }
    }

    /// One statement deleting `old` and writing `new` (its table says where): the deletion
    /// recorded at `seq`, the write just after it.
    fn moved(seq: i64, old: JobImage, new: JobImage, reason: Option<&str>) -> [Event; 2] {
        let statement = StatementId { xact: seq, at: seq };
        let new = with_reason(&old, new, reason);
        [
            Event::Entered {
                seq: seq + 1,
                job: 1,
                statement,
                new,
            },
            Event::Left {
                seq,
                job: 1,
                statement,
                old,
            },
        ]
    }

    /// A claim given back by the orphan release, claimed again under the same attempt number;
    /// the first claim's work finishes, then the job completes: under the second claim, whose
    /// work has not finished when `second_finishes_first` is false.
    fn released_and_claimed_again(second_finishes_first: bool) -> Vec<Event> {
        let available = image("available", 0, None, None, None);
        let first = image("running", 1, Some(10), Some("a"), Some(100));
        let released = image("available", 0, None, Some("a"), Some(100));
        let second = image("running", 1, Some(20), Some("b"), Some(200));
        let completed = in_table(
            "pgmill_job_done_03",
            image("completed", 1, None, Some("b"), Some(200)),
        );
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
        ];
        events.extend(moved(8, second, completed, None));
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

    /// A job inserted, claimed, and finished by the outcome `finished` (`table` says where it
    /// goes), recorded as a move when `table` is not the job table.
    fn finished_run(finished: JobImage, reason: Option<&str>) -> Vec<Event> {
        let available = image("available", 0, None, None, None);
        let running = image("running", 1, Some(10), Some("a"), Some(100));
        let mut events = vec![
            Event::Entered {
                seq: 1,
                job: 1,
                statement: StatementId { xact: 1, at: 1 },
                new: available.clone(),
            },
            job(2, available, running.clone(), None),
            Event::AttemptStart {
                seq: 3,
                job: 1,
                token: Some(10),
            },
            Event::AttemptFinish {
                seq: 4,
                job: 1,
                token: Some(10),
            },
        ];
        if finished.table == "pgmill_job" {
            events.push(job(5, running, finished, reason));
        } else {
            events.extend(moved(5, running, finished, reason));
        }
        events
    }

    #[test]
    fn finished_jobs_moving_out_in_their_statement_pass() {
        let done = image("completed", 1, None, Some("a"), Some(100));
        let report = check(&mut finished_run(
            in_table("pgmill_job_done_07", done),
            None,
        ));
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!(
            (report.inserts, report.claims, report.outcomes, report.moves),
            (1, 1, 1, 1)
        );

        // A unique job whose key stays taken when completed stays in the job table.
        let kept = |i: JobImage| JobImage {
            kept_in: Some(vec!["completed".into()]),
            ..i
        };
        let mut events = finished_run(kept(done_in_place()), None);
        for e in &mut events {
            match e {
                Event::Job { old, new, .. } => {
                    *old = kept(old.clone());
                    *new = kept(new.clone());
                }
                Event::Entered { new, .. } => *new = kept(new.clone()),
                _ => {}
            }
        }
        let report = check(&mut events);
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!((report.outcomes, report.moves), (1, 0));

        // Discarded by its worker: to the dead-letter queue.
        let dead = in_table(
            "pgmill_job_dead",
            image("discarded", 1, None, Some("a"), Some(100)),
        );
        let report = check(&mut finished_run(dead, Some("boom")));
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!((report.outcomes, report.moves), (1, 1));
    }

    fn done_in_place() -> JobImage {
        image("completed", 1, None, Some("a"), Some(100))
    }

    #[test]
    fn a_plain_job_finished_in_the_job_table_is_caught() {
        // Completed in place: the statements move a job without a unique key out.
        let report = check(&mut finished_run(done_in_place(), None));
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert!(report.violations[0].contains("not an outcome fenced"));
    }

    #[test]
    fn a_move_split_over_two_statements_is_caught() {
        let running = image("running", 1, Some(10), Some("a"), Some(100));
        let done = in_table(
            "pgmill_job_done_07",
            image("completed", 1, None, Some("a"), Some(100)),
        );
        let split = |insert_at: i64, delete_at: i64| {
            let mut events = finished_run(done.clone(), None);
            events.truncate(4);
            events.push(Event::Entered {
                seq: insert_at,
                job: 1,
                statement: StatementId {
                    xact: insert_at,
                    at: insert_at,
                },
                new: done.clone(),
            });
            events.push(Event::Left {
                seq: delete_at,
                job: 1,
                statement: StatementId {
                    xact: delete_at,
                    at: delete_at,
                },
                old: running.clone(),
            });
            check(&mut events)
        };
        // Written to the history by one statement, deleted from the job table by a later one:
        // in two tables in between.
        let report = split(5, 6);
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.contains("in two tables")),
            "{:?}",
            report.violations
        );
        // Deleted by one statement, written by a later one: in no table in between.
        let report = split(6, 5);
        assert!(
            report.violations.iter().any(|v| v.contains("in no table")),
            "{:?}",
            report.violations
        );
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.contains("running job removed")),
            "{:?}",
            report.violations
        );
    }

    #[test]
    fn a_rescue_to_the_dead_letter_queue_and_a_redrive_back_pass() {
        let running = JobImage {
            max_attempts: 1,
            ..image("running", 1, Some(10), Some("a"), Some(100))
        };
        let dead = in_table(
            "pgmill_job_dead",
            JobImage {
                state: "discarded".into(),
                token: None,
                ..running.clone()
            },
        );
        let back = JobImage {
            table: "pgmill_job".into(),
            state: "available".into(),
            max_attempts: 2,
            ..dead.clone()
        };
        let available = JobImage {
            max_attempts: 1,
            ..image("available", 0, None, None, None)
        };
        let mut events = vec![job(1, available, running.clone(), None)];
        events.extend(moved(
            2,
            running,
            dead.clone(),
            Some("rescued: its client stopped heartbeating"),
        ));
        let dead = with_reason(
            &dead,
            dead.clone(),
            Some("rescued: its client stopped heartbeating"),
        );
        let back = JobImage {
            errors: dead.errors,
            last_error: dead.last_error.clone(),
            ..back
        };
        events.extend(moved(4, dead, back, None));
        let report = check(&mut events);
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!((report.rescues, report.retries, report.moves), (1, 1, 2));
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
