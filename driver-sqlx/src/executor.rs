//! Running core's statements on sqlx connections: pooled, the application's own, and transactions.
//!
//! sqlx implements its own `Executor` once, for `&mut PgConnection`, and lets a pooled connection
//! and a transaction reach it by deref. [`SqlxExecutor`] does the same for pgmill's: one
//! implementation over anything that derefs to a `PgConnection`. [`SqlxConnection`] (pooled),
//! [`SqlxTransaction`] and the executor [`PgConnectionExt::pgmill`] borrows are that one type.

use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pgmill::driver::{
    CopyChunks, CopyIn, Executor, HeldRows, Row, Statement, Transaction, WarmConnections,
};
use pgmill::{DbError, DbErrorKind, Result};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgQueryResult, PgRow};
use sqlx::{AssertSqlSafe, Connection as _, PgConnection, Postgres};

use crate::codec::{LibraryRows, bound, decode_rows};
use crate::error::db_error;

/// Bulk inserts of fewer rows go in one multi-row `INSERT` rather than a `COPY`.
///
/// sqlx 0.9 leaves Nagle's algorithm on for TCP connections (it does not set `TCP_NODELAY`, and
/// gives no way to reach its socket) and writes a COPY's `CopyDone` on its own, after the data.
/// The server delays its ACK of the data (it has nothing to send until `CopyDone` arrives), and
/// Nagle holds the small `CopyDone` until that ACK comes: every COPY whose data fits in about one
/// TCP segment waits for the delayed ACK, about 40 ms on Linux. One `INSERT` is a single write, so
/// it never waits. Above this size the COPY's data spans segments the server ACKs at once, and a
/// COPY is faster than an `INSERT` by more than any stall costs.
pub(crate) const MIN_COPY_ROWS: usize = 5_000;

/// pgmill's executor on a sqlx connection: `C` is anything that derefs to a [`PgConnection`].
///
/// - [`SqlxConnection`]: a connection checked out of the driver's pool, returned to it on drop.
/// - [`SqlxTransaction`]: a transaction (or savepoint) opened by [`Executor::begin`]; dropped
///   without [`Transaction::commit`], it rolls back, as sqlx's own transactions do.
/// - `SqlxExecutor<&mut PgConnection>`: the application's own connection or transaction, borrowed
///   by [`PgConnectionExt::pgmill`] for as long as the executor lives.
#[derive(Debug)]
pub struct SqlxExecutor<C>(C, CallState, Statements);

/// How an executor runs statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Statements {
    /// Prepared once per connection and kept in sqlx's statement cache (sqlx's default).
    Cached,
    /// Unnamed (`persistent(false)`), and outside a transaction each in a transaction of its
    /// own: for a transaction-mode pooler. sqlx parses an unnamed statement in one round trip
    /// and binds it in the next; outside a transaction a pooler may send the second to another
    /// server connection, where the unnamed statement is missing or another client's.
    Unnamed,
}

/// A connection checked out of the [`SqlxDriver`](crate::SqlxDriver)'s pool, returned to it on
/// drop (see [`PooledConnection`]).
pub type SqlxConnection = SqlxExecutor<PooledConnection>;

/// A transaction (or savepoint) opened by [`Executor::begin`] on one of this crate's executors.
pub type SqlxTransaction<'t> = SqlxExecutor<sqlx::Transaction<'t, Postgres>>;

impl<C> SqlxExecutor<C> {
    pub(crate) fn new(conn: C) -> Self {
        SqlxExecutor(conn, CallState::default(), Statements::Cached)
    }

    /// This executor with every statement unnamed (no prepared statement cache) and, outside a
    /// transaction, each statement in a transaction of its own: the setting for a
    /// transaction-mode pooler (PgBouncer's `pool_mode = transaction`). The driver's pooled
    /// connections get it from [`SqlxDriver::unnamed_statements`](crate::SqlxDriver::unnamed_statements);
    /// on the application's own transaction behind such a pooler, insert through
    /// `tx.pgmill().unnamed()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use pgmill::{Inserter, JobArgs, Schema};
    /// use pgmill_driver_sqlx::PgConnectionExt;
    /// # #[derive(serde::Serialize, serde::Deserialize)]
    /// # struct SendEmail;
    /// # impl JobArgs for SendEmail { const KIND: &'static str = "send_email"; }
    ///
    /// # async fn run(pool: sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// let inserter = Inserter::new(Schema::public());
    /// let mut tx = pool.begin().await?;
    /// inserter.insert(&mut tx.pgmill().unnamed(), SendEmail).await?;
    /// tx.commit().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn unnamed(mut self) -> Self {
        self.2 = Statements::Unnamed;
        self
    }

    /// Unwraps the sqlx connection (or transaction).
    pub fn into_inner(self) -> C {
        self.0
    }
}

