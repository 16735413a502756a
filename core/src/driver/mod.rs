//! The driver seam: the few traits a database library implements so the engine can run on it.
//!
//! **Internal API.** These traits may change in minor releases. They are implemented only by
//! driver crates that pass the conformance suite in `pgmill-drivertest`; applications use a driver
//! crate (`pgmill-driver-sqlx`, `pgmill-driver-tokio-postgres`, `pgmill-driver-diesel`), not these
//! traits directly.
//!
//! Core owns every SQL statement and builds [`Statement`]s (SQL text plus [`Value`] parameters)
//! without doing any I/O. A driver only executes them and hands rows back as [`Row`]s of
//! [`Value`]s; core decodes those into its row shapes with [`FromRow`]. Every placeholder in core's
//! SQL carries an explicit cast and every output column an explicit name, so drivers that check
//! parameter types (tokio-postgres) or map rows by name (diesel) need no special cases.
//!
//! Errors cross the seam as [`Error::Database`](crate::Error) with the SQLSTATE kept and
//! a lost connection told apart ([`DbErrorKind::ConnectionLost`](crate::DbErrorKind)).

pub mod binary;
mod column_type;
mod host_extension;
pub mod interval;
mod listener;
mod row;
pub mod sqlstate;
mod statement;
pub mod timestamp;
mod value;
mod warm;

use std::future::Future;

pub use listener::{Listener, ListenerEvent, NoListener, Notification, listen_sql, unlisten_sql};
pub use row::{
    FromColumn, FromRow, HeldRows, Row, RowSource, RowView, decode_result, decode_values,
};
pub(crate) use row::{rows_as, rows_with};
pub use statement::{CopyIn, CopyRowWriter, Statement, copy_target};
pub use value::{FromValue, IntoValue, PgType, Value};
pub use warm::WarmConnections;

#[doc(inline)]
pub use crate::host_extension_trait;
pub use column_type::ColumnType;

use crate::error::{Error, Result};

/// The chunks of text-format COPY data [`Executor::copy_in_stream`] receives, in order; the
/// stream ends when the sender is dropped.
pub type CopyChunks = tokio::sync::mpsc::Receiver<Vec<u8>>;

/// A handle over a database library's connection pool, cheap to clone.
///
/// The engine takes connections from it for its own work and opens a dedicated [`Listener`] for
/// notifications.
pub trait Driver: Clone + Send + Sync + 'static {
    /// A connection checked out of the pool; returned to it on drop.
    type Connection: Executor + 'static;
    /// The dedicated notification connection type ([`NoListener`] when there is none).
    type Listener: Listener;

    /// Checks a connection out of the pool.
    fn acquire(&self) -> impl Future<Output = Result<Self::Connection>> + Send;

    /// True when [`Driver::listener`] can open a listener; otherwise the engine only polls.
    fn supports_listener(&self) -> bool;

    /// Closes a pooled connection instead of returning it to the pool. The engine calls it for a
    /// connection that reported SQLSTATE 25006 (read-only: the server is a demoted primary), so
    /// the pool reconnects, through DNS or a proxy, to the new primary. The default drops the
    /// connection back into the pool; drivers override it.
    fn discard(&self, conn: Self::Connection) {
        drop(conn);
    }

    /// Opens a dedicated listener connection, outside the pool.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when the driver has no listener, or the connection error.
    fn listener(&self) -> impl Future<Output = Result<Self::Listener>> + Send;
}

/// Runs statements on one connection or transaction.
///
/// Four methods are required; the rest are provided. Implemented by each driver for its pooled
/// connections, its transactions, and wrappers around the application's own connection types.
pub trait Executor: Send {
    /// The transaction type [`Executor::begin`] opens.
    type Transaction<'t>: Transaction
    where
        Self: 't;

    /// Runs a statement and returns the number of rows it affected.
    fn execute(&mut self, stmt: &Statement) -> impl Future<Output = Result<u64>> + Send;

    /// Runs a statement and returns its rows.
    fn query(&mut self, stmt: &Statement) -> impl Future<Output = Result<Vec<Row>>> + Send;

