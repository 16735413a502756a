//! The locker of the advisory-lock claim mode ([`ClaimMode::AdvisoryLock`](crate::ClaimMode)):
//! one dedicated session connection per client, holding a session-level advisory lock on every
//! job the client's producers claimed and whose outcome is not recorded yet.
//!
//! - **Claim** (`job_advisory_claim.sql`): a recursive walk of the fetch index that takes
//!   `pg_try_advisory_lock(id)` on each due available row until enough are locked, leaving out
//!   the ids the session holds (its locks are re-entrant). The claim's snapshot predates its
//!   locks, so the locked rows are read again in a statement of their own
//!   (`job_advisory_get_locked.sql`): a job another session finished and unlocked in between is
//!   not available any more there, and is unlocked instead of run. Nothing is written.
//! - **Release** (`job_advisory_unlock.sql`): the completer hands back the claims whose outcomes
//!   it has committed (or that were given back without running); the locker unlocks them in one
//!   statement. Only the claim that holds a job (by its fencing token) releases it.
//! - **Loss**: any failure on the session (a lost connection, a statement cut off by a timeout,
//!   a restart the heartbeat saw) drops the connection, whose locks vanish with it on the server,
//!   and treats every claim held as lost: each queue's running and buffered jobs are cancelled,
//!   and the completer drops their outcomes unrecorded ([`Locker::holds`] is false for them). The
//!   next claim opens a new session.
//!
//! Statements on the session run one at a time, under one lock. The locks held never exceed the
//! client's lock budget ([`Config::lock_budget`](crate::Config::lock_budget)): a claim asks for
//! no more than the room left.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Mutex as AsyncMutex;
use tracing::{debug, warn};

use crate::completer::CompleterStats;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result, with_timeout};
use crate::job::{JobId, JobRow, JobState};
use crate::query::{
    FetchPosition, IdRow, LockerStatus, job_advisory_claim, job_advisory_get_locked,
    job_advisory_held, job_advisory_unlock,
};
use crate::queue_handle::QueueHandle;
use crate::schema::Schema;

/// Tells whether a claim still holds its job: the executor asks before it starts a buffered job,
/// so a job whose lock was lost an instant earlier never starts (its cancellation may not have
/// reached it yet).
pub(crate) trait ClaimCheck: Send + Sync {
    /// True while the claim `token` holds `id`.
    fn holds(&self, id: JobId, token: i64) -> bool;
}

impl<D: Driver> ClaimCheck for Locker<D> {
    fn holds(&self, id: JobId, token: i64) -> bool {
        Locker::holds(self, id, token)
    }
}

/// The locker session and whether a statement on it was cut off.
struct Session<C> {
    conn: Option<C>,
    /// Set while a statement runs; still set when its caller went away midway, which leaves the
    /// session's locks unknown: the next use then gives the session up.
    busy: bool,
}

/// What the locker did since its client started, logged (at debug level) when it closes: where an
/// advisory-mode client's claims wait.
#[derive(Debug, Default)]
struct LockerStats {
    /// Claim statements run, and the jobs they locked.
    claims: AtomicU64,
    claimed: AtomicU64,
    /// Claims asked for fewer jobs than the producer wanted (the budget had less room), and
    /// claims not run at all (no room).
    cut_by_budget: AtomicU64,
    no_room: AtomicU64,
    /// Unlock statements run, and the locks they released.
    unlocks: AtomicU64,
    unlocked: AtomicU64,
    /// Microseconds spent waiting for the session (another statement on it), by claims and by
    /// unlocks, and running claims (claim and re-read) and unlocks.
    claim_wait_us: AtomicU64,
    unlock_wait_us: AtomicU64,
    claim_us: AtomicU64,
    unlock_us: AtomicU64,
}

fn add_elapsed(counter: &AtomicU64, since: Instant) {
    let us = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
    counter.fetch_add(us, Ordering::Relaxed);
}

