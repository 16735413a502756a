//! The dead-letter queue (`pgmill_job_dead`): listing, redriving, purging, retention and depth.

use std::time::Duration;

use chrono::TimeDelta;

use super::micros;
use crate::admin::{DeadCursor, DeadFilter, DeadJob, DeadListPage, DeadListParams};
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::{JobId, JobRow};
use crate::query::catalog::Query;
use crate::schema::Schema;

impl FromRow for DeadJob {
    fn from_row(mut row: Row) -> Result<Self> {
        // Read from the last column (`Row::take` looks from the end): the queue's columns, then
        // the job's.
        let redrive_count = row.take("redrive_count")?;
        let reason = row.take::<String>("dead_reason")?.parse()?;
        let dead_at = row.take("dead_at")?;
        Ok(DeadJob {
            job: JobRow::from_row(row)?,
            dead_at,
            reason,
            redrive_count,
        })
    }
}

fn bind_filter(stmt: Statement, f: &DeadFilter) -> Statement {
    stmt.bind(f.queues.clone()).bind(f.kinds.clone()).bind(
        f.ids
            .as_ref()
            .map(|ids| ids.iter().map(|i| i.0).collect::<Vec<_>>()),
    )
}

pub(crate) fn job_dead_list(schema: &Schema, p: &DeadListParams) -> Statement {
    bind_filter(schema.statement(Query::JobDeadList), &p.filter)
        .bind(p.before.map(|c| c.dead_at))
        .bind(p.before.map_or(0, |c| c.id.0))
        .bind(i64::try_from(p.page_size()).unwrap_or(i64::MAX))
}

pub(crate) fn job_dead_list_page(jobs: Vec<DeadJob>, p: &DeadListParams) -> DeadListPage {
    let next_cursor = if jobs.len() == p.page_size() {
        jobs.last().map(|j| DeadCursor {
            dead_at: j.dead_at,
            id: j.job.id,
        })
    } else {
        None
    };
    DeadListPage { jobs, next_cursor }
}

/// One batch of a redrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedriveRow {
    pub(crate) num_matched: i64,
    pub(crate) last_id: Option<i64>,
    pub(crate) redriven: Vec<(JobId, String)>,
    pub(crate) conflicts: Vec<JobId>,
}

impl FromRow for RedriveRow {
    fn from_row(mut row: Row) -> Result<Self> {
        let conflicts: Vec<i64> = row.take("conflict_ids")?;
        let queues: Vec<String> = row.take("redriven_queues")?;
        let ids: Vec<i64> = row.take("redriven_ids")?;
        Ok(RedriveRow {
            last_id: row.take("last_id")?,
            num_matched: row.take("num_matched")?,
            redriven: ids.into_iter().map(JobId).zip(queues).collect(),
            conflicts: conflicts.into_iter().map(JobId).collect(),
        })
    }
}

pub(crate) fn job_dead_redrive(
    schema: &Schema,
    f: &DeadFilter,
    after: JobId,
    batch: usize,
) -> Statement {
    bind_filter(schema.statement(Query::JobDeadRedrive), f)
        .bind(after.0)
        .bind(i64::try_from(batch).unwrap_or(i64::MAX))
}

/// One batch of a purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PurgeRow {
    pub(crate) num_matched: i64,
    pub(crate) last_id: Option<i64>,
    pub(crate) num_purged: i64,
}

impl FromRow for PurgeRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(PurgeRow {
            num_purged: row.take("num_purged")?,
            last_id: row.take("last_id")?,
            num_matched: row.take("num_matched")?,
        })
    }
}

pub(crate) fn job_dead_purge(
    schema: &Schema,
    f: &DeadFilter,
    after: JobId,
    batch: usize,
) -> Statement {
    bind_filter(schema.statement(Query::JobDeadPurge), f)
        .bind(after.0)
        .bind(i64::try_from(batch).unwrap_or(i64::MAX))
}

pub(crate) fn job_dead_delete_expired(
    schema: &Schema,
    retention: TimeDelta,
    limit: usize,
) -> Statement {
    schema
        .statement(Query::JobDeadDeleteExpired)
        .bind(micros(retention))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

/// Deletes dead-letter jobs past their queue's retention (its own rule, else the rule for every
/// queue, else `default`), reading at most `probe` rows per queue.
pub(crate) fn job_dead_delete_expired_by_queue(
    schema: &Schema,
    default: Option<TimeDelta>,
    probe: usize,
) -> Statement {
    schema
        .statement(Query::JobDeadDeleteExpiredByQueue)
        .bind(default.map(micros))
        .bind(i64::try_from(probe).unwrap_or(i64::MAX))
}

/// One queue's dead-letter depth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadDepthRow {
    pub(crate) queue: String,
    pub(crate) num_jobs: i64,
    pub(crate) oldest_age: Duration,
}

impl FromRow for DeadDepthRow {
    fn from_row(mut row: Row) -> Result<Self> {
        let oldest_age_us: i64 = row.take("oldest_age_us")?;
        Ok(DeadDepthRow {
            num_jobs: row.take("num_jobs")?,
            queue: row.take("queue")?,
            oldest_age: Duration::from_micros(u64::try_from(oldest_age_us).unwrap_or(0)),
        })
    }
}

pub(crate) fn job_dead_count_by_queue(schema: &Schema) -> Statement {
    schema.statement(Query::JobDeadCountByQueue)
}
