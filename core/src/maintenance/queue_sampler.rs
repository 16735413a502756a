//! The queue sampler: the leader's view of queue depth, and of whether a live client works each
//! queue, as gauges, from one query per pass.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::TimeDelta;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::admin::{LIVE_STATES, QueueOverview};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::engine_metrics::{MetricsSink, QUEUE_JOBS, QUEUE_OLDEST_AVAILABLE, QUEUE_SERVED};
use crate::error::{Error, Result};
use crate::query::queue_overview;
use crate::schema::Schema;

const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Most queues one pass samples.
const MAX_QUEUES: usize = 10_000;

/// What one sampler pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct QueueSamplerRunOnceResult {
    /// Queues whose gauges were set.
    pub(crate) num_queues: usize,
}

/// Sets `pgmill_queue_jobs` (per queue and live state: available, scheduled, pending, running,
/// retryable), `pgmill_queue_oldest_available_seconds` and `pgmill_queue_served` (per queue) from
/// `queue_overview` (every registered queue and every queue holding live jobs), every `interval`,
/// while this client leads. When the term ends it sets every gauge it set back to 0, so only the
/// leader reports non-zero values.
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
        })
    }

    /// One pass: one query, then every gauge of every queue listed.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`].
    pub(crate) async fn run_once(&self) -> Result<QueueSamplerRunOnceResult> {
        let mut queues: Vec<QueueOverview> = tokio::time::timeout(QUERY_TIMEOUT, async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.query_as(&queue_overview(&self.schema, self.client_timeout))
                .await
        })
        .await
        .map_err(|_| Error::Timeout("queue sampler pass"))??;
        queues.truncate(MAX_QUEUES);
        let mut sampled = self.sampled.lock().unwrap_or_else(|p| p.into_inner());
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

    /// Sets every gauge this sampler set back to 0: this client no longer reports queue depth.
    fn zero(&self) {
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
                match self.run_once().await {
                    Ok(r) => debug!(num_queues = r.num_queues, "sampled queue gauges"),
                    Err(e) => warn!(error = %e, "queue sampler pass failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(self.interval) => {}
                }
            }
            self.zero();
        }
        .instrument(info_span!("queue_sampler"))
        .await
    }
}