impl LockerStats {
    fn log(&self) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let ms = |c: &AtomicU64| Duration::from_micros(get(c)).as_millis();
        debug!(
            claims = get(&self.claims),
            claimed = get(&self.claimed),
            cut_by_budget = get(&self.cut_by_budget),
            no_room = get(&self.no_room),
            unlocks = get(&self.unlocks),
            unlocked = get(&self.unlocked),
            claim_wait_ms = ms(&self.claim_wait_us),
            claim_ms = ms(&self.claim_us),
            unlock_wait_ms = ms(&self.unlock_wait_us),
            unlock_ms = ms(&self.unlock_us),
            "advisory locker closed"
        );
    }
}

/// One client's advisory locks, on one dedicated session.
pub(crate) struct Locker<D: Driver> {
    driver: D,
    schema: Schema,
    client_id: String,
    budget: usize,
    session: AsyncMutex<Session<D::Session>>,
    /// The jobs locked, each with the fencing token of the claim that holds it.
    held: Mutex<HashMap<JobId, i64>>,
    /// Bumped whenever the session is given up.
    generation: AtomicU64,
    /// Every queue's handle: their jobs are cancelled when the session is lost.
    queues: HashMap<String, Arc<QueueHandle>>,
    stats: Arc<CompleterStats>,
    locker_stats: LockerStats,
}

impl<D: Driver> fmt::Debug for Locker<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locker")
            .field("budget", &self.budget)
            .field("held", &self.lock_held().len())
            .finish_non_exhaustive()
    }
}

