//! The periodic enqueuer: enqueues due ticks of periodic jobs, each in the transaction that
//! advances its schedule.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, Transaction};
use crate::error::{Error, Result};
use crate::insert::inserter::Inserter;
use crate::periodic::{MissedTicks, PeriodicJob};
use crate::query::{
    DuePeriodic, leader_db_now, periodic_advance, periodic_get_due, periodic_upsert,
};
use crate::schema::Schema;

/// Default [`PeriodicEnqueuerConfig::interval`].
pub(crate) const DEFAULT_PERIODIC_INTERVAL: Duration = Duration::from_secs(1);

/// Settings of the periodic enqueuer.
#[derive(Debug, Clone)]
pub(crate) struct PeriodicEnqueuerConfig {
    /// Time between passes. Default 1 s.
    pub(crate) interval: Duration,
    /// The schedules this client registers and, while it leads, enqueues.
    pub(crate) jobs: Vec<PeriodicJob>,
}

/// What one enqueuer pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct PeriodicEnqueuerRunOnceResult {
    /// Jobs enqueued.
    pub(crate) num_jobs_enqueued: usize,
    /// Missed ticks skipped by [`MissedTicks::Skip`], and catch-ups by
    /// [`MissedTicks::CatchUpEach`] that left older ticks out.
    pub(crate) num_ticks_skipped: usize,
}

/// Registers the client's periodic jobs and enqueues their due ticks.
#[derive(Clone)]
pub(crate) struct PeriodicEnqueuer<D: Driver> {
    driver: D,
    schema: Schema,
    inserter: Inserter,
    jobs: Arc<HashMap<String, PeriodicJob>>,
    interval: Duration,
}

impl<D: Driver> PeriodicEnqueuer<D> {
    /// An enqueuer of `config.jobs` into `schema`, inserting through `inserter`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval or a schedule named twice.
    pub(crate) fn new(
        driver: D,
        schema: Schema,
        inserter: Inserter,
        config: PeriodicEnqueuerConfig,
    ) -> Result<Self> {
        if config.interval.is_zero() {
            return Err(Error::InvalidConfig(
                "periodic_interval must be positive".into(),
            ));
        }
        let mut jobs = HashMap::new();
        for job in config.jobs {
            let name = job.name().to_owned();
            if jobs.insert(name.clone(), job).is_some() {
                return Err(Error::InvalidConfig(format!(
                    "periodic job {name:?} is defined twice"
                )));
            }
        }
        Ok(PeriodicEnqueuer {
            driver,
            schema,
            inserter,
            jobs: Arc::new(jobs),
            interval: config.interval,
        })
    }

    /// Registers every schedule (keeping the next run of unchanged ones).
    pub(crate) async fn register(&self) -> Result<()> {
        if self.jobs.is_empty() {
            return Ok(());
        }
        let mut conn = ConnectionLease::acquire(&self.driver).await?;
        let now = conn.query_scalar(&leader_db_now(&self.schema)).await?;
        for job in self.jobs.values() {
            let first = if job.runs_on_start() {
                now
            } else {
                job.schedule().first_after(now)?
            };
            let stmt = periodic_upsert(
                &self.schema,
                job.name(),
                &job.schedule().describe(),
                first,
                job.runs_on_start(),
                job.schedule().time_zone(),
            );
            conn.execute(&stmt).await?;
        }
        Ok(())
    }

    /// One pass: every due tick, each in its own transaction with its job.
    pub(crate) async fn run_once(&self) -> Result<PeriodicEnqueuerRunOnceResult> {
        let mut result = PeriodicEnqueuerRunOnceResult::default();
        if self.jobs.is_empty() {
            return Ok(result);
        }
        let mut conn = ConnectionLease::acquire(&self.driver).await?;
        let mut tx = conn.begin().await?;
        let names: Vec<String> = self.jobs.keys().cloned().collect();
        let due: Vec<DuePeriodic> = tx.query_as(&periodic_get_due(&self.schema, names)).await?;
        for tick in due {
            let Some(job) = self.jobs.get(&tick.name) else {
                continue;
            };
            let schedule = job.schedule();
            let missed = schedule.next_after(tick.next_run_at, tick.next_run_at)? <= tick.db_now;
            let next = schedule.next_after(tick.next_run_at, tick.db_now)?;
            let ticks = match job.missed() {
                MissedTicks::Skip if missed => {
                    result.num_ticks_skipped += 1;
                    Vec::new()
                }
                MissedTicks::CatchUpEach { max } if missed => {
                    let (ticks, left_out) =
                        schedule.due_ticks(tick.next_run_at, tick.db_now, max)?;
                    if left_out {
                        result.num_ticks_skipped += 1;
                        debug!(
                            periodic = %tick.name,
                            max, "older missed ticks left out of the catch-up"
                        );
                    }
                    ticks
                }
                _ => vec![tick.next_run_at],
            };
            let params = ticks
                .iter()
                .map(|t| job.make_job(*t))
                .collect::<Result<Vec<_>>>()?;
            let last_job_id = if params.is_empty() {
                None
            } else {
                let rows = self.inserter.insert_many(&mut tx, &params).await?;
                result.num_jobs_enqueued += rows.len();
                rows.last().map(|r| r.id)
            };
            let advanced = tx
                .execute(&periodic_advance(
                    &self.schema,
                    &tick.name,
                    tick.next_run_at,
                    next,
                    last_job_id,
                    i64::try_from(params.len()).unwrap_or(i64::MAX),
                ))
                .await?;
            if advanced != 1 {
                return Err(Error::Conflict(format!(
                    "periodic job {} advanced by someone else mid-tick",
                    tick.name
                )));
            }
        }
        tx.commit().await?;
        Ok(result)
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            if let Err(e) = self.register().await {
                warn!(error = %e, "registering periodic jobs failed; retrying next pass");
            }
            loop {
                match self.run_once().await {
                    Ok(r) if r.num_jobs_enqueued + r.num_ticks_skipped > 0 => debug!(
                        num_jobs_enqueued = r.num_jobs_enqueued,
                        num_ticks_skipped = r.num_ticks_skipped,
                        "periodic ticks"
                    ),
                    Ok(_) => {}
                    Err(e) => {
                        warn!(error = %e, "periodic enqueuer pass failed");
                        if let Err(e) = self.register().await {
                            debug!(error = %e, "re-registering periodic jobs failed");
                        }
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(self.interval) => {}
                }
            }
        }
        .instrument(info_span!("periodic_enqueuer"))
        .await
    }
}
