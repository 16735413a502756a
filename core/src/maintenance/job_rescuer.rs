//! The rescuer: gives running jobs of dead clients back to the queue.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::engine_metrics::{JOBS_RESCUED, MetricsSink};
use crate::error::{Error, Result};
use crate::job::JobState;
use crate::query::{
    ClientIdRow, RescuedRow, client_delete_expired, client_next_timeout, job_get_running_clients,
    job_notify_insert, job_rescue, leader_db_now,
};
use crate::schema::Schema;

/// Default [`JobRescuerConfig::interval`].
pub const DEFAULT_RESCUER_INTERVAL: Duration = Duration::from_secs(5);
/// Default [`JobRescuerConfig::client_timeout`].
pub const DEFAULT_CLIENT_TIMEOUT: Duration = Duration::from_secs(15);
/// Default [`JobRescuerConfig::rescue_after`].
pub const DEFAULT_RESCUE_AFTER: Duration = Duration::from_secs(3600);
/// Default [`JobRescuerConfig::client_retention`].
pub const DEFAULT_CLIENT_RETENTION: Duration = Duration::from_secs(3600);

const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long past a client's timeout the pass that rescues its jobs runs (the query compares
/// strictly, on the database clock).
const PAST_TIMEOUT: Duration = Duration::from_millis(50);
/// The next pass after one that left an expired client's running jobs behind.
const OVERDUE_RETRY: Duration = Duration::from_millis(500);

/// Settings of the [`JobRescuer`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobRescuerConfig {
    /// Time between passes. Default 5 s.
    pub interval: Duration,
    /// A client whose heartbeat is older than this is dead, and its running jobs are rescued.
    /// Also how long a client's row must have been missing (seen by this rescuer) before its jobs
    /// are rescued, so clients re-register after a database restart first, and how old a
    /// leader's heartbeat must be for a follower to take its lease over. Default 15 s: with the
    /// default 3 s heartbeat, a killed worker's jobs (leader or not) are rescued 12 to 15 s after
    /// the kill, since the rescuer looks again as soon as the next client's heartbeat times out.
    /// Clients of one schema must share it.
    pub client_timeout: Duration,
    /// Running jobs of live clients are rescued only after running this long: set it above your
    /// longest job timeout. Default 1 h.
    pub rescue_after: Duration,
    /// How long the row of a client that stopped heartbeating (killed, or stopped without
    /// removing it) stays, so `pgmill clients` and the dashboard still show it as not live.
    /// After that the rescuer deletes it, once no running job names the client as its attempter.
    /// At least `client_timeout`. Default 1 h.
    pub client_retention: Duration,
    /// Most jobs one query rescues, and most client rows one query deletes. Default 1,000.
    pub limit: usize,
}

impl JobRescuerConfig {
    /// A client's row outlives its timeout: a retention shorter than the timeout is refused.
    pub(crate) fn check_client_retention(&self) -> Result<()> {
        if self.client_retention < self.client_timeout {
            return Err(Error::InvalidConfig(
                "the rescuer's client_retention must be at least its client_timeout".into(),
            ));
        }
        Ok(())
    }
}

impl Default for JobRescuerConfig {
    fn default() -> Self {
        JobRescuerConfig {
            interval: DEFAULT_RESCUER_INTERVAL,
            client_timeout: DEFAULT_CLIENT_TIMEOUT,
            rescue_after: DEFAULT_RESCUE_AFTER,
            client_retention: DEFAULT_CLIENT_RETENTION,
            limit: 1_000,
        }
    }
}

/// What one rescuer pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobRescuerRunOnceResult {
    /// Jobs made available again.
    pub num_jobs_rescued: usize,
    /// Jobs discarded because they had no attempts left.
    pub num_jobs_discarded: usize,
    /// Rows of clients dead for longer than the retention, deleted.
    pub num_clients_deleted: usize,
}

/// Rescues running jobs of dead clients (heartbeat expired, or row missing past a grace period)
/// and jobs past the hard deadline: available again, or discarded when out of attempts, with the
/// reason recorded. It never looks at kinds, so it never discards a job for its kind. It also
/// deletes the rows of clients dead for longer than [`JobRescuerConfig::client_retention`].
#[derive(Debug, Clone)]
pub struct JobRescuer<D: Driver> {
    driver: D,
    schema: Schema,
    config: JobRescuerConfig,
    missing_since: Arc<Mutex<HashMap<String, Instant>>>,
    metrics: MetricsSink,
    /// What bounds each pass's scans: see [`Scans`].
    scans: Arc<Mutex<Scans>>,
}