impl<D: Driver> Locker<D> {
    /// A locker for `client_id` holding at most `budget` locks, cancelling the jobs of `queues`
    /// when its session is lost and counting the jobs lost in `stats`.
    pub(crate) fn new(
        driver: D,
        schema: Schema,
        client_id: String,
        budget: usize,
        queues: HashMap<String, Arc<QueueHandle>>,
        stats: Arc<CompleterStats>,
    ) -> Self {
        Locker {
            driver,
            schema,
            client_id,
            budget,
            session: AsyncMutex::new(Session {
                conn: None,
                busy: false,
            }),
            held: Mutex::default(),
            generation: AtomicU64::new(0),
            queues,
            stats,
            locker_stats: LockerStats::default(),
        }
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, i64>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the session and checks the lock budget against the server's lock table.
    ///
    /// # Errors
    ///
    /// The connection error, or [`Error::InvalidConfig`] when the budget is above half the
    /// server's lock table.
    pub(crate) async fn open(&self) -> Result<()> {
        let mut s = self.session.lock().await;
        let status = with_timeout("locker open", self.status(&mut s)).await;
        let status = match status {
            Ok(status) => status,
            Err(e) => {
                self.lose_locked(&mut s, &e);
                return Err(e);
            }
        };
        let budget = i64::try_from(self.budget).unwrap_or(i64::MAX);
        if budget > status.lock_table / 2 {
            s.conn = None;
            return Err(Error::InvalidConfig(format!(
                "the advisory-lock claim mode would hold up to {budget} locks (workers plus \
                 prefetch of every queue), more than half the server's lock table ({} = \
                 max_locks_per_transaction x (max_connections + max_prepared_transactions)); \
                 lower them or raise max_locks_per_transaction",
                status.lock_table
            )));
        }
        debug!(
            budget,
            lock_table = status.lock_table,
            "advisory locker opened"
        );
        Ok(())
    }

    /// Runs `job_advisory_held` on the session, opening it if needed.
    async fn status(&self, s: &mut Session<D::Session>) -> Result<LockerStatus> {
        let conn = self.start_statement(s).await?;
        let status = conn
            .query_opt::<LockerStatus>(&job_advisory_held(&self.schema))
            .await?
            .ok_or_else(|| Error::decode("locker status", "no row"))?;
        s.busy = false;
        Ok(status)
    }

    /// Marks a statement under way and returns the session's connection, opened when there is
    /// none; a session whose last statement was cut off is given up first. The caller clears
    /// `busy` once its statements are done.
    async fn start_statement<'s>(
        &self,
        s: &'s mut Session<D::Session>,
    ) -> Result<&'s mut D::Session> {
        if s.busy {
            self.lose_locked(s, &"a statement on the locker session was interrupted");
        }
        if s.conn.is_none() {
            s.conn = Some(self.driver.session().await?);
            debug!("advisory locker session opened");
        }
        s.busy = true;
        Ok(s.conn.as_mut().expect("opened above"))
    }

    /// Bumped whenever the session is lost: jobs claimed under an older generation are lost.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// True while the claim `token` holds `id`'s lock on the current session. The held set is
    /// emptied before any job is cancelled when the session is lost.
    pub(crate) fn holds(&self, id: JobId, token: i64) -> bool {
        self.lock_held().get(&id) == Some(&token)
    }

    /// Claims up to `limit` due jobs of `queue` (after `after` in fetch order, or from the head)
    /// under the fencing token `token`, within the lock budget. Returns them in fetch order, as
    /// the worker sees them (`available`, as their rows still are, with the attempt they run
    /// counted), the generation they were claimed in, and how many it asked for (fewer than
    /// `limit` when the budget has less room).
    ///
    /// # Errors
    ///
    /// The database error; the session is then given up and every claim it held is lost.
    pub(crate) async fn claim(
        &self,
        queue: &str,
        limit: usize,
        after: Option<FetchPosition>,
        token: i64,
    ) -> Result<(Vec<JobRow>, u64, usize)> {
        let waiting = Instant::now();
        let mut s = self.session.lock().await;
        let stats = &self.locker_stats;
        add_elapsed(&stats.claim_wait_us, waiting);
        let held: Vec<i64> = self.lock_held().keys().map(|id| id.0).collect();
        let wanted = limit;
        let limit = limit.min(self.budget.saturating_sub(held.len()));
        if limit == 0 {
            stats.no_room.fetch_add(1, Ordering::Relaxed);
            return Ok((Vec::new(), self.generation(), 0));
        }
        if limit < wanted {
            stats.cut_by_budget.fetch_add(1, Ordering::Relaxed);
        }
        let running = Instant::now();
        let claimed = self
            .claim_on(&mut s, queue, limit, held, after, token)
            .await;
        add_elapsed(&stats.claim_us, running);
        match claimed {
            Ok(jobs) => {
                stats.claims.fetch_add(1, Ordering::Relaxed);
                stats
                    .claimed
                    .fetch_add(jobs.len() as u64, Ordering::Relaxed);
                Ok((jobs, self.generation(), limit))
            }
            Err(e) => {
                self.lose_locked(&mut s, &e);
                Err(e)
            }
        }
    }

    async fn claim_on(
        &self,
        s: &mut Session<D::Session>,
        queue: &str,
        limit: usize,
        held: Vec<i64>,
        after: Option<FetchPosition>,
        token: i64,
    ) -> Result<Vec<JobRow>> {
        let conn = self.start_statement(s).await?;
        let locked: Vec<IdRow> = conn
            .query_as(&job_advisory_claim(&self.schema, queue, limit, held, after))
            .await?;
        if locked.is_empty() {
            s.busy = false;
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = locked.iter().map(|IdRow(id)| id.0).collect();
        self.lock_held()
            .extend(locked.iter().map(|IdRow(id)| (*id, token)));
        let rows = conn
            .query(&job_advisory_get_locked(&self.schema, ids.clone(), queue))
            .await?;
        let mut jobs = rows
            .into_iter()
            .map(|row| {
                let mut job = JobRow::from_claimed_row(row, queue, token)?;
                // The row is still available; the attempt it runs is counted at completion.
                job.state = JobState::Available;
                job.attempt += 1;
                job.attempted_by.push(self.client_id.clone());
                Ok(job)
            })
            .collect::<Result<Vec<_>>>()?;
        if jobs.len() < ids.len() {
            // Finished by someone else between the claim's snapshot and its lock.
            let stale: Vec<i64> = ids
                .into_iter()
                .filter(|id| !jobs.iter().any(|j| j.id.0 == *id))
                .collect();
            debug!(
                num_jobs = stale.len(),
                "unlocking jobs that changed before their lock"
            );
            conn.query(&job_advisory_unlock(&self.schema, stale.clone()))
                .await?;
            let mut held = self.lock_held();
            for id in stale {
                held.remove(&JobId(id));
            }
        }
        s.busy = false;
        jobs.sort_by_key(|j| (j.priority, j.scheduled_at, j.id));
        Ok(jobs)
    }

    /// Unlocks the jobs of `claims` (job and fencing token) that their claim still holds: their
    /// outcomes are committed, or they were given back without running. Claims lost with an
    /// earlier session are skipped (their locks vanished with it).
    pub(crate) async fn release(&self, claims: impl IntoIterator<Item = (JobId, i64)>) {
        let claims: Vec<(JobId, i64)> = claims.into_iter().collect();
        let waiting = Instant::now();
        let mut s = self.session.lock().await;
        add_elapsed(&self.locker_stats.unlock_wait_us, waiting);
        if s.conn.is_none() || s.busy {
            return;
        }
        let ids: Vec<i64> = {
            let held = self.lock_held();
            claims
                .iter()
                .filter(|(id, token)| held.get(id) == Some(token))
                .map(|(id, _)| id.0)
                .collect()
        };
        if ids.is_empty() {
            return;
        }
        let running = Instant::now();
        let result = with_timeout("locker unlock", async {
            s.busy = true;
            let conn = s
                .conn
                .as_mut()
                .ok_or_else(|| Error::decode("locker", "closed"))?;
            let released: i64 = conn
                .query_scalar(&job_advisory_unlock(&self.schema, ids.clone()))
                .await?;
            s.busy = false;
            Ok(released)
        })
        .await;
        add_elapsed(&self.locker_stats.unlock_us, running);
        match result {
            Ok(released) => {
                let stats = &self.locker_stats;
                stats.unlocks.fetch_add(1, Ordering::Relaxed);
                stats
                    .unlocked
                    .fetch_add(u64::try_from(released).unwrap_or(0), Ordering::Relaxed);
                {
                    let mut held = self.lock_held();
                    for id in &ids {
                        held.remove(&JobId(*id));
                    }
                }
                // Room in the budget: a producer that found none claims again now.
                for handle in self.queues.values() {
                    handle.wake();
                }
                if usize::try_from(released).ok() != Some(ids.len()) {
                    warn!(
                        released,
                        num_jobs = ids.len(),
                        "the locker session held fewer locks than it should"
                    );
                }
            }
            Err(e) => self.lose_locked(&mut s, &e),
        }
    }

    /// Checks that the session is alive (when one is open); gives it up if not.
    pub(crate) async fn check(&self) {
        let mut s = self.session.lock().await;
        if s.conn.is_none() {
            return;
        }
        match with_timeout("locker check", self.status(&mut s)).await {
            Ok(status) => debug!(held = status.held, "advisory locker session alive"),
            Err(e) => self.lose_locked(&mut s, &e),
        }
    }

    /// Gives the session up (the database restarted or failed over under the client): every
    /// claim it held is lost.
    pub(crate) async fn lose(&self, why: &str) {
        let mut s = self.session.lock().await;
        if s.conn.is_some() || !self.lock_held().is_empty() {
            self.lose_locked(&mut s, &why);
        }
    }

    /// Closes the session at the client's stop, releasing whatever it still holds.
    pub(crate) async fn close(&self) {
        let mut s = self.session.lock().await;
        s.conn = None;
        s.busy = false;
        self.lock_held().clear();
        self.locker_stats.log();
    }

    fn lose_locked(&self, s: &mut Session<D::Session>, why: &dyn fmt::Display) {
        // Dropping the connection ends the session on the server, and its locks with it.
        s.conn = None;
        s.busy = false;
        let lost = {
            let mut held = self.lock_held();
            let n = held.len();
            held.clear();
            n
        };
        self.generation.fetch_add(1, Ordering::SeqCst);
        for handle in self.queues.values() {
            handle.cancel_all_running();
        }
        self.stats
            .lost_claims
            .fetch_add(lost as u64, Ordering::Relaxed);
        warn!(
            num_jobs = lost,
            reason = %why,
            "the advisory locker lost its session: every job it held is treated as lost \
             (its worker is cancelled, its result dropped; another client may run it again)"
        );
    }
}
