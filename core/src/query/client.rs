//! Queries of client liveness rows (`pgmill_client`).

use std::time::Duration;

use chrono::TimeDelta;

use super::micros;
use crate::admin::ClientRow;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::query::catalog::Query;
use crate::schema::Schema;

pub(crate) fn client_heartbeat(schema: &Schema, id: &str) -> Statement {
    schema.statement(Query::ClientHeartbeat).bind(id)
}

/// Registers a client with the queues it works and the job kinds it has workers for, which its
/// row advertises to operators (and the leader reads to report jobs no live client can run).
pub(crate) fn client_register(
    schema: &Schema,
    id: &str,
    hostname: &str,
    pid: i32,
    queues: &[String],
    kinds: &[String],
) -> Statement {
    schema
        .statement(Query::ClientRegister)
        .bind(id)
        .bind(hostname)
        .bind(pid)
        .bind(serde_json::json!({ "queues": queues, "kinds": kinds }))
}

/// How long until the next live client's heartbeat is older than `timeout`, in microseconds
/// (`micros_left`; zero or less when an expired client still has running jobs; NULL when no
/// client is live and none of the expired has running jobs).
pub(crate) fn client_next_timeout(schema: &Schema, timeout: TimeDelta) -> Statement {
    schema
        .statement(Query::ClientNextTimeout)
        .bind(micros(timeout))
}

pub(crate) fn client_delete(schema: &Schema, id: &str) -> Statement {
    schema.statement(Query::ClientDelete).bind(id)
}

/// Deletes at most `limit` rows of clients whose heartbeat is older than `retention` and that run
/// no job; returns how many (`num_deleted`).
pub(crate) fn client_delete_expired(
    schema: &Schema,
    retention: TimeDelta,
    limit: usize,
) -> Statement {
    schema
        .statement(Query::ClientDeleteExpired)
        .bind(micros(retention))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

pub(crate) fn client_list(schema: &Schema, live_within: TimeDelta) -> Statement {
    schema
        .statement(Query::ClientList)
        .bind(micros(live_within))
}

impl FromRow for ClientRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(ClientRow {
            id: row.take("id")?,
            hostname: row.take("hostname")?,
            pid: row.take("pid")?,
            started_at: row.take("started_at")?,
            heartbeat_at: row.take("heartbeat_at")?,
            heartbeat_age: Duration::from_micros(
                u64::try_from(row.take::<i64>("heartbeat_age_us")?).unwrap_or(0),
            ),
            live: row.take("live")?,
            leader: row.take("leader")?,
            queues: row.take("queues")?,
            kinds: row.take("kinds")?,
        })
    }
}
