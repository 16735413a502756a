//! The engine side: a deadpool-diesel pool, its connections and their transactions.
//!
//! diesel is blocking, so every statement runs inside deadpool-diesel's `Object::interact`, on
//! tokio's blocking pool, through the same code as the blocking executor.
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

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use deadpool_diesel::postgres::{Manager, Object, Pool};
use deadpool_diesel::{ManagerConfig, RecyclingMethod, Runtime};
use diesel::PgConnection;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use pgmill::driver::{CopyChunks, CopyIn, Driver, Executor, Row, Statement, Transaction};
use pgmill::{DbError, DbErrorKind, Error, Result};
use tokio::sync::Semaphore;

use crate::error::{interact_error, pool_error, query_error};
use crate::listener::DieselListener;
use crate::{copy, executor};

/// How long [`DieselDriver::connect`]'s pool waits for a free connection, opens one, or checks one.
const POOL_TIMEOUT: Duration = Duration::from_secs(30);

/// The diesel driver: a cheap-to-clone handle over a deadpool-diesel pool.
///
/// The engine checks [`DieselConnection`]s out of it and opens a [`DieselListener`], a dedicated
/// connection outside the pool, for notifications.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> pgmill::Result<()> {
/// use pgmill::driver::{Driver, Executor, Statement};
///
/// let driver = pgmill_driver_diesel::DieselDriver::connect("postgres://localhost/app", 10).await?;
/// let mut conn = driver.acquire().await?;
/// let one: i64 = conn.query_scalar(&Statement::new("SELECT 1::bigint AS one")).await?;
/// assert_eq!(one, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct DieselDriver {
    pool: Pool,
    url: Arc<str>,
}

impl fmt::Debug for DieselDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password: leave it out.
        f.debug_struct("DieselDriver")
            .field("pool", &self.pool.status())
            .finish_non_exhaustive()
    }
}

impl DieselDriver {
    /// Builds a pool of at most `max_size` connections to `url` and checks that one connects.
    ///
    /// The pool waits at most 30 seconds for a free connection and for opening or checking one;
    /// build your own pool and use [`DieselDriver::from_pool`] for other settings.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a pool that cannot be built, or the connection error.
    pub async fn connect(url: &str, max_size: u32) -> Result<Self> {
        // No test query on checkout: connections that were found lost never return to the pool
        // (see `DieselConnection`), and the engine retries a call that fails on a stale one.
        let manager = Manager::from_config(
            url,
            Runtime::Tokio1,
            ManagerConfig {
                recycling_method: RecyclingMethod::CustomFunction(Box::new(|_| Ok(()))),
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_size as usize)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_TIMEOUT))
            .create_timeout(Some(POOL_TIMEOUT))
            .recycle_timeout(Some(POOL_TIMEOUT))
            .build()
            .map_err(|e| Error::InvalidConfig(format!("diesel pool: {e}")))?;
        drop(pool.get().await.map_err(pool_error)?);
        Ok(Self::from_pool(pool, url))
    }

    /// Wraps an existing pool; `url` is the database URL the listener connects to.
    pub fn from_pool(pool: Pool, url: impl Into<Arc<str>>) -> Self {
        DieselDriver {
            pool,
            url: url.into(),
        }
    }

    /// The underlying pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

impl Driver for DieselDriver {
    type Connection = DieselConnection;
    type Listener = DieselListener;

    async fn acquire(&self) -> Result<DieselConnection> {
        let object = self.pool.get().await.map_err(pool_error)?;
        Ok(DieselConnection::new(object))
    }

    fn discard(&self, conn: DieselConnection) {
        conn.detach();
    }

    fn supports_listener(&self) -> bool {
        true
    }

    async fn listener(&self) -> Result<DieselListener> {
        DieselListener::connect(Arc::clone(&self.url)).await
    }
}

/// A connection checked out of the pool; returned to it on drop (after rolling back anything a
/// dropped transaction left open).
///
/// It runs statements through [`Executor`], each inside one `interact` call, COPY included:
/// a streamed COPY runs in one call that waits for each chunk as the engine encodes it.
pub struct DieselConnection {
    object: Option<Object>,
    /// One permit: held by the closure of the call in flight, so calls run in order.
    gate: Arc<Semaphore>,
    /// Transaction levels this driver opened on the connection and has not closed yet.
    levels: Arc<AtomicUsize>,
    /// Set when a call found the connection lost: it then leaves the pool instead of returning,
    /// which is what lets the pool skip a test query on every checkout.
    lost: Arc<AtomicBool>,
}

