//! Middleware: code of the application's own that wraps every attempt and sees every insert.
//!
//! A [`Middleware`] registered on the client ([`ClientBuilder::middleware`], or
//! [`ClientBuilder::middleware_for`] for one kind) wraps the execution of each attempt: it runs
//! before the worker, calls [`Next::run`] to run the rest of the chain and the worker, and gets the
//! attempt's [`Outcome`] back, which it can read, replace, or produce without running the worker
//! at all. Its [`Middleware::insert`] hook sees every job before it is written, on every insert
//! path (single, many, bulk, inside the application's transaction on every driver), and can adjust
//! it, e.g. add metadata.
//!
//! pgmill's own instrumentation is written the same way: [`JobTracing`] (the `pgmill.job` span
//! and the start, finish and failure lines, always the outermost layer) and [`JobMetrics`] (the
//! per-attempt metrics, registered by [`ClientBuilder::metrics`]). [`TracePropagator`] carries a
//! distributed trace from the inserting span to the job's spans through the job's metadata.
//!
//! Without middleware, an attempt runs the worker directly: nothing is boxed. Each registered
//! middleware costs one boxed future per attempt. A middleware that panics fails the attempt like
//! a worker's panic would; the client keeps running.
//!
//! # Examples
//!
//! A middleware that logs slow attempts, skips jobs a feature flag turns off, and tags every job
//! with the release that inserted it:
//!
//! ```
//! use std::time::{Duration, Instant};
//!
//! use pgmill::middleware::{Middleware, Next};
//! use pgmill::{InsertParams, JobRow, Outcome};
//!
//! struct Ops {
//!     release: &'static str,
//!     paused_kinds: Vec<String>,
//! }
//!
//! impl Middleware for Ops {
//!     async fn work<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> Outcome {
//!         if self.paused_kinds.contains(&job.kind) {
//!             // Short-circuit: the worker does not run; try again in a minute.
//!             return Outcome::snooze(chrono::TimeDelta::minutes(1));
//!         }
//!         let started = Instant::now();
//!         let outcome = next.run().await;
//!         if started.elapsed() > Duration::from_secs(10) {
//!             tracing::info!(outcome = outcome.name(), "slow attempt");
//!         }
//!         outcome
//!     }
//!
//!     fn insert(&self, job: &mut InsertParams) {
//!         job.metadata_mut().insert("release".into(), self.release.into());
//!     }
//! }
//!
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Ping;
//! # impl pgmill::JobArgs for Ping { const KIND: &'static str = "ping"; }
//! # fn build<D: pgmill::driver::Driver>(driver: D, worker: impl pgmill::Worker<Ping>) -> pgmill::Result<()> {
//! let client = pgmill::Client::builder(driver)
//!     .queue("default", 10)
//!     .worker(worker)
//!     .middleware(Ops { release: "2024.06.1", paused_kinds: vec![] })
//!     .build()?;
//! # Ok(())
//! # }
//! ```
//!
//! [`ClientBuilder::middleware`]: crate::ClientBuilder::middleware
//! [`ClientBuilder::middleware_for`]: crate::ClientBuilder::middleware_for
//! [`ClientBuilder::metrics`]: crate::ClientBuilder::metrics

mod job_metrics;
mod job_tracing;
pub(crate) mod trace_propagator;

pub use crate::engine_metrics::{METRICS, MetricInfo, MetricKind};
pub use job_metrics::{DEFAULT_SAMPLE_INTERVAL, JobMetrics, MetricsConfig};
pub use job_tracing::JobTracing;
pub use trace_propagator::{TRACE_METADATA_KEY, TraceHeaders, TracePropagator};

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::fast_hash::FastMap;
use crate::job::JobRow;
use crate::job_args::InsertParams;
use crate::outcome::Outcome;
use crate::work::job_executor::Attempt;

/// Code that wraps every attempt of a job and sees every job inserted.
///
/// Both methods are provided: implement [`Middleware::work`] to wrap attempts, and
/// [`Middleware::insert`] to adjust inserts. See the [module docs](self) for a complete example.
pub trait Middleware: Send + Sync + 'static {
    /// Runs one attempt of `job` (state `running`, `attempt` already counted): code before
    /// [`Next::run`] runs before the worker, code after it sees the [`Outcome`]. Returning an
    /// outcome without calling `next.run()` skips the worker (and the middleware after this
    /// one). The default runs the rest of the chain.
    ///
    /// The attempt's timeout, panic catching and cancellation apply inside `next.run()`; time spent
    /// here before and after it counts in the attempt's run time.
    fn work<'a>(
        &'a self,
        job: &'a JobRow,
        next: Next<'a>,
    ) -> impl Future<Output = Outcome> + Send + 'a {
        let _ = job;
        next.run()
    }

    /// Adjusts one job about to be inserted, after its options were validated and before it is
    /// written: once per job, on every insert path. Runs in the inserting code's span. The
    /// default does nothing.
    fn insert(&self, job: &mut InsertParams) {
        let _ = job;
    }
}

