//! The queue cleaner: removes queue rows no producer refreshed for a long time.

use std::time::Duration;

use chrono::TimeDelta;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::query::queue_delete_expired;
use crate::schema::Schema;

/// Default [`QueueCleanerConfig::retention`].
pub const DEFAULT_QUEUE_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// Settings of the [`QueueCleaner`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueCleanerConfig {
    /// Time between passes. Default 60 s.
    pub interval: Duration,
    /// Queues not refreshed for this long are removed. Default 24 h.
    pub retention: Duration,
    /// Most queues one statement removes. Default 1,000.
    pub batch_size: usize,
}

impl Default for QueueCleanerConfig {
    fn default() -> Self {
        QueueCleanerConfig {
            interval: Duration::from_secs(60),
            retention: DEFAULT_QUEUE_RETENTION,
            batch_size: 1_000,
        }
    }
}

/// What one queue cleaner pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueCleanerRunOnceResult {
    /// Queue rows removed.
    pub num_queues_deleted: i64,
}

/// Removes queue rows no producer refreshed within the retention.
#[derive(Debug, Clone)]
pub struct QueueCleaner<D: Driver> {
    driver: D,
    schema: Schema,
    config: QueueCleanerConfig,
}

impl<D: Driver> QueueCleaner<D> {
    /// A queue cleaner for `schema`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval, retention or batch size.
    pub fn new(driver: D, schema: Schema, config: QueueCleanerConfig) -> Result<Self> {
        if config.interval.is_zero() || config.retention.is_zero() || config.batch_size == 0 {
            return Err(Error::InvalidConfig(
                "queue cleaner interval, retention and batch_size must be positive".into(),
            ));
        }
        Ok(QueueCleaner {
            driver,
            schema,
            config,
        })
    }

    /// One pass.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`].
    pub async fn run_once(&self) -> Result<QueueCleanerRunOnceResult> {
        let retention = TimeDelta::from_std(self.config.retention).unwrap_or(TimeDelta::MAX);
        let stmt = queue_delete_expired(&self.schema, retention, self.config.batch_size);
        let mut result = QueueCleanerRunOnceResult::default();
        loop {
            let deleted: i64 = tokio::time::timeout(Duration::from_secs(30), async {
                let mut conn = ConnectionLease::acquire(&self.driver).await?;
                conn.query_scalar(&stmt).await
            })
            .await
            .map_err(|_| Error::Timeout("queue cleaner batch"))??;
            result.num_queues_deleted += deleted;
            if deleted < i64::try_from(self.config.batch_size).unwrap_or(i64::MAX) {
                return Ok(result);
            }
        }
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) => debug!(num_queues_deleted = r.num_queues_deleted, "cleaned queues"),
                    Err(e) => warn!(error = %e, "queue cleaner pass failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(self.config.interval) => {}
                }
            }
        }
        .instrument(info_span!("queue_cleaner"))
        .await
    }
}