/// What an executor knows of its connection that sqlx does not say: whether a COPY, or any
/// call, was dropped mid-way. A transaction shares the state of the executor it was begun on, as
/// they share the connection. On the application's own connection the state lives as long as
/// the executor `pgmill()` returned.
///
/// - **A COPY.** When a COPY's future is dropped, sqlx queues a `CopyFail` without counting the
///   server's answer to it, so the connection is out of step: the next statement reads that stale
///   error ("COPY from stdin failed"), and the ones after it read replies meant for others.
///   Nothing outside sqlx can put it back in step. So a COPY marks itself in flight and clears the
///   mark when it ends; every later call on a connection whose mark is still set fails with
///   [`DbErrorKind::ConnectionLost`] instead of running, and the engine discards the connection
///   (a pooled one is also closed by sqlx's own check when it returns to the pool).
/// - **Any call.** A call marks itself in flight the same way. One dropped mid-way may leave its
///   answer (an error among them) unread on the connection, which sqlx reads before the next
///   statement, failing that statement with it. A [`PooledConnection`] whose mark is still set
///   goes back to the pool, whose check reads that answer and closes the connection if it was an
///   error, rather than being handed to the engine's next acquire.
#[derive(Debug, Default, Clone)]
struct CallState(Arc<Marks>);

/// The marks a [`CallState`] shares between an executor and the transactions begun on it.
#[derive(Debug, Default)]
struct Marks {
    copy_in_flight: AtomicBool,
    call_in_flight: AtomicBool,
}

impl CallState {
    /// Fails when an earlier COPY on the connection was dropped mid-way.
    fn check(&self) -> Result<()> {
        if self.0.copy_in_flight.load(Ordering::Acquire) {
            return Err(DbError::new(
                DbErrorKind::ConnectionLost,
                "a COPY on this connection was dropped mid-way; sqlx cannot bring the \
                 connection back in step, so it must be closed",
            )
            .into());
        }
        Ok(())
    }

    /// Runs `call` with the call mark set while it is in flight, after [`CallState::check`].
    async fn call<T>(&self, call: impl Future<Output = Result<T>>) -> Result<T> {
        self.check()?;
        self.0.call_in_flight.store(true, Ordering::Release);
        let done = call.await;
        self.0.call_in_flight.store(false, Ordering::Release);
        done
    }

    /// Runs `copy` with the COPY mark set while it is in flight, after [`CallState::check`] (a
    /// COPY left set also keeps the connection from being [settled](CallState::settled)).
    async fn copy(&self, copy: impl Future<Output = Result<u64>>) -> Result<u64> {
        self.check()?;
        self.0.copy_in_flight.store(true, Ordering::Release);
        let copied = copy.await;
        self.0.copy_in_flight.store(false, Ordering::Release);
        copied
    }

    /// True when nothing was dropped mid-way on the connection.
    fn settled(&self) -> bool {
        !self.0.copy_in_flight.load(Ordering::Acquire)
            && !self.0.call_in_flight.load(Ordering::Acquire)
    }
}

/// A connection checked out of the [`SqlxDriver`](crate::SqlxDriver)'s pool, as a
/// [`PgConnection`].
///
/// sqlx pings every connection returned to its pool before another checkout may have it: a
/// round trip per release. So one the engine releases settled (no transaction open, no call cut
/// off mid-way) is kept for the driver's next acquire for a moment ([`WarmConnections`]) and goes
/// back to the pool after that; any other goes back at once, where sqlx's check rolls back what
/// is open and closes the connection if it is broken.
pub struct PooledConnection {
    /// Taken only when the connection is released or detached.
    conn: Option<PoolConnection<Postgres>>,
    /// Where the connection goes when released settled, rather than straight back to the pool.
    warm: Arc<WarmConnections<PoolConnection<Postgres>>>,
    state: CallState,
}

