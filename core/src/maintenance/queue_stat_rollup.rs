//! The queue statistics rollup: the leader writes, once per bucket (a minute by default), what
//! each queue completed, discarded, cancelled and retried, how long its jobs waited to be picked
//! up, and a sample of its depth, into `pgmill_queue_stat`, which the dashboard's charts read
//! instead of the job table; and trims what is past the retention.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, Transaction};
use crate::error::{Error, Result};
use crate::query::{
    QueueStatPendingRow, QueueStatRollupRow, queue_stat_jit_off, queue_stat_pending,
    queue_stat_rollup, queue_stat_trim,
};
use crate::schema::Schema;

/// Default [`QueueStatConfig::bucket`].
pub const DEFAULT_QUEUE_STAT_BUCKET: Duration = Duration::from_secs(60);
/// Default [`QueueStatConfig::retention`].
pub const DEFAULT_QUEUE_STAT_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Most buckets one rollup statement writes; a longer backfill takes several.
const BUCKETS_PER_STATEMENT: usize = 5;
/// How long one statement may take.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of the [`QueueStatRollup`]: how wide a bucket is, how long after its end it is
/// written, how far back a missed bucket is filled in, and how long rows are kept.
///
/// A bucket's outcomes are the jobs whose `finalized_at` falls in it: an outcome whose
/// transaction commits more than `settle` after the bucket ended (a job completed in a
/// transaction of the worker's own that ran that long, say) is not counted. The newest bucket
/// shows up about `settle` to `settle + interval` after it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueStatConfig {
    /// Time between passes. Default 10 s.
    pub interval: Duration,
    /// The width of a bucket: a whole number of seconds that divides a minute (1, 2, 3, 4, 5, 6,
    /// 10, 12, 15, 20, 30 or 60 s), so that the dashboard's minute and quarter-hour points hold
    /// whole buckets. Default 60 s. Every client of a schema should use the same width; when it
    /// changes, buckets of the new width start where the last one ended.
    pub bucket: Duration,
    /// How long after its end a bucket is written, so that the outcomes recorded in it have
    /// committed. Default 15 s.
    pub settle: Duration,
    /// Rows whose bucket began longer ago than this are deleted. Default 24 h. It must exceed
    /// the backfill (`max_backfill` buckets) plus the settle time, or a backfill would write rows
    /// the next trim deletes.
    pub retention: Duration,
    /// Most buckets a pass fills in behind the newest one (after a leader change, or when no
    /// client led for a while); older missed buckets stay gaps. Their depth and wait were not
    /// sampled: only their counts are filled in. Default 60 (an hour of minutes).
    pub max_backfill: usize,
    /// Most rows one trim statement deletes. Default 1,000.
    pub batch_size: usize,
}

impl Default for QueueStatConfig {
    fn default() -> Self {
        QueueStatConfig {
            interval: Duration::from_secs(10),
            bucket: DEFAULT_QUEUE_STAT_BUCKET,
            settle: Duration::from_secs(15),
            retention: DEFAULT_QUEUE_STAT_RETENTION,
            max_backfill: 60,
            batch_size: 1_000,
        }
    }
}

impl QueueStatConfig {
    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval, backfill or batch size, a bucket width that
    /// is not a whole number of seconds dividing a minute, or a retention that does not exceed
    /// the backfill and the settle time.
    pub fn validate(&self) -> Result<()> {
        let invalid = |m: String| Err(Error::InvalidConfig(format!("queue statistics: {m}")));
        if self.interval.is_zero() || self.max_backfill == 0 || self.batch_size == 0 {
            return invalid("interval, max_backfill and batch_size must be positive".into());
        }
        let secs = self.bucket.as_secs();
        if self.bucket.subsec_nanos() != 0 || secs == 0 || 60 % secs != 0 {
            return invalid(format!(
                "bucket {:?} is not a whole number of seconds dividing a minute",
                self.bucket
            ));
        }
        let backfill = u32::try_from(self.max_backfill + 1)
            .ok()
            .and_then(|n| self.bucket.checked_mul(n))
            .and_then(|d| d.checked_add(self.settle));
        if backfill.is_none_or(|b| self.retention <= b) {
            return invalid(format!(
                "retention {:?} must exceed the settle time plus max_backfill + 1 buckets",
                self.retention
            ));
        }
        Ok(())
    }
}

/// What one rollup pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueStatRunOnceResult {
    /// Buckets written.
    pub num_buckets: i64,
    /// Rows of single queues written in them.
    pub num_queue_rows: i64,
    /// Rows deleted past the retention.
    pub num_rows_trimmed: i64,
}

/// Writes the queue statistics of each bucket once it has ended (and fills in the buckets a
/// previous leader missed, up to [`QueueStatConfig::max_backfill`]), and deletes rows past their
/// retention. A [`Client`](crate::Client) runs it on the leader; any number of rollups may run at
/// once on one schema: each bucket is written by exactly one of them.
#[derive(Debug, Clone)]
pub struct QueueStatRollup<D: Driver> {
    driver: D,
    schema: Schema,
    config: QueueStatConfig,
}

