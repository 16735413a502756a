//! The queue maintainer: runs the maintenance services during each term this client leads, and
//! [`QueueMaintainer::start_with`], which starts it beside the elector that decides the terms.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::job_analyzer::JobAnalyzer;
use super::job_cleaner::{JobCleaner, JobCleanerConfig};
use super::job_rescuer::{JobRescuer, JobRescuerConfig};
use super::job_scheduler::{JobScheduler, JobSchedulerConfig};
use super::periodic_enqueuer::{PeriodicEnqueuer, PeriodicEnqueuerConfig};
use super::queue_cleaner::{QueueCleaner, QueueCleanerConfig};
use super::queue_sampler::QueueSampler;
use super::queue_stat_rollup::{QueueStatConfig, QueueStatRollup};
use crate::cluster::elector::Elector;
use crate::driver::Driver;
use crate::error::Result;
use crate::insert::inserter::Inserter;
use crate::service::{Service, supervise};
use crate::shared_parts::SharedParts;
use crate::work::queue_handle::QueueHandle;

/// The settings of every leader-only service.
#[derive(Debug, Clone)]
pub(crate) struct QueueMaintainerConfig {
    pub(crate) scheduler: JobSchedulerConfig,
    pub(crate) rescuer: JobRescuerConfig,
    pub(crate) cleaner: JobCleanerConfig,
    pub(crate) queue_cleaner: QueueCleanerConfig,
    pub(crate) periodic: PeriodicEnqueuerConfig,
    /// Time before a failed service is restarted.
    pub(crate) supervisor_backoff: Duration,
    /// How often the queue sampler runs; `None` runs no sampler (metrics off).
    pub(crate) sample_interval: Option<Duration>,
    /// The queue statistics rollup's settings; `None` runs no rollup.
    pub(crate) queue_stats: Option<QueueStatConfig>,
}

/// The services that run only while this client leads: scheduler, rescuer, cleaners, the
/// analyzer (unless turned off), the periodic enqueuer, the queue statistics rollup (unless turned
/// off) and (with metrics on) the queue sampler, each under a supervisor.
pub(crate) struct QueueMaintainer<D: Driver> {
    scheduler: JobScheduler<D>,
    rescuer: JobRescuer<D>,
    cleaner: JobCleaner<D>,
    queue_cleaner: QueueCleaner<D>,
    analyzer: Option<JobAnalyzer<D>>,
    periodic: PeriodicEnqueuer<D>,
    sampler: Option<QueueSampler<D>>,
    stat_rollup: Option<QueueStatRollup<D>>,
    /// The client's queues, woken when the scheduler makes jobs of theirs available.
    queues: HashMap<String, Arc<QueueHandle>>,
    backoff: Duration,
}

impl<D: Driver> QueueMaintainer<D> {
    /// Builds every service for the client's schema; periodic jobs are inserted through
    /// `inserter`, the scheduler wakes `queues`, and `analyzer` (shared with the client's own
    /// large inserts) runs too unless turned off.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) for a service's bad settings.
    pub(crate) fn new(
        parts: &SharedParts<D>,
        config: QueueMaintainerConfig,
        inserter: Inserter,
        queues: HashMap<String, Arc<QueueHandle>>,
        analyzer: Option<JobAnalyzer<D>>,
    ) -> Result<Self> {
        let (driver, schema) = (parts.driver.clone(), parts.schema.clone());
        let sampler = match config.sample_interval {
            Some(interval) => Some(QueueSampler::new(
                driver.clone(),
                schema.clone(),
                interval,
                config.rescuer.client_timeout,
                parts.metrics.clone(),
            )?),
            None => None,
        };
        let stat_rollup = config
            .queue_stats
            .map(|c| QueueStatRollup::new(driver.clone(), schema.clone(), c))
            .transpose()?;
        Ok(QueueMaintainer {
            scheduler: JobScheduler::new(driver.clone(), schema.clone(), config.scheduler)?,
            rescuer: JobRescuer::new(driver.clone(), schema.clone(), config.rescuer)?
                .with_metrics(parts.metrics.clone()),
            sampler,
            stat_rollup,
            cleaner: JobCleaner::new(driver.clone(), schema.clone(), config.cleaner)?,
            queue_cleaner: QueueCleaner::new(driver.clone(), schema.clone(), config.queue_cleaner)?,
            analyzer,
            periodic: PeriodicEnqueuer::new(driver, schema, inserter, config.periodic)?,
            queues,
            backoff: config.supervisor_backoff,
        })
    }

