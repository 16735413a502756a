//! The built-in metrics middleware: per-attempt and per-insert metrics by kind and queue, and the
//! settings of pgmill's metrics as a whole.

use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram, Recorder};

use super::{Middleware, Next};
use crate::engine_metrics::{
    CLIENT_RUNNING, JOB_ATTEMPTS, JOBS_INSERTED, MetricsSink, QUEUE_WAIT, RUN_TIME,
};
use crate::fast_hash::FastMap;
use crate::job::JobRow;
use crate::job_args::InsertParams;
use crate::outcome::Outcome;

/// Default [`MetricsConfig::sample_interval`].
pub const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_secs(15);

/// Settings of pgmill's metrics, turned on with
/// [`ClientBuilder::metrics`](crate::ClientBuilder::metrics).
///
/// Metrics go through the [`metrics`](https://docs.rs/metrics) facade: install the exporter of
/// your choice (Prometheus, OpenTelemetry, StatsD, ...) before starting the client. Every metric is
/// listed in [`METRICS`](crate::middleware::METRICS).
#[derive(Clone)]
#[non_exhaustive]
pub struct MetricsConfig {
    /// How often the leader samples the queue gauges (jobs per queue and state, age of the oldest
    /// available job), with one query. Default 15 s.
    pub sample_interval: Duration,
    /// Records into this recorder instead of the facade's (global) one: for tests, or an
    /// application keeping pgmill's metrics in a registry of their own. Default `None`.
    pub recorder: Option<Arc<dyn Recorder + Send + Sync>>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            sample_interval: DEFAULT_SAMPLE_INTERVAL,
            recorder: None,
        }
    }
}

impl MetricsConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how often the leader samples the queue gauges.
    #[must_use]
    pub fn sample_interval(mut self, interval: Duration) -> Self {
        self.sample_interval = interval;
        self
    }

    /// Records into `recorder` instead of the facade's global recorder.
    #[must_use]
    pub fn recorder(mut self, recorder: Arc<dyn Recorder + Send + Sync>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    pub(crate) fn sink(&self) -> MetricsSink {
        MetricsSink::new(self.recorder.clone())
    }
}

impl fmt::Debug for MetricsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsConfig")
            .field("sample_interval", &self.sample_interval)
            .field("own_recorder", &self.recorder.is_some())
            .finish()
    }
}

/// What an attempt left the job as, in the order of [`Handles::attempts`].
const RESULTS: [&str; 6] = [
    "completed",
    "retryable",
    "discarded",
    "cancelled",
    "snoozed",
    "interrupted",
];

/// The metric handles of one kind in one queue, registered once.
struct Handles {
    queue_wait: Histogram,
    run_time: Histogram,
    running: Gauge,
    attempts: [Counter; RESULTS.len()],
    inserted: Counter,
}

/// Counts attempts and inserts, and times attempts, by kind and queue.
///
/// Registered by [`ClientBuilder::metrics`](crate::ClientBuilder::metrics) as the first
/// middleware after [`JobTracing`](crate::middleware::JobTracing). Emits
/// `pgmill_job_attempts_total`, `pgmill_job_queue_wait_seconds`, `pgmill_job_run_seconds`,
/// `pgmill_client_running_jobs` and `pgmill_jobs_inserted_total`. Handles are registered once
/// per kind and queue (all six outcomes at once, so every series starts at zero) and reused, so
/// an attempt costs a map lookup and a few atomic updates.
pub struct JobMetrics {
    sink: MetricsSink,
    /// Kind, then queue.
    handles: RwLock<FastMap<String, FastMap<String, Arc<Handles>>>>,
}

impl JobMetrics {
    /// Metrics into `recorder`, or into the facade's global recorder when `None`.
    pub fn new(recorder: Option<Arc<dyn Recorder + Send + Sync>>) -> Self {
        Self::with_sink(MetricsSink::new(recorder))
    }

    pub(crate) fn with_sink(sink: MetricsSink) -> Self {
        JobMetrics {
            sink,
            handles: RwLock::default(),
        }
    }

    fn handles(&self, kind: &str, queue: &str) -> Arc<Handles> {
        {
            let map = self.handles.read().unwrap_or_else(|p| p.into_inner());
            if let Some(h) = map.get(kind).and_then(|q| q.get(queue)) {
                return Arc::clone(h);
            }
        }
        let labels = [("kind", kind), ("queue", queue)];
        let handles = Arc::new(Handles {
            queue_wait: self.sink.histogram(QUEUE_WAIT, &labels),
            run_time: self.sink.histogram(RUN_TIME, &labels),
            running: self.sink.gauge(CLIENT_RUNNING, &[("queue", queue)]),
            attempts: RESULTS.map(|outcome| {
                self.sink.counter(
                    JOB_ATTEMPTS,
                    &[("kind", kind), ("queue", queue), ("outcome", outcome)],
                )
            }),
            inserted: self.sink.counter(JOBS_INSERTED, &labels),
        });
        let mut map = self.handles.write().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            map.entry(kind.to_owned())
                .or_default()
                .entry(queue.to_owned())
                .or_insert(handles),
        )
    }
}

impl fmt::Debug for JobMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobMetrics")
            .field("sink", &self.sink)
            .finish_non_exhaustive()
    }
}

/// Takes one running job off the gauge when dropped, however the attempt ends.
struct Running<'a>(&'a Gauge);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

impl Middleware for JobMetrics {
    async fn work<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> Outcome {
        let h = self.handles(&job.kind, &job.queue);
        if let Some(at) = job.attempted_at {
            let wait = (at - job.scheduled_at).to_std().unwrap_or_default();
            h.queue_wait.record(wait.as_secs_f64());
        }
        h.running.increment(1.0);
        let running = Running(&h.running);
        let started = Instant::now();
        let outcome = next.run().await;
        h.run_time.record(started.elapsed().as_secs_f64());
        drop(running);
        let result = outcome.result(job.attempt, job.max_attempts);
        if let Some(i) = RESULTS.iter().position(|r| *r == result) {
            h.attempts[i].increment(1);
        }
        outcome
    }

    fn insert(&self, job: &mut InsertParams) {
        self.handles(job.kind(), job.queue()).inserted.increment(1);
    }
}
