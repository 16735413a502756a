//! Executors on diesel connections: the engine's, on pooled connections (async), and the
//! application's own (blocking, inside its `conn.transaction(|conn| ..)`).
//!
//! diesel is blocking, so every statement of the engine's runs inside deadpool-diesel's
//! `Object::interact`, on tokio's blocking pool, through the same code as the blocking executor.
//!
//! # Transactions across `interact` calls
//!
//! A [`DieselPoolTransaction`] is opened in one `interact` call, runs its statements in later
//! ones and commits in a last one, always through diesel's `AnsiTransactionManager` so diesel's
//! own depth bookkeeping stays right. Two rules keep the connection consistent even when the
//! engine drops a transaction without committing it, or cancels a call mid-way:
//!
//! 1. **Calls run in the order they were made.** Each call takes the connection's one-permit
//!    gate before it calls `interact` and hands the permit to the closure, which releases it when
//!    it finishes. A call whose future was dropped still runs (`interact` cannot be cancelled once
//!    spawned), but strictly before any later call.
//! 2. **Each call first settles the transaction depth.** The connection counts the transaction
//!    levels the driver opened (`levels`). An executor knows its own depth: 0 for the
//!    connection, n for a transaction nested n deep. Before running anything, the closure rolls
//!    back levels deeper than its executor's depth: those belong to transactions that were
//!    dropped without commit or rollback (the borrow checker guarantees no deeper handle is still
//!    alive). So a dropped transaction is rolled back by the next call on the connection.
//!
//! When the connection itself is dropped while a transaction is still open (or a cancelled call
//! is still running), it spawns a task that waits for the gate, rolls everything back, and only
//! then returns the connection to the pool. Should that be impossible (no tokio runtime), the
//! pool's recycle check sees diesel's open transaction and discards the connection instead of
//! reusing it.

use std::borrow::BorrowMut;
use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use deadpool_diesel::postgres::Object;
use diesel::PgConnection;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use pgmill::driver::{
    BlockingExecutor, BlockingTransaction, CopyChunks, CopyIn, Executor, HeldRows, Row, Statement,
    Transaction, WarmConnections,
};
use pgmill::{DbError, DbErrorKind, Error, Result};
use tokio::sync::Semaphore;

use crate::codec::{Statements, execute, query, query_raw};
use crate::copy;
use crate::error::{interact_error, query_error};

/// A connection checked out of the pool, with what keeps the calls on it in order; returned to
/// the pool on drop, after rolling back anything a dropped transaction left open.
///
/// Reached only through a [`DieselConnection`] and its [`DieselPoolTransaction`]s.
pub struct PooledConnection {
    object: Option<Object>,
    /// One permit: held by the closure of the call in flight, so calls run in order.
    gate: Arc<Semaphore>,
    /// Transaction levels this driver opened on the connection and has not closed yet.
    levels: Arc<AtomicUsize>,
    /// Set when a call found the connection lost: it then leaves the pool instead of returning,
    /// which is what lets the pool skip a test query on every checkout.
    lost: Arc<AtomicBool>,
    /// Prepared once in the connection's statement cache, or unnamed.
    statements: Statements,
    /// Where the connection goes when released clean, rather than straight back to the pool.
    warm: Arc<WarmConnections<Object>>,
}

impl fmt::Debug for PooledConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledConnection")
            .field("levels", &self.levels.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl PooledConnection {
    fn new(object: Object, statements: Statements, warm: Arc<WarmConnections<Object>>) -> Self {
        PooledConnection {
            object: Some(object),
            gate: Arc::new(Semaphore::new(1)),
            levels: Arc::new(AtomicUsize::new(0)),
            lost: Arc::new(AtomicBool::new(false)),
            statements,
            warm,
        }
    }

    /// Runs `f` on the connection after the calls before it, at transaction depth `depth`.
    async fn run<R, F>(&self, depth: usize, f: F) -> Result<R>
    where
        F: FnOnce(&mut PgConnection, &AtomicUsize) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let object = self.object.as_ref().ok_or_else(gone)?;
        let permit = Arc::clone(&self.gate)
            .acquire_owned()
            .await
            .map_err(|_| gone())?;
        let levels = Arc::clone(&self.levels);
        let result = object
            .interact(move |conn| {
                let _permit = permit;
                settle(conn, &levels, depth)?;
                f(conn, &levels)
            })
            .await
            .map_err(interact_error)?;
        if let Err(e) = &result
            && e.is_connection_lost()
        {
            self.lost.store(true, Ordering::Release);
        }
        result
    }
}

fn gone() -> Error {
    DbError::new(
        DbErrorKind::Other,
        "the diesel connection was already released",
    )
    .into()
}