impl<D: Driver> QueueStatRollup<D> {
    /// A rollup for `schema`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for bad settings ([`QueueStatConfig::validate`]).
    pub fn new(driver: D, schema: Schema, config: QueueStatConfig) -> Result<Self> {
        config.validate()?;
        Ok(QueueStatRollup {
            driver,
            schema,
            config,
        })
    }

    /// One pass: trims, then writes every bucket due (in chunks of a few buckets, one
    /// transaction each).
    ///
    /// # Errors
    ///
    /// The database error (what was written before it stays), or [`Error::Timeout`].
    pub async fn run_once(&self) -> Result<QueueStatRunOnceResult> {
        let mut result = QueueStatRunOnceResult {
            num_rows_trimmed: self.trim().await?,
            ..QueueStatRunOnceResult::default()
        };
        // Enough chunks for the whole backfill, and one more for a bucket that ends meanwhile.
        for _ in 0..=self.config.max_backfill.div_ceil(BUCKETS_PER_STATEMENT) {
            let Some((written, last)) = self.write_chunk().await? else {
                break;
            };
            result.num_buckets += written.num_buckets;
            result.num_queue_rows += written.num_queue_rows;
            if last {
                break;
            }
        }
        Ok(result)
    }

    /// Writes the next chunk of buckets due, if any; true when it reached the newest one.
    async fn write_chunk(&self) -> Result<Option<(QueueStatRollupRow, bool)>> {
        let c = &self.config;
        tokio::time::timeout(STATEMENT_TIMEOUT, async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            let pending = conn
                .query_opt::<QueueStatPendingRow>(&queue_stat_pending(
                    &self.schema,
                    c.bucket,
                    c.settle,
                    c.max_backfill,
                    BUCKETS_PER_STATEMENT,
                ))
                .await?;
            let Some(pending) = pending else {
                return Ok(None);
            };
            let mut tx = conn.begin().await?;
            tx.query(&queue_stat_jit_off(&self.schema)).await?;
            let written = tx
                .query_opt::<QueueStatRollupRow>(&queue_stat_rollup(
                    &self.schema,
                    &pending,
                    c.bucket,
                ))
                .await?
                .ok_or_else(|| Error::decode("queue statistics rollup", "no row"))?;
            tx.commit().await?;
            Ok(Some((written, pending.bucket_to == pending.newest_end)))
        })
        .await
        .map_err(|_| Error::Timeout("queue statistics rollup"))?
    }

    /// Deletes rows past the retention, a batch per statement.
    async fn trim(&self) -> Result<i64> {
        let stmt = queue_stat_trim(&self.schema, self.config.retention, self.config.batch_size);
        let batch = i64::try_from(self.config.batch_size).unwrap_or(i64::MAX);
        let mut trimmed = 0;
        loop {
            let deleted: i64 = tokio::time::timeout(STATEMENT_TIMEOUT, async {
                let mut conn = ConnectionLease::acquire(&self.driver).await?;
                conn.query_scalar(&stmt).await
            })
            .await
            .map_err(|_| Error::Timeout("queue statistics trim"))??;
            trimmed += deleted;
            if deleted < batch {
                return Ok(trimmed);
            }
        }
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) => debug!(
                        num_buckets = r.num_buckets,
                        num_queue_rows = r.num_queue_rows,
                        num_rows_trimmed = r.num_rows_trimmed,
                        "rolled up queue statistics"
                    ),
                    Err(e) => warn!(error = %e, "queue statistics pass failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(self.config.interval) => {}
                }
            }
        }
        .instrument(info_span!("queue_stat_rollup"))
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl FnOnce(&mut QueueStatConfig)) -> Result<()> {
        let mut c = QueueStatConfig::default();
        f(&mut c);
        c.validate()
    }

    #[test]
    fn buckets_divide_a_minute_and_the_retention_outlasts_the_backfill() {
        assert!(with(|_| {}).is_ok());
        for ok in [1, 2, 5, 15, 30, 60] {
            assert!(
                with(|c| c.bucket = Duration::from_secs(ok)).is_ok(),
                "{ok} s"
            );
        }
        for bad in [
            Duration::ZERO,
            Duration::from_secs(7),
            Duration::from_secs(90),
            Duration::from_millis(1500),
        ] {
            assert!(
                matches!(with(|c| c.bucket = bad), Err(Error::InvalidConfig(_))),
                "{bad:?}"
            );
        }
        // 60 buckets of a minute and the settle time: just over an hour.
        assert!(with(|c| c.retention = Duration::from_secs(3600)).is_err());
        assert!(with(|c| c.retention = Duration::from_secs(3676)).is_ok());
        assert!(with(|c| c.max_backfill = 0).is_err());
        assert!(with(|c| c.interval = Duration::ZERO).is_err());
        assert!(with(|c| c.batch_size = 0).is_err());
    }
}
