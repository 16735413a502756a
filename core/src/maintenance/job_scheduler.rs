//! The scheduler: makes due `scheduled` and `retryable` jobs `available`.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeDelta, Utc};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::query::{QueueCountRow, job_notify_insert, job_schedule, leader_db_now};
use crate::schema::Schema;

/// Default [`JobSchedulerConfig::interval`].
pub const DEFAULT_SCHEDULER_INTERVAL: Duration = Duration::from_secs(1);
/// Default [`JobSchedulerConfig::limit`].
pub const DEFAULT_SCHEDULER_LIMIT: usize = 10_000;
/// How long one pass's query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of the [`JobScheduler`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobSchedulerConfig {
    /// Time between passes; also the look-ahead, so jobs due before the next pass are made
    /// available in this one (keeping their `scheduled_at`). Default 1 s.
    pub interval: Duration,
    /// Most jobs one query moves; a full batch is followed by another at once. Default 10,000.
    pub limit: usize,
}

impl Default for JobSchedulerConfig {
    fn default() -> Self {
        JobSchedulerConfig {
            interval: DEFAULT_SCHEDULER_INTERVAL,
            limit: DEFAULT_SCHEDULER_LIMIT,
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobSchedulerRunOnceResult {
    /// Jobs made available, per queue.
    pub num_jobs_by_queue: BTreeMap<String, i64>,
}

impl JobSchedulerRunOnceResult {
    /// Jobs made available in all queues.
    pub fn num_jobs_scheduled(&self) -> i64 {
        self.num_jobs_by_queue.values().sum()
    }
}

/// Makes due scheduled and retryable jobs available, in bounded batches, looking ahead to its
/// own next pass, and notifies the affected queues.
#[derive(Debug, Clone)]
pub struct JobScheduler<D: Driver> {
    driver: D,
    schema: Schema,
    config: JobSchedulerConfig,
    /// Where the next pass looks from, and how many passes until one looks at every due job.
    band: Arc<Mutex<Band>>,
}

/// How far the scheduler's passes have gone: the next pass looks at jobs due from `since` on,
/// and every [`FULL_PASS_EVERY`] passes at every due job (a job passed over because another
/// transaction held it, say, is made available then).
#[derive(Debug, Default)]
struct Band {
    since: Option<DateTime<Utc>>,
    passes: u32,
}

/// Every this many passes, one looks at every due job, however long ago it came due.
const FULL_PASS_EVERY: u32 = 60;

/// How far behind the last pass's reach the next pass starts: jobs written by transactions that
/// committed this late are still made available by the next pass (and the rest by the next full
/// pass).
const BAND_MARGIN: TimeDelta = TimeDelta::seconds(60);

impl<D: Driver> JobScheduler<D> {
    /// A scheduler for `schema`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval or limit.
    pub fn new(driver: D, schema: Schema, config: JobSchedulerConfig) -> Result<Self> {
        if config.interval.is_zero() || config.limit == 0 {
            return Err(Error::InvalidConfig(
                "scheduler interval and limit must be positive".into(),
            ));
        }
        Ok(JobScheduler {
            driver,
            schema,
            config,
            band: Arc::default(),
        })
    }

    /// One pass: moves every due job (batch after batch while batches are full).
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`].
    pub async fn run_once(&self) -> Result<JobSchedulerRunOnceResult> {
        let mut result = JobSchedulerRunOnceResult::default();
        let lookahead = TimeDelta::from_std(self.config.interval).unwrap_or(TimeDelta::zero());
        let since = {
            let mut band = self.band.lock().unwrap_or_else(|p| p.into_inner());
            band.passes += 1;
            if band.passes >= FULL_PASS_EVERY {
                band.passes = 0;
                None
            } else {
                band.since
            }
        };
        let mut reach = None;
        loop {
            let counts: Vec<QueueCountRow> = tokio::time::timeout(QUERY_TIMEOUT, async {
                let mut conn = ConnectionLease::acquire(&self.driver).await?;
                if reach.is_none() {
                    let now: DateTime<Utc> =
                        conn.query_scalar(&leader_db_now(&self.schema)).await?;
                    reach = Some(now + lookahead);
                }
                let stmt = job_schedule(&self.schema, lookahead, self.config.limit, since);
                let counts: Vec<QueueCountRow> = conn.query_as(&stmt).await?;
                // Every client working these queues fetches now, not at its next poll.
                let queues: Vec<String> = counts.iter().map(|c| c.queue.clone()).collect();
                if !queues.is_empty() {
                    conn.execute(&job_notify_insert(&self.schema, queues))
                        .await?;
                }
                Ok::<_, Error>(counts)
            })
            .await
            .map_err(|_| Error::Timeout("job scheduler query"))??;
            let moved: i64 = counts.iter().map(|c| c.num_jobs).sum();
            for c in counts {
                *result.num_jobs_by_queue.entry(c.queue).or_default() += c.num_jobs;
            }
            if moved < i64::try_from(self.config.limit).unwrap_or(i64::MAX) {
                // Every job due before this pass's reach is available now: the next pass looks
                // from there (less the margin).
                if let Some(reach) = reach {
                    self.band.lock().unwrap_or_else(|p| p.into_inner()).since =
                        Some(reach - BAND_MARGIN);
                }
                return Ok(result);
            }
        }
    }

    /// Runs passes every interval until `stop`, calling `on_scheduled` with each pass's result.
    pub(crate) async fn run(
        self,
        stop: CancellationToken,
        on_scheduled: impl Fn(&JobSchedulerRunOnceResult) + Send,
    ) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) if r.num_jobs_scheduled() > 0 => {
                        debug!(
                            num_jobs_scheduled = r.num_jobs_scheduled(),
                            "scheduled jobs"
                        );
                        on_scheduled(&r);
                    }
                    Ok(_) => {}
                    Err(e) => warn!(error = %e, "job scheduler pass failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(self.config.interval) => {}
                }
            }
        }
        .instrument(info_span!("job_scheduler"))
        .await
    }
}
