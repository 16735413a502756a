//! One producer per queue: claims jobs, keeps a small buffer of claimed jobs ahead of its worker
//! slots, and runs them.
//!
//! A fetch claims up to `free slots + prefetch - buffered` jobs (at most the fetch limit) in one
//! statement. Claimed jobs start at once in free slots; the rest wait in the producer's buffer,
//! and a slot whose job ends takes the next buffered job itself, without waiting for the
//! producer. The producer fetches when woken (an insert notification, an insert by this process,
//! a slot freed, the buffer down to half, a resume) or when the poll timer fires (with jitter),
//! and again at once after a full batch, so with few workers a claim still fetches many jobs and
//! the next claim is under way before the buffer runs dry. When that next claim will be a full
//! one whatever the last one's jobs do (many workers, short jobs), it is sent as soon as the last
//! claim's rows arrive, before they are decoded and handed out: the client's work on one claim
//! overlaps the server's on the next, instead of lengthening every claim cycle.
//!
//! A buffered job is claimed like a running one: `running` in the table, its attempt counted,
//! owned by this client, covered by its heartbeat (and rescued if the client dies). Its timeout
//! starts only when it starts. A soft stop, a hard stop and a pause give buffered jobs back to
//! `available` without using up their attempt (as an interrupted attempt is given back); an
//! operator's cancel of a buffered job cancels it without running it. The producer never abandons
//! a fetch midway: stop signals are only looked at between fetches, so no claimed row is left
//! stranded.
//!
//! The producer registers its queue in `pgmill_queue` at start (starting paused if the queue is
//! paused) and refreshes the row periodically. Pause, resume and cancel arrive through the
//! notifier; in poll-only mode the producer reads them on every poll instead.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use metrics::{Counter, Histogram};
use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::field::Empty;
use tracing::{Instrument, debug, debug_span, info_span, warn};

use crate::cluster::health::HealthState;
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, HeldRows};
use crate::engine_metrics::{CLAIM_JOBS, CLAIM_SECONDS, CLAIMS_OVERLAPPED};
use crate::error::{Error, Result, with_timeout};
use crate::job::JobId;
use crate::query::{
    FetchPosition, IdRow, QueueUpsertRow, claimed_jobs, claimed_position, job_get_available,
    job_get_cancel_requested, queue_upsert,
};
use crate::shared_parts::SharedParts;
use crate::work::claim_tokens::ClaimTokens;
use crate::work::in_flight::{HeldClaim, InFlight};
use crate::work::job_executor::JobExecutor;
use crate::work::queue_handle::QueueHandle;
use crate::work::slot_pool::{Buffered, SlotPool};

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
    /// Most jobs one fetch claims.
    pub(crate) fetch_limit: usize,
    /// Claimed jobs a producer keeps ready beyond its free slots.
    pub(crate) prefetch: usize,
    /// Time between polls of an idle producer (plus up to 10 % jitter).
    pub(crate) poll_interval: Duration,
    /// Reads pause state and cancel requests on every poll instead of by notification.
    pub(crate) poll_only: bool,
    /// How often the queue's row is refreshed when notifications are on.
    pub(crate) refresh_interval: Duration,
    /// The client's fencing tokens, one per fetch.
    pub(crate) claim_tokens: Arc<ClaimTokens>,
    /// True once the client's heartbeat has registered its row for this start.
    pub(crate) registered: watch::Receiver<bool>,
}

/// Fetches one queue's jobs into its worker slots and runs them.
#[derive(Clone)]
pub(crate) struct Producer<D: Driver> {
    driver: D,
    /// The client's id, recorded in `attempted_by`.
    client_id: String,
    /// Where the producer reports that its fetch loop runs.
    health: Arc<HealthState>,
    queue: String,
    max_workers: usize,
    config: ProducerConfig,
    executor: Arc<JobExecutor>,
    /// The kinds the client has workers for: the only ones it claims.
    kinds: Arc<[String]>,
    handle: Arc<QueueHandle>,
    in_flight: Arc<InFlight>,
    claim_seconds: Histogram,
    claim_jobs: Histogram,
    claims_overlapped: Counter,
}