/// Rolls back the levels deeper than `depth`, left open by transactions dropped without commit.
fn settle(conn: &mut PgConnection, levels: &AtomicUsize, depth: usize) -> Result<()> {
    while levels.load(Ordering::Acquire) > depth {
        let result = AnsiTransactionManager::rollback_transaction(conn);
        // diesel closes the level whether or not the rollback succeeded (or marks itself broken).
        levels.fetch_sub(1, Ordering::AcqRel);
        match result {
            Ok(()) => tracing::debug!(depth, "rolled back a dropped diesel transaction"),
            Err(diesel::result::Error::NotInTransaction) => levels.store(0, Ordering::Release),
            Err(e) => return Err(query_error(e)),
        }
    }
    if levels.load(Ordering::Acquire) < depth {
        return Err(DbError::new(DbErrorKind::Other, "the transaction is no longer open").into());
    }
    Ok(())
}

fn begin_level(conn: &mut PgConnection, levels: &AtomicUsize) -> Result<()> {
    AnsiTransactionManager::begin_transaction(conn).map_err(query_error)?;
    levels.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

fn end_level(conn: &mut PgConnection, levels: &AtomicUsize, commit: bool) -> Result<()> {
    let result = if commit {
        AnsiTransactionManager::commit_transaction(conn)
    } else {
        AnsiTransactionManager::rollback_transaction(conn)
    };
    // On failure diesel has rolled the level back itself, or marked its manager broken (then the
    // pool's recycle check discards the connection).
    levels.fetch_sub(1, Ordering::AcqRel);
    result.map_err(query_error)
}

impl Drop for PooledConnection {
    fn drop(&mut self) {
        let Some(object) = self.object.take() else {
            return;
        };
        if self.lost.load(Ordering::Acquire) {
            // Out of the pool for good: dropped, it closes.
            drop(Object::take(object));
            return;
        }
        let dirty = self.levels.load(Ordering::Acquire) > 0 || self.gate.available_permits() == 0;
        if !dirty {
            // Kept for the driver's next acquire, or back to the pool.
            // A call that panicked poisoned the connection's lock: straight back to the pool,
            // where deadpool's check discards it.
            if !object.is_mutex_poisoned() {
                self.warm.keep(object);
            }
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("diesel connection dropped in a transaction outside a tokio runtime");
            return;
        };
        let gate = Arc::clone(&self.gate);
        let levels = Arc::clone(&self.levels);
        runtime.spawn(async move {
            let Ok(permit) = gate.acquire_owned().await else {
                return;
            };
            let result = object
                .interact(move |conn| {
                    let _permit = permit;
                    settle(conn, &levels, 0)
                })
                .await;
            match result {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "rolling back a dropped diesel transaction failed")
                }
                Err(e) => {
                    tracing::warn!(error = %e, "rolling back a dropped diesel transaction failed")
                }
            }
            drop(object);
        });
    }
}

/// The engine's executor on a pooled connection, at a transaction depth: 0 for the connection
/// itself ([`DieselConnection`]), n for a transaction nested n deep ([`DieselPoolTransaction`],
/// which borrows the connection). `C` owns or borrows the [`PooledConnection`].
///
/// It runs statements through [`Executor`], each inside one `interact` call, COPY included: a
/// streamed COPY runs in one call that waits for each chunk as the engine encodes it.
#[derive(Debug)]
pub struct DieselPoolExecutor<C> {
    conn: C,
    /// 0 for the connection, 1 for a transaction, 2 and more for savepoints inside it.
    depth: usize,
}

/// A connection checked out of the pool; returned to it on drop (after rolling back anything a
/// dropped transaction left open).
pub type DieselConnection = DieselPoolExecutor<PooledConnection>;

/// A transaction (or, nested, a savepoint) on a pooled [`DieselConnection`], spanning several
/// `interact` calls.
///
/// Dropped without [`Transaction::commit`] or [`Transaction::rollback`], it is rolled back by the
/// next call on its connection, or before the connection goes back to the pool.
pub type DieselPoolTransaction<'c> = DieselPoolExecutor<&'c mut PooledConnection>;

impl DieselConnection {
    pub(crate) fn new(
        object: Object,
        statements: Statements,
        warm: Arc<WarmConnections<Object>>,
    ) -> Self {
        DieselPoolExecutor {
            conn: PooledConnection::new(object, statements, warm),
            depth: 0,
        }
    }

    /// Takes the connection out of its pool for good; it closes when the last call on it ends.
    pub(crate) fn detach(mut self) {
        if let Some(object) = self.conn.object.take() {
            drop(Object::take(object));
        }
    }
}

