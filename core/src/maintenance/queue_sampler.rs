//! The queue sampler: the leader's view of queue depth, of whether a live client works each queue,
//! of dead-letter depth and of the vacuum horizon, as gauges, from three quick reads per pass.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::TimeDelta;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::admin::{
    LIVE_STATES, QueueOverview, UNKNOWN_KIND_PROBE, UnknownKindJobs, VacuumHolder, VacuumHorizon,
};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::engine_metrics::{
    DEAD_JOBS, MetricsSink, QUEUE_JOBS, QUEUE_OLDEST_AVAILABLE, QUEUE_SERVED, QUEUE_UNKNOWN_KIND,
    VACUUM_HORIZON_SECONDS, VACUUM_HORIZON_XMIN_AGE,
};
use crate::error::{Error, Result};
use crate::query::{
    DeadDepthRow, job_dead_count_by_queue, queue_overview, queue_unknown_kinds, storage_horizon,
};
use crate::schema::Schema;

const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Most queues one pass samples.
const MAX_QUEUES: usize = 10_000;
/// A pass starts no sooner than this many times the last one took after it.
const PASS_SPACING: u32 = 50;

/// What one sampler pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct QueueSamplerRunOnceResult {
    /// Queues whose gauges were set.
    pub(crate) num_queues: usize,
}

/// Sets `pgmill_queue_jobs` (per queue and live state: available, scheduled, pending, running,
/// retryable), `pgmill_queue_oldest_available_seconds` and `pgmill_queue_served` (per queue) from
/// `queue_overview` (every registered queue and every queue holding live jobs),
/// `pgmill_dead_jobs` (per queue), and the vacuum horizon's age (`pgmill_vacuum_horizon_seconds`,
/// `pgmill_vacuum_horizon_xmin_age`), every `interval`, while this client leads. When the term
/// ends it sets every gauge it set back to 0, so only the leader reports non-zero values.
#[derive(Debug, Clone)]
pub(crate) struct QueueSampler<D: Driver> {
    driver: D,
    schema: Schema,
    interval: Duration,
    /// A client whose heartbeat is older than this is not live: it serves no queue.
    client_timeout: TimeDelta,
    metrics: MetricsSink,
    /// Queues sampled this term, whose gauges are zeroed at its end.
    sampled: Arc<Mutex<BTreeSet<String>>>,
    /// Queues whose dead-letter depth was set this term.
    dead_sampled: Arc<Mutex<BTreeSet<String>>>,
    /// (queue, kind) pairs whose unknown-kind count was set this term.
    unknown_sampled: Arc<Mutex<BTreeSet<(String, String)>>>,
}

impl<D: Driver> QueueSampler<D> {
    /// A sampler of `schema`'s queues into `metrics`, every `interval`; clients whose heartbeat
    /// is within `client_timeout` are live.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval.
    pub(crate) fn new(
        driver: D,
        schema: Schema,
        interval: Duration,
        client_timeout: Duration,
        metrics: MetricsSink,
    ) -> Result<Self> {
        if interval.is_zero() {
            return Err(Error::InvalidConfig(
                "metrics sample_interval must be positive".into(),
            ));
        }
        Ok(QueueSampler {
            driver,
            schema,
            interval,
            client_timeout: TimeDelta::from_std(client_timeout).unwrap_or(TimeDelta::MAX),
            metrics,
            sampled: Arc::default(),
            dead_sampled: Arc::default(),
            unknown_sampled: Arc::default(),
        })
    }

