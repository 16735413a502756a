//! Queries of the advisory-lock claim mode ([`ClaimMode::AdvisoryLock`](crate::ClaimMode)): the
//! locker's claim, re-read, unlock and check on its session, and the completer's two ways of
//! recording outcomes of jobs whose claim wrote nothing.

use chrono::{DateTime, Utc};

use crate::catalog::Query;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::{JobId, JobRow};
use crate::query::FetchPosition;
use crate::schema::Schema;

/// The walk of `job_advisory_claim.sql`: up to `limit` due jobs of `queue` after `after` (from
/// the head when `None`), leaving out the ids in `held`.
pub(crate) fn job_advisory_claim(
    schema: &Schema,
    queue: &str,
    limit: usize,
    held: Vec<i64>,
    after: Option<FetchPosition>,
) -> Statement {
    // Before every job: priorities are positive, and no job is scheduled before year 1.
    let (priority, scheduled_at, id) = after.unwrap_or((
        i16::MIN,
        DateTime::<Utc>::from_timestamp(-62_135_596_800, 0).unwrap_or_default(),
        JobId(i64::MIN),
    ));
    schema
        .statement(Query::JobAdvisoryClaim)
        .bind(queue)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .bind(held)
        .bind(priority)
        .bind(scheduled_at)
        .bind(id.0)
        .bind(schema.name())
}

/// The jobs among `ids` still due and available in `queue`, read after their locks were taken.
pub(crate) fn job_advisory_get_locked(schema: &Schema, ids: Vec<i64>, queue: &str) -> Statement {
    schema
        .statement(Query::JobAdvisoryGetLocked)
        .bind(ids)
        .bind(queue)
}

/// Releases the locker session's advisory locks on `ids`; one row, `released`.
pub(crate) fn job_advisory_unlock(schema: &Schema, ids: Vec<i64>) -> Statement {
    schema
        .statement(Query::JobAdvisoryUnlock)
        .bind(ids)
        .bind(schema.name())
}

/// The locks the session holds and the server's lock table size.
pub(crate) fn job_advisory_held(schema: &Schema) -> Statement {
    schema.statement(Query::JobAdvisoryHeld)
}

/// What `job_advisory_held.sql` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LockerStatus {
    /// Advisory locks the session holds.
    pub(crate) held: i64,
    /// Objects the server's shared lock table is sized for.
    pub(crate) lock_table: i64,
}

impl FromRow for LockerStatus {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(LockerStatus {
            lock_table: row.take("lock_table")?,
            held: row.take("held")?,
        })
    }
}

/// One job claimed by advisory lock, as its completion is fenced and recorded: the row as the
/// claim read it, and the attempt's start and token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AdvisoryClaim {
    pub(crate) id: JobId,
    /// The attempt as the row has it: not counted yet.
    pub(crate) attempt_read: i16,
    pub(crate) scheduled_at: DateTime<Utc>,
    pub(crate) attempted_at: DateTime<Utc>,
    pub(crate) claim_token: i64,
}

impl AdvisoryClaim {
    /// The claim of `job`, as the locker handed it out (its attempt counted in memory only).
    pub(crate) fn of(job: &JobRow) -> Self {
        AdvisoryClaim {
            id: job.id,
            attempt_read: job.attempt - 1,
            scheduled_at: job.scheduled_at,
            attempted_at: job.attempted_at.unwrap_or(job.scheduled_at),
            claim_token: job.claim_token.unwrap_or(crate::claim_tokens::NO_CLAIM),
        }
    }
}

fn bind_claims(stmt: Statement, claims: &[AdvisoryClaim]) -> Statement {
    stmt.bind(claims.iter().map(|c| c.id.0).collect::<Vec<_>>())
        .bind(
            claims
                .iter()
                .map(|c| i64::from(c.attempt_read))
                .collect::<Vec<_>>(),
        )
        .bind(claims.iter().map(|c| c.scheduled_at).collect::<Vec<_>>())
        .bind(claims.iter().map(|c| c.attempted_at).collect::<Vec<_>>())
}

/// Completes the jobs of `claims`, run by `client_id`; returns `SetStateResult` rows.
pub(crate) fn job_advisory_complete_many(
    schema: &Schema,
    claims: &[AdvisoryClaim],
    client_id: &str,
) -> Statement {
    bind_claims(schema.statement(Query::JobAdvisoryCompleteMany), claims).bind(client_id)
}

/// Records the claims in their rows (running under their tokens), before their outcomes are
/// recorded in the same transaction.
pub(crate) fn job_advisory_mark_running(
    schema: &Schema,
    claims: &[AdvisoryClaim],
    client_id: &str,
) -> Statement {
    bind_claims(schema.statement(Query::JobAdvisoryMarkRunning), claims)
        .bind(claims.iter().map(|c| c.claim_token).collect::<Vec<_>>())
        .bind(client_id)
}