impl fmt::Debug for DieselConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DieselConnection")
            .field("levels", &self.levels.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl DieselConnection {
    fn new(object: Object) -> Self {
        DieselConnection {
            object: Some(object),
            gate: Arc::new(Semaphore::new(1)),
            levels: Arc::new(AtomicUsize::new(0)),
            lost: Arc::new(AtomicBool::new(false)),
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

impl DieselConnection {
    /// Takes the connection out of its pool for good; it closes when the last call on it ends.
    pub(crate) fn detach(mut self) {
        if let Some(object) = self.object.take() {
            drop(deadpool_diesel::postgres::Object::take(object));
        }
    }
}

impl Drop for DieselConnection {
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

async fn execute_at(conn: &DieselConnection, depth: usize, stmt: &Statement) -> Result<u64> {
    let stmt = stmt.clone();
    conn.run(depth, move |c, _| executor::execute(c, &stmt))
        .await
}

async fn query_at(conn: &DieselConnection, depth: usize, stmt: &Statement) -> Result<Vec<Row>> {
    let stmt = stmt.clone();
    conn.run(depth, move |c, _| executor::query(c, &stmt)).await
}

async fn copy_at(conn: &DieselConnection, depth: usize, copy: &CopyIn) -> Result<u64> {
    let copy = copy.clone();
    conn.run(depth, move |c, _| {
        copy::copy_in(c, copy.sql(), |out| out.write_all(copy.data()))
    })
    .await
}

/// Streams the chunks on `data` into one COPY, which ends when `data`'s sender is dropped.
///
/// The blocking call cannot see this future being dropped, so the chunks are forwarded to it
/// with an explicit end marker: if this future is dropped mid-stream (the caller was cancelled),
/// the forwarder goes with it, the blocking side sees its channel close without the marker, and
/// aborts the COPY instead of committing a partial one.
async fn copy_stream_at(
    conn: &DieselConnection,
    depth: usize,
    sql: &str,
    mut data: CopyChunks,
) -> Result<u64> {
    let sql = sql.to_owned();
    let (tx, rx) = tokio::sync::mpsc::channel::<Option<Vec<u8>>>(1);
    let rx = RefCell::new(rx);
    let copy = conn.run(depth, move |c, _| {
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

async fn script_at(conn: &DieselConnection, depth: usize, sql: &str) -> Result<()> {
    let sql = sql.to_owned();
    conn.run(depth, move |c, _| {
        c.batch_execute(&sql).map_err(query_error)
    })
    .await
}

impl Executor for DieselConnection {
    type Transaction<'t>
        = DieselPoolTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        execute_at(self, 0, stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        query_at(self, 0, stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        script_at(self, 0, sql).await
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        copy_at(self, 0, copy).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: CopyChunks) -> Result<u64> {
        copy_stream_at(self, 0, sql, data).await
    }

    async fn begin(&mut self) -> Result<DieselPoolTransaction<'_>> {
        self.run(0, begin_level).await?;
        Ok(DieselPoolTransaction {
            conn: self,
            depth: 1,
        })
    }
}

/// A transaction (or, nested, a savepoint) on a pooled [`DieselConnection`], spanning several
/// `interact` calls.
///
/// Dropped without [`Transaction::commit`] or [`Transaction::rollback`], it is rolled back by the
/// next call on its connection, or before the connection goes back to the pool.
pub struct DieselPoolTransaction<'c> {
    conn: &'c mut DieselConnection,
    /// 1 for a transaction, 2 and more for savepoints inside it.
    depth: usize,
}

impl fmt::Debug for DieselPoolTransaction<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DieselPoolTransaction")
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl Executor for DieselPoolTransaction<'_> {
    type Transaction<'t>
        = DieselPoolTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        execute_at(self.conn, self.depth, stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        query_at(self.conn, self.depth, stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        script_at(self.conn, self.depth, sql).await
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        copy_at(self.conn, self.depth, copy).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: CopyChunks) -> Result<u64> {
        copy_stream_at(self.conn, self.depth, sql, data).await
    }

    async fn begin(&mut self) -> Result<DieselPoolTransaction<'_>> {
        self.conn.run(self.depth, begin_level).await?;
        Ok(DieselPoolTransaction {
            conn: &mut *self.conn,
            depth: self.depth + 1,
        })
    }
}

impl Transaction for DieselPoolTransaction<'_> {
    async fn commit(self) -> Result<()> {
        self.conn
            .run(self.depth, |c, levels| end_level(c, levels, true))
            .await
    }

    async fn rollback(self) -> Result<()> {
        self.conn
            .run(self.depth, |c, levels| end_level(c, levels, false))
            .await
    }
}