    /// One pass: one query, then every gauge of every queue listed.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`].
    pub(crate) async fn run_once(&self) -> Result<QueueSamplerRunOnceResult> {
        let (queues, dead, holders, unknown) = tokio::time::timeout(QUERY_TIMEOUT, async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            let mut queues: Vec<QueueOverview> = conn
                .query_as(&queue_overview(&self.schema, self.client_timeout))
                .await?;
            queues.truncate(MAX_QUEUES);
            let dead: Vec<DeadDepthRow> = conn
                .query_as(&job_dead_count_by_queue(&self.schema))
                .await?;
            let holders: Vec<VacuumHolder> =
                conn.query_as(&storage_horizon(&self.schema, 10)).await?;
            let unknown: Vec<UnknownKindJobs> = conn
                .query_as(&queue_unknown_kinds(
                    &self.schema,
                    self.client_timeout,
                    UNKNOWN_KIND_PROBE,
                ))
                .await?;
            Ok::<_, Error>((queues, dead, holders, unknown))
        })
        .await
        .map_err(|_| Error::Timeout("queue sampler pass"))??;
        let horizon = VacuumHorizon { holders };
        self.metrics
            .gauge(VACUUM_HORIZON_SECONDS, &[])
            .set(horizon.held_for().unwrap_or_default().as_secs_f64());
        self.metrics
            .gauge(VACUUM_HORIZON_XMIN_AGE, &[])
            .set(horizon.oldest().map_or(0.0, |h| h.xmin_age as f64));
        self.set_unknown_kinds(&unknown);
        let mut sampled = self.sampled.lock().unwrap_or_else(|p| p.into_inner());
        let mut dead_sampled = self.dead_sampled.lock().unwrap_or_else(|p| p.into_inner());
        // A queue whose dead-letter jobs are gone reads 0, not its last count.
        for queue in std::mem::take(&mut *dead_sampled) {
            if !dead.iter().any(|d| d.queue == queue) {
                self.metrics.gauge(DEAD_JOBS, &[("queue", &queue)]).set(0.0);
            }
        }
        for d in &dead {
            self.metrics
                .gauge(DEAD_JOBS, &[("queue", &d.queue)])
                .set(d.num_jobs as f64);
            dead_sampled.insert(d.queue.clone());
        }
        for q in &queues {
            for state in LIVE_STATES {
                let n = q.counts.get(&state).copied().unwrap_or(0);
                self.metrics
                    .gauge(QUEUE_JOBS, &[("queue", &q.name), ("state", state.as_str())])
                    .set(n as f64);
            }
            let age = q.oldest_available_age.unwrap_or_default();
            self.metrics
                .gauge(QUEUE_OLDEST_AVAILABLE, &[("queue", &q.name)])
                .set(age.as_secs_f64());
            self.metrics
                .gauge(QUEUE_SERVED, &[("queue", &q.name)])
                .set(if q.served { 1.0 } else { 0.0 });
            sampled.insert(q.name.clone());
        }
        Ok(QueueSamplerRunOnceResult {
            num_queues: queues.len(),
        })
    }

    /// Sets the unknown-kind gauges from `unknown` (a pair no longer reported reads 0) and warns
    /// of each pair newly seen: jobs that wait for a worker no live client has.
    fn set_unknown_kinds(&self, unknown: &[UnknownKindJobs]) {
        let mut sampled = self
            .unknown_sampled
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let now: BTreeSet<(String, String)> = unknown
            .iter()
            .map(|u| (u.queue.clone(), u.kind.clone()))
            .collect();
        for (queue, kind) in sampled.difference(&now) {
            self.metrics
                .gauge(QUEUE_UNKNOWN_KIND, &[("queue", queue), ("kind", kind)])
                .set(0.0);
        }
        for u in unknown {
            if !sampled.contains(&(u.queue.clone(), u.kind.clone())) {
                warn!(
                    queue = %u.queue,
                    kind = %u.kind,
                    num_jobs = u.num_jobs,
                    due_since = %u.due_since,
                    "jobs wait that no live client working their queue has a worker for"
                );
            }
            self.metrics
                .gauge(
                    QUEUE_UNKNOWN_KIND,
                    &[("queue", &u.queue), ("kind", &u.kind)],
                )
                .set(u.num_jobs as f64);
        }
        *sampled = now;
    }

    /// Sets every gauge this sampler set back to 0: this client no longer reports queue depth.
    fn zero(&self) {
        self.set_unknown_kinds(&[]);
        let mut dead_sampled = self.dead_sampled.lock().unwrap_or_else(|p| p.into_inner());
        for queue in std::mem::take(&mut *dead_sampled) {
            self.metrics.gauge(DEAD_JOBS, &[("queue", &queue)]).set(0.0);
        }
        self.metrics.gauge(VACUUM_HORIZON_SECONDS, &[]).set(0.0);
        self.metrics.gauge(VACUUM_HORIZON_XMIN_AGE, &[]).set(0.0);
        let mut sampled = self.sampled.lock().unwrap_or_else(|p| p.into_inner());
        for queue in std::mem::take(&mut *sampled) {
            for state in LIVE_STATES {
                self.metrics
                    .gauge(QUEUE_JOBS, &[("queue", &queue), ("state", state.as_str())])
                    .set(0.0);
            }
            self.metrics
                .gauge(QUEUE_OLDEST_AVAILABLE, &[("queue", &queue)])
                .set(0.0);
            self.metrics
                .gauge(QUEUE_SERVED, &[("queue", &queue)])
                .set(0.0);
        }
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                let started = std::time::Instant::now();
                match self.run_once().await {
                    Ok(r) => debug!(num_queues = r.num_queues, "sampled queue gauges"),
                    Err(e) => warn!(error = %e, "queue sampler pass failed"),
                }
                // The counts walk the index entries of finished jobs that vacuum has not removed
                // yet (all of them while another session holds an old snapshot): a slow pass
                // waits longer, so sampling never takes more than a fiftieth of the time.
                let wait = self.interval.max(started.elapsed() * PASS_SPACING);
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(wait) => {}
                }
            }
            self.zero();
        }
        .instrument(info_span!("queue_sampler"))
        .await
    }
}
