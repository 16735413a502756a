//! Insert paths: single, many (one round trip), bulk (COPY where the driver has it), on any
//! executor, including the application's own transaction, and blocking for diesel.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::driver::{
    BlockingExecutor, Driver, Executor, FromRow, Row, Statement, rows_as, rows_with,
};
use crate::error::{Error, Result};
use crate::insert::commit_watcher::{CommitFollower, CommitWatcher};
use crate::insert::debouncer::{DEFAULT_INSERT_NOTIFY_COOLDOWN, Debouncer};
use crate::job::{InsertResult, JobRow, JobState};
use crate::job_args::{InsertOpts, InsertParams, JobArgs};
use crate::middleware::{Middleware, MiddlewareStack, TracePropagator, trace_propagator};
use crate::query::{
    CopyShape, InsertedRow, WithXact, job_copy_available, job_insert_many, job_insert_one,
    job_insert_plain_many, job_insert_unique_many, job_notify_insert,
};
use crate::schema::Schema;

/// Rows per multi-row INSERT in the bulk path's fallback.
const BULK_INSERT_CHUNK: usize = 5_000;
/// Rows encoded per chunk of the bulk path's COPY stream.
const BULK_COPY_CHUNK: usize = 20_000;
/// Rows in the first chunk of the bulk path's COPY stream; chunks double from there.
const BULK_COPY_FIRST_CHUNK: usize = 1_250;

/// Inserts jobs through any executor: a pooled connection, or the application's own transaction.
///
/// Inserting needs no running client. Get one from a client ([`Client::inserter`](crate::Client))
/// to have kinds checked against its workers, or build one with [`Inserter::new`] in a process that
/// only enqueues. Driver crates wrap it in an extension trait, so `tx.insert_job(..)` works on the
/// application's own transaction type.
///
/// # Examples
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Serialize, Deserialize)] struct Email { to: String }
/// # impl pgmill::JobArgs for Email { const KIND: &'static str = "email"; }
/// # async fn run<E: pgmill::driver::Executor>(tx: &mut E) -> pgmill::Result<()> {
/// let inserter = pgmill::Inserter::new(pgmill::Schema::public());
/// let job = inserter.insert(tx, Email { to: "a@example.com".into() }).await?;
/// tracing::info!(job_id = %job.id, "inserted");
/// # Ok(())
/// # }
/// ```
///
/// # Notifications
///
/// After inserting jobs that are due now, the inserter sends one notification per queue on the
/// same executor, so inside a transaction it is delivered at commit and never after a rollback.
/// Listening producers then start the jobs within milliseconds. None is sent for scheduled or
/// pending jobs. When no job inserted is unique, the insert statement itself carries the
/// notifications, so an insert takes one round trip, notifications included.
///
/// Notifications serialise committing transactions in Postgres, so an inserter that can follow
/// commits (a client's, or one given a driver with [`Inserter::with_commit_watch`]) sends at most
/// one per queue per cooldown (default 100 ms), it and its clones, however many jobs are inserted.
/// A job inserted within the cooldown is announced once its own transaction has committed, from a
/// pool connection, a few milliseconds later: never lost when the transaction that did notify
/// rolls back or commits first. A stand-alone inserter without a driver cannot see commits, so it
/// notifies in every transaction that inserts due jobs.
///
/// # Middleware and trace context
///
/// Every insert path finalises its jobs in one place: after validation, the trace context of the
/// current span is stored in each job's metadata (with a [`TracePropagator`]), then every
/// [`Middleware::insert`] hook runs on each job. A client's inserter has the client's middleware
/// and propagator; a stand-alone one gets them from [`Inserter::with_middleware`] and
/// [`Inserter::with_trace_propagator`].
#[derive(Clone)]
pub struct Inserter {
    schema: Schema,
    known_kinds: Option<Arc<BTreeSet<String>>>,
    notify: Option<Arc<Debouncer>>,
    /// Announces jobs whose in-transaction notification the cooldown held back, once committed.
    follower: Option<Arc<dyn CommitFollower>>,
    middleware: Option<Arc<MiddlewareStack>>,
    propagator: Option<Arc<dyn TracePropagator>>,
}

