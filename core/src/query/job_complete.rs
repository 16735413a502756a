//! Recording outcomes: the completer's batched, fenced updates of running jobs
//! (`job_set_state_if_running_many.sql`, and `job_set_completed_many.sql` for a batch of plain
//! completions).

use chrono::{DateTime, TimeDelta, Utc};

use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::{JobId, JobState};
use crate::query::catalog::Query;
use crate::query::topic::TOPIC_REWIND;
use crate::schema::Schema;

/// What happened to one attempt, as `job_set_state_if_running_many.sql` records it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetStateParams {
    pub(crate) id: JobId,
    pub(crate) attempt: i16,
    /// The fencing token of the claim the outcome belongs to.
    pub(crate) claim_token: i64,
    pub(crate) outcome: &'static str,
    pub(crate) delay: TimeDelta,
    pub(crate) error: Option<serde_json::Value>,
}

/// The new state of one row `job_set_state_if_running_many` changed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetStateResult {
    pub(crate) id: JobId,
    pub(crate) state: JobState,
    pub(crate) attempt: i16,
    pub(crate) scheduled_at: DateTime<Utc>,
    pub(crate) finalized_at: Option<DateTime<Utc>>,
}

impl FromRow for SetStateResult {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(SetStateResult {
            id: JobId(row.take("id")?),
            state: row.take::<String>("state")?.parse()?,
            attempt: row.take("attempt")?,
            scheduled_at: row.take("scheduled_at")?,
            finalized_at: row.take("finalized_at")?,
        })
    }
}

pub(crate) fn job_set_state_if_running_many(
    schema: &Schema,
    params: &[SetStateParams],
    available_within: TimeDelta,
) -> Statement {
    let micros = |d: TimeDelta| d.num_microseconds().unwrap_or(i64::MAX);
    schema
        .statement(Query::JobSetStateIfRunningMany)
        .bind(params.iter().map(|p| p.id.0).collect::<Vec<_>>())
        .bind(
            params
                .iter()
                .map(|p| i64::from(p.attempt))
                .collect::<Vec<_>>(),
        )
        .bind(
            params
                .iter()
                .map(|p| p.outcome.to_owned())
                .collect::<Vec<_>>(),
        )
        .bind(params.iter().map(|p| micros(p.delay)).collect::<Vec<_>>())
        .bind(
            params
                .iter()
                .map(|p| p.error.clone().unwrap_or(serde_json::Value::Null))
                .collect::<Vec<_>>(),
        )
        .bind(micros(available_within))
        .bind(params.iter().map(|p| p.claim_token).collect::<Vec<_>>())
        .bind(schema.channel(TOPIC_REWIND))
}

/// A row `job_set_completed_many` completed: every one is completed at the attempt and with the
/// schedule of the claim that ran it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompletedRow {
    pub(crate) id: JobId,
    pub(crate) finalized_at: DateTime<Utc>,
}

impl FromRow for CompletedRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(CompletedRow {
            id: JobId(row.take("id")?),
            finalized_at: row.take("finalized_at")?,
        })
    }
}

/// The lean statement for a batch of plain completions of non-periodic jobs, fenced alike: it
/// completes the claims `(id, fencing token)`, returning a [`CompletedRow`] for each when `rows`,
/// and only the count of rows completed otherwise.
pub(crate) fn job_set_completed_many(
    schema: &Schema,
    claims: impl Iterator<Item = (JobId, i64)> + Clone,
    rows: bool,
) -> Statement {
    let query = if rows {
        Query::JobSetCompletedMany
    } else {
        Query::JobSetCompletedManyCount
    };
    schema
        .statement(query)
        .bind(claims.clone().map(|(id, _)| id.0).collect::<Vec<_>>())
        .bind(claims.map(|(_, token)| token).collect::<Vec<_>>())
}