    /// Runs a script of one or more statements without parameters (the simple query protocol).
    fn execute_script(&mut self, sql: &str) -> impl Future<Output = Result<()>> + Send;

    /// Opens a transaction; on an executor that is already a transaction this is a savepoint.
    ///
    /// Dropping the transaction without [`Transaction::commit`] rolls it back.
    fn begin(&mut self) -> impl Future<Output = Result<Self::Transaction<'_>>> + Send;

    /// True when [`Executor::copy_in`] is implemented.
    fn supports_copy(&self) -> bool {
        false
    }

    /// Bulk inserts of fewer rows than this go in as one multi-row `INSERT` instead of a `COPY`.
    /// A driver whose library makes a small COPY slow returns its break-even point here. Default
    /// 0: every bulk insert of copyable jobs is copied.
    fn min_copy_rows(&self) -> usize {
        0
    }

    /// Streams a `COPY ... FROM STDIN` and returns the number of rows copied.
    ///
    /// # Errors
    ///
    /// The default returns [`Error::Unsupported`]; callers check [`Executor::supports_copy`] and
    /// fall back to a multi-row `INSERT`.
    fn copy_in(&mut self, copy: &CopyIn) -> impl Future<Output = Result<u64>> + Send {
        let _ = copy;
        async { Err(Error::Unsupported("COPY")) }
    }

    /// Streams one `COPY ... FROM STDIN` whose text-format data arrives in chunks on `data`, so
    /// the caller can encode the next chunk while this one is on the wire; ends when the sender is
    /// dropped. Returns the number of rows copied.
    ///
    /// # Errors
    ///
    /// The default returns [`Error::Unsupported`], as [`Executor::copy_in`] does.
    fn copy_in_stream(
        &mut self,
        sql: &str,
        data: CopyChunks,
    ) -> impl Future<Output = Result<u64>> + Send {
        let _ = (sql, data);
        async { Err(Error::Unsupported("COPY")) }
    }

    /// Runs a statement and decodes every row through `decode`, which reads it in place
    /// ([`RowView`]) rather than from a [`Row`] of values built first. Core reads its hot
    /// results this way (an insert's returned row; a claim's rows are read the same way, later,
    /// through [`Executor::query_held`]).
    ///
    /// The default decodes the rows of [`Executor::query_held`], so a driver that holds its
    /// library's rows there reads them in place here too; every driver in this workspace uses
    /// it. `decode` and what it returns own what they hold (`'static`), so a driver may still
    /// override this to move them to the thread its rows are read on.
    ///
    /// # Errors
    ///
    /// The database error, or the first error `decode` returns.
    fn query_with<T, F>(
        &mut self,
        stmt: &Statement,
        decode: F,
    ) -> impl Future<Output = Result<Vec<T>>> + Send
    where
        T: Send + 'static,
        F: FnMut(&mut dyn RowView) -> Result<T> + Send + 'static,
    {
        async move { self.query_held(stmt).await?.decode(decode) }
    }

    /// Runs a statement and hands its rows over undecoded, as [`HeldRows`] the caller reads when
    /// it is ready: after sending its next statement on this connection, or on another task.
    /// The producer claims this way, so that its next claim travels and runs while it decodes the
    /// last one.
    ///
    /// The default holds core's [`Row`]s from [`Executor::query`]; a driver whose library's rows
    /// are owned and can move between threads holds those instead, and reads them as its
    /// [`Executor::query_with`] does, and one whose rows cannot leave its connection may copy
    /// their fields out (the diesel driver keeps each field's type OID and bytes and decodes them
    /// with [`binary`] when they are read). Every driver in this workspace overrides it. Core
    /// reads a claim's rows twice (its position first, then every column), so a driver's
    /// [`RowSource`] must read a row's `smallint`, `bigint` and `timestamptz` columns again as
    /// they were (see [`HeldRows`]).
    ///
    /// # Errors
    ///
    /// The database error, or a decode error when the result has a column of a type pgmill does
    /// not read (a driver may find that out when it takes the rows).
    fn query_held(&mut self, stmt: &Statement) -> impl Future<Output = Result<HeldRows>> + Send {
        async move { Ok(HeldRows::new(self.query(stmt).await?)) }
    }

