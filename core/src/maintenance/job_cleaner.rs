//! The cleaner: applies the retention of finished jobs.
//!
//! Most finished jobs left the job table when they finished: completed and cancelled ones are in
//! the history ring (`pgmill_job_done`), whose slots the cleaner empties with `TRUNCATE` once
//! every row of a slot is past its retention (no `DELETE`, no dead rows); discarded ones are in
//! the dead-letter queue, which it trims in bounded batches. The few finished jobs that stay in
//! the job table (a unique job keeping its key taken in its final state, or jobs finished by a
//! client of an older schema version) it deletes past their retention in bounded batches, as
//! before. It also keeps the history slots wide enough that a slot's rows are past retention
//! before the ring is back at it.

use std::time::Duration;

use chrono::TimeDelta;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::query::{
    SlotRow, job_dead_delete_expired, job_delete_finalized, storage_done_truncate_expired,
    storage_set_done_slot_seconds,
};
use crate::schema::Schema;

/// Default [`JobCleanerConfig::completed_retention`].
pub const DEFAULT_COMPLETED_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Default [`JobCleanerConfig::cancelled_retention`].
pub const DEFAULT_CANCELLED_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Default [`JobCleanerConfig::discarded_retention`].
pub const DEFAULT_DISCARDED_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The history ring's default slot width: sixteen slots of two hours hold a day of history with
/// room to spare.
const DEFAULT_DONE_SLOT: Duration = Duration::from_secs(2 * 3600);

/// The most a truncation waits for a history slot's lock before leaving it to the next pass:
/// readers and writers queue behind a waiting `TRUNCATE`, so the wait is kept short.
const TRUNCATE_LOCK_WAIT: Duration = Duration::from_millis(100);

/// Settings of the [`JobCleaner`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobCleanerConfig {
    /// Time between passes. Default 30 s.
    pub interval: Duration,
    /// Completed jobs are kept this long after finishing; `None` keeps them. Default 24 h. In the
    /// history they go a history slot at a time (see [`JobCleanerConfig::cancelled_retention`]).
    pub completed_retention: Option<Duration>,
    /// Cancelled jobs are kept this long after finishing; `None` keeps them. Default 24 h.
    ///
    /// The history is a ring of sixteen slots, each holding the jobs that finished within one
    /// slot width, emptied all at once when every job in it is past its retention: a job stays
    /// up to one slot width longer than its retention. The width is two hours, or the longer of
    /// the two retentions divided by thirteen when that is more, so that a slot is emptied
    /// before the ring is back at it.
    pub cancelled_retention: Option<Duration>,
    /// Discarded jobs are kept this long in the dead-letter queue after entering it; `None`
    /// keeps them until redriven or purged. Default 7 days.
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
    /// Finished jobs deleted from the job table.
    pub num_jobs_deleted: i64,
    /// Jobs deleted from the dead-letter queue past its retention.
    pub num_dead_deleted: i64,
    /// History slots emptied (each a `TRUNCATE`).
    pub num_slots_truncated: usize,
}

impl JobCleanerConfig {
    /// The history slot width these retentions need: a slot must be past retention before the
    /// ring of sixteen is back at it (thirteen widths, keeping the slot being written, the
    /// next one and a spare out of it).
    fn done_slot_seconds(&self) -> i32 {
        let longest = [self.completed_retention, self.cancelled_retention]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or_default();
        let width = DEFAULT_DONE_SLOT.max(Duration::from_secs(longest.as_secs().div_ceil(13)));
        i32::try_from(width.as_secs())
            .unwrap_or(31_536_000)
            .min(31_536_000)
    }
}

/// Applies the retention of completed, cancelled and discarded jobs (see the module docs).
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

    /// One pass: the history's expired slots, then the dead-letter queue's and the job table's
    /// expired jobs, batches until a batch comes back short.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`] for a batch over its timeout.
    pub async fn run_once(&self) -> Result<JobCleanerRunOnceResult> {
        let retention =
            |d: Option<Duration>| d.map(|d| TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX));
        let c = &self.config;
        let mut result = JobCleanerRunOnceResult::default();
        let batch = |what: &'static str, stmt| async move {
            tokio::time::timeout(c.batch_timeout, async {
                let mut conn = ConnectionLease::acquire(&self.driver).await?;
                conn.query_scalar::<i64>(&stmt).await
            })
            .await
            .map_err(|_| Error::Timeout(what))?
        };
        let full = i64::try_from(c.batch_size).unwrap_or(i64::MAX);
        {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.execute(&storage_set_done_slot_seconds(
                &self.schema,
                c.done_slot_seconds(),
            ))
            .await?;
            if c.completed_retention.is_some() || c.cancelled_retention.is_some() {
                let slots: Vec<SlotRow> = tokio::time::timeout(
                    c.batch_timeout,
                    conn.query_as(&storage_done_truncate_expired(
                        &self.schema,
                        retention(c.completed_retention),
                        retention(c.cancelled_retention),
                        TRUNCATE_LOCK_WAIT,
                    )),
                )
                .await
                .map_err(|_| Error::Timeout("job cleaner truncation"))??;
                result.num_slots_truncated = slots.len();
            }
        }
        if let Some(dead) = retention(c.discarded_retention) {
            loop {
                let stmt = job_dead_delete_expired(&self.schema, dead, c.batch_size);
                let deleted = batch("dead-letter cleaner batch", stmt).await?;
                result.num_dead_deleted += deleted;
                if deleted < full {
                    break;
                }
            }
        }
        if c.completed_retention.is_none()
            && c.cancelled_retention.is_none()
            && c.discarded_retention.is_none()
        {
            return Ok(result);
        }
        loop {
            let stmt = job_delete_finalized(
                &self.schema,
                retention(c.completed_retention),
                retention(c.cancelled_retention),
                retention(c.discarded_retention),
                c.batch_size,
            );
            let deleted = batch("job cleaner batch", stmt).await?;
            result.num_jobs_deleted += deleted;
            if deleted < full {
                return Ok(result);
            }
        }
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) => debug!(
                        num_jobs_deleted = r.num_jobs_deleted,
                        num_dead_deleted = r.num_dead_deleted,
                        num_slots_truncated = r.num_slots_truncated,
                        "cleaned jobs"
                    ),
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
