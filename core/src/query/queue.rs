//! Queries on `pgmill_queue`, and control and insert notifications.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use super::micros;
use crate::admin::{LIVE_STATES, QueueOverview, QueueRow};
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::JobState;
use crate::query::catalog::Query;
use crate::schema::Schema;

impl FromRow for QueueRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueRow {
            name: row.take("name")?,
            created_at: row.take("created_at")?,
            updated_at: row.take("updated_at")?,
            paused_at: row.take("paused_at")?,
            metadata: row.take("metadata")?,
            counts: take_live_counts(&mut row)?,
            oldest_available_age: take_oldest_available_age(&mut row)?,
        })
    }
}

/// The live counts by state, one column per state in [`LIVE_STATES`].
fn take_live_counts(row: &mut Row) -> Result<BTreeMap<JobState, i64>> {
    let mut counts = BTreeMap::new();
    for state in LIVE_STATES {
        counts.insert(state, row.take::<i64>(state.as_str())?);
    }
    Ok(counts)
}

fn take_oldest_available_age(row: &mut Row) -> Result<Option<Duration>> {
    Ok(row
        .take::<Option<i64>>("oldest_available_age_us")?
        .map(|us| Duration::from_micros(u64::try_from(us).unwrap_or(0))))
}

impl FromRow for QueueOverview {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueOverview {
            name: row.take("name")?,
            registered: row.take("registered")?,
            paused_at: row.take("paused_at")?,
            served: row.take("served")?,
            counts: take_live_counts(&mut row)?,
            oldest_available_age: take_oldest_available_age(&mut row)?,
        })
    }
}

pub(crate) fn queue_overview(schema: &Schema, live_within: TimeDelta) -> Statement {
    schema
        .statement(Query::QueueOverview)
        .bind(micros(live_within))
}

/// The jobs waiting in served queues whose kind no live client working the queue knows, among
/// the first `probe` due available jobs of each queue, by queue and kind.
pub(crate) fn queue_unknown_kinds(
    schema: &Schema,
    live_within: TimeDelta,
    probe: usize,
) -> Statement {
    schema
        .statement(Query::QueueUnknownKinds)
        .bind(micros(live_within))
        .bind(i64::try_from(probe).unwrap_or(i64::MAX))
}

impl FromRow for crate::admin::UnknownKindJobs {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(crate::admin::UnknownKindJobs {
            queue: row.take("queue")?,
            kind: row.take("kind")?,
            num_jobs: row.take("num_jobs")?,
            due_since: row.take("due_since")?,
        })
    }
}

/// The state a producer reads back when it registers or refreshes its queue.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueueUpsertRow {
    pub(crate) paused_at: Option<DateTime<Utc>>,
}

impl FromRow for QueueUpsertRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueUpsertRow {
            paused_at: row.take("paused_at")?,
        })
    }
}

/// One queue name in a result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueueName(pub(crate) String);

impl FromRow for QueueName {
    fn from_row(mut row: Row) -> Result<Self> {
        row.take("name").map(QueueName)
    }
}

pub(crate) fn queue_upsert(schema: &Schema, queue: &str) -> Statement {
    schema.statement(Query::QueueUpsert).bind(queue)
}

pub(crate) fn queue_pause(schema: &Schema, queue: &str, create: bool) -> Statement {
    schema.statement(Query::QueuePause).bind(queue).bind(create)
}

pub(crate) fn queue_resume(schema: &Schema, queue: &str) -> Statement {
    schema.statement(Query::QueueResume).bind(queue)
}

pub(crate) fn queue_list(schema: &Schema, only: Option<&str>, limit: usize) -> Statement {
    schema
        .statement(Query::QueueList)
        .bind(only)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

/// Broadcasts `messages` on the control topic, in order.
pub(crate) fn queue_control_notify(schema: &Schema, messages: &[serde_json::Value]) -> Statement {
    schema
        .statement(Query::QueueControlNotify)
        .bind(schema.channel(crate::query::topic::TOPIC_CONTROL))
        .bind(messages.iter().map(ToString::to_string).collect::<Vec<_>>())
}

pub(crate) fn queue_delete_expired(
    schema: &Schema,
    retention: TimeDelta,
    limit: usize,
) -> Statement {
    schema
        .statement(Query::QueueDeleteExpired)
        .bind(micros(retention))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}