    /// Runs a statement and decodes every row as `T`.
    fn query_as<T: FromRow + Send>(
        &mut self,
        stmt: &Statement,
    ) -> impl Future<Output = Result<Vec<T>>> + Send {
        async move { row::rows_as(self.query(stmt).await?, T::from_row) }
    }

    /// Runs a statement and decodes its first row as `T`, if there is one.
    fn query_opt<T: FromRow + Send>(
        &mut self,
        stmt: &Statement,
    ) -> impl Future<Output = Result<Option<T>>> + Send {
        async move {
            match self.query(stmt).await?.into_iter().next() {
                Some(row) => T::from_row(row).map(Some),
                None => Ok(None),
            }
        }
    }

    /// Runs a statement and decodes the first column of its first row as `T`.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when there is no row.
    fn query_scalar<T: FromValue + Send>(
        &mut self,
        stmt: &Statement,
    ) -> impl Future<Output = Result<T>> + Send {
        async move { first_scalar(self.query(stmt).await?) }
    }
}

/// An open transaction (or savepoint) that can run statements.
pub trait Transaction: Executor {
    /// Commits (or releases the savepoint).
    fn commit(self) -> impl Future<Output = Result<()>> + Send;

    /// Rolls back (to the savepoint).
    fn rollback(self) -> impl Future<Output = Result<()>> + Send;
}

/// The blocking twin of [`Executor`], for libraries whose transactions are synchronous closures
/// (diesel's `conn.transaction(|conn| ..)`), so jobs can be inserted inside them.
pub trait BlockingExecutor {
    /// The transaction type [`BlockingExecutor::begin`] opens.
    type Transaction<'t>: BlockingTransaction
    where
        Self: 't;

    /// Runs a statement and returns the number of rows it affected.
    ///
    /// # Errors
    ///
    /// The database error, with its SQLSTATE.
    fn execute(&mut self, stmt: &Statement) -> Result<u64>;

    /// Runs a statement and returns its rows.
    ///
    /// # Errors
    ///
    /// The database error, with its SQLSTATE.
    fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>>;

    /// Runs a script of one or more statements without parameters.
    ///
    /// # Errors
    ///
    /// The database error, with its SQLSTATE.
    fn execute_script(&mut self, sql: &str) -> Result<()>;

    /// Opens a transaction, or a savepoint inside one; dropped without commit, it rolls back.
    ///
    /// # Errors
    ///
    /// The database error, with its SQLSTATE.
    fn begin(&mut self) -> Result<Self::Transaction<'_>>;

    /// Runs a statement and decodes every row as `T`.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Decode`].
    fn query_as<T: FromRow>(&mut self, stmt: &Statement) -> Result<Vec<T>> {
        row::rows_as(self.query(stmt)?, T::from_row)
    }

    /// Runs a statement and decodes its first row as `T`, if there is one.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Decode`].
    fn query_opt<T: FromRow>(&mut self, stmt: &Statement) -> Result<Option<T>> {
        self.query(stmt)?
            .into_iter()
            .next()
            .map(T::from_row)
            .transpose()
    }

    /// Runs a statement and decodes the first column of its first row as `T`.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Decode`] when there is no row.
    fn query_scalar<T: FromValue>(&mut self, stmt: &Statement) -> Result<T> {
        first_scalar(self.query(stmt)?)
    }
}

/// An open blocking transaction (or savepoint).
pub trait BlockingTransaction: BlockingExecutor {
    /// Commits (or releases the savepoint).
    ///
    /// # Errors
    ///
    /// The database error.
    fn commit(self) -> Result<()>;

    /// Rolls back (to the savepoint).
    ///
    /// # Errors
    ///
    /// The database error.
    fn rollback(self) -> Result<()>;
}

fn first_scalar<T: FromValue>(rows: Vec<Row>) -> Result<T> {
    let row = rows
        .into_iter()
        .next()
        .ok_or_else(|| Error::decode("scalar", "query returned no rows"))?;
    let value = row
        .into_values()
        .into_iter()
        .next()
        .ok_or_else(|| Error::decode("scalar", "row has no columns"))?;
    T::from_value(value).map_err(|m| Error::decode("scalar", m))
}
