//! Queries on `pgmill_job`. Each builds its statement without I/O, so the async and the blocking
//! (diesel host transaction) paths share one definition.

use chrono::{DateTime, TimeDelta, Utc};

use super::micros;
use crate::admin::{JobListPage, JobListParams};
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::{JobId, JobRow, JobState};
use crate::query::catalog::Query;
use crate::query::topic::TOPIC_REWIND;
use crate::schema::Schema;

pub(crate) fn job_get_by_id(schema: &Schema, id: JobId) -> Statement {
    schema.statement(Query::JobGetById).bind(id.0)
}

pub(crate) fn job_list(schema: &Schema, p: &JobListParams) -> Statement {
    schema
        .statement(Query::JobList)
        .bind(p.filter.state_names())
        .bind(p.filter.queues.clone())
        .bind(p.filter.kinds.clone())
        .bind(
            p.ids
                .as_ref()
                .map(|ids| ids.iter().map(|i| i.0).collect::<Vec<_>>()),
        )
        .bind(p.after.map_or(0, |c| c.0))
        .bind(i64::try_from(p.page_size()).unwrap_or(i64::MAX))
}

pub(crate) fn job_list_page(jobs: Vec<JobRow>, p: &JobListParams) -> JobListPage {
    let next_cursor = if jobs.len() == p.page_size() {
        jobs.last().map(|j| j.id)
    } else {
        None
    };
    JobListPage { jobs, next_cursor }
}

pub(crate) fn job_cancel(schema: &Schema, id: JobId, error: serde_json::Value) -> Statement {
    schema.statement(Query::JobCancel).bind(id.0).bind(error)
}

pub(crate) fn job_retry(schema: &Schema, id: JobId) -> Statement {
    schema.statement(Query::JobRetry).bind(id.0)
}

pub(crate) fn job_release_pending(
    schema: &Schema,
    id: JobId,
    at: Option<DateTime<Utc>>,
) -> Statement {
    schema
        .statement(Query::JobReleasePending)
        .bind(id.0)
        .bind(at)
}

/// One job id in a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdRow(pub(crate) JobId);

impl FromRow for IdRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(IdRow(JobId(row.take("id")?)))
    }
}

pub(crate) fn job_get_cancel_requested(schema: &Schema, ids: &[JobId]) -> Statement {
    schema
        .statement(Query::JobGetCancelRequested)
        .bind(ids.iter().map(|i| i.0).collect::<Vec<_>>())
}

pub(crate) fn job_delete(schema: &Schema, id: JobId) -> Statement {
    schema.statement(Query::JobDelete).bind(id.0)
}

/// One rescued job.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RescuedRow {
    pub(crate) id: JobId,
    pub(crate) state: JobState,
    pub(crate) queue: String,
}

impl FromRow for RescuedRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(RescuedRow {
            id: JobId(row.take("id")?),
            state: row.take::<String>("state")?.parse()?,
            queue: row.take("queue")?,
        })
    }
}

pub(crate) fn job_rescue(
    schema: &Schema,
    heartbeat_timeout: TimeDelta,
    missing_clients: Vec<String>,
    hard_deadline: TimeDelta,
    limit: usize,
    attempted_since: Option<DateTime<Utc>>,
) -> Statement {
    schema
        .statement(Query::JobRescue)
        .bind(micros(heartbeat_timeout))
        .bind(missing_clients)
        .bind(micros(hard_deadline))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(attempted_since)
        .bind(schema.channel(TOPIC_REWIND))
}

/// A client named by running jobs but with no row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientIdRow(pub(crate) String);

impl FromRow for ClientIdRow {
    fn from_row(mut row: Row) -> Result<Self> {
        row.take("client_id").map(ClientIdRow)
    }
}

pub(crate) fn job_get_running_clients(schema: &Schema) -> Statement {
    schema.statement(Query::JobGetRunningClients)
}

