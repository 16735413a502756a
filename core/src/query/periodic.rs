//! Queries of durable periodic schedules (`pgmill_periodic`).

use chrono::{DateTime, Utc};

use crate::admin::PeriodicRow;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::JobId;
use crate::query::catalog::Query;
use crate::schema::Schema;

impl FromRow for PeriodicRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(PeriodicRow {
            name: row.take("name")?,
            schedule: row.take("schedule")?,
            time_zone: row.take("time_zone")?,
            next_run_at: row.take("next_run_at")?,
            paused: row.take("paused")?,
            last_run_at: row.take("last_run_at")?,
            last_job_id: row.take::<Option<i64>>("last_job_id")?.map(JobId),
            last_success_at: row.take("last_success_at")?,
            last_failure_at: row.take("last_failure_at")?,
            run_count: row.take("run_count")?,
            success_count: row.take("success_count")?,
            failure_count: row.take("failure_count")?,
            consecutive_failures: row.take("consecutive_failures")?,
        })
    }
}

/// A due periodic job, locked for enqueuing, with the database time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DuePeriodic {
    pub(crate) name: String,
    pub(crate) next_run_at: DateTime<Utc>,
    pub(crate) db_now: DateTime<Utc>,
}

impl FromRow for DuePeriodic {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(DuePeriodic {
            name: row.take("name")?,
            next_run_at: row.take("next_run_at")?,
            db_now: row.take("db_now")?,
        })
    }
}

pub(crate) fn periodic_upsert(
    schema: &Schema,
    name: &str,
    schedule: &str,
    first_run: DateTime<Utc>,
    run_now: bool,
    time_zone: Option<&str>,
) -> Statement {
    schema
        .statement(Query::PeriodicUpsert)
        .bind(name)
        .bind(schedule)
        .bind(first_run)
        .bind(run_now)
        .bind(time_zone)
}

pub(crate) fn periodic_get_due(schema: &Schema, names: Vec<String>) -> Statement {
    schema.statement(Query::PeriodicGetDue).bind(names)
}

pub(crate) fn periodic_advance(
    schema: &Schema,
    name: &str,
    consumed: DateTime<Utc>,
    next: DateTime<Utc>,
    last_job: Option<JobId>,
    num_jobs: i64,
) -> Statement {
    schema
        .statement(Query::PeriodicAdvance)
        .bind(name)
        .bind(consumed)
        .bind(next)
        .bind(last_job.map(|j| j.0))
        .bind(num_jobs)
}

pub(crate) fn periodic_set_paused(schema: &Schema, name: &str, paused: bool) -> Statement {
    schema
        .statement(Query::PeriodicSetPaused)
        .bind(name)
        .bind(paused)
}

pub(crate) fn periodic_list(schema: &Schema, only: Option<&str>) -> Statement {
    schema.statement(Query::PeriodicList).bind(only)
}
