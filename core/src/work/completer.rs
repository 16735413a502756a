//! The batched completer: records the outcomes of many attempts with one guarded UPDATE.
//!
//! Executors hand their outcome to the completer and free their slot at once. The completer
//! takes whatever outcomes are waiting (up to [`CompleterConfig::max_batch`]), optionally lingering
//! a moment for more, and flushes them with `job_set_state_if_running_many`. Every row update is
//! fenced on `state = 'running'` and the claim that ran (its attempt and its fencing token, which
//! no other claim ever carries): a superseded claim's late result changes nothing and is counted
//! in [`ClientStats::superseded_results`](crate::ClientStats).
//!
//! Backpressure: the hand-off channel is bounded, so when the database is slow executors wait to
//! hand over, slots stay taken, and producers fetch less. Transient errors are retried with
//! backoff; outcomes are never dropped while the client runs. On stop, the completer drains
//! everything still queued before it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use metrics::{Counter, Histogram};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::field::Empty;
use tracing::{Instrument, debug, debug_span, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::engine_metrics::{FLUSH_OUTCOMES, FLUSH_SECONDS, SUPERSEDED};
use crate::error::{Error, Result, with_timeout};
use crate::event::{Event, EventSender};
use crate::fast_hash::FastMap;
use crate::job::{JobId, JobRow, JobState};
use crate::outcome::Outcome;
use crate::query::{
    CompletedRow, SetStateParams, SetStateResult, job_set_completed_many,
    job_set_state_if_running_many,
};
use crate::schema::Schema;
use crate::shared_parts::SharedParts;
use crate::work::claim_tokens::NO_CLAIM;
use crate::work::in_flight::InFlight;

/// Default [`CompleterConfig::max_batch`].
pub(crate) const DEFAULT_COMPLETER_MAX_BATCH: usize = 2_000;
/// Default [`CompleterConfig::linger`].
pub(crate) const DEFAULT_COMPLETER_LINGER: Duration = Duration::from_millis(1);
/// Default [`CompleterConfig::buffer`].
pub(crate) const DEFAULT_COMPLETER_BUFFER: usize = 10_000;
/// Default [`CompleterConfig::available_within`].
pub(crate) const DEFAULT_AVAILABLE_WITHIN: Duration = Duration::from_secs(5);

/// Settings of the batched completer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompleterConfig {
    /// Most outcomes flushed in one UPDATE. Default 2,000.
    pub max_batch: usize,
    /// How long to wait for more outcomes after the first of a batch before flushing; the latency
    /// cost of batching. Default 1 ms; zero flushes at once.
    pub linger: Duration,
    /// Outcomes queued before executors wait (backpressure). Default 10,000.
    pub buffer: usize,
    /// A retry or snooze due within this long makes the job available at once (it still waits for
    /// its `scheduled_at`) instead of waiting for the scheduler. Default 5 s.
    pub available_within: Duration,
}

impl Default for CompleterConfig {
    fn default() -> Self {
        CompleterConfig {
            max_batch: DEFAULT_COMPLETER_MAX_BATCH,
            linger: DEFAULT_COMPLETER_LINGER,
            buffer: DEFAULT_COMPLETER_BUFFER,
            available_within: DEFAULT_AVAILABLE_WITHIN,
        }
    }
}