impl<D: Driver> Producer<D> {
    /// A producer for `queue` of the client, running up to `max_workers` jobs at once through
    /// `executor`, controlled through `handle`.
    pub(crate) fn new(
        parts: &SharedParts<D>,
        config: ProducerConfig,
        queue: &str,
        max_workers: usize,
        handle: Arc<QueueHandle>,
        executor: Arc<JobExecutor>,
    ) -> Self {
        let labels = [("queue", queue)];
        Producer {
            claim_seconds: parts.metrics.histogram(CLAIM_SECONDS, &labels),
            claim_jobs: parts.metrics.histogram(CLAIM_JOBS, &labels),
            claims_overlapped: parts.metrics.counter(CLAIMS_OVERLAPPED, &labels),
            driver: parts.driver.clone(),
            client_id: parts.client_id.clone(),
            health: Arc::clone(&parts.health),
            queue: queue.to_owned(),
            max_workers,
            config,
            kinds: executor.kinds().map(str::to_owned).collect(),
            executor,
            handle,
            in_flight: Arc::clone(&parts.in_flight),
        }
    }

    /// Fetches and runs jobs until `stop` (soft: fetch nothing more), then waits for the jobs it
    /// started. `kill` (hard stop) interrupts running jobs.
    pub(crate) async fn run(self, stop: CancellationToken, kill: CancellationToken) {
        let span = info_span!("producer", queue = %self.queue);
        async move {
            let slots = SlotPool::new(
                self.max_workers,
                self.config.prefetch / 2,
                Arc::clone(&self.executor),
                Arc::clone(&self.handle),
                kill.clone(),
            );
            let mut cursor = ClaimCursor::new(self.config.poll_interval.max(MAX_HEAD_SPACING));
            let _kill_watch = AbortOnDrop(tokio::spawn(cancel_running_on_kill(
                Arc::clone(&self.handle),
                kill.clone(),
            )));
            let mut backoff = Duration::from_millis(100);
            // Nothing is claimed before the client's row exists: the rescuer takes a job whose
            // client has no row for one that vanished, and rescues it only after seeing the row
            // missing for a whole client timeout, so a client that died between its first claim
            // and its first heartbeat left its jobs stuck for up to twice that.
            let mut registered = self.config.registered.clone();
            tokio::select! {
                () = stop.cancelled() => {}
                // An error only when the heartbeat is gone: the client is stopping.
                _ = registered.wait_for(|r| *r) => {}
            }
            let fetching = self.health.producer_running();
            self.refresh().await;
            let mut last_refresh = Instant::now();
            while !stop.is_cancelled() {
                if self.handle.take_resync() {
                    self.refresh().await;
                    self.check_cancel_requests().await;
                    last_refresh = Instant::now();
                }
                if self.handle.is_paused() {
                    self.release_buffered(&slots, "paused").await;
                } else {
                    match self.fill_slots(&slots, &mut cursor, &kill).await {
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
                let jitter =
                    rand::rng().random_range(0.0..0.1) * self.config.poll_interval.as_secs_f64();
                let poll = self.config.poll_interval + Duration::from_secs_f64(jitter);
                // A claim from the head the queue still owes wakes the producer before the poll.
                let head = cursor.take_head_wake().filter(|h| *h < poll);
                let timer = tokio::select! {
                    () = stop.cancelled() => break,
                    () = self.handle.woken() => false,
                    () = tokio::time::sleep(head.unwrap_or(poll)) => head.is_none(),
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
            drop(fetching);
            // Buffered jobs never started: they go back to their queue, attempt given back.
            self.release_buffered(&slots, "stopping").await;
            // Wait for every job this producer started.
            slots.close_and_wait().await;
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

    /// Gives every buffered job back to its queue (through the completer, as an interrupted
    /// attempt: `available`, attempt given back).
    async fn release_buffered(&self, slots: &SlotPool, why: &'static str) {
        let released = slots.take_all();
        if released.is_empty() {
            return;
        }
        debug!(num_jobs = released.len(), why, "giving buffered jobs back");
        for b in released {
            self.handle.ended(&b.batch, b.index);
            self.executor.release(b.job).await;
        }
    }

    /// How many jobs a fetch claims with `free` slots and `buffered` jobs: enough for the free
    /// slots and a full buffer, at most the fetch limit.
    fn fetch_size(&self, free: usize, buffered: usize) -> usize {
        (free + self.config.prefetch)
            .saturating_sub(buffered)
            .min(self.config.fetch_limit)
    }

    /// How many jobs the next claim takes with `free` slots and `buffered` jobs: none while every
    /// slot is busy and the buffer is more than half full, else [`Producer::fetch_size`].
    fn next_claim_size(&self, free: usize, buffered: usize) -> usize {
        if free == 0 && buffered > self.config.prefetch / 2 {
            0
        } else {
            self.fetch_size(free, buffered)
        }
    }

    /// Fetches until the queue runs dry, or every slot is busy and the buffer is at least half
    /// full, or the queue is paused.
    ///
    /// Back-to-back claims overlap: when a claim's rows arrive and the next claim will be a full
    /// one whatever this one's jobs do, the next is sent before this one's rows are decoded, so
    /// the client's decoding and handing out of a claim's jobs runs while the server runs the next
    /// claim rather than between the two. It starts after the last job of the claim before it
    /// (whose position is read first, from three columns), or at the head of the queue when a
    /// claim from the head is due. A claim sent is always taken in: nothing returns while one is
    /// on its way, and an error reading a claim's rows is returned after it.
    async fn fill_slots(
        &self,
        slots: &Arc<SlotPool>,
        cursor: &mut ClaimCursor,
        kill: &CancellationToken,
    ) -> Result<()> {
        // One connection for a run of back-to-back fetches, back to the pool when this returns.
        let mut lease: Option<ConnectionLease<D>> = None;
        // The next claim, sent before the last one was decoded.
        let mut sent: Option<SentClaim<D>> = None;
        // A claim whose rows could not be read: the error is returned once the claim sent after
        // it has been taken in.
        let mut failed: Option<Error> = None;
        loop {
            let mut claim = match sent.take() {
                Some(claim) => claim,
                None => {
                    if let Some(e) = failed {
                        return Err(e);
                    }
                    if self.handle.is_paused() || kill.is_cancelled() {
                        return Ok(());
                    }
                    let (free, buffered) = slots.free_and_buffered();
                    let limit = self.next_claim_size(free, buffered);
                    if limit == 0 {
                        return Ok(());
                    }
                    self.send_claim(lease.take(), cursor, limit)
                }
            };
            let ClaimOutcome {
                lease: returned,
                rows,
                arrived,
            } = claim.outcome().await;
            lease = returned;
            let mut rows = match rows {
                Ok(rows) => rows,
                Err(e) => {
                    warn_replaced(failed.take());
                    return Err(e);
                }
            };
            let fetched = rows.len();
            let last = match claimed_position(&mut rows) {
                Ok(last) => last,
                Err(e) => {
                    warn_replaced(failed.replace(e));
                    continue;
                }
            };
            let took = arrived.duration_since(claim.started);
            cursor.claimed(
                claim.range,
                claim.started,
                took,
                last,
                fetched == claim.limit,
            );
            claim.span.record("num_jobs", fetched);
            self.claim_seconds.record(took.as_secs_f64());
            self.claim_jobs.record(fetched as f64);
            if failed.is_none()
                && fetched == claim.limit
                && !self.handle.is_paused()
                && !kill.is_cancelled()
            {
                // What the slots and the buffer will be once this claim's jobs are handed out.
                let (free, buffered) = slots.free_and_buffered();
                let started = free.min(fetched);
                let (free, buffered) = (free - started, buffered + fetched - started);
                if self.next_claim_size(free, buffered) == self.config.fetch_limit {
                    let mut next = self.send_claim(lease.take(), cursor, self.config.fetch_limit);
                    next.start().await;
                    self.claims_overlapped.increment(1);
                    sent = Some(next);
                    // On a library whose connection is a task of its own, that task writes the
                    // claim before this one is decoded.
                    tokio::task::yield_now().await;
                }
            }
            let jobs = match claimed_jobs(&mut rows, &self.queue, &self.client_id, claim.token) {
                Ok(jobs) => jobs,
                Err(e) => {
                    warn_replaced(failed.replace(e));
                    continue;
                }
            };
            self.in_flight.add_all(jobs.iter().map(|j| HeldClaim {
                id: j.id,
                attempt: j.attempt,
                token: claim.token,
                attempted_at: j.attempted_at,
                created_at: j.created_at,
            }));
            // Each job's own token: an operator's cancel request cancels it, and so does a hard
            // stop (`cancel_running_on_kill`). Not a child of `kill`: children of one token share
            // its lock, which every job's start and end would contend for. The claim's jobs are
            // registered as one entry.
            let batch = self.handle.register(jobs.iter().map(|j| j.id));
            if kill.is_cancelled() {
                self.handle.cancel_all_running();
            }
            // Free slots take the oldest buffered jobs first, so jobs start in fetch order.
            slots.push(
                jobs.into_iter()
                    .enumerate()
                    .map(|(index, job)| Buffered {
                        job,
                        batch: Arc::clone(&batch),
                        index,
                    })
                    .collect(),
            );
            if sent.is_some() {
                continue;
            }
            if let Some(e) = failed {
                return Err(e);
            }
            if fetched < claim.limit {
                if claim.range.until.is_some() {
                    // A detour behind the position is done: claims go on from where they were.
                    continue;
                }
                if claim.range.after.is_some() && cursor.ran_dry() {
                    // The end of the queue from the position: look at the head before concluding
                    // it ran dry (later if claims from the head have become slow: the producer
                    // then sleeps until it is due).
                    continue;
                }
                return Ok(());
            }
            // A next fetch already as large as a fetch may be starts at once: its round trip
            // overlaps the jobs just started, which the other slots run meanwhile. A smaller one
            // first lets the jobs just started run: short jobs are done by then, so the fetch
            // fills their slots too instead of half of them.
            let (free, buffered) = slots.free_and_buffered();
            if self.fetch_size(free, buffered) < self.config.fetch_limit {
                tokio::task::yield_now().await;
            }
        }
    }

    /// A claim of up to `limit` jobs from where `cursor` says, on `lease` (or a connection
    /// acquired for it); it goes out when first polled ([`SentClaim::start`] or
    /// [`SentClaim::outcome`]).
    fn send_claim(
        &self,
        lease: Option<ConnectionLease<D>>,
        cursor: &mut ClaimCursor,
        limit: usize,
    ) -> SentClaim<D> {
        let span = debug_span!("pgmill.claim", queue = %self.queue, limit, num_jobs = Empty);
        let started = Instant::now();
        if let Some(at) = self.handle.take_rewind() {
            cursor.rewind(at);
        }
        let range = cursor.next_claim();
        let token = self.config.claim_tokens.next();
        let stmt = job_get_available(
            self.executor.schema_ref(),
            &self.queue,
            limit,
            &self.client_id,
            token,
            (range.after, range.until),
            &self.kinds,
        );
        let driver = self.driver.clone();
        let claim = async move {
            let mut lease = lease;
            let rows = with_timeout("fetch", async {
                let conn = match &mut lease {
                    Some(conn) => conn,
                    None => lease.insert(ConnectionLease::acquire(&driver).await?),
                };
                conn.query_held(&stmt).await
            })
            .await;
            ClaimOutcome {
                lease,
                rows,
                arrived: Instant::now(),
            }
        }
        .instrument(span.clone());
        SentClaim {
            claim: Box::pin(claim),
            outcome: None,
            token,
            range,
            limit,
            started,
            span,
        }
    }
}

/// A claim: its statement and the connection it runs on, handed back with the claim's rows,
/// undecoded. The producer polls it once to send it, decodes the claim before it meanwhile, and
/// then waits for it (its reply wakes the producer).
struct SentClaim<D: Driver> {
    claim: Pin<Box<dyn Future<Output = ClaimOutcome<D>> + Send>>,
    /// What the claim handed back, when it was done at its first poll.
    outcome: Option<ClaimOutcome<D>>,
    /// The claim's fencing token.
    token: i64,
    /// Where the claim started and, on a detour, stopped.
    range: ClaimRange,
    /// Most jobs it claims.
    limit: usize,
    /// When it was sent.
    started: Instant,
    span: tracing::Span,
}

/// What a claim hands back.
struct ClaimOutcome<D: Driver> {
    /// The connection it ran on (none when it could not get one).
    lease: Option<ConnectionLease<D>>,
    /// Its rows, undecoded.
    rows: Result<HeldRows>,
    /// When its reply arrived (or it failed), whenever the producer gets to it.
    arrived: Instant,
}

impl<D: Driver> SentClaim<D> {
    /// Polls the claim once, so that it is on its way: as far as its library goes in one poll
    /// (sqlx writes the statement to the socket when the connection has it prepared;
    /// tokio-postgres hands it to its connection task, which writes it when it runs; diesel's
    /// blocking call starts on its own thread). Outside the task's cooperative budget, so that a
    /// producer that has used up its budget still sends it.
    async fn start(&mut self) {
        tokio::task::unconstrained(std::future::poll_fn(|cx| {
            if let Poll::Ready(outcome) = self.claim.as_mut().poll(cx) {
                self.outcome = Some(outcome);
            }
            Poll::Ready(())
        }))
        .await;
    }

    /// Waits for what the claim hands back.
    async fn outcome(&mut self) -> ClaimOutcome<D> {
        match self.outcome.take() {
            Some(outcome) => outcome,
            None => self.claim.as_mut().await,
        }
    }
}

/// Logs a claim's decode error that a later one replaces (only the last is returned).
fn warn_replaced(earlier: Option<Error>) {
    if let Some(e) = earlier {
        warn!(error = %e, "cannot read a claim's rows");
    }
}

/// Claims from the head of the queue at least this often (in claims)...
const CLAIMS_BETWEEN_HEAD_SCANS: u32 = 8;
/// ...and in time...
const HEAD_SCAN_INTERVAL: Duration = Duration::from_millis(100);
/// ...but a claim from the head starts no sooner than this many times the last one took after
/// that one started (or [`MAX_HEAD_SPACING`] after it, whichever is sooner), so slow claims from
/// the head take at most about a fiftieth of the claiming.
const HEAD_SCAN_SPACING: u32 = 50;
/// The longest spacing between claims from the head (or the poll interval, when longer).
const MAX_HEAD_SPACING: Duration = Duration::from_secs(60);

/// Where a claim starts (`after`; `None` for the head of the queue) and, on a detour behind the
/// position, where it stops (`until`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClaimRange {
    after: Option<FetchPosition>,
    until: Option<FetchPosition>,
}

impl ClaimRange {
    /// A claim from the head of the queue.
    const HEAD: ClaimRange = ClaimRange {
        after: None,
        until: None,
    };
}

/// Where the next claim starts: after the last job claimed, except every few claims (and when a
/// claim from there finds the queue dry), which start from the head of the queue.
///
/// Claiming from the head walks the index entries of every job claimed since the last vacuum
/// (they stay in the fetch index, pointing at row versions that are no longer available): with a
/// deep backlog that is most of a claim's cost, and while another session holds an old snapshot
/// open (vacuum can remove none of them, and no scan can mark them dead) it grows with every job
/// claimed. Claims from the last position skip them.
///
/// A job that becomes available behind that position through the engine (a retry or scheduled
/// job coming due, a rescue, a released claim, this client's own insert of a higher priority) is
/// announced with its position ([`ClaimCursor::rewind`]): the next claims make a detour, from
/// just before it up to the position (never walking past it), then go on from the position. One
/// that arrives there otherwise (another client's insert of a higher priority, an insert whose
/// transaction committed late, a rewind lost with the listener) is claimed by the next claim from
/// the head: within [`CLAIMS_BETWEEN_HEAD_SCANS`] claims or [`HEAD_SCAN_INTERVAL`], or
/// [`HEAD_SCAN_SPACING`] times the last claim from the head when those have become slow (at
/// most [`MAX_HEAD_SPACING`], or the poll interval when longer), so walking dead entries never
/// takes more than a fiftieth of the claiming, however long a snapshot holds them.
#[derive(Debug)]
struct ClaimCursor {
    /// The longest spacing between claims from the head.
    max_spacing: Duration,
    position: Option<FetchPosition>,
    /// On a detour: the position to go back to once the detour's claims run out.
    detour_end: Option<FetchPosition>,
    since_head: u32,
    /// When the last claim from the head started, and how long it took.
    head_at: Instant,
    head_took: Duration,
    /// A claim from the position found the queue dry: the next claim is from the head.
    head_owed: bool,
    /// When that owed claim from the head is due, if it was not at once (taken once).
    head_wake: Option<Instant>,
}

impl ClaimCursor {
    /// A cursor that claims from the head first, and from the head at least every `max_spacing`
    /// however slow those claims become.
    fn new(max_spacing: Duration) -> Self {
        ClaimCursor {
            max_spacing,
            position: None,
            detour_end: None,
            since_head: 0,
            head_at: Instant::now(),
            head_took: Duration::ZERO,
            head_owed: false,
            head_wake: None,
        }
    }

    /// Where the next claim starts and stops. A detour goes first; a claim from the head is due
    /// every few claims otherwise.
    fn next_claim(&mut self) -> ClaimRange {
        let Some(position) = self.position else {
            return ClaimRange::HEAD;
        };
        if let Some(end) = self.detour_end {
            return ClaimRange {
                after: Some(position),
                until: Some(end),
            };
        }
        if self.head_due() {
            return ClaimRange::HEAD;
        }
        self.since_head += 1;
        ClaimRange {
            after: Some(position),
            until: None,
        }
    }

    /// A job was made available at `at`: when that is behind the position, the next claims make
    /// a detour from just before it (claims start after their position) up to the position. A
    /// cursor at the head stays there.
    fn rewind(&mut self, at: FetchPosition) {
        if let Some(position) = self.position
            && at <= position
        {
            self.detour_end = Some(self.detour_end.map_or(position, |end| end.max(position)));
            self.position = Some((at.0, at.1, JobId(at.2.0.saturating_sub(1))));
        }
    }

    /// Whether the next claim is from the head.
    fn head_due(&self) -> bool {
        let elapsed = self.head_at.elapsed();
        (self.head_owed
            || self.since_head >= CLAIMS_BETWEEN_HEAD_SCANS
            || elapsed >= HEAD_SCAN_INTERVAL)
            && elapsed >= self.spacing()
    }

    /// How long after the last claim from the head started the next may start.
    fn spacing(&self) -> Duration {
        (self.head_took * HEAD_SCAN_SPACING).min(self.max_spacing)
    }

    /// Records a claim over `range` that started at `started`, took `took` until its reply
    /// arrived, was `full` (it took as many jobs as it asked for), and whose last job in fetch
    /// order was at `last`.
    ///
    /// A claim that was not full took every job it could up to where it stopped: the end of the
    /// queue for a claim from the head, which then skips on to the position if that is further
    /// (nothing between was available), and the detour's end for a detour, which then ends. A
    /// claim that found nothing keeps the position: nothing was available, and what comes next
    /// is inserted after it, rewound to, or found from the head. A full claim from the head that
    /// stopped behind the position goes on from its last job, on a detour up to the position.
    fn claimed(
        &mut self,
        range: ClaimRange,
        started: Instant,
        took: Duration,
        last: Option<FetchPosition>,
        full: bool,
    ) {
        match (range.after, range.until) {
            (None, _) => {
                self.since_head = 0;
                self.head_at = started;
                self.head_took = took;
                self.head_owed = false;
                self.head_wake = None;
                let reached = self.position.max(self.detour_end);
                self.detour_end = None;
                match last {
                    Some(last) if full && reached.is_some_and(|r| r > last) => {
                        self.position = Some(last);
                        self.detour_end = reached;
                    }
                    Some(last) => self.position = Some(reached.map_or(last, |r| r.max(last))),
                    None => {}
                }
            }
            (Some(_), Some(end)) => {
                if let Some(last) = last {
                    self.position = Some(last);
                }
                if !full {
                    self.position = Some(self.position.map_or(end, |p| p.max(end)));
                    self.detour_end = None;
                }
            }
            (Some(_), None) => {
                if last.is_some() {
                    self.position = last;
                }
            }
        }
    }

    /// A claim from the position found the queue dry: the queue is dry only if the head is too.
    /// Whether that claim from the head may run now (else [`ClaimCursor::take_head_wake`] says
    /// when).
    fn ran_dry(&mut self) -> bool {
        self.head_owed = true;
        let due = self.head_due();
        if !due {
            self.head_wake = Some(self.head_at + self.spacing());
        }
        due
    }

    /// How long until the claim from the head a dry queue owes is due, once: the producer sleeps
    /// no longer than that. Taken, so a producer that cannot claim then (its slots full, its
    /// queue paused) waits for its next wake-up instead of spinning.
    fn take_head_wake(&mut self) -> Option<Duration> {
        self.head_wake
            .take()
            .map(|at| at.saturating_duration_since(Instant::now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A poll interval longer than any spacing these tests reach, unless they say otherwise.
    const POLL: Duration = Duration::from_secs(60);

    fn at(id: i64) -> Option<FetchPosition> {
        Some((1, chrono::DateTime::UNIX_EPOCH, crate::job::JobId(id)))
    }

    /// A claim after `id`.
    fn after(id: i64) -> ClaimRange {
        ClaimRange {
            after: at(id),
            until: None,
        }
    }

    /// A claim after `from`, up to `to`.
    fn between(from: i64, to: i64) -> ClaimRange {
        ClaimRange {
            after: at(from),
            until: at(to),
        }
    }

    const HEAD: ClaimRange = ClaimRange::HEAD;

    #[tokio::test(start_paused = true)]
    async fn claims_start_at_the_position_and_from_the_head_every_few_claims() {
        let mut cursor = ClaimCursor::new(POLL);
        assert_eq!(
            cursor.next_claim(),
            HEAD,
            "nothing claimed yet: from the head"
        );
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(100), true);
        for _ in 0..CLAIMS_BETWEEN_HEAD_SCANS {
            assert_eq!(cursor.next_claim(), after(100));
            cursor.claimed(after(100), Instant::now(), Duration::ZERO, at(100), true);
        }
        assert_eq!(cursor.next_claim(), HEAD, "the head after a few claims");
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(200), true);
        assert_eq!(cursor.next_claim(), after(200));
        tokio::time::advance(HEAD_SCAN_INTERVAL).await;
        assert_eq!(cursor.next_claim(), HEAD, "the head after a while");
    }

    #[tokio::test(start_paused = true)]
    async fn a_dry_queue_is_looked_at_from_the_head_and_keeps_the_position() {
        let mut cursor = ClaimCursor::new(POLL);
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(100), true);
        assert_eq!(cursor.next_claim(), after(100));
        cursor.claimed(after(100), Instant::now(), Duration::ZERO, None, false);
        assert!(cursor.ran_dry(), "a cheap head is looked at at once");
        assert_eq!(cursor.next_claim(), HEAD);
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, None, false);
        assert_eq!(cursor.take_head_wake(), None);
        assert_eq!(
            cursor.next_claim(),
            after(100),
            "a head that found nothing keeps the position"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_claim_that_ran_out_behind_the_position_skips_back_to_it() {
        let mut cursor = ClaimCursor::new(POLL);
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(100), true);
        tokio::time::advance(HEAD_SCAN_INTERVAL).await;
        assert_eq!(cursor.next_claim(), HEAD);
        // It found one job behind the position and nothing more: nothing is left in between.
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(40), false);
        assert_eq!(cursor.next_claim(), after(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_head_claim_behind_the_position_goes_on_to_it_on_a_detour() {
        let mut cursor = ClaimCursor::new(POLL);
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(100), true);
        tokio::time::advance(HEAD_SCAN_INTERVAL).await;
        assert_eq!(cursor.next_claim(), HEAD);
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(40), true);
        assert_eq!(cursor.next_claim(), between(40, 100), "up to where it was");
        cursor.claimed(
            between(40, 100),
            Instant::now(),
            Duration::ZERO,
            at(70),
            true,
        );
        assert_eq!(cursor.next_claim(), between(70, 100));
        cursor.claimed(
            between(70, 100),
            Instant::now(),
            Duration::ZERO,
            at(80),
            false,
        );
        assert_eq!(
            cursor.next_claim(),
            after(100),
            "the detour ran out: on from the position"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn slow_claims_from_the_head_are_spaced_out() {
        let mut cursor = ClaimCursor::new(POLL);
        let started = Instant::now();
        let took = Duration::from_millis(300);
        tokio::time::advance(took).await;
        cursor.claimed(HEAD, started, started.elapsed(), at(100), true);
        // Past the interval and the claim count, but not yet fifty times the head's cost.
        tokio::time::advance(HEAD_SCAN_INTERVAL).await;
        for _ in 0..CLAIMS_BETWEEN_HEAD_SCANS + 1 {
            assert_eq!(cursor.next_claim(), after(100));
            cursor.claimed(after(100), Instant::now(), Duration::ZERO, None, false);
        }
        assert!(!cursor.ran_dry(), "the owed head waits for its spacing");
        let wait = cursor.take_head_wake().unwrap();
        assert_eq!(wait, took * HEAD_SCAN_SPACING - took - HEAD_SCAN_INTERVAL);
        assert_eq!(cursor.take_head_wake(), None, "the wake-up is taken once");
        assert_eq!(cursor.next_claim(), after(100));
        tokio::time::advance(wait).await;
        assert_eq!(cursor.next_claim(), HEAD, "then the head");
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, None, false);
        assert_eq!(cursor.next_claim(), after(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_rewind_behind_the_position_makes_a_detour_up_to_it() {
        let mut cursor = ClaimCursor::new(POLL);
        cursor.claimed(HEAD, Instant::now(), Duration::ZERO, at(100), true);
        cursor.rewind(at(150).unwrap());
        assert_eq!(cursor.next_claim(), after(100), "ahead: nothing to do");
        cursor.rewind(at(40).unwrap());
        assert_eq!(cursor.next_claim(), between(39, 100), "from just before it");
        cursor.rewind(at(20).unwrap());
        assert_eq!(
            cursor.next_claim(),
            between(19, 100),
            "a second rewind reaches as far"
        );
        cursor.claimed(
            between(19, 100),
            Instant::now(),
            Duration::ZERO,
            at(40),
            false,
        );
        assert_eq!(cursor.next_claim(), after(100), "then on from where it was");
        let mut fresh = ClaimCursor::new(POLL);
        fresh.rewind(at(40).unwrap());
        assert_eq!(fresh.next_claim(), HEAD, "a cursor at the head stays there");
    }

    #[tokio::test(start_paused = true)]
    async fn claims_from_the_head_are_never_spaced_beyond_the_longest_spacing() {
        let longest = Duration::from_secs(1);
        let mut cursor = ClaimCursor::new(longest);
        let started = Instant::now();
        // Fifty times this would be 15 s.
        tokio::time::advance(Duration::from_millis(300)).await;
        cursor.claimed(HEAD, started, started.elapsed(), at(100), true);
        assert_eq!(cursor.next_claim(), after(100));
        cursor.claimed(after(100), Instant::now(), Duration::ZERO, None, false);
        assert!(!cursor.ran_dry());
        assert_eq!(
            cursor.take_head_wake(),
            Some(Duration::from_millis(700)),
            "due one longest spacing after the last one started"
        );
        tokio::time::advance(Duration::from_millis(700)).await;
        assert_eq!(cursor.next_claim(), HEAD);
    }
}
