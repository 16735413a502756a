//! Jobs: as stored ([`JobRow`], its [`JobState`], and the errors recorded per attempt), as an
//! insert returns them ([`InsertResult`]), and as a worker gets one to work ([`Job`]).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::driver::{FromRow, Row, RowView};
use crate::error::{Error, Result};
use crate::schema::Schema;

/// A job's id: the `bigint` primary key of `pgmill_job`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub i64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<i64> for JobId {
    fn from(id: i64) -> Self {
        JobId(id)
    }
}

/// Where a job is in its life.
///
/// ```text
/// insert ──> available ──fetch──> running ──> completed | cancelled | discarded   (final)
///    │  ──> scheduled ─┐             │ ──> retryable ──(due)──> available
///    └──> pending      └─(due)──> available   └──> scheduled / available (snooze, interrupted)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum JobState {
    /// Ready to be fetched once its `scheduled_at` has passed.
    Available,
    /// Waiting for its `scheduled_at`; the scheduler makes it available.
    Scheduled,
    /// Held until something outside pgmill makes it available or scheduled.
    Pending,
    /// Being worked by a client.
    Running,
    /// Failed an attempt; waits for its retry time.
    Retryable,
    /// Finished successfully (final).
    Completed,
    /// Cancelled by its worker or an operator (final).
    Cancelled,
    /// Gave up: attempts used up, or discarded by its worker (final).
    Discarded,
}

impl JobState {
    /// Every state.
    pub const ALL: [JobState; 8] = [
        JobState::Available,
        JobState::Scheduled,
        JobState::Pending,
        JobState::Running,
        JobState::Retryable,
        JobState::Completed,
        JobState::Cancelled,
        JobState::Discarded,
    ];

    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Available => "available",
            JobState::Scheduled => "scheduled",
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Retryable => "retryable",
            JobState::Completed => "completed",
            JobState::Cancelled => "cancelled",
            JobState::Discarded => "discarded",
        }
    }

    /// True for the states a job never leaves on its own.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Cancelled | JobState::Discarded
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        JobState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| Error::decode("job state", format!("unknown state {s:?}")))
    }
}

/// One error recorded on a job, for one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptError {
    /// The attempt that failed (from 1).
    pub attempt: i16,
    /// When it was recorded (database time when written by SQL, else the worker's clock).
    pub at: DateTime<Utc>,
    /// The error message.
    pub error: String,
    /// True when the worker panicked.
    #[serde(default)]
    pub panic: bool,
}

/// A job as stored in `pgmill_job`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JobRow {
    /// The id.
    pub id: JobId,
    /// The state.
    pub state: JobState,
    /// The queue it runs in.
    pub queue: String,
    /// Its kind, naming the worker that runs it.
    pub kind: String,
    /// Its arguments, as JSON.
    pub args: serde_json::Value,
    /// Free-form metadata (a JSON object).
    pub metadata: serde_json::Value,
    /// Priority, 1 (first) to 4 (last).
    pub priority: i16,
    /// Attempts made so far (the running one included).
    pub attempt: i16,
    /// Attempts allowed before it is discarded.
    pub max_attempts: i16,
    /// When the latest attempt started.
    pub attempted_at: Option<DateTime<Utc>>,
    /// The clients that attempted it, latest last (the last few only).
    pub attempted_by: Vec<String>,
    /// When it was inserted.
    pub created_at: DateTime<Utc>,
    /// When it may run next.
    pub scheduled_at: DateTime<Utc>,
    /// When it reached a final state.
    pub finalized_at: Option<DateTime<Utc>>,
    /// One error per failed attempt, oldest first.
    pub errors: Vec<AttemptError>,
    /// Tags given at insert.
    pub tags: Vec<String>,
    /// The fencing token of the claim running the job: `None` unless running (or claimed by a
    /// client of schema version 1). Never the same for two claims, unlike `attempt`, which a
    /// released claim gives back; an outcome is recorded only while the job still carries the
    /// token of the claim it belongs to.
    pub claim_token: Option<i64>,
}

impl FromRow for JobRow {
    fn from_row(row: Row) -> Result<Self> {
        JobRow::decode(row)
    }
}

impl JobRow {
    /// The columns of a claim's rows (`job_get_available*.sql`), in order.
    pub(crate) const CLAIMED_COLUMNS: [&'static str; 13] = [
        "id",
        "kind",
        "args",
        "metadata",
        "priority",
        "attempt",
        "max_attempts",
        "attempted_at",
        "attempted_by",
        "created_at",
        "scheduled_at",
        "errors",
        "tags",
    ];

    /// The position of `attempted_at` in [`JobRow::CLAIMED_COLUMNS`].
    pub(crate) const CLAIMED_AT_COLUMN: usize = 7;

    /// The positions of `id`, `priority` and `scheduled_at` in [`JobRow::CLAIMED_COLUMNS`]: a
    /// job's position in fetch order.
    pub(crate) const CLAIMED_POSITION_COLUMNS: (usize, usize, usize) = (0, 4, 10);

