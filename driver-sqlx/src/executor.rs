//! Running core's statements on sqlx connections: pooled, the application's own, and transactions.
//!
//! sqlx implements its own `Executor` once, for `&mut PgConnection`, and lets a pooled connection
//! and a transaction reach it by deref. [`SqlxExecutor`] does the same for pgmill's: one
//! implementation over anything that derefs to a `PgConnection`. [`SqlxConnection`] (pooled),
//! [`SqlxTransaction`] and the executor [`PgConnectionExt::pgmill`] borrows are that one type.

use std::future::Future;
use std::ops::DerefMut;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pgmill::driver::{CopyChunks, CopyIn, Executor, Row, RowView, Statement, Transaction};
use pgmill::{DbError, DbErrorKind, Result};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgQueryResult, PgRow};
use sqlx::{AssertSqlSafe, Connection as _, PgConnection, Postgres};

use crate::codec::{bound, decode_rows, decode_rows_with};
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
pub struct SqlxExecutor<C>(C, CopyState, Statements);

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
/// drop.
pub type SqlxConnection = SqlxExecutor<PoolConnection<Postgres>>;

/// A transaction (or savepoint) opened by [`Executor::begin`] on one of this crate's executors.
pub type SqlxTransaction<'t> = SqlxExecutor<sqlx::Transaction<'t, Postgres>>;

impl<C> SqlxExecutor<C> {
    pub(crate) fn new(conn: C) -> Self {
        SqlxExecutor(conn, CopyState::default(), Statements::Cached)
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

/// Whether a COPY on this connection was dropped mid-way.
///
/// When a COPY's future is dropped, sqlx queues a `CopyFail` without counting the server's
/// answer to it, so the connection is out of step: the next statement reads that stale error
/// ("COPY from stdin failed"), and the ones after it read replies meant for others. Nothing
/// outside sqlx can put it back in step. So a COPY marks itself in flight and clears the mark
/// when it ends; every later call on a connection whose mark is still set fails with
/// [`DbErrorKind::ConnectionLost`] instead of running, and the engine discards the connection (a
/// pooled one is also closed by sqlx's own check when it returns to the pool). A transaction
/// shares the mark of the executor it was begun on, as they share the connection. On the
/// application's own connection the mark lives as long as the executor `pgmill()` returned.
#[derive(Debug, Default, Clone)]
struct CopyState {
    in_flight: Arc<AtomicBool>,
}

impl CopyState {
    /// Fails when an earlier COPY on the connection was dropped mid-way.
    fn check(&self) -> Result<()> {
        if self.in_flight.load(Ordering::Acquire) {
            return Err(DbError::new(
                DbErrorKind::ConnectionLost,
                "a COPY on this connection was dropped mid-way; sqlx cannot bring the \
                 connection back in step, so it must be closed",
            )
            .into());
        }
        Ok(())
    }

    /// Runs `copy` with the mark set while it is in flight.
    async fn guard(&self, copy: impl Future<Output = Result<u64>>) -> Result<u64> {
        self.check()?;
        self.in_flight.store(true, Ordering::Release);
        let copied = copy.await;
        self.in_flight.store(false, Ordering::Release);
        copied
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
        self.1.check()?;
        let query = bound(stmt)?.persistent(self.2 == Statements::Cached);
        if self.needs_own_transaction() {
            let mut tx = self.0.begin().await.map_err(db_error)?;
            let rows = query.fetch_all(&mut *tx).await.map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            Ok(rows)
        } else {
            query.fetch_all(&mut *self.0).await.map_err(db_error)
        }
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
        self.1.check()?;
        let query = bound(stmt)?.persistent(self.2 == Statements::Cached);
        let done: PgQueryResult = if self.needs_own_transaction() {
            let mut tx = self.0.begin().await.map_err(db_error)?;
            let done = query.execute(&mut *tx).await.map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            done
        } else {
            query.execute(&mut *self.0).await.map_err(db_error)?
        };
        Ok(done.rows_affected())
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        decode_rows(&self.rows(stmt).await?)
    }

    async fn query_with<T, F>(&mut self, stmt: &Statement, decode: F) -> Result<Vec<T>>
    where
        T: Send + 'static,
        F: FnMut(&mut dyn RowView) -> Result<T> + Send + 'static,
    {
        decode_rows_with(&self.rows(stmt).await?, decode)
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.1.check()?;
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut *self.0)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Opens a transaction, or a savepoint when the connection is already in one (as sqlx does).
    async fn begin(&mut self) -> Result<SqlxTransaction<'_>> {
        self.1.check()?;
        let tx = self.0.begin().await.map_err(db_error)?;
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
            .guard(async move {
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
            .guard(async move {
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
        self.1.check()?;
        self.0.commit().await.map_err(db_error)
    }

    async fn rollback(self) -> Result<()> {
        self.1.check()?;
        self.0.rollback().await.map_err(db_error)
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
