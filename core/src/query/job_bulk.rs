//! Operator actions on many jobs at once: count what a filter matches, then retry, cancel or
//! delete the matching jobs batch by batch under a keyset cursor (`job_count.sql`,
//! `job_bulk.sql`).

use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::{JobId, JobState};
use crate::query::JobListParams;
use crate::query::catalog::Query;
use crate::query::job::DEFAULT_LIST_LIMIT;
use crate::schema::Schema;

/// What [`Client::job_bulk`](crate::Client::job_bulk) does to each matching job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkAction {
    /// Makes the job available now, with one more attempt if it used them up, as
    /// [`Client::job_retry`](crate::Client::job_retry) does. Running and available jobs are left
    /// alone.
    Retry,
    /// Cancels the job, as [`Client::job_cancel`](crate::Client::job_cancel) does: at once when
    /// it is not running; a running job is marked and its client told. Final jobs are left
    /// alone.
    Cancel,
    /// Deletes the job, as [`Client::job_delete`](crate::Client::job_delete) does. Running jobs
    /// are left alone.
    Delete,
}

impl BulkAction {
    /// The states of the jobs this action changes.
    pub fn states(self) -> &'static [JobState] {
        match self {
            BulkAction::Retry => &[
                JobState::Scheduled,
                JobState::Pending,
                JobState::Retryable,
                JobState::Completed,
                JobState::Cancelled,
                JobState::Discarded,
            ],
            BulkAction::Cancel => &[
                JobState::Available,
                JobState::Scheduled,
                JobState::Pending,
                JobState::Retryable,
                JobState::Running,
            ],
            BulkAction::Delete => &[
                JobState::Available,
                JobState::Scheduled,
                JobState::Pending,
                JobState::Retryable,
                JobState::Completed,
                JobState::Cancelled,
                JobState::Discarded,
            ],
        }
    }

    /// The action's name, as `job_bulk.sql` takes it.
    fn as_str(self) -> &'static str {
        match self {
            BulkAction::Retry => "retry",
            BulkAction::Cancel => "cancel",
            BulkAction::Delete => "delete",
        }
    }

    /// The states `params` asks for that this action changes (all of them when it asks for none).
    fn narrow(self, params: &JobListParams) -> Vec<String> {
        self.states()
            .iter()
            .filter(|s| params.states.as_ref().is_none_or(|only| only.contains(s)))
            .map(|s| s.as_str().to_owned())
            .collect()
    }
}

/// One batch of [`Client::job_bulk`](crate::Client::job_bulk).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobBatch {
    /// Jobs this batch changed.
    pub changed: u64,
    /// The cursor for the next batch ([`JobListParams::after`]), `None` when this batch was the
    /// last.
    pub next_cursor: Option<JobId>,
}

/// What one run of `job_bulk.sql` did.
pub(crate) struct JobBulkRow {
    pub(crate) num_matched: i64,
    pub(crate) last_id: Option<i64>,
    pub(crate) num_changed: i64,
    /// Running jobs marked for cancellation, with their queues (the caller tells their clients).
    pub(crate) running: Vec<(JobId, String)>,
    /// Queues that got jobs available now (the caller wakes them).
    pub(crate) available_queues: Vec<String>,
}

impl FromRow for JobBulkRow {
    fn from_row(mut row: Row) -> Result<Self> {
        let ids: Vec<i64> = row.take("running_ids")?;
        let queues: Vec<String> = row.take("running_queues")?;
        Ok(JobBulkRow {
            num_matched: row.take("num_matched")?,
            last_id: row.take("last_id")?,
            num_changed: row.take("num_changed")?,
            running: ids.into_iter().map(JobId).zip(queues).collect(),
            available_queues: row.take("available_queues")?,
        })
    }
}

impl JobBulkRow {
    pub(crate) fn batch(&self, params: &JobListParams) -> JobBatch {
        let full = usize::try_from(self.num_matched).unwrap_or(0) >= batch_size(params);
        JobBatch {
            changed: u64::try_from(self.num_changed).unwrap_or(0),
            next_cursor: self.last_id.filter(|_| full).map(JobId),
        }
    }
}

fn batch_size(params: &JobListParams) -> usize {
    params.limit.unwrap_or(DEFAULT_LIST_LIMIT).max(1)
}

/// Binds the filter of `params` ($1 to $4), with `states` in place of its own.
fn bind_filter(stmt: Statement, params: &JobListParams, states: Option<Vec<String>>) -> Statement {
    stmt.bind(states)
        .bind(params.queues.clone())
        .bind(params.kinds.clone())
        .bind(
            params
                .ids
                .as_ref()
                .map(|ids| ids.iter().map(|i| i.0).collect::<Vec<_>>()),
        )
}

/// Counts the jobs matching `params` (without its cursor), only those `action` changes if given.
pub(crate) fn job_count(
    schema: &Schema,
    params: &JobListParams,
    action: Option<BulkAction>,
) -> Statement {
    let states = match action {
        Some(a) => Some(a.narrow(params)),
        None => params
            .states
            .as_ref()
            .map(|s| s.iter().map(|s| s.as_str().to_owned()).collect()),
    };
    bind_filter(schema.statement(Query::JobCount), params, states)
}

pub(crate) fn job_bulk(
    schema: &Schema,
    action: BulkAction,
    params: &JobListParams,
    cancel_error: serde_json::Value,
) -> Statement {
    bind_filter(
        schema.statement(Query::JobBulk),
        params,
        Some(action.narrow(params)),
    )
    .bind(params.after.map_or(0, |c| c.0))
    .bind(i64::try_from(batch_size(params)).unwrap_or(i64::MAX))
    .bind(action.as_str())
    .bind(cancel_error)
}
