//! Operator actions on many jobs at once: count what a filter matches, then retry, cancel or
//! delete the matching jobs batch by batch under a keyset cursor (`job_count.sql`,
//! `job_bulk.sql`).

use crate::admin::{BulkAction, JobBatch, JobListParams};
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::JobId;
use crate::query::catalog::Query;
use crate::schema::Schema;

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
        let full = usize::try_from(self.num_matched).unwrap_or(0) >= params.page_size();
        JobBatch {
            changed: u64::try_from(self.num_changed).unwrap_or(0),
            next_cursor: self.last_id.filter(|_| full).map(JobId),
        }
    }
}

/// Binds the filter of `params` ($1 to $4), with `states` in place of its own.
fn bind_filter(stmt: Statement, params: &JobListParams, states: Option<Vec<String>>) -> Statement {
    stmt.bind(states)
        .bind(params.filter.queues.clone())
        .bind(params.filter.kinds.clone())
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
        None => params.filter.state_names(),
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
    .bind(i64::try_from(params.page_size()).unwrap_or(i64::MAX))
    .bind(action.as_str())
    .bind(cancel_error)
}
