//! One producer per queue: fetches jobs into free worker slots and runs them.
//!
//! A fetch claims `min(free slots, fetch limit)` jobs in one statement. The producer fetches when
//! woken (an insert notification, an insert by this process, a finished job freeing a slot, a
//! resume) or when the poll timer fires (with jitter), and again at once after a full batch. It
//! never abandons a fetch midway: stop signals are only looked at between fetches, so no claimed
//! row is left stranded.
//!
//! The producer registers its queue in `pgmill_queue` at start (starting paused if the queue is
//! paused) and refreshes the row periodically. Pause, resume and cancel arrive through the
//! notifier; in poll-only mode the producer reads them on every poll instead.

use std::sync::Arc;
use std::time::Duration;

use metrics::Histogram;
use rand::Rng;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::field::Empty;
use tracing::{Instrument, debug, debug_span, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::engine_metrics::{CLAIM_JOBS, CLAIM_SECONDS, MetricsSink};
use crate::error::{Error, Result, with_timeout};
use crate::in_flight::InFlight;
use crate::job_executor::JobExecutor;
use crate::query::{
    IdRow, QueueUpsertRow, job_get_available, job_get_cancel_requested, queue_upsert,
};
use crate::queue_handle::QueueHandle;

/// On a hard stop, cancels the token of every job running in this queue.
async fn cancel_running_on_kill(handle: Arc<QueueHandle>, kill: CancellationToken) {
    kill.cancelled().await;
    handle.cancel_all_running();
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How a producer fetches: the client-wide settings every queue's producer shares.
#[derive(Debug, Clone)]
pub(crate) struct ProducerConfig {
    /// The client's id, recorded in `attempted_by`.
    pub(crate) client_id: String,
    /// Most jobs one fetch claims.
    pub(crate) fetch_limit: usize,
    /// Time between polls of an idle producer (plus up to 10 % jitter).
    pub(crate) poll_interval: Duration,
    /// Reads pause state and cancel requests on every poll instead of by notification.
    pub(crate) poll_only: bool,
    /// How often the queue's row is refreshed when notifications are on.
    pub(crate) refresh_interval: Duration,
    /// Where claim metrics go.
    pub(crate) metrics: MetricsSink,
}

/// Fetches one queue's jobs into its worker slots and runs them.
#[derive(Clone)]
pub(crate) struct Producer<D: Driver> {
    driver: D,
    queue: String,
    max_workers: usize,
    config: ProducerConfig,
    executor: Arc<JobExecutor>,
    handle: Arc<QueueHandle>,
    in_flight: Arc<InFlight>,
    claim_seconds: Histogram,
    claim_jobs: Histogram,
}

impl<D: Driver> Producer<D> {
    /// A producer for `queue`, running up to `max_workers` jobs at once through `executor`.
    pub(crate) fn new(
        driver: D,
        queue: String,
        max_workers: usize,
        config: ProducerConfig,
        executor: Arc<JobExecutor>,
        handle: Arc<QueueHandle>,
        in_flight: Arc<InFlight>,
    ) -> Self {
        let labels = [("queue", queue.as_str())];
        Producer {
            claim_seconds: config.metrics.histogram(CLAIM_SECONDS, &labels),
            claim_jobs: config.metrics.histogram(CLAIM_JOBS, &labels),
            driver,
            queue,
            max_workers,
            config,
            executor,
            handle,
            in_flight,
        }
    }

    /// Fetches and runs jobs until `stop` (soft: fetch nothing more), then waits for the jobs it
    /// started. `kill` (hard stop) interrupts running jobs.
    pub(crate) async fn run(self, stop: CancellationToken, kill: CancellationToken) {
        let span = info_span!("producer", queue = %self.queue);
        async move {
            let slots = Arc::new(Semaphore::new(self.max_workers));
            let _kill_watch = AbortOnDrop(tokio::spawn(cancel_running_on_kill(
                Arc::clone(&self.handle),
                kill.clone(),
            )));
            let mut backoff = Duration::from_millis(100);
            self.refresh().await;
            let mut last_refresh = Instant::now();
            while !stop.is_cancelled() {
                if self.handle.take_resync() {
                    self.refresh().await;
                    self.check_cancel_requests().await;
                    last_refresh = Instant::now();
                }
                if !self.handle.is_paused() {
                    match self.fill_slots(&slots, &kill).await {
                        Ok(()) => backoff = Duration::from_millis(100),
                        Err(e) => {
                            warn!(error = %e, "fetch failed; backing off");
                            if e.is_connection_lost() || matches!(e, Error::Timeout(_)) {
                                // The claim may have committed with its reply lost.
                                self.in_flight.request_reconcile();
                            }
                            tokio::select! {
                                () = stop.cancelled() => break,
                                () = tokio::time::sleep(backoff) => {}
                            }
                            backoff = (backoff * 2).min(Duration::from_secs(5));
                            continue;
                        }
                    }
                }
                let jitter = rand::rng().random_range(0.0..0.1) * self.config.poll_interval.as_secs_f64();
                let timer = tokio::select! {
                    () = stop.cancelled() => break,
                    () = self.handle.woken() => false,
                    () = tokio::time::sleep(self.config.poll_interval + Duration::from_secs_f64(jitter)) => true,
                };
                if timer && self.config.poll_only {
                    self.refresh().await;
                    self.check_cancel_requests().await;
                    last_refresh = Instant::now();
                } else if last_refresh.elapsed() >= self.config.refresh_interval {
                    self.refresh().await;
                    last_refresh = Instant::now();
                }
            }
            // Wait for every job this producer started.
            let all = u32::try_from(self.max_workers).unwrap_or(u32::MAX);
            let _ = slots.acquire_many(all).await;
            debug!("producer stopped");
        }
        .instrument(span)
        .await
    }

    /// Registers or refreshes the queue row and adopts its pause state. Failures keep the state.
    async fn refresh(&self) {
        let result = with_timeout("queue refresh", async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.query_opt::<QueueUpsertRow>(&queue_upsert(self.executor.schema_ref(), &self.queue))
                .await
        })
        .await;
        match result {
            Ok(Some(row)) => self.handle.set_paused(row.paused_at.is_some()),
            Ok(None) => {}
            Err(e) => warn!(error = %e, "cannot refresh the queue row"),
        }
    }

    /// Cancels running jobs an operator asked to cancel (when notifications may have been missed).
    async fn check_cancel_requests(&self) {
        let ids = self.handle.running_ids();
        if ids.is_empty() {
            return;
        }
        let result = with_timeout("cancel check", async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.query_as::<IdRow>(&job_get_cancel_requested(self.executor.schema_ref(), &ids))
                .await
        })
        .await;
        match result {
            Ok(rows) => rows
                .into_iter()
                .for_each(|IdRow(id)| self.handle.cancel_job(id)),
            Err(e) => warn!(error = %e, "cannot check for cancel requests"),
        }
    }

    /// Fetches into free slots until the queue runs dry, no slot is free, or it is paused.
    async fn fill_slots(&self, slots: &Arc<Semaphore>, kill: &CancellationToken) -> Result<()> {
        // One connection for a run of back-to-back fetches, back to the pool when this returns.
        let mut lease: Option<ConnectionLease<D>> = None;
        // Shared by the jobs started here: cloning a token locks its node, an `Arc` does not.
        let shared_kill = Arc::new(kill.clone());
        loop {
            let free = slots.available_permits();
            if free == 0 || self.handle.is_paused() {
                return Ok(());
            }
            let limit = free.min(self.config.fetch_limit);
            let span = debug_span!("pgmill.claim", queue = %self.queue, limit, num_jobs = Empty);
            let started = Instant::now();
            let jobs = with_timeout("fetch", async {
                let conn = match &mut lease {
                    Some(conn) => conn,
                    None => lease.insert(ConnectionLease::acquire(&self.driver).await?),
                };
                job_get_available(
                    conn,
                    self.executor.schema_ref(),
                    &self.queue,
                    limit,
                    &self.config.client_id,
                )
                .await
            })
            .instrument(span.clone())
            .await?;
            let fetched = jobs.len();
            span.record("num_jobs", fetched);
            self.claim_seconds.record(started.elapsed().as_secs_f64());
            self.claim_jobs.record(fetched as f64);
            self.in_flight
                .add_all(jobs.iter().map(|j| (j.id, j.attempt)));
            // Each job's own token: an operator's cancel request cancels it, and so does a hard
            // stop (`cancel_running_on_kill`). Not a child of `kill`: children of one token share
            // its lock, which every job's start and end would contend for.
            let tokens: Vec<CancellationToken> =
                jobs.iter().map(|_| CancellationToken::new()).collect();
            {
                let mut running = self.handle.lock_running();
                running.extend(jobs.iter().map(|j| j.id).zip(tokens.iter().cloned()));
            }
            if kill.is_cancelled() {
                tokens.iter().for_each(CancellationToken::cancel);
            }
            for (job, cancel) in jobs.into_iter().zip(tokens) {
                let permit = Arc::clone(slots)
                    .try_acquire_owned()
                    .expect("a slot is free for every fetched job");
                let executor = Arc::clone(&self.executor);
                let kill = Arc::clone(&shared_kill);
                let handle = Arc::clone(&self.handle);
                tokio::spawn(async move {
                    let id = job.id;
                    executor.execute(job, &kill, &cancel).await;
                    handle.lock_running().remove(&id);
                    drop(permit);
                    handle.wake();
                });
            }
            if fetched < limit {
                return Ok(());
            }
            // Let the jobs just started run before counting free slots again: short jobs are done
            // by then, so the next fetch fills their slots too instead of half of them.
            tokio::task::yield_now().await;
        }
    }
}