pub(crate) fn job_delete_finalized(
    schema: &Schema,
    completed: Option<TimeDelta>,
    cancelled: Option<TimeDelta>,
    discarded: Option<TimeDelta>,
    limit: usize,
) -> Statement {
    schema
        .statement(Query::JobDeleteFinalized)
        .bind(completed.map(micros))
        .bind(cancelled.map(micros))
        .bind(discarded.map(micros))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

/// Deletes history jobs in `state` (completed or cancelled) past their queue's retention (its own
/// rule, else the rule for every queue, else `default`) when that is shorter than `truncated`
/// (the retention the ring's truncation applies; `None`: nothing is truncated), reading at most
/// `probe` rows per queue.
pub(crate) fn job_done_delete_expired(
    schema: &Schema,
    state: JobState,
    default: Option<TimeDelta>,
    truncated: Option<TimeDelta>,
    probe: usize,
) -> Statement {
    schema
        .statement(Query::JobDoneDeleteExpired)
        .bind(state.as_str().to_owned())
        .bind(default.map(micros))
        .bind(truncated.map(micros))
        .bind(i64::try_from(probe).unwrap_or(i64::MAX))
}

/// What one per-queue retention batch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpiredRow {
    pub(crate) num_deleted: i64,
    /// Queues whose rows read were all past retention: there may be more.
    pub(crate) num_full: i64,
}

impl FromRow for ExpiredRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(ExpiredRow {
            num_deleted: row.take("num_deleted")?,
            num_full: row.take("num_full")?,
        })
    }
}

/// Due scheduled and retryable jobs made available by one [`job_schedule`] batch, per queue.
pub(crate) struct QueueCountRow {
    pub(crate) queue: String,
    pub(crate) num_jobs: i64,
}

impl FromRow for QueueCountRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueCountRow {
            queue: row.take("queue")?,
            num_jobs: row.take("num_jobs")?,
        })
    }
}

/// One batch of the scheduler: up to `limit` scheduled and retryable jobs due within
/// `lookahead` become available, keeping their `scheduled_at`.
pub(crate) fn job_schedule(
    schema: &Schema,
    lookahead: TimeDelta,
    limit: usize,
    due_since: Option<DateTime<Utc>>,
) -> Statement {
    schema
        .statement(Query::JobSchedule)
        .bind(micros(lookahead))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(due_since)
        .bind(schema.channel(TOPIC_REWIND))
}

/// The job table's rows against the rows of its statistics ([`job_table_growth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableGrowthRow {
    /// Rows when the statistics were last taken (`reltuples`, 0 before the first).
    pub(crate) stats_rows: i64,
    /// Rows now: inserts less deletes, as the statistics system counts them, or the rows the
    /// caller has just committed when more.
    pub(crate) live_rows: i64,
    /// Whether this role may analyze the table (see `job_table_growth.sql`).
    pub(crate) permitted: bool,
    /// Whether the table has outgrown its statistics and may be analyzed now.
    pub(crate) outgrown: bool,
}

impl FromRow for TableGrowthRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(TableGrowthRow {
            stats_rows: row.take("stats_rows")?,
            live_rows: row.take("live_rows")?,
            permitted: row.take("permitted")?,
            outgrown: row.take("outgrown")?,
        })
    }
}

/// Whether the job table's rows, less `overstated` (how far the counters overstated them at the
/// caller's last `ANALYZE`, 0 for none), or at least the `inserted` rows the caller has just
/// committed, are at least `min_rows` and `growth` times the rows of its statistics.
pub(crate) fn job_table_growth(
    schema: &Schema,
    min_rows: i64,
    growth: i64,
    overstated: i64,
    inserted: i64,
) -> Statement {
    schema
        .statement(Query::JobTableGrowth)
        .bind(schema.name())
        .bind(min_rows)
        .bind(growth)
        .bind(overstated)
        .bind(inserted)
}

/// Takes the job table's statistics again, on a small sample, failing rather than waiting more
/// than 100 ms for a lock: a script of three statements, for
/// [`Executor::execute_script`](crate::driver::Executor::execute_script).
pub(crate) fn job_analyze(schema: &Schema) -> Statement {
    schema.statement(Query::JobAnalyze)
}
