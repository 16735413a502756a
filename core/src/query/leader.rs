//! Queries of the leader lease.

use chrono::TimeDelta;

use super::micros;
use crate::admin::LeaderRow;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::query::catalog::Query;
use crate::schema::Schema;

impl FromRow for LeaderRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(LeaderRow {
            leader_id: row.take("leader_id")?,
            elected_at: row.take("elected_at")?,
            expires_at: row.take("expires_at")?,
        })
    }
}

/// The term after an election attempt: won, or the current one with how long until it could be
/// taken over.
#[derive(Debug, Clone)]
pub(crate) struct ElectionRow {
    pub(crate) term: LeaderRow,
    pub(crate) elected: bool,
    /// Until the term expires or its leader's heartbeat times out, whichever is first (negative:
    /// already; `None`: unknown).
    pub(crate) wait_us: Option<i64>,
}

impl FromRow for ElectionRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(ElectionRow {
            elected: row.take("elected")?,
            wait_us: row.take("wait_us")?,
            term: LeaderRow::from_row(row)?,
        })
    }
}

/// Stands `id` for election with a lease of `lease`; a leader whose heartbeat is older than
/// `leader_timeout` is taken over before its lease ends.
pub(crate) fn leader_attempt_elect(
    schema: &Schema,
    id: &str,
    lease: TimeDelta,
    leader_timeout: TimeDelta,
) -> Statement {
    schema
        .statement(Query::LeaderAttemptElect)
        .bind(id)
        .bind(micros(lease))
        .bind(micros(leader_timeout))
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
        .bind(schema.channel(crate::query::topic::TOPIC_LEADERSHIP))
}

pub(crate) fn leader_get(schema: &Schema) -> Statement {
    schema.statement(Query::LeaderGet)
}

/// The id of the client holding a live lease.
pub(crate) struct LeaderIdRow(pub(crate) String);

impl FromRow for LeaderIdRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(LeaderIdRow(row.take("leader_id")?))
    }
}

pub(crate) fn leader_get_live(schema: &Schema) -> Statement {
    schema.statement(Query::LeaderGetLive)
}

/// The database clock, which the leader's services compute their schedules and bands from.
pub(crate) fn leader_db_now(schema: &Schema) -> Statement {
    schema.statement(Query::LeaderDbNow)
}