    /// Decodes a row of a claim (`job_get_available*.sql`), read in place by position (the
    /// caller checks the columns against [`JobRow::CLAIMED_COLUMNS`] once per result). The claim
    /// leaves out what every job it claims has in common (state `running`, no `finalized_at`,
    /// the claim's `queue` and fencing `token`) and returns NULL for columns at their usual
    /// value: empty `metadata`, `errors` and `tags`, and an `attempted_by` that names only the
    /// claiming `client`. Every row's `attempted_at` is the claim statement's `now()`, one value
    /// for the whole result: the caller reads it once, from the first row, and passes it in.
    pub(crate) fn from_claimed_row(
        row: &mut dyn RowView,
        queue: &str,
        token: i64,
        client: &str,
        attempted_at: Option<DateTime<Utc>>,
    ) -> Result<Self> {
        Ok(JobRow {
            id: JobId(row.read(0)?),
            state: JobState::Running,
            queue: queue.to_owned(),
            kind: row.read(1)?,
            args: row.read(2)?,
            metadata: row
                .read::<Option<serde_json::Value>>(3)?
                .unwrap_or_else(empty_object),
            priority: row.read(4)?,
            attempt: row.read(5)?,
            max_attempts: row.read(6)?,
            attempted_at,
            attempted_by: row
                .read::<Option<Vec<String>>>(8)?
                .unwrap_or_else(|| vec![client.to_owned()]),
            created_at: row.read(9)?,
            scheduled_at: row.read(10)?,
            finalized_at: None,
            errors: match row.read::<Option<_>>(11)? {
                Some(errors) => attempt_errors(errors)?,
                None => Vec::new(),
            },
            tags: row.read::<Option<_>>(12)?.unwrap_or_default(),
            claim_token: Some(token),
        })
    }

    /// Decodes a whole row.
    fn decode(mut row: Row) -> Result<Self> {
        // Read in the column order of the statements (`Row::take` looks from the last column).
        Ok(JobRow {
            id: JobId(row.take("id")?),
            state: row.take::<String>("state")?.parse()?,
            queue: row.take("queue")?,
            kind: row.take("kind")?,
            args: row.take("args")?,
            metadata: row.take("metadata")?,
            priority: row.take("priority")?,
            attempt: row.take("attempt")?,
            max_attempts: row.take("max_attempts")?,
            attempted_at: row.take("attempted_at")?,
            attempted_by: row.take("attempted_by")?,
            created_at: row.take("created_at")?,
            scheduled_at: row.take("scheduled_at")?,
            finalized_at: row.take("finalized_at")?,
            errors: attempt_errors(row.take("errors")?)?,
            tags: row.take("tags")?,
            claim_token: row.take("claim_token")?,
        })
    }
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

fn attempt_errors(errors: Vec<serde_json::Value>) -> Result<Vec<AttemptError>> {
    errors
        .into_iter()
        .map(|e| serde_json::from_value(e).map_err(|e| Error::decode("job error", e.to_string())))
        .collect()
}

/// What an insert did with one job: the job inserted, or, for a unique job that had a duplicate,
/// the existing job ([`UniqueOpts`](crate::UniqueOpts)).
///
/// It dereferences to the job, so `result.id` reads the job's id.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InsertResult {
    /// The job inserted, or the duplicate found instead (as it is now: possibly running or
    /// finished).
    pub job: JobRow,
    /// True when nothing was inserted because `job`, an existing job, is a duplicate.
    pub skipped_as_duplicate: bool,
}

impl InsertResult {
    pub(crate) fn new(job: JobRow, skipped_as_duplicate: bool) -> Self {
        InsertResult {
            job,
            skipped_as_duplicate,
        }
    }

    /// The job, inserted or found.
    pub fn into_job(self) -> JobRow {
        self.job
    }
}

impl std::ops::Deref for InsertResult {
    type Target = JobRow;

    fn deref(&self) -> &JobRow {
        &self.job
    }
}

/// A job being worked: its decoded args, its row, and a cancellation signal.
#[derive(Debug)]
pub struct Job<A> {
    /// The decoded arguments.
    pub args: A,
    row: Arc<JobRow>,
    /// The schema the job lives in.
    pub(crate) schema: Schema,
    cancel: CancellationToken,
    /// Set once the worker completed the job in its own transaction.
    pub(crate) recorded: AtomicBool,
}

impl<A> Job<A> {
    pub(crate) fn new(
        args: A,
        row: Arc<JobRow>,
        schema: Schema,
        cancel: CancellationToken,
    ) -> Self {
        Job {
            args,
            row,
            schema,
            cancel,
            recorded: AtomicBool::new(false),
        }
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.row.id
    }

    /// The attempt being run, from 1.
    pub fn attempt(&self) -> i16 {
        self.row.attempt
    }

    /// The full row as fetched (state `running`).
    pub fn row(&self) -> &JobRow {
        &self.row
    }

    /// Resolves when the job's work should stop: the client is stopping hard, or the job was
    /// cancelled. Work that does not await can poll [`Job::is_cancelled`] instead. (A timeout drops
    /// the work future.)
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// True once the job's work should stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claimed_column_positions_name_their_columns() {
        let (id, priority, scheduled_at) = JobRow::CLAIMED_POSITION_COLUMNS;
        let names = JobRow::CLAIMED_COLUMNS;
        assert_eq!(
            [names[id], names[priority], names[scheduled_at]],
            ["id", "priority", "scheduled_at"]
        );
        assert_eq!(names[JobRow::CLAIMED_AT_COLUMN], "attempted_at");
    }

    #[test]
    fn states_round_trip_through_their_names() {
        for s in JobState::ALL {
            assert_eq!(s.as_str().parse::<JobState>().unwrap(), s);
        }
        assert!("nope".parse::<JobState>().is_err());
        assert!(JobState::Discarded.is_final());
        assert!(!JobState::Retryable.is_final());
    }
}