/// What keeps a pass's scans short while another session holds an old snapshot (when vacuum can
/// remove none of the running index's entries of finished jobs, and every scan of it walks them
/// all). The hard-deadline scan reads only the band of attempt times that crossed the deadline
/// since the last pass's reach (less a margin, and every [`FULL_PASS_EVERY`] passes all of
/// them); the scan for running jobs of clients with no row (after a restart, say) runs every
/// pass while it is cheap, and otherwise no sooner than [`MISSING_SCAN_SPACING`] times its last
/// duration after it (at most [`MAX_MISSING_SCAN_SPACING`]).
#[derive(Debug)]
struct Scans {
    deadline_since: Option<DateTime<Utc>>,
    passes: u32,
    missing_at: Option<Instant>,
    missing_took: Duration,
}

impl Default for Scans {
    fn default() -> Self {
        Scans {
            deadline_since: None,
            passes: 0,
            missing_at: None,
            missing_took: Duration::ZERO,
        }
    }
}

/// Every this many passes, the hard-deadline scan reads every running job.
const FULL_PASS_EVERY: u32 = 60;
/// How far behind the last pass's reach the next hard-deadline band starts: claims committed
/// this late are still looked at.
const BAND_MARGIN: TimeDelta = TimeDelta::seconds(5);
/// The missing-clients scan runs no sooner than this many times its last duration after it...
const MISSING_SCAN_SPACING: u32 = 50;
/// ...and at least this often.
const MAX_MISSING_SCAN_SPACING: Duration = Duration::from_secs(60);

impl<D: Driver> JobRescuer<D> {
    /// A rescuer for `schema`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for zero intervals or limit, or a client retention shorter than
    /// the client timeout.
    pub fn new(driver: D, schema: Schema, config: JobRescuerConfig) -> Result<Self> {
        if config.interval.is_zero()
            || config.client_timeout.is_zero()
            || config.rescue_after.is_zero()
            || config.limit == 0
        {
            return Err(Error::InvalidConfig(
                "rescuer interval, client_timeout, rescue_after and limit must be positive".into(),
            ));
        }
        config.check_client_retention()?;
        Ok(JobRescuer {
            driver,
            schema,
            config,
            missing_since: Arc::default(),
            metrics: MetricsSink::off(),
            scans: Arc::new(Mutex::new(Scans::default())),
        })
    }

    /// Counts rescued jobs in `metrics`.
    pub(crate) fn with_metrics(mut self, metrics: MetricsSink) -> Self {
        self.metrics = metrics;
        self
    }

    /// One pass.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`].
    pub async fn run_once(&self) -> Result<JobRescuerRunOnceResult> {
        tokio::time::timeout(QUERY_TIMEOUT, self.pass())
            .await
            .map_err(|_| Error::Timeout("job rescuer pass"))?
    }