impl fmt::Debug for Inserter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inserter")
            .field("schema", &self.schema)
            .field("known_kinds", &self.known_kinds)
            .field("notify", &self.notify)
            .field("follows_commits", &self.follower.is_some())
            .field("middleware", &self.middleware)
            .field("propagator", &self.propagator)
            .finish()
    }
}

impl Inserter {
    /// An inserter into `schema` that accepts any kind and notifies listeners.
    pub fn new(schema: Schema) -> Self {
        Inserter {
            schema,
            known_kinds: None,
            notify: Some(Arc::new(Debouncer::new(DEFAULT_INSERT_NOTIFY_COOLDOWN))),
            follower: None,
            middleware: None,
            propagator: None,
        }
    }

    /// Runs `middleware`'s [`Middleware::insert`] hook on every job this inserter inserts, after
    /// the hooks added before.
    #[must_use]
    pub fn with_middleware(mut self, middleware: impl Middleware) -> Self {
        let mut stack = self.middleware.as_deref().cloned().unwrap_or_default();
        stack.push(None, Arc::new(middleware));
        self.middleware = Some(Arc::new(stack));
        self
    }

    /// Stores the trace context of the inserting span in each job's metadata, through
    /// `propagator` (see [`TracePropagator`]).
    #[must_use]
    pub fn with_trace_propagator(self, propagator: impl TracePropagator) -> Self {
        self.with_propagator(Some(Arc::new(propagator)))
    }

    /// The client's hooks: its middleware stack and propagator.
    pub(crate) fn with_hooks(
        mut self,
        middleware: MiddlewareStack,
        propagator: Option<Arc<dyn TracePropagator>>,
    ) -> Self {
        self.middleware = (!middleware.is_empty()).then(|| Arc::new(middleware));
        self.with_propagator(propagator)
    }

    fn with_propagator(mut self, propagator: Option<Arc<dyn TracePropagator>>) -> Self {
        self.propagator = propagator;
        self
    }

    /// True when inserts adjust jobs: a propagator or middleware is set.
    fn adjusts(&self) -> bool {
        self.middleware.is_some() || self.propagator.is_some()
    }

    /// Finalises validated jobs: the trace context, then every middleware's insert hook.
    fn adjust(&self, params: &mut [InsertParams]) {
        if let Some(propagator) = &self.propagator
            && let Some(headers) = trace_propagator::current_headers(&**propagator)
        {
            for job in params.iter_mut() {
                trace_propagator::store(job, &headers);
            }
        }
        if let Some(stack) = &self.middleware {
            for job in params.iter_mut() {
                stack.prepare_insert(job);
            }
        }
    }

