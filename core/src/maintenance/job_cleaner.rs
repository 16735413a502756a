//! The cleaner: deletes finalized jobs past their retention, in bounded batches.

use std::time::Duration;

use chrono::TimeDelta;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::query::job_delete_finalized;
use crate::schema::Schema;

/// Default [`JobCleanerConfig::completed_retention`].
pub const DEFAULT_COMPLETED_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Default [`JobCleanerConfig::cancelled_retention`].
pub const DEFAULT_CANCELLED_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Default [`JobCleanerConfig::discarded_retention`].
pub const DEFAULT_DISCARDED_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Settings of the [`JobCleaner`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobCleanerConfig {
    /// Time between passes. Default 30 s.
    pub interval: Duration,
    /// Completed jobs are deleted this long after finishing; `None` keeps them. Default 24 h.
    pub completed_retention: Option<Duration>,
    /// Cancelled jobs are deleted this long after finishing; `None` keeps them. Default 24 h.
    pub cancelled_retention: Option<Duration>,
    /// Discarded jobs are deleted this long after finishing; `None` keeps them. Default 7 days.
    pub discarded_retention: Option<Duration>,
    /// Most jobs one statement deletes. Default 10,000.
    pub batch_size: usize,
    /// How long one batch may take. Default 30 s.
    pub batch_timeout: Duration,
}

impl Default for JobCleanerConfig {
    fn default() -> Self {
        JobCleanerConfig {
            interval: Duration::from_secs(30),
            completed_retention: Some(DEFAULT_COMPLETED_RETENTION),
            cancelled_retention: Some(DEFAULT_CANCELLED_RETENTION),
            discarded_retention: Some(DEFAULT_DISCARDED_RETENTION),
            batch_size: 10_000,
            batch_timeout: Duration::from_secs(30),
        }
    }
}

/// What one cleaner pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobCleanerRunOnceResult {
    /// Jobs deleted.
    pub num_jobs_deleted: i64,
}

/// Deletes completed, cancelled and discarded jobs past their retention.
#[derive(Debug, Clone)]
pub struct JobCleaner<D: Driver> {
    driver: D,
    schema: Schema,
    config: JobCleanerConfig,
}

impl<D: Driver> JobCleaner<D> {
    /// A cleaner for `schema`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval, batch size or timeout.
    pub fn new(driver: D, schema: Schema, config: JobCleanerConfig) -> Result<Self> {
        if config.interval.is_zero() || config.batch_size == 0 || config.batch_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "cleaner interval, batch_size and batch_timeout must be positive".into(),
            ));
        }
        Ok(JobCleaner {
            driver,
            schema,
            config,
        })
    }

    /// One pass: batches until a batch comes back short.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`] for a batch over its timeout.
    pub async fn run_once(&self) -> Result<JobCleanerRunOnceResult> {
        let retention =
            |d: Option<Duration>| d.map(|d| TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX));
        let c = &self.config;
        let stmt = job_delete_finalized(
            &self.schema,
            retention(c.completed_retention),
            retention(c.cancelled_retention),
            retention(c.discarded_retention),
            c.batch_size,
        );
        let mut result = JobCleanerRunOnceResult::default();
        if c.completed_retention.is_none()
            && c.cancelled_retention.is_none()
            && c.discarded_retention.is_none()
        {
            return Ok(result);
        }
        loop {
            let deleted: i64 = tokio::time::timeout(c.batch_timeout, async {
                let mut conn = ConnectionLease::acquire(&self.driver).await?;
                conn.query_scalar(&stmt).await
            })
            .await
            .map_err(|_| Error::Timeout("job cleaner batch"))??;
            result.num_jobs_deleted += deleted;
            if deleted < i64::try_from(c.batch_size).unwrap_or(i64::MAX) {
                return Ok(result);
            }
        }
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) => debug!(num_jobs_deleted = r.num_jobs_deleted, "cleaned jobs"),
                    Err(e) => warn!(error = %e, "job cleaner pass failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(self.config.interval) => {}
                }
            }
        }
        .instrument(info_span!("job_cleaner"))
        .await
    }
}
