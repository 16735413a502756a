//! The claim: due jobs of a queue become `running` under a fencing token
//! (`job_get_available.sql`, `job_get_available_after.sql`), and what a client does with the
//! claims it holds after a database restart or failover: re-assert them
//! (`job_reassert_running.sql`) and release the orphans (`job_release_orphaned.sql`).

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};

use super::micros;
use crate::driver::{HeldRows, Statement};
use crate::error::Result;
use crate::job::{JobId, JobRow};
use crate::query::catalog::Query;
use crate::query::topic::TOPIC_REWIND;
use crate::schema::Schema;

/// One claim held: the job, the attempt it runs, the claim's fencing token, when the claim was
/// made (database time; a row still showing it has not lost the claim), and when the job was
/// created (with the id, the job's identity: a promoted replica that lost the job's insert hands
/// its id out again to another job, created later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeldClaim {
    pub(crate) id: JobId,
    pub(crate) attempt: i16,
    pub(crate) token: i64,
    pub(crate) attempted_at: Option<DateTime<Utc>>,
    pub(crate) created_at: DateTime<Utc>,
}

/// A position in fetch order: (priority, scheduled_at, id) of a job.
pub(crate) type FetchPosition = (i16, DateTime<Utc>, JobId);

/// The claim of up to `limit` due jobs of `queue` in fetch order for `client_id` under the fencing
/// token `claim_token`, of the `kinds` it has workers for only; only those after `after` when given (`job_get_available_after.sql`), and
/// then only up to `until` when given (`job_get_available_between.sql`). Run it with
/// [`Executor::query_held`](crate::driver::Executor::query_held) and read its rows with
/// [`claimed_position`] and [`claimed_jobs`].
pub(crate) fn job_get_available(
    schema: &Schema,
    queue: &str,
    limit: usize,
    client_id: &str,
    claim_token: i64,
    (after, until): (Option<FetchPosition>, Option<FetchPosition>),
    kinds: &[String],
) -> Statement {
    let query = match (after, until) {
        (Some(_), Some(_)) => Query::JobGetAvailableBetween,
        (Some(_), None) => Query::JobGetAvailableAfter,
        (None, _) => Query::JobGetAvailable,
    };
    let stmt = schema
        .statement(query)
        .bind(queue)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(client_id)
        .bind(claim_token);
    let bind_position = |stmt: Statement, (priority, scheduled_at, id): FetchPosition| {
        stmt.bind(priority).bind(scheduled_at).bind(id.0)
    };
    let stmt = match (after, until) {
        (Some(after), Some(until)) => bind_position(bind_position(stmt, after), until),
        (Some(after), None) => bind_position(stmt, after),
        (None, _) => stmt,
    };
    stmt.bind(kinds.to_vec())
}

/// The position in fetch order of the last job a claim took: the greatest (priority,
/// scheduled_at, id) of its rows (RETURNING has no order), `None` for no row. Reads those three
/// columns only (the producer sends its next claim from there before decoding the rest), after
/// checking the rows' columns.
pub(crate) fn claimed_position(rows: &mut HeldRows) -> Result<Option<FetchPosition>> {
    let (id, priority, scheduled_at) = JobRow::CLAIMED_POSITION_COLUMNS;
    let mut first = true;
    let mut last: Option<FetchPosition> = None;
    rows.read_each(|row| {
        if std::mem::take(&mut first) {
            row.expect_columns(&JobRow::CLAIMED_COLUMNS)?;
        }
        let at = (
            row.read(priority)?,
            row.read(scheduled_at)?,
            JobId(row.read(id)?),
        );
        last = Some(last.map_or(at, |l| l.max(at)));
        Ok(())
    })?;
    Ok(last)
}

/// Decodes the rows of a claim made by [`job_get_available`] with the same `queue`, `client_id`
/// and `claim_token`, in fetch order.
pub(crate) fn claimed_jobs(
    rows: &mut HeldRows,
    queue: &str,
    client_id: &str,
    claim_token: i64,
) -> Result<Vec<Arc<JobRow>>> {
    // The claim's time, read once: the statement sets every row's `attempted_at` to its `now()`.
    let mut attempted_at = None;
    let mut first = true;
    let mut jobs = rows.decode(|row| {
        if std::mem::take(&mut first) {
            row.expect_columns(&JobRow::CLAIMED_COLUMNS)?;
            attempted_at = row.read(JobRow::CLAIMED_AT_COLUMN)?;
        }
        JobRow::from_claimed_row(row, queue, claim_token, client_id, attempted_at).map(Arc::new)
    })?;
    // RETURNING has no order; run in fetch order.
    jobs.sort_by_key(|j| (j.priority, j.scheduled_at, j.id));
    Ok(jobs)
}

pub(crate) fn job_reassert_running(
    schema: &Schema,
    claims: &[HeldClaim],
    client_id: &str,
) -> Statement {
    schema
        .statement(Query::JobReassertRunning)
        .bind(claims.iter().map(|c| c.id.0).collect::<Vec<_>>())
        .bind(
            claims
                .iter()
                .map(|c| i64::from(c.attempt))
                .collect::<Vec<_>>(),
        )
        .bind(client_id)
        .bind(claims.iter().map(|c| c.token).collect::<Vec<_>>())
        .bind(
            claims
                .iter()
                .map(|c| c.attempted_at.unwrap_or(DateTime::<Utc>::MIN_UTC))
                .collect::<Vec<_>>(),
        )
        .bind(claims.iter().map(|c| c.created_at).collect::<Vec<_>>())
}

/// Releases running jobs attributed to `client_id` under any claim but those `held`, except
/// claims made within `margin`.
pub(crate) fn job_release_orphaned(
    schema: &Schema,
    client_id: &str,
    held: &[HeldClaim],
    margin: TimeDelta,
) -> Statement {
    schema
        .statement(Query::JobReleaseOrphaned)
        .bind(client_id)
        .bind(held.iter().map(|c| c.id.0).collect::<Vec<_>>())
        .bind(held.iter().map(|c| c.token).collect::<Vec<_>>())
        .bind(micros(margin))
        .bind(schema.channel(TOPIC_REWIND))
}