    /// Checks and finalises `params`: the one place every insert path prepares its jobs. Borrows
    /// them unchanged when nothing adjusts inserts.
    fn prepare<'p>(&self, params: &'p [InsertParams]) -> Result<Cow<'p, [InsertParams]>> {
        self.check(params)?;
        if !self.adjusts() {
            return Ok(Cow::Borrowed(params));
        }
        let mut owned = params.to_vec();
        self.adjust(&mut owned);
        Ok(Cow::Owned(owned))
    }

    /// Sends insert notifications at most once per queue per `cooldown`; `None` sends none
    /// (listeners then pick up jobs on their next poll).
    pub fn with_notify_cooldown(mut self, cooldown: Option<Duration>) -> Self {
        self.notify = cooldown.map(|c| Arc::new(Debouncer::new(c)));
        self
    }

    /// Follows commits over `driver`'s pool, so that insert notifications are debounced (see
    /// [Notifications](Inserter#notifications)). A client's inserter already does.
    #[must_use]
    pub fn with_commit_watch<D: Driver>(self, driver: D) -> Self {
        let watcher = CommitWatcher::new(driver, self.schema.clone());
        self.with_follower(watcher)
    }

    /// Announces jobs the cooldown held back through `follower`, once they are committed.
    pub(crate) fn with_follower(mut self, follower: Arc<dyn CommitFollower>) -> Self {
        self.follower = Some(follower);
        self
    }

    /// True when this inserter sends insert notifications.
    pub(crate) fn notifies(&self) -> bool {
        self.notify.is_some()
    }

    /// An inserter that refuses kinds outside `kinds`.
    pub(crate) fn with_known_kinds(mut self, kinds: BTreeSet<String>) -> Self {
        self.known_kinds = Some(Arc::new(kinds));
        self
    }

    /// The queues to notify in the inserting transaction about `params` (inserted as `rows` by
    /// transaction `xact_id`, when the path returns them).
    ///
    /// A queue is notified unless the cooldown holds it back and one of its due jobs is among
    /// `rows`: the inserting transaction is then handed to the commit follower, which announces
    /// the queue once that transaction has committed. Without a follower (or rows) every queue
    /// with due jobs is notified: a notification in another transaction may be lost with a
    /// rollback, or be delivered before this transaction commits.
    fn queues_to_notify(
        &self,
        due: BTreeSet<&str>,
        rows: &[InsertResult],
        xact_id: Option<i64>,
    ) -> Vec<String> {
        let Some(debouncer) = &self.notify else {
            return Vec::new();
        };
        due.into_iter()
            .filter(|q| {
                let Some(follower) = &self.follower else {
                    return true;
                };
                if debouncer.try_fire(q) {
                    return true;
                }
                let due = rows.iter().any(|r| {
                    !r.skipped_as_duplicate && r.queue == *q && r.state == JobState::Available
                });
                !(due && xact_id.is_some_and(|x| follower.follow(x, q)))
            })
            .map(str::to_owned)
            .collect()
    }

    /// Whether the insert of `p` (one job) notifies its queue from its own statement, as
    /// [`Inserter::carried_queues`] decides for many.
    fn carries_notification(&self, p: &InsertParams, carry: impl FnOnce() -> bool) -> bool {
        p.unique.is_none() && p.is_due_now() && (carry() || self.notifies_now(&p.queue))
    }

    /// The queues with jobs due now among `params` (none unique) whose notification the insert
    /// statement carries, instead of a statement of its own: all of them when `carry` agrees (a
    /// client committing its own insert after a quiet moment; asked only when there are some),
    /// else those this inserter is to notify in the inserting transaction whatever the insert
    /// returns ([`Inserter::notifies_now`]). One round trip fewer in the application's
    /// transaction.
    fn carried_queues<'a>(
        &self,
        params: &'a [InsertParams],
        carry: impl FnOnce() -> bool,
    ) -> Vec<&'a str> {
        let due = due_queues(params.iter());
        if !due.is_empty() && carry() {
            return due.into_iter().collect();
        }
        due.into_iter().filter(|q| self.notifies_now(q)).collect()
    }

    /// Whether `queue` is to be notified in the inserting transaction whatever the insert
    /// returns: this inserter notifies, and has no commit follower or its cooldown lets the
    /// queue's notification go (which this uses up).
    fn notifies_now(&self, queue: &str) -> bool {
        let Some(debouncer) = &self.notify else {
            return false;
        };
        self.follower.is_none() || debouncer.try_fire(queue)
    }

    /// The statement inserting one checked job, and whether it carries the job's notification
    /// ([`Inserter::carries_notification`], `carry` asked only when it can). The async and
    /// blocking paths run it and hand its rows to [`Inserter::one_inserted`].
    fn one_statement(
        &self,
        p: &[InsertParams; 1],
        carry: impl FnOnce() -> bool,
    ) -> Result<(Statement, bool)> {
        if p[0].unique.is_some() {
            return Ok((job_insert_unique_many(&self.schema, p), false));
        }
        let carry = self.carries_notification(&p[0], carry);
        Ok((job_insert_one(&self.schema, &p[0], carry)?, carry))
    }

    /// What [`Inserter::one_statement`]'s row says: the insert's result, and the queues still to
    /// notify in the inserting transaction (none when the statement `carried` it). The new row
    /// takes `p`'s values.
    fn one_inserted(
        &self,
        p: [InsertParams; 1],
        carried: bool,
        row: OneInserted,
    ) -> Result<(InsertResult, Vec<String>)> {
        let [p] = p;
        let due_now = p.is_due_now();
        let (result, xact_id) = match row {
            OneInserted::Unique(row) => (row.row, row.xact_id),
            OneInserted::New(row) => (InsertResult::new(row.row.into_job(p), false), row.xact_id),
        };
        if carried {
            return Ok((result, Vec::new()));
        }
        // The job's queue, as `due_queues` would give it for `p` once inserted.
        let due = (due_now && !result.skipped_as_duplicate)
            .then_some(result.job.queue.as_str())
            .into_iter()
            .collect();
        let results = std::slice::from_ref(&result);
        let notify = self.queues_to_notify(due, results, Some(xact_id));
        Ok((result, notify))
    }

    /// The statement inserting many checked jobs, and the queues whose notification it carries
    /// ([`Inserter::carried_queues`]; none when some job is unique). The async and blocking
    /// paths run it and hand its rows to [`Inserter::many_inserted`].
    fn many_statement<'a>(
        &self,
        params: &'a [InsertParams],
        carry: impl FnOnce() -> bool,
    ) -> (Statement, Vec<&'a str>) {
        if params.iter().any(|p| p.unique.is_some()) {
            return (job_insert_unique_many(&self.schema, params), Vec::new());
        }
        let carried = self.carried_queues(params, carry);
        (job_insert_many(&self.schema, params, &carried), carried)
    }

    /// What [`Inserter::many_statement`]'s `rows` say: each job's result, in input order, and the
    /// queues still to notify in the inserting transaction (but for the `carried` ones).
    fn many_inserted(
        &self,
        params: &[InsertParams],
        carried: &[&str],
        rows: Vec<Row>,
    ) -> Result<(Vec<InsertResult>, Vec<String>)> {
        let (results, xact_id) = if params.iter().any(|p| p.unique.is_some()) {
            WithXact::split(rows_as(rows, WithXact::<InsertResult>::from_row)?)
        } else {
            let (rows, xact_id) = WithXact::split(rows_as(rows, WithXact::<JobRow>::from_row)?);
            (in_input_order(rows), xact_id)
        };
        let notify = self.queues_to_notify(
            due_queues(not_carried(params, &results, carried)),
            &results,
            xact_id,
        );
        Ok((results, notify))
    }

    async fn notify<E: Executor>(&self, exec: &mut E, queues: Vec<String>) -> Result<()> {
        if !queues.is_empty() {
            exec.execute(&job_notify_insert(&self.schema, queues))
                .await?;
        }
        Ok(())
    }

    fn notify_blocking<E: BlockingExecutor>(
        &self,
        exec: &mut E,
        queues: Vec<String>,
    ) -> Result<()> {
        if !queues.is_empty() {
            exec.execute(&job_notify_insert(&self.schema, queues))?;
        }
        Ok(())
    }

    /// The schema inserted into.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    fn check(&self, params: &[InsertParams]) -> Result<()> {
        if let Some(known) = &self.known_kinds
            && let Some(p) = params.iter().find(|p| !known.contains(p.kind()))
        {
            return Err(Error::UnknownKind(p.kind().to_owned()));
        }
        Ok(())
    }

    fn one<A: JobArgs>(&self, args: &A, opts: Option<InsertOpts>) -> Result<[InsertParams; 1]> {
        let mut p = [InsertParams::from_args(args, opts)?];
        self.check(&p)?;
        self.adjust(&mut p);
        Ok(p)
    }

    /// Inserts one job with its kind's default options.
    ///
    /// # Errors
    ///
    /// A validation error ([`Error::InvalidName`], [`Error::InvalidConfig`],
    /// [`Error::UnknownKind`]) or the database error.
    pub async fn insert<E: Executor, A: JobArgs>(
        &self,
        exec: &mut E,
        args: A,
    ) -> Result<InsertResult> {
        self.insert_with(exec, args, None).await
    }

    /// Inserts one job with options over its kind's defaults.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`].
    pub async fn insert_with<E: Executor, A: JobArgs>(
        &self,
        exec: &mut E,
        args: A,
        opts: impl Into<Option<InsertOpts>>,
    ) -> Result<InsertResult> {
        let p = self.one(&args, opts.into())?;
        Ok(self.insert_params(exec, p, || false).await?.0)
    }

    /// Inserts one checked job and notifies its queue in the transaction when this inserter does,
    /// from the insert statement itself when it carries the notification
    /// ([`Inserter::carries_notification`], `carry` asked only when it can). Also returns whether
    /// it did.
    async fn insert_params<E: Executor>(
        &self,
        exec: &mut E,
        p: [InsertParams; 1],
        carry: impl FnOnce() -> bool,
    ) -> Result<(InsertResult, bool)> {
        let (stmt, carry) = self.one_statement(&p, carry)?;
        let row = if p[0].unique.is_some() {
            OneInserted::Unique(Box::new(first(exec.query_as(&stmt).await?)?))
        } else {
            OneInserted::New(first(exec.query_with(&stmt, InsertedRow::read).await?)?)
        };
        let (result, notify) = self.one_inserted(p, carry, row)?;
        self.notify(exec, notify).await?;
        Ok((result, carry))
    }

    /// [`Inserter::insert_with`] for a client committing its own insert: when the job can carry
    /// its queue's insert notification in its own statement and `carry` agrees (asked only then),
    /// it does, so the notification leaves with the insert's commit. Also returns whether it did.
    pub(crate) async fn insert_carrying<E: Executor, A: JobArgs>(
        &self,
        exec: &mut E,
        args: A,
        opts: Option<InsertOpts>,
        carry: impl FnOnce() -> bool,
    ) -> Result<(InsertResult, bool)> {
        let p = self.one(&args, opts)?;
        self.insert_params(exec, p, carry).await
    }

    /// Inserts many jobs in one round trip and returns what happened to each, in input order.
    /// Unique jobs that have a duplicate (in the table, or earlier in `params`) return it instead.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`]; nothing is inserted when any job is invalid.
    pub async fn insert_many<E: Executor>(
        &self,
        exec: &mut E,
        params: &[InsertParams],
    ) -> Result<Vec<InsertResult>> {
        Ok(self.insert_many_carrying(exec, params, || false).await?.0)
    }

    /// [`Inserter::insert_many`] for a client committing its own insert: when no job is unique,
    /// some are due now, and `carry` agrees (asked only then), the insert statement notifies
    /// every queue with jobs due now, so the notifications leave with its commit. Also returns
    /// whether the statement carried any notification.
    pub(crate) async fn insert_many_carrying<E: Executor>(
        &self,
        exec: &mut E,
        params: &[InsertParams],
        carry: impl FnOnce() -> bool,
    ) -> Result<(Vec<InsertResult>, bool)> {
        if params.is_empty() {
            return Ok((Vec::new(), false));
        }
        let params = self.prepare(params)?;
        let (stmt, carried) = self.many_statement(&params, carry);
        let (results, notify) = self.many_inserted(&params, &carried, exec.query(&stmt).await?)?;
        self.notify(exec, notify).await?;
        Ok((results, !carried.is_empty()))
    }

    /// Inserts a very large batch as fast as the driver allows and returns how many were inserted
    /// (unique jobs skipped as duplicates are not counted).
    ///
    /// Jobs due now (and pending jobs) go in by `COPY` when the driver has it; scheduled jobs,
    /// unique jobs and drivers without COPY use multi-row inserts. The statements run on `exec` as given: pass a
    /// transaction for all-or-nothing ([`Client::insert_bulk`](crate::Client::insert_bulk) does).
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`].
    pub async fn insert_bulk<E: Executor>(
        &self,
        exec: &mut E,
        params: &[InsertParams],
    ) -> Result<u64> {
        if params.is_empty() {
            return Ok(0);
        }
        let params = self.prepare(params)?;
        let plan = BulkPlan::new(exec, &params);
        let mut inserted = 0;
        for (shape, rows) in [
            (CopyShape::Plain, &plan.copy_plain),
            (CopyShape::Full, &plan.copy_full),
        ] {
            if !rows.is_empty() {
                inserted += self.copy_stream(exec, shape, rows).await?;
            }
        }
        for chunk in plan.insert_plain.chunks(BULK_INSERT_CHUNK) {
            inserted += exec
                .execute(&job_insert_plain_many(&self.schema, chunk)?)
                .await?;
        }
        for chunk in plan.insert_rest.chunks(BULK_INSERT_CHUNK) {
            let chunk: Vec<InsertParams> = chunk.iter().map(|p| (*p).clone()).collect();
            inserted += exec
                .execute(&job_insert_many(&self.schema, &chunk, &[]))
                .await?;
        }
        for chunk in plan.insert_unique.chunks(BULK_INSERT_CHUNK) {
            let chunk: Vec<InsertParams> = chunk.iter().map(|p| (*p).clone()).collect();
            let results: Vec<InsertResult> = exec
                .query_as(&job_insert_unique_many(&self.schema, &chunk))
                .await?;
            inserted += count_inserted(&results);
        }
        self.notify(
            exec,
            self.queues_to_notify(due_queues(params.iter()), &[], None),
        )
        .await?;
        Ok(inserted)
    }

    /// True when [`Inserter::insert_bulk`] of `params` on `exec` runs at most one statement (and
    /// so needs no transaction of its own to be all-or-nothing): one COPY or one `INSERT`, and no
    /// notification in the same transaction. (Insert hooks only ever add metadata, which moves
    /// jobs into the full shape: never more statements than the unadjusted jobs need.)
    pub(crate) fn bulk_is_one_statement<E: Executor>(
        &self,
        exec: &E,
        params: &[InsertParams],
    ) -> bool {
        self.notify.is_none() && BulkPlan::new(exec, params).statements() <= 1
    }

    /// One COPY of `rows`, all of `shape`, fed chunk by chunk: the next chunk is encoded while
    /// the last is on the wire.
    async fn copy_stream<E: Executor>(
        &self,
        exec: &mut E,
        shape: CopyShape,
        rows: &[&InsertParams],
    ) -> Result<u64> {
        let sql = job_copy_available(&self.schema, shape, std::iter::empty())
            .sql()
            .to_owned();
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        let encode = async {
            // The first chunk is small so the server starts soon; later ones grow to the full
            // size, which keeps the per-chunk overhead low.
            let mut rest = rows;
            let mut size = BULK_COPY_FIRST_CHUNK;
            while !rest.is_empty() {
                let (chunk, after) = rest.split_at(size.min(rest.len()));
                rest = after;
                size = (size * 2).min(BULK_COPY_CHUNK);
                let copy = job_copy_available(&self.schema, shape, chunk.iter().copied());
                if tx.send(copy.into_data()).await.is_err() {
                    break; // The COPY failed; its error is the one to report.
                }
                tokio::task::yield_now().await;
            }
            drop(tx);
        };
        let (copied, ()) = tokio::join!(exec.copy_in_stream(&sql, rx), encode);
        copied
    }

    /// [`Inserter::insert`] on a blocking executor, e.g. inside diesel's `conn.transaction(..)`.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`].
    pub fn insert_blocking<E: BlockingExecutor, A: JobArgs>(
        &self,
        exec: &mut E,
        args: A,
    ) -> Result<InsertResult> {
        self.insert_with_blocking(exec, args, None)
    }

    /// [`Inserter::insert_with`] on a blocking executor.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`].
    pub fn insert_with_blocking<E: BlockingExecutor, A: JobArgs>(
        &self,
        exec: &mut E,
        args: A,
        opts: impl Into<Option<InsertOpts>>,
    ) -> Result<InsertResult> {
        let p = self.one(&args, opts.into())?;
        let (stmt, carry) = self.one_statement(&p, || false)?;
        let rows = exec.query(&stmt)?;
        let row = if p[0].unique.is_some() {
            OneInserted::Unique(Box::new(first(rows_as(rows, WithXact::from_row)?)?))
        } else {
            OneInserted::New(first(rows_with(rows, InsertedRow::read)?)?)
        };
        let (result, notify) = self.one_inserted(p, carry, row)?;
        self.notify_blocking(exec, notify)?;
        Ok(result)
    }

    /// [`Inserter::insert_many`] on a blocking executor.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`].
    pub fn insert_many_blocking<E: BlockingExecutor>(
        &self,
        exec: &mut E,
        params: &[InsertParams],
    ) -> Result<Vec<InsertResult>> {
        if params.is_empty() {
            return Ok(Vec::new());
        }
        let params = self.prepare(params)?;
        let (stmt, carried) = self.many_statement(&params, || false);
        let (results, notify) = self.many_inserted(&params, &carried, exec.query(&stmt)?)?;
        self.notify_blocking(exec, notify)?;
        Ok(results)
    }

    /// [`Inserter::insert_bulk`] on a blocking executor (multi-row inserts, run on `exec` as given).
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`].
    pub fn insert_bulk_blocking<E: BlockingExecutor>(
        &self,
        exec: &mut E,
        params: &[InsertParams],
    ) -> Result<u64> {
        if params.is_empty() {
            return Ok(0);
        }
        let params = self.prepare(params)?;
        let mut inserted = 0;
        for chunk in params.chunks(BULK_INSERT_CHUNK) {
            if chunk.iter().any(|p| p.unique.is_some()) {
                let results: Vec<InsertResult> =
                    exec.query_as(&job_insert_unique_many(&self.schema, chunk))?;
                inserted += count_inserted(&results);
            } else {
                inserted += exec.execute(&job_insert_many(&self.schema, chunk, &[]))?;
            }
        }
        self.notify_blocking(
            exec,
            self.queues_to_notify(due_queues(params.iter()), &[], None),
        )?;
        Ok(inserted)
    }
}

/// How one bulk insert splits into statements on one executor.
struct BulkPlan<'a> {
    /// Jobs without metadata or tags, by the plain COPY.
    copy_plain: Vec<&'a InsertParams>,
    /// Other copyable jobs, by the full COPY.
    copy_full: Vec<&'a InsertParams>,
    /// Copyable jobs without metadata or tags on an executor whose COPY is slow for so few rows.
    insert_plain: Vec<&'a InsertParams>,
    /// The rest (scheduled jobs, no COPY, or few rows with metadata or tags), by multi-row inserts.
    insert_rest: Vec<&'a InsertParams>,
    /// Unique jobs, by the insert that finds duplicates.
    insert_unique: Vec<&'a InsertParams>,
}

impl<'a> BulkPlan<'a> {
    fn new<E: Executor>(exec: &E, params: &'a [InsertParams]) -> Self {
        let (insert_unique, rest): (Vec<&InsertParams>, Vec<&InsertParams>) =
            params.iter().partition(|p| p.unique.is_some());
        let (copyable, insert_rest): (Vec<&InsertParams>, Vec<&InsertParams>) =
            if exec.supports_copy() {
                rest.into_iter().partition(|p| is_copyable(p))
            } else {
                (Vec::new(), rest)
            };
        let mut plan = BulkPlan {
            copy_plain: Vec::new(),
            copy_full: Vec::new(),
            insert_plain: Vec::new(),
            insert_rest,
            insert_unique,
        };
        // One COPY per shape present, so jobs without metadata or tags leave those columns to
        // their defaults instead of having the server parse them.
        let (plain, full): (Vec<&InsertParams>, Vec<&InsertParams>) = copyable
            .into_iter()
            .partition(|p| CopyShape::of(p) == CopyShape::Plain);
        let min_copy_rows = exec.min_copy_rows();
        if plain.len() < min_copy_rows {
            plan.insert_plain = plain;
        } else {
            plan.copy_plain = plain;
        }
        if full.len() < min_copy_rows {
            plan.insert_rest.extend(full);
        } else {
            plan.copy_full = full;
        }
        plan
    }

    /// How many statements the plan runs.
    fn statements(&self) -> usize {
        usize::from(!self.copy_plain.is_empty())
            + usize::from(!self.copy_full.is_empty())
            + self.insert_plain.len().div_ceil(BULK_INSERT_CHUNK)
            + self.insert_rest.len().div_ceil(BULK_INSERT_CHUNK)
            + self.insert_unique.len().div_ceil(BULK_INSERT_CHUNK)
    }
}

/// The queues, each once, of the jobs among `params` that are due as soon as they commit.
pub(crate) fn due_queues<'a>(params: impl Iterator<Item = &'a InsertParams>) -> BTreeSet<&'a str> {
    let mut queues = BTreeSet::new();
    // A batch's jobs mostly share their queue: a run of one queue is looked up in the set once.
    let mut last = None;
    for queue in params.filter(|p| p.is_due_now()).map(InsertParams::queue) {
        if last != Some(queue) {
            queues.insert(queue);
            last = Some(queue);
        }
    }
    queues
}

/// COPY cannot evaluate `now()` per row, so only jobs whose state needs no clock go by COPY.
fn is_copyable(p: &InsertParams) -> bool {
    p.unique.is_none()
        && (p.is_due_now() || (p.pending && p.scheduled_at.is_none() && p.schedule_in.is_none()))
}

/// The row a single insert's statement returns ([`Inserter::one_statement`]), decoded as its
/// shape says.
enum OneInserted {
    /// A unique job's: the whole row, inserted or the duplicate found (boxed: the other variant
    /// is a sixth of its size).
    Unique(Box<WithXact<InsertResult>>),
    /// Any other job's: what the database decided of the new row.
    New(WithXact<InsertedRow>),
}

fn first<T>(rows: Vec<T>) -> Result<T> {
    rows.into_iter()
        .next()
        .ok_or_else(|| Error::decode("inserted job", "insert returned no row"))
}

/// Rows of `job_insert_many`, which RETURNING gives in no order, in input order (their ids
/// follow it), as results of jobs that were all inserted.
fn in_input_order(mut rows: Vec<JobRow>) -> Vec<InsertResult> {
    rows.sort_by_key(|r| r.id);
    rows.into_iter()
        .map(|job| InsertResult::new(job, false))
        .collect()
}

/// The jobs of `params` that were inserted (not skipped as duplicates).
fn inserted<'a>(
    params: &'a [InsertParams],
    results: &'a [InsertResult],
) -> impl Iterator<Item = &'a InsertParams> + 'a {
    params
        .iter()
        .zip(results)
        .filter(|(_, r)| !r.skipped_as_duplicate)
        .map(|(p, _)| p)
}

/// The jobs of `params` that were inserted, but for those of the `carried` queues, whose
/// notification the insert statement sent.
fn not_carried<'a>(
    params: &'a [InsertParams],
    results: &'a [InsertResult],
    carried: &'a [&'a str],
) -> impl Iterator<Item = &'a InsertParams> + 'a {
    inserted(params, results).filter(|p| !carried.contains(&p.queue()))
}

/// How many of `results` were inserted (not skipped as duplicates).
pub(crate) fn count_inserted(results: &[InsertResult]) -> u64 {
    results.iter().filter(|r| !r.skipped_as_duplicate).count() as u64
}