impl<C: BorrowMut<PooledConnection>> DieselPoolExecutor<C> {
    /// Runs `f` on the connection after the calls before it, at this executor's depth.
    async fn run<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut PgConnection, &AtomicUsize) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        self.conn.borrow().run(self.depth, f).await
    }

    /// Streams the chunks on `data` into one COPY, which ends when `data`'s sender is dropped.
    ///
    /// The blocking call cannot see this future being dropped, so the chunks are forwarded to it
    /// with an explicit end marker: if this future is dropped mid-stream (the caller was cancelled),
    /// the forwarder goes with it, the blocking side sees its channel close without the marker, and
    /// aborts the COPY instead of committing a partial one.
    async fn copy_stream(&self, sql: &str, mut data: CopyChunks) -> Result<u64> {
        let sql = sql.to_owned();
        let (tx, rx) = tokio::sync::mpsc::channel::<Option<Vec<u8>>>(1);
        let rx = RefCell::new(rx);
        let copy = self.run(move |c, _| {
            copy::copy_in(c, &sql, |out| {
                loop {
                    match rx.borrow_mut().blocking_recv() {
                        Some(Some(chunk)) => out.write_all(&chunk)?,
                        Some(None) => return Ok(()),
                        None => return Err(std::io::Error::other("the COPY's caller went away")),
                    }
                }
            })
        });
        let forward = async move {
            while let Some(chunk) = data.recv().await {
                if tx.send(Some(chunk)).await.is_err() {
                    return; // The COPY failed; its error is the one to report.
                }
            }
            let _ = tx.send(None).await;
        };
        let (copied, ()) = tokio::join!(copy, forward);
        copied
    }
}

impl<C: BorrowMut<PooledConnection> + Send + Sync> Executor for DieselPoolExecutor<C> {
    type Transaction<'t>
        = DieselPoolTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        let stmt = stmt.clone();
        let how = self.conn.borrow().statements;
        self.run(move |c, _| execute(c, &stmt, how)).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        let stmt = stmt.clone();
        let how = self.conn.borrow().statements;
        self.run(move |c, _| query(c, &stmt, how)).await
    }

    /// Copies the rows' fields on the blocking thread and decodes them when they are read, so
    /// the load builds no value: a claim's jobs are decoded by the producer after it has sent
    /// its next claim.
    async fn query_held(&mut self, stmt: &Statement) -> Result<HeldRows> {
        let stmt = stmt.clone();
        let how = self.conn.borrow().statements;
        let raw = self.run(move |c, _| query_raw(c, &stmt, how)).await?;
        Ok(HeldRows::new(raw))
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        let sql = sql.to_owned();
        self.run(move |c, _| c.batch_execute(&sql).map_err(query_error))
            .await
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        let copy = copy.clone();
        self.run(move |c, _| copy::copy_in(c, copy.sql(), |out| out.write_all(copy.data())))
            .await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: CopyChunks) -> Result<u64> {
        self.copy_stream(sql, data).await
    }

    async fn begin(&mut self) -> Result<DieselPoolTransaction<'_>> {
        self.run(begin_level).await?;
        Ok(DieselPoolExecutor {
            conn: self.conn.borrow_mut(),
            depth: self.depth + 1,
        })
    }
}

impl Transaction for DieselPoolTransaction<'_> {
    async fn commit(self) -> Result<()> {
        self.run(|c, levels| end_level(c, levels, true)).await
    }

    async fn rollback(self) -> Result<()> {
        self.run(|c, levels| end_level(c, levels, false)).await
    }
}

/// Runs pgmill's statements on a diesel connection, blocking, like diesel: statements run on the
/// calling thread, each prepared once in the connection's own statement cache (as diesel's own
/// queries are; behind a transaction-mode pooler, disable that cache with
/// `conn.set_prepared_statement_cache_size(CacheSize::Disabled)` and pgmill's statements go
/// unnamed too). `C` derefs to the `PgConnection`:
///
/// - `DieselExecutor<&mut PgConnection>`, from [`PgConnectionExt::pgmill`]: the application's own
///   connection, typically inside its `conn.transaction(|conn| ..)`, in whatever transaction the
///   connection is in;
/// - [`DieselTransaction`]: a transaction [`BlockingExecutor::begin`] opened.
pub struct DieselExecutor<C>(C);

/// A transaction (or, nested, a savepoint) opened by [`BlockingExecutor::begin`] on a diesel
/// connection, through diesel's own transaction manager.
///
/// Because it goes through `AnsiTransactionManager`, it nests correctly with the application's
/// `conn.transaction(..)` calls: inside one, it is a savepoint. Dropped without
/// [`BlockingTransaction::commit`], it rolls back.
pub type DieselTransaction<'a> = DieselExecutor<TransactionGuard<'a>>;

