//! Queries of the leader lease.

use chrono::{DateTime, TimeDelta, Utc};

use super::micros;
use crate::catalog::Query;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::schema::Schema;

/// One leadership term: who leads, since when (which names the term), and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderRow {
    /// The leader's client id.
    pub leader_id: String,
    /// When the term began; with the id it identifies the term.
    pub elected_at: DateTime<Utc>,
    /// When the lease runs out unless renewed.
    pub expires_at: DateTime<Utc>,
}

impl FromRow for LeaderRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(LeaderRow {
            leader_id: row.take("leader_id")?,
            elected_at: row.take("elected_at")?,
            expires_at: row.take("expires_at")?,
        })
    }
}

pub(crate) fn leader_attempt_elect(schema: &Schema, id: &str, lease: TimeDelta) -> Statement {
    schema
        .statement(Query::LeaderAttemptElect)
        .bind(id)
        .bind(micros(lease))
}

pub(crate) fn leader_attempt_reelect(
    schema: &Schema,
    term: &LeaderRow,
    lease: TimeDelta,
) -> Statement {
    schema
        .statement(Query::LeaderAttemptReelect)
        .bind(term.leader_id.as_str())
        .bind(term.elected_at)
        .bind(micros(lease))
}

pub(crate) fn leader_resign(schema: &Schema, term: &LeaderRow) -> Statement {
    schema
        .statement(Query::LeaderResign)
        .bind(term.leader_id.as_str())
        .bind(term.elected_at)
        .bind(schema.channel(crate::notifier::TOPIC_LEADERSHIP))
}

pub(crate) fn leader_get(schema: &Schema) -> Statement {
    schema.statement(Query::LeaderGet)
}