impl CompleterConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_batch == 0 || self.buffer == 0 {
            return Err(Error::InvalidConfig(
                "completer max_batch and buffer must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// One attempt's outcome on its way to the database.
#[derive(Debug)]
pub(crate) struct Completion {
    pub(crate) job: Arc<JobRow>,
    pub(crate) outcome: Outcome,
    pub(crate) run_time: Duration,
    pub(crate) finished_at: Instant,
    /// The timeout the attempt ran past, if it did.
    pub(crate) ran_past_timeout: Option<Duration>,
}

impl Completion {
    /// The job and the fencing token of the claim the outcome belongs to.
    fn claim(&self) -> (JobId, i64) {
        (self.job.id, self.job.claim_token.unwrap_or(NO_CLAIM))
    }
}

/// Counters shared with the client.
#[derive(Debug, Default)]
pub(crate) struct CompleterStats {
    pub(crate) recorded: AtomicU64,
    pub(crate) superseded: AtomicU64,
    pub(crate) flushes: AtomicU64,
}

/// Records the outcomes of attempts in batches, one fenced UPDATE per flush.
pub(crate) struct BatchCompleter<D: Driver> {
    in_flight: Arc<InFlight>,
    driver: D,
    schema: Schema,
    config: CompleterConfig,
    events: Arc<EventSender>,
    stats: Arc<CompleterStats>,
    flush_seconds: Histogram,
    flush_outcomes: Histogram,
    superseded: Counter,
}

impl<D: Driver> BatchCompleter<D> {
    /// A completer for the client, forgetting the claims it records from the client's held
    /// claims, publishing to `events` and counting in `stats`.
    pub(crate) fn new(
        parts: &SharedParts<D>,
        config: CompleterConfig,
        events: Arc<EventSender>,
        stats: Arc<CompleterStats>,
    ) -> Self {
        BatchCompleter {
            in_flight: Arc::clone(&parts.in_flight),
            driver: parts.driver.clone(),
            schema: parts.schema.clone(),
            config,
            events,
            stats,
            flush_seconds: parts.metrics.histogram(FLUSH_SECONDS, &[]),
            flush_outcomes: parts.metrics.histogram(FLUSH_OUTCOMES, &[]),
            superseded: parts.metrics.counter(SUPERSEDED, &[]),
        }
    }

    /// Flushes outcomes until every sender is dropped and the queue is empty. After `stopping` is
    /// cancelled, a failing flush is retried a bounded number of times before its outcomes are
    /// abandoned (the jobs stay running; the rescuer recovers them).
    pub(crate) async fn run(self, rx: mpsc::Receiver<Completion>, stopping: CancellationToken) {
        let span = info_span!("completer", schema = self.schema.name());
        self.record(rx, stopping).instrument(span).await;
    }

    async fn record(&self, mut rx: mpsc::Receiver<Completion>, stopping: CancellationToken) {
        let mut batch = Vec::with_capacity(self.config.max_batch);
        // One connection for a run of back-to-back flushes.
        let mut lease: Option<ConnectionLease<D>> = None;
        while let Some(first) = rx.recv().await {
            batch.push(first);
            if !self.config.linger.is_zero() && rx.len() + 1 < self.config.max_batch {
                // One timer for the whole linger: outcomes arriving meanwhile wait in the channel
                // instead of waking the completer one by one.
                tokio::time::sleep(self.config.linger).await;
            }
            while batch.len() < self.config.max_batch {
                match rx.try_recv() {
                    Ok(c) => batch.push(c),
                    Err(_) => break,
                }
            }
            self.flush_with_retry(&mut batch, &mut lease, &stopping)
                .await;
            if rx.is_empty() {
                // Idle: the connection goes back to the pool until the next outcome.
                lease = None;
            }
            self.in_flight
                .remove_all(batch.iter().map(Completion::claim));
            batch.clear();
        }
    }

    /// Flushes `batch` on `lease` (taking a connection when it holds none); a failed flush drops
    /// the connection it used, so a retry takes another.
    async fn flush_with_retry(
        &self,
        batch: &mut [Completion],
        lease: &mut Option<ConnectionLease<D>>,
        stopping: &CancellationToken,
    ) {
        let mut backoff = Duration::from_millis(50);
        let mut failures_while_stopping = 0;
        loop {
            match self.flush(batch, lease).await {
                Ok(()) => return,
                Err(e) => {
                    *lease = None;
                    warn!(error = %e, num_outcomes = batch.len(), "completer flush failed; retrying");
                    if stopping.is_cancelled() {
                        failures_while_stopping += 1;
                        if failures_while_stopping >= 10 {
                            let ids: Vec<i64> = batch.iter().map(|c| c.job.id.0).collect();
                            warn!(
                                ?ids,
                                "giving up recording outcomes at shutdown; the rescuer will recover these jobs"
                            );
                            return;
                        }
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn flush(
        &self,
        batch: &[Completion],
        lease: &mut Option<ConnectionLease<D>>,
    ) -> Result<()> {
        // Plain successes of non-periodic jobs, the common case, take the lean statement.
        let plain = batch.iter().all(|c| {
            matches!(c.outcome, Outcome::Completed { .. })
                && c.job.metadata.get("periodic").is_none()
        });
        let already_recorded = batch
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Completed { recorded: true }))
            .count();
        // Rows are only needed to build events; without subscribers the row count is enough.
        let want_rows = self.events.has_subscribers();
        let span = debug_span!(
            "pgmill.completer_flush",
            num_outcomes = batch.len(),
            num_recorded = Empty,
            num_superseded = Empty,
        );
        let started = Instant::now();
        let (results, recorded): (Vec<SetStateResult>, u64) =
            with_timeout("completer flush", async {
                let conn = match lease {
                    Some(conn) => conn,
                    None => lease.insert(ConnectionLease::acquire(&self.driver).await?),
                };
                if !plain {
                    return self.record_outcomes(conn, batch, want_rows).await;
                }
                let stmt = job_set_completed_many(
                    &self.schema,
                    batch.iter().map(Completion::claim),
                    want_rows,
                );
                let (mut results, mut recorded) = if want_rows {
                    let rows: Vec<CompletedRow> = conn.query_as(&stmt).await?;
                    let n = rows.len() as u64;
                    (completed_results(batch, rows), n)
                } else {
                    (Vec::new(), conn.execute(&stmt).await?)
                };
                // The lean statement leaves running the jobs whose completion does more than
                // move them to the history (a unique job keeping its key taken); the general
                // statement records them. (It finds nothing to do for superseded claims.)
                if recorded + (already_recorded as u64) < batch.len() as u64 {
                    let (more, n) = self.record_outcomes(conn, batch, want_rows).await?;
                    results.extend(more);
                    recorded += n;
                }
                Ok((results, recorded))
            })
            .instrument(span.clone())
            .await?;
        self.flush_seconds.record(started.elapsed().as_secs_f64());
        self.flush_outcomes.record(batch.len() as f64);
        self.stats.flushes.fetch_add(1, Ordering::Relaxed);
        self.stats.recorded.fetch_add(recorded, Ordering::Relaxed);
        let superseded = batch
            .len()
            .saturating_sub(usize::try_from(recorded).unwrap_or(usize::MAX) + already_recorded);
        span.record("num_recorded", recorded);
        span.record("num_superseded", superseded);
        let _in_span = span.enter();
        if superseded > 0 {
            self.stats
                .superseded
                .fetch_add(superseded as u64, Ordering::Relaxed);
            self.superseded.increment(superseded as u64);
            debug!(
                num_superseded = superseded,
                "outcomes of superseded attempts changed nothing"
            );
        }
        debug!(num_recorded = recorded, "completer flushed");
        if want_rows {
            let flushed_at = Instant::now();
            let mut by_id: FastMap<JobId, SetStateResult> =
                results.into_iter().map(|r| (r.id, r)).collect();
            for c in batch {
                let Some(r) = by_id.remove(&c.job.id) else {
                    continue;
                };
                let mut job = JobRow::clone(&c.job);
                let queue_wait = job
                    .attempted_at
                    .map(|at| (at - job.scheduled_at).to_std().unwrap_or_default())
                    .unwrap_or_default();
                job.state = r.state;
                job.attempt = r.attempt;
                job.scheduled_at = r.scheduled_at;
                job.finalized_at = r.finalized_at;
                job.claim_token = None;
                self.events.send(Event {
                    kind: c.outcome.event_kind(),
                    job,
                    queue_wait,
                    run_time: c.run_time,
                    completion_lag: flushed_at.duration_since(c.finished_at),
                    error: c.outcome.error().map(str::to_owned),
                    ran_past_timeout: c.ran_past_timeout,
                });
            }
        }
        Ok(())
    }

    /// Records `batch`'s outcomes with the general statement, which decides each job's new state
    /// (and moves finished jobs out of the job table); returns the new states when `want_rows`,
    /// and how many outcomes were recorded.
    async fn record_outcomes(
        &self,
        conn: &mut ConnectionLease<D>,
        batch: &[Completion],
        want_rows: bool,
    ) -> Result<(Vec<SetStateResult>, u64)> {
        let params: Vec<SetStateParams> = batch.iter().map(|c| c.outcome.params(&c.job)).collect();
        let available_within =
            TimeDelta::from_std(self.config.available_within).unwrap_or(TimeDelta::seconds(5));
        let stmt = job_set_state_if_running_many(&self.schema, &params, available_within);
        if want_rows {
            let rows: Vec<SetStateResult> = conn.query_as(&stmt).await?;
            let n = rows.len() as u64;
            Ok((rows, n))
        } else {
            Ok((Vec::new(), conn.execute(&stmt).await?))
        }
    }
}

/// The new state of each job of `batch` the lean completion completed (`rows`): completed, at the
/// attempt and with the schedule of the claim that ran it.
fn completed_results(batch: &[Completion], rows: Vec<CompletedRow>) -> Vec<SetStateResult> {
    let claims: FastMap<JobId, &JobRow> = batch.iter().map(|c| (c.job.id, &*c.job)).collect();
    rows.into_iter()
        .filter_map(|r| {
            let job = claims.get(&r.id)?;
            Some(SetStateResult {
                id: r.id,
                state: JobState::Completed,
                attempt: job.attempt,
                scheduled_at: job.scheduled_at,
                finalized_at: Some(r.finalized_at),
            })
        })
        .collect()
}