impl<C> fmt::Debug for DieselExecutor<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DieselExecutor").finish_non_exhaustive()
    }
}

impl<C: DerefMut<Target = PgConnection>> BlockingExecutor for DieselExecutor<C> {
    type Transaction<'t>
        = DieselTransaction<'t>
    where
        Self: 't;

    fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        execute(&mut self.0, stmt, Statements::Cached)
    }

    fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        query(&mut self.0, stmt, Statements::Cached)
    }

    fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.0.batch_execute(sql).map_err(query_error)
    }

    fn begin(&mut self) -> Result<DieselTransaction<'_>> {
        AnsiTransactionManager::begin_transaction(&mut *self.0).map_err(query_error)?;
        Ok(DieselExecutor(TransactionGuard {
            conn: &mut self.0,
            open: true,
        }))
    }
}

impl BlockingTransaction for DieselTransaction<'_> {
    fn commit(self) -> Result<()> {
        self.0.end(true)
    }

    fn rollback(self) -> Result<()> {
        self.0.end(false)
    }
}

/// A transaction level a [`DieselTransaction`] opened on a `PgConnection`: derefs to the
/// connection, and rolls the level back when dropped before it was committed or rolled back.
pub struct TransactionGuard<'a> {
    conn: &'a mut PgConnection,
    open: bool,
}

impl TransactionGuard<'_> {
    fn end(mut self, commit: bool) -> Result<()> {
        self.open = false;
        if commit {
            AnsiTransactionManager::commit_transaction(self.conn)
        } else {
            AnsiTransactionManager::rollback_transaction(self.conn)
        }
        .map_err(query_error)
    }
}

impl Deref for TransactionGuard<'_> {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.conn
    }
}

impl DerefMut for TransactionGuard<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn
    }
}

impl fmt::Debug for TransactionGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionGuard")
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl Drop for TransactionGuard<'_> {
    fn drop(&mut self) {
        if self.open {
            self.open = false;
            if let Err(e) = AnsiTransactionManager::rollback_transaction(self.conn) {
                tracing::warn!(error = %e, "rolling back a dropped diesel transaction failed");
            }
        }
    }
}

pgmill::driver::host_extension_trait! {
    blocking;
    /// Gives pgmill access to a `diesel::PgConnection`, so jobs are inserted in the application's
    /// own transaction: commit and the job exists, roll back and it never did.
    ///
    /// Everything is blocking, because diesel's `conn.transaction(|conn| ..)` closure is synchronous.
    /// Pooled connections (deadpool-diesel's object guard, r2d2's `PooledConnection`) dereference to
    /// `PgConnection`, so the methods work on them too.
    ///
    /// # Examples
    ///
    /// The closure's error type must accept both diesel's and pgmill's errors:
    ///
    /// ```no_run
    /// use diesel::{Connection, PgConnection};
    /// use pgmill::{Inserter, JobArgs, Schema};
    /// use pgmill_driver_diesel::PgConnectionExt;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct SendReceipt {
    ///     order_id: i64,
    /// }
    ///
    /// impl JobArgs for SendReceipt {
    ///     const KIND: &'static str = "send_receipt";
    /// }
    ///
    /// #[derive(Debug)]
    /// enum AppError {
    ///     Db(diesel::result::Error),
    ///     Queue(pgmill::Error),
    /// }
    ///
    /// impl From<diesel::result::Error> for AppError {
    ///     fn from(e: diesel::result::Error) -> Self {
    ///         AppError::Db(e)
    ///     }
    /// }
    ///
    /// impl From<pgmill::Error> for AppError {
    ///     fn from(e: pgmill::Error) -> Self {
    ///         AppError::Queue(e)
    ///     }
    /// }
    ///
    /// fn place_order(conn: &mut PgConnection, inserter: &Inserter) -> Result<(), AppError> {
    ///     conn.transaction(|conn| {
    ///         // ... the application's own diesel queries, e.g. inserting the order ...
    ///         conn.insert_job(inserter, SendReceipt { order_id: 42 })?;
    ///         Ok(())
    ///     })
    /// }
    /// # let _ = place_order;
    /// # let _ = Inserter::new(Schema::public());
    /// ```
    pub trait PgConnectionExt {
        /// A pgmill executor running on this connection, in its current transaction if any.
        fn pgmill(&mut self) -> DieselExecutor<&mut PgConnection>;
    }
}

impl PgConnectionExt for PgConnection {
    fn pgmill(&mut self) -> DieselExecutor<&mut PgConnection> {
        DieselExecutor(self)
    }
}