impl fmt::Debug for PooledConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledConnection")
            .field("settled", &self.state.settled())
            .finish_non_exhaustive()
    }
}

impl PooledConnection {
    /// Takes the connection out of its pool for good; it closes when dropped.
    pub fn detach(mut self) -> PgConnection {
        self.conn
            .take()
            .expect("a pooled connection is only taken when released")
            .detach()
    }
}

impl Deref for PooledConnection {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.conn
            .as_ref()
            .expect("a pooled connection is only taken when released")
    }
}

impl DerefMut for PooledConnection {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn
            .as_mut()
            .expect("a pooled connection is only taken when released")
    }
}

impl Drop for PooledConnection {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if self.state.settled() && !conn.is_in_transaction() {
            self.warm.keep(conn);
        }
        // Otherwise dropped here: back to the pool, through sqlx's check.
    }
}

impl SqlxConnection {
    /// An executor on `conn`, kept in `warm` when released settled.
    pub(crate) fn pooled(
        conn: PoolConnection<Postgres>,
        warm: Arc<WarmConnections<PoolConnection<Postgres>>>,
    ) -> Self {
        let state = CallState::default();
        let conn = PooledConnection {
            conn: Some(conn),
            warm,
            state: state.clone(),
        };
        SqlxExecutor(conn, state, Statements::Cached)
    }
}

impl<C> SqlxExecutor<C>
where
    C: DerefMut<Target = PgConnection> + Send,
{
    /// True for an unnamed statement outside a transaction (see [`Statements::Unnamed`]).
    fn needs_own_transaction(&self) -> bool {
        self.2 == Statements::Unnamed && !self.0.is_in_transaction()
    }

    /// Runs a statement for its rows, as the library returns them. All rows are fetched before
    /// any is decoded, so a column that fails to decode never leaves a half-read result on the
    /// connection.
    async fn rows(&mut self, stmt: &Statement) -> Result<Vec<PgRow>> {
        let query = bound(stmt)?.persistent(self.2 == Statements::Cached);
        self.on_connection(async move |conn| query.fetch_all(conn).await.map_err(db_error))
            .await
    }

    /// Runs `run` on the connection as one call ([`CallState::call`]), in a transaction of its
    /// own when the executor's statements need one ([`Self::needs_own_transaction`]).
    async fn on_connection<T>(
        &mut self,
        run: impl AsyncFnOnce(&mut PgConnection) -> Result<T>,
    ) -> Result<T> {
        let own_transaction = self.needs_own_transaction();
        let conn = &mut *self.0;
        self.1
            .call(async move {
                if own_transaction {
                    let mut tx = conn.begin().await.map_err(db_error)?;
                    let done = run(&mut tx).await?;
                    tx.commit().await.map_err(db_error)?;
                    Ok(done)
                } else {
                    run(conn).await
                }
            })
            .await
    }
}

