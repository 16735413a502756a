//! Queries on `pgmill_queue_stat`: the leader's rollup of queue statistics (which buckets to write
//! next, writing them from the job table, trimming old ones) and the series charts read.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::admin::{QueueStatParams, QueueStatPoint};
use crate::driver::{FromRow, Row, Statement};
use crate::error::{Error, Result};
use crate::job::JobState;
use crate::query::catalog::Query;
use crate::schema::Schema;

/// The queue name under which the statistics of all queues together are stored.
pub(crate) const ALL_QUEUES: &str = "*";

/// A duration in microseconds (saturating).
fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Microseconds read back as a duration (negative ones as zero).
fn duration_of(us: i64) -> Duration {
    Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

/// The buckets to write next ([`queue_stat_pending`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueStatPendingRow {
    /// The start of the first bucket.
    pub(crate) bucket_from: DateTime<Utc>,
    /// The end of the last bucket of this chunk.
    pub(crate) bucket_to: DateTime<Utc>,
    /// The end of the newest bucket that may be written now.
    pub(crate) newest_end: DateTime<Utc>,
}

impl FromRow for QueueStatPendingRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueStatPendingRow {
            bucket_from: row.take("bucket_from")?,
            bucket_to: row.take("bucket_to")?,
            newest_end: row.take("newest_end")?,
        })
    }
}

/// What [`queue_stat_rollup`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueStatRollupRow {
    /// Buckets written (their rows for all queues).
    pub(crate) num_buckets: i64,
    /// Rows of single queues written.
    pub(crate) num_queue_rows: i64,
}

impl FromRow for QueueStatRollupRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(QueueStatRollupRow {
            num_buckets: row.take("num_buckets")?,
            num_queue_rows: row.take("num_queue_rows")?,
        })
    }
}

pub(crate) fn queue_stat_jit_off(schema: &Schema) -> Statement {
    schema.statement(Query::QueueStatJitOff)
}

pub(crate) fn queue_stat_pending(
    schema: &Schema,
    width: Duration,
    settle: Duration,
    max_backfill: usize,
    chunk: usize,
) -> Statement {
    schema
        .statement(Query::QueueStatPending)
        .bind(micros(width))
        .bind(micros(settle))
        .bind(i64::try_from(max_backfill).unwrap_or(i64::MAX))
        .bind(i64::try_from(chunk).unwrap_or(i64::MAX))
}

pub(crate) fn queue_stat_rollup(
    schema: &Schema,
    pending: &QueueStatPendingRow,
    width: Duration,
) -> Statement {
    schema
        .statement(Query::QueueStatRollup)
        .bind(pending.bucket_from)
        .bind(pending.bucket_to)
        .bind(micros(width))
        .bind(pending.bucket_to == pending.newest_end)
}

pub(crate) fn queue_stat_queues(schema: &Schema, window: Duration, limit: usize) -> Statement {
    schema
        .statement(Query::QueueStatQueues)
        .bind(micros(window))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

pub(crate) fn queue_stat_trim(schema: &Schema, retention: Duration, limit: usize) -> Statement {
    schema
        .statement(Query::QueueStatTrim)
        .bind(micros(retention))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
}

pub(crate) fn queue_stat_series(schema: &Schema, params: &QueueStatParams) -> Statement {
    schema
        .statement(Query::QueueStatSeries)
        .bind(params.queue_name().unwrap_or(ALL_QUEUES))
        .bind(micros(params.window()))
        .bind(micros(params.bin()))
}

/// One row of [`queue_stat_series`]: a point, and the database's clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueueStatSeriesRow {
    pub(crate) now: DateTime<Utc>,
    pub(crate) point: QueueStatPoint,
}

impl FromRow for QueueStatSeriesRow {
    fn from_row(mut row: Row) -> Result<Self> {
        let depth = row
            .take::<Option<serde_json::Value>>("depth")?
            .map(depth_of)
            .transpose()?;
        Ok(QueueStatSeriesRow {
            now: row.take("now")?,
            point: QueueStatPoint {
                at: row.take("bin")?,
                covered: row.take("covered")?,
                completed: row.take("completed")?,
                discarded: row.take("discarded")?,
                cancelled: row.take("cancelled")?,
                retried: row.take("retried")?,
                pickup_count: row.take("pickup_count")?,
                pickup_p95: row.take::<Option<i64>>("pickup_p95_us")?.map(duration_of),
                samples: row.take("samples")?,
                depth,
                oldest_available: row
                    .take::<Option<i64>>("oldest_available_us")?
                    .map(duration_of),
            },
        })
    }
}

/// Depth as stored, a JSON object of counts by state name, as counts by state; states this build
/// does not know (written by a newer schema's states) are left out.
fn depth_of(value: serde_json::Value) -> Result<BTreeMap<JobState, i64>> {
    let serde_json::Value::Object(map) = value else {
        return Err(Error::decode("queue depth", "not a JSON object"));
    };
    let mut depth = BTreeMap::new();
    for (name, n) in map {
        let Ok(state) = name.parse::<JobState>() else {
            continue;
        };
        let n = n
            .as_i64()
            .ok_or_else(|| Error::decode("queue depth", format!("{name}: not an integer")))?;
        depth.insert(state, n);
    }
    Ok(depth)
}