    async fn pass(&self) -> Result<JobRescuerRunOnceResult> {
        let mut conn = ConnectionLease::acquire(&self.driver).await?;
        let deadline = TimeDelta::from_std(self.config.rescue_after).unwrap_or(TimeDelta::MAX);
        let now: DateTime<Utc> = conn.query_scalar(&leader_db_now(&self.schema)).await?;
        let (since, look_for_missing) = {
            let mut scans = self.scans.lock().unwrap_or_else(|p| p.into_inner());
            scans.passes += 1;
            let since = if scans.passes >= FULL_PASS_EVERY {
                scans.passes = 0;
                None
            } else {
                scans.deadline_since
            };
            let spacing = (scans.missing_took * MISSING_SCAN_SPACING).min(MAX_MISSING_SCAN_SPACING);
            let due = scans.missing_at.is_none_or(|at| at.elapsed() >= spacing);
            (since, due)
        };
        let missing: Vec<ClientIdRow> = if look_for_missing {
            let started = Instant::now();
            let missing = conn
                .query_as(&job_get_running_clients(&self.schema))
                .await?;
            let mut scans = self.scans.lock().unwrap_or_else(|p| p.into_inner());
            scans.missing_at = Some(started);
            scans.missing_took = started.elapsed();
            missing
        } else {
            // Not looked for this pass: the clients seen missing before stay as they were.
            self.missing_since
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .keys()
                .cloned()
                .map(ClientIdRow)
                .collect()
        };
        let expired: Vec<String> = {
            let now = Instant::now();
            let mut seen = self.missing_since.lock().unwrap_or_else(|p| p.into_inner());
            seen.retain(|id, _| missing.iter().any(|m| &m.0 == id));
            missing
                .into_iter()
                .filter(|ClientIdRow(id)| {
                    now.duration_since(*seen.entry(id.clone()).or_insert(now))
                        >= self.config.client_timeout
                })
                .map(|ClientIdRow(id)| id)
                .collect()
        };
        let timeout = TimeDelta::from_std(self.config.client_timeout).unwrap_or(TimeDelta::MAX);
        let mut result = JobRescuerRunOnceResult::default();
        loop {
            let stmt = job_rescue(
                &self.schema,
                timeout,
                expired.clone(),
                deadline,
                self.config.limit,
                since,
            );
            let rows: Vec<RescuedRow> = conn.query_as(&stmt).await?;
            let mut queues = BTreeMap::new();
            for r in &rows {
                self.metrics
                    .counter(
                        JOBS_RESCUED,
                        &[("queue", &r.queue), ("state", r.state.as_str())],
                    )
                    .increment(1);
                if r.state == JobState::Discarded {
                    result.num_jobs_discarded += 1;
                } else {
                    result.num_jobs_rescued += 1;
                    queues.insert(r.queue.clone(), ());
                }
            }
            if !queues.is_empty() {
                let queues = queues.into_keys().collect();
                conn.execute(&job_notify_insert(&self.schema, queues))
                    .await?;
            }
            if rows.len() < self.config.limit {
                break;
            }
        }
        // Every job attempted before this pass's cutoff that is past the deadline was rescued:
        // the next pass looks from there (less the margin).
        self.scans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .deadline_since = now
            .checked_sub_signed(deadline)
            .and_then(|cutoff| cutoff.checked_sub_signed(BAND_MARGIN));
        let retention = TimeDelta::from_std(self.config.client_retention).unwrap_or(TimeDelta::MAX);
        let stmt = client_delete_expired(&self.schema, retention, self.config.limit);
        loop {
            let deleted: i64 = conn.query_scalar(&stmt).await?;
            let deleted = usize::try_from(deleted).unwrap_or(0);
            result.num_clients_deleted += deleted;
            if deleted < self.config.limit {
                return Ok(result);
            }
        }
    }

    /// Until the next pass: `interval`, or less when a client's heartbeat times out sooner (just
    /// past that moment), so a dead client's jobs are rescued as soon as it counts as dead rather
    /// than up to an interval later; soon when an expired client still has running jobs.
    async fn next_pass_in(&self) -> Duration {
        let interval = self.config.interval;
        let timeout = TimeDelta::from_std(self.config.client_timeout).unwrap_or(TimeDelta::MAX);
        let left = tokio::time::timeout(QUERY_TIMEOUT, async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.query_scalar::<Option<i64>>(&client_next_timeout(&self.schema, timeout))
                .await
        })
        .await;
        match left {
            // A client expired and still has running jobs: the last pass missed them (its
            // heartbeat expired just after the pass read the clock, or their rows were locked).
            Ok(Ok(Some(us))) if us <= 0 => OVERDUE_RETRY.min(interval),
            Ok(Ok(Some(us))) => {
                let until = Duration::from_micros(u64::try_from(us).unwrap_or(0));
                (until + PAST_TIMEOUT).min(interval)
            }
            Ok(Ok(None)) => interval,
            Ok(Err(e)) => {
                warn!(error = %e, "cannot read the next client timeout");
                interval
            }
            Err(_) => interval,
        }
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) => {
                        if r.num_jobs_rescued + r.num_jobs_discarded > 0 {
                            info!(
                                num_jobs_rescued = r.num_jobs_rescued,
                                num_jobs_discarded = r.num_jobs_discarded,
                                "rescued jobs of dead clients"
                            );
                        }
                        if r.num_clients_deleted > 0 {
                            debug!(
                                num_clients_deleted = r.num_clients_deleted,
                                "deleted rows of dead clients"
                            );
                        }
                    }
                    Err(e) => warn!(error = %e, "job rescuer pass failed"),
                }
                let pause = self.next_pass_in().await;
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
        .instrument(info_span!("job_rescuer"))
        .await
    }
}
