//! Queries on `pgmill_queue`, and control and insert notifications.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use super::micros;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::JobState;
use crate::query::catalog::Query;
use crate::schema::Schema;

/// The states [`QueueRow::counts`] counts: every state a job is in before it finishes.
pub(crate) const LIVE_STATES: [JobState; 5] = [
    JobState::Available,
    JobState::Scheduled,
    JobState::Pending,
    JobState::Running,
    JobState::Retryable,
];

/// A queue, as registered by the producers working it, with its live jobs counted by state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueRow {
    /// The queue's name.
    pub name: String,
    /// When a producer first registered it.
    pub created_at: DateTime<Utc>,
    /// When a producer last refreshed it (or it was paused or resumed).
    pub updated_at: DateTime<Utc>,
    /// When it was paused; `None` while it runs.
    pub paused_at: Option<DateTime<Utc>>,
    /// Free-form metadata.
    pub metadata: serde_json::Value,
    /// How many of its jobs are in each live state (available, scheduled, pending, running,
    /// retryable), every one of them present, zero when none. Finished jobs
    /// (completed, cancelled, discarded) are not counted: each count is one range of the job
    /// table's `(state, queue)` index, so reading them costs as much as the queue is deep, however
    /// many finished jobs the table keeps. List those with
    /// [`Client::job_list`](crate::Client::job_list).
    pub counts: BTreeMap<JobState, i64>,
    /// How long its oldest due available job has been due (database clock); `None` when it has
    /// none.
    pub oldest_available_age: Option<Duration>,
}

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

/// A queue as an overview shows it ([`Client::queue_overview`](crate::Client::queue_overview)):
/// registered, or holding live jobs under a name no client registered, with its live counts and
/// whether a live client works it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueOverview {
    /// The queue's name, as its jobs carry it.
    pub name: String,
    /// True when it has a row in `pgmill_queue` (a producer worked it once, or it was paused);
    /// false for a name no client ever worked, such as a typo.
    pub registered: bool,
    /// When it was paused; `None` while it runs or is not registered.
    pub paused_at: Option<DateTime<Utc>>,
    /// True when a live client (heartbeat within the client timeout) works it.
    pub served: bool,
    /// How many of its jobs are in each live state, as in [`QueueRow::counts`].
    pub counts: BTreeMap<JobState, i64>,
    /// How long its oldest due available job has been due (database clock).
    pub oldest_available_age: Option<Duration>,
}

impl QueueOverview {
    /// True when it holds live jobs that no live client works: they wait until one starts.
    pub fn is_unserved(&self) -> bool {
        !self.served && self.counts.values().any(|n| *n > 0)
    }
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

/// A queue that holds live jobs but that no live client works
/// ([`Client::queue_list_unserved`](crate::Client::queue_list_unserved)): its jobs wait until a
/// client working it starts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnservedQueue {
    /// The queue's name, as its jobs carry it.
    pub name: String,
    /// True when it has a row in `pgmill_queue` (a producer worked it once, or it was paused);
    /// false for a name no client ever worked, such as a typo.
    pub registered: bool,
    /// When it was paused; `None` while it runs or is not registered.
    pub paused_at: Option<DateTime<Utc>>,
    /// How many of its jobs are in each live state, as in [`QueueRow::counts`].
    pub counts: BTreeMap<JobState, i64>,
    /// How long its oldest due available job has been due (database clock).
    pub oldest_available_age: Option<Duration>,
}

impl From<QueueOverview> for UnservedQueue {
    fn from(q: QueueOverview) -> Self {
        UnservedQueue {
            name: q.name,
            registered: q.registered,
            paused_at: q.paused_at,
            counts: q.counts,
            oldest_available_age: q.oldest_available_age,
        }
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
        .bind(schema.channel(crate::cluster::notifier::TOPIC_CONTROL))
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