/// The rest of the chain after a middleware: the next middleware, or the worker.
pub struct Next<'a> {
    rest: &'a [Arc<dyn ErasedMiddleware>],
    attempt: &'a Attempt<'a>,
}

impl<'a> Next<'a> {
    pub(crate) fn new(rest: &'a [Arc<dyn ErasedMiddleware>], attempt: &'a Attempt<'a>) -> Self {
        Next { rest, attempt }
    }

    /// The attempt this chain runs.
    pub(crate) fn attempt(&self) -> &'a Attempt<'a> {
        self.attempt
    }

    /// Runs the rest of the chain and the worker, and returns the attempt's outcome.
    pub async fn run(self) -> Outcome {
        match self.rest.split_first() {
            None => self.attempt.run_worker().await,
            Some((first, rest)) => {
                let next = Next::new(rest, self.attempt);
                AssertUnwindSafe(first.work_boxed(self.attempt.job(), next))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| self.attempt.middleware_panicked(&*panic))
            }
        }
    }
}

impl fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next")
            .field("middleware_left", &self.rest.len())
            .finish_non_exhaustive()
    }
}

/// A middleware with its future boxed, so a chain can hold any mix of them.
pub(crate) trait ErasedMiddleware: Send + Sync {
    fn work_boxed<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> BoxFuture<'a, Outcome>;
    fn insert(&self, job: &mut InsertParams);
}

impl<M: Middleware> ErasedMiddleware for M {
    fn work_boxed<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(Middleware::work(self, job, next))
    }

    fn insert(&self, job: &mut InsertParams) {
        Middleware::insert(self, job);
    }
}

type Chain = Arc<[Arc<dyn ErasedMiddleware>]>;

/// The middleware of a client or inserter: every registered one in registration order, and for
/// each kind with middleware of its own, the global ones and its own in registration order.
#[derive(Clone, Default)]
pub(crate) struct MiddlewareStack {
    registered: Vec<(Option<String>, Arc<dyn ErasedMiddleware>)>,
    global: Chain,
    by_kind: FastMap<String, Chain>,
}

impl MiddlewareStack {
    /// Adds `middleware` for every kind (`kind` None) or for one kind, after those added so far.
    pub(crate) fn push(&mut self, kind: Option<String>, middleware: Arc<dyn ErasedMiddleware>) {
        self.registered.push((kind, middleware));
        let chain = |kind: Option<&str>| -> Chain {
            self.registered
                .iter()
                .filter(|(k, _)| k.is_none() || k.as_deref() == kind)
                .map(|(_, m)| Arc::clone(m))
                .collect()
        };
        self.global = chain(None);
        let kinds: Vec<String> = self
            .registered
            .iter()
            .filter_map(|(k, _)| k.clone())
            .collect();
        self.by_kind = kinds
            .into_iter()
            .map(|k| {
                let c = chain(Some(&k));
                (k, c)
            })
            .collect();
    }

    /// Adds every middleware of `other` after those of this stack.
    pub(crate) fn append(&mut self, other: MiddlewareStack) {
        for (kind, m) in other.registered {
            self.push(kind, m);
        }
    }

    /// True when no middleware is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.registered.is_empty()
    }

    /// The chain an attempt of `kind` runs through.
    pub(crate) fn for_kind(&self, kind: &str) -> &[Arc<dyn ErasedMiddleware>] {
        self.by_kind.get(kind).unwrap_or(&self.global)
    }

    /// Runs every insert hook that applies to `job`.
    pub(crate) fn prepare_insert(&self, job: &mut InsertParams) {
        for m in self.for_kind(job.kind()) {
            m.insert(job);
        }
    }
}

impl fmt::Debug for MiddlewareStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<Option<&str>> = self.registered.iter().map(|(k, _)| k.as_deref()).collect();
        f.debug_struct("MiddlewareStack")
            .field("registered_for", &kinds)
            .finish()
    }
}