    /// Starts `elector` and this maintainer under one service: the elector (supervised) decides
    /// the terms, and the maintainer runs its services during each term this client leads. The
    /// service's stop ends both (the elector resigns).
    pub(crate) async fn start_with(self, elector: Elector<D>) -> Service {
        let is_leader = elector.is_leader();
        let backoff = self.backoff;
        let service = Service::new();
        let stop = service.token();
        service
            .start(async move {
                let elector_task = tokio::spawn(supervise("elector", backoff, stop.clone(), {
                    let stop = stop.clone();
                    move || elector.clone().run(stop.clone())
                }));
                self.run(is_leader, stop).await;
                let _ = elector_task.await;
            })
            .await;
        service
    }

    /// Runs the services during each term this client leads, until `stop`.
    pub(crate) async fn run(self, mut is_leader: watch::Receiver<bool>, stop: CancellationToken) {
        loop {
            while !*is_leader.borrow_and_update() {
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = is_leader.changed() => if changed.is_err() { return },
                }
            }
            let term = stop.child_token();
            let mut tasks = tokio::task::JoinSet::new();
            let b = self.backoff;
            let (scheduler, queues) = (self.scheduler.clone(), self.queues.clone());
            let t = term.clone();
            tasks.spawn(supervise("job_scheduler", b, t.clone(), move || {
                let queues = queues.clone();
                scheduler.clone().run(t.clone(), move |r| {
                    for queue in r.num_jobs_by_queue.keys() {
                        if let Some(h) = queues.get(queue) {
                            h.wake();
                        }
                    }
                })
            }));
            let (rescuer, t) = (self.rescuer.clone(), term.clone());
            tasks.spawn(supervise("job_rescuer", b, t.clone(), move || {
                rescuer.clone().run(t.clone())
            }));
            let (cleaner, t) = (self.cleaner.clone(), term.clone());
            tasks.spawn(supervise("job_cleaner", b, t.clone(), move || {
                cleaner.clone().run(t.clone())
            }));
            let (queue_cleaner, t) = (self.queue_cleaner.clone(), term.clone());
            tasks.spawn(supervise("queue_cleaner", b, t.clone(), move || {
                queue_cleaner.clone().run(t.clone())
            }));
            if let Some(analyzer) = &self.analyzer {
                let (analyzer, t) = (analyzer.clone(), term.clone());
                tasks.spawn(supervise("job_analyzer", b, t.clone(), move || {
                    analyzer.clone().run(t.clone())
                }));
            }
            let (periodic, t) = (self.periodic.clone(), term.clone());
            tasks.spawn(supervise("periodic_enqueuer", b, t.clone(), move || {
                periodic.clone().run(t.clone())
            }));
            if let Some(rollup) = &self.stat_rollup {
                let (rollup, t) = (rollup.clone(), term.clone());
                tasks.spawn(supervise("queue_stat_rollup", b, t.clone(), move || {
                    rollup.clone().run(t.clone())
                }));
            }
            if let Some(sampler) = &self.sampler {
                let (sampler, t) = (sampler.clone(), term.clone());
                tasks.spawn(supervise("queue_sampler", b, t.clone(), move || {
                    sampler.clone().run(t.clone())
                }));
            }
            while *is_leader.borrow_and_update() {
                tokio::select! {
                    () = stop.cancelled() => break,
                    changed = is_leader.changed() => if changed.is_err() { break },
                }
            }
            term.cancel();
            while tasks.join_next().await.is_some() {}
            if stop.is_cancelled() {
                return;
            }
        }
    }
}