impl<C> Executor for SqlxExecutor<C>
where
    C: DerefMut<Target = PgConnection> + Send,
{
    type Transaction<'t>
        = SqlxTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        let query = bound(stmt)?.persistent(self.2 == Statements::Cached);
        let done: PgQueryResult = self
            .on_connection(async move |conn| query.execute(conn).await.map_err(db_error))
            .await?;
        Ok(done.rows_affected())
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        decode_rows(&self.rows(stmt).await?)
    }

    async fn query_held(&mut self, stmt: &Statement) -> Result<HeldRows> {
        Ok(HeldRows::new(LibraryRows::new(self.rows(stmt).await?)?))
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        let conn = &mut *self.0;
        self.1
            .call(async move {
                sqlx::raw_sql(AssertSqlSafe(sql))
                    .execute(conn)
                    .await
                    .map_err(db_error)
            })
            .await?;
        Ok(())
    }

    /// Opens a transaction, or a savepoint when the connection is already in one (as sqlx does).
    async fn begin(&mut self) -> Result<SqlxTransaction<'_>> {
        let conn = &mut *self.0;
        let tx = self
            .1
            .call(async move { conn.begin().await.map_err(db_error) })
            .await?;
        Ok(SqlxExecutor(tx, self.1.clone(), self.2))
    }

    fn supports_copy(&self) -> bool {
        true
    }

    fn min_copy_rows(&self) -> usize {
        MIN_COPY_ROWS
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        let conn = &mut *self.0;
        self.1
            .copy(async move {
                let mut writer = conn.copy_in_raw(copy.sql()).await.map_err(db_error)?;
                if let Err(e) = writer.send(copy.data()).await {
                    // Leave the connection out of COPY mode if it is still alive; the send error
                    // is the one worth reporting.
                    abort(writer).await;
                    return Err(db_error(e));
                }
                writer.finish().await.map_err(db_error)
            })
            .await
    }

    /// Streams chunks of core's text-format rows into one `COPY ... FROM STDIN`.
    async fn copy_in_stream(&mut self, sql: &str, mut data: CopyChunks) -> Result<u64> {
        let conn = &mut *self.0;
        self.1
            .copy(async move {
                let mut writer = conn.copy_in_raw(sql).await.map_err(db_error)?;
                while let Some(chunk) = data.recv().await {
                    if let Err(e) = writer.send(chunk).await {
                        abort(writer).await;
                        return Err(db_error(e));
                    }
                }
                writer.finish().await.map_err(db_error)
            })
            .await
    }
}

/// Aborts a COPY whose data could not be sent.
async fn abort(writer: sqlx::postgres::PgCopyIn<&mut PgConnection>) {
    if let Err(abort) = writer.abort("pgmill: sending COPY data failed").await {
        tracing::debug!(error = %abort, "aborting a failed COPY failed too");
    }
}

impl Transaction for SqlxTransaction<'_> {
    async fn commit(self) -> Result<()> {
        let SqlxExecutor(tx, state, _) = self;
        state
            .call(async move { tx.commit().await.map_err(db_error) })
            .await
    }

    async fn rollback(self) -> Result<()> {
        let SqlxExecutor(tx, state, _) = self;
        state
            .call(async move { tx.rollback().await.map_err(db_error) })
            .await
    }
}

pgmill::driver::host_extension_trait! {
    async;
    /// pgmill on the application's own sqlx connection or transaction: insert jobs in it, or run
    /// any of pgmill's operations through [`PgConnectionExt::pgmill`].
    ///
    /// Implemented for [`PgConnection`]; a `sqlx::Transaction` and a pooled connection deref to
    /// one, so `tx.insert_job(..)` works on them too. Jobs inserted in a transaction exist once it
    /// commits and never if it rolls back.
    ///
    /// Core operations that open a savepoint of their own ([`Inserter::insert_bulk`],
    /// [`Migrator::up`](pgmill::Migrator::up)) also run on `&mut tx.pgmill()`, but their futures
    /// are not `Send` on a borrowed connection (rustc cannot prove it through the seam's
    /// `Executor::Transaction<'t>`), so await them in place rather than in a spawned task.
    ///
    /// [`Inserter::insert_bulk`]: pgmill::Inserter::insert_bulk
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use pgmill::{Inserter, JobArgs, Schema};
    /// use pgmill_driver_sqlx::PgConnectionExt;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct SendEmail {
    ///     to: String,
    /// }
    ///
    /// impl JobArgs for SendEmail {
    ///     const KIND: &'static str = "send_email";
    /// }
    ///
    /// # async fn run(pool: sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// let inserter = Inserter::new(Schema::public());
    /// let mut tx = pool.begin().await?;
    /// sqlx::query("UPDATE users SET invited = true WHERE id = $1")
    ///     .bind(7_i64)
    ///     .execute(&mut *tx)
    ///     .await?;
    /// let job = tx.insert_job(&inserter, SendEmail { to: "a@example.com".into() }).await?;
    /// tx.commit().await?;
    /// # let _ = job;
    /// # Ok(())
    /// # }
    /// ```
    pub trait PgConnectionExt: Send {
        /// Borrows this connection as a pgmill executor, for any of pgmill's operations.
        fn pgmill(&mut self) -> SqlxExecutor<&mut PgConnection>;
    }
}

impl PgConnectionExt for PgConnection {
    fn pgmill(&mut self) -> SqlxExecutor<&mut PgConnection> {
        SqlxExecutor::new(self)
    }
}
