//! Running core's statements on sqlx connections: pooled, the application's own, and transactions.
//!
//! Every executor here is a thin wrapper that hands a `&mut PgConnection` to the private functions
//! at the bottom of this file, so binding and decoding exist once. sqlx's own `Executor` is
//! implemented for `&mut PgConnection` only, which is why the wrappers hold one (or something that
//! derefs to one) rather than a pool.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use pgmill::driver::{CopyIn, Executor, PgType, Row, Statement, Transaction, Value};
use pgmill::{DbError, DbErrorKind, InsertOpts, InsertParams, Inserter, JobArgs, JobRow, Result};
use sqlx::error::BoxDynError;
use sqlx::pool::PoolConnection;
use sqlx::postgres::types::PgInterval;
use sqlx::postgres::{PgArguments, PgRow, PgValueRef};
use sqlx::query::Query;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Column as _, Connection as _, PgConnection, Postgres, Row as _};
use sqlx::{Decode, TypeInfo as _, ValueRef as _};

use crate::error::{column_error, db_error, param_error};

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

/// A connection checked out of the driver's pool, returned to it on drop.
///
/// The engine gets these from [`SqlxDriver`](crate::SqlxDriver)'s `acquire`.
#[derive(Debug)]
pub struct SqlxConnection(pub(crate) PoolConnection<Postgres>, CopyState);

impl SqlxConnection {
    pub(crate) fn new(conn: PoolConnection<Postgres>) -> Self {
        SqlxConnection(conn, CopyState::default())
    }

    /// Unwraps the sqlx pooled connection.
    pub fn into_inner(self) -> PoolConnection<Postgres> {
        self.0
    }
}

/// An executor over the application's own connection or transaction.
///
/// Get one with [`PgConnectionExt::pgmill`]; it borrows the connection for as long as it lives.
#[derive(Debug)]
pub struct SqlxExecutor<'a>(&'a mut PgConnection, CopyState);

/// A transaction (or savepoint) opened by [`Executor::begin`] on one of this crate's executors.
///
/// Dropping it without [`Transaction::commit`] rolls it back, as sqlx's own transactions do.
#[derive(Debug)]
pub struct SqlxTransaction<'t>(sqlx::Transaction<'t, Postgres>, CopyState);

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
pub(crate) struct CopyState {
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

/// pgmill on the application's own sqlx connection or transaction: insert jobs in it, or run
/// any of pgmill's operations through [`PgConnectionExt::pgmill`].
///
/// Implemented for [`PgConnection`]; a `sqlx::Transaction` and a pooled connection deref to one,
/// so `tx.insert_job(..)` works on them too. Jobs inserted in a transaction exist once it commits
/// and never if it rolls back.
///
/// Core operations that open a savepoint of their own ([`Inserter::insert_bulk`],
/// [`Migrator::up`](pgmill::Migrator::up)) also run on `&mut tx.pgmill()`, but their futures are
/// not `Send` on a borrowed connection (rustc cannot prove it through the seam's
/// `Executor::Transaction<'t>`), so await them in place rather than in a spawned task.
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
pub trait PgConnectionExt {
    /// Borrows this connection as a pgmill executor, for any of pgmill's operations.
    fn pgmill(&mut self) -> SqlxExecutor<'_>;

    /// Inserts one job with its kind's default options ([`Inserter::insert`]).
    ///
    /// # Errors
    ///
    /// A validation error or the database error.
    fn insert_job<A: JobArgs>(
        &mut self,
        inserter: &Inserter,
        args: A,
    ) -> impl Future<Output = Result<JobRow>> + Send;

    /// Inserts one job with options over its kind's defaults ([`Inserter::insert_with`]).
    ///
    /// # Errors
    ///
    /// A validation error or the database error.
    fn insert_job_with<A: JobArgs>(
        &mut self,
        inserter: &Inserter,
        args: A,
        opts: InsertOpts,
    ) -> impl Future<Output = Result<JobRow>> + Send;

    /// Inserts many jobs in one round trip and returns them in input order
    /// ([`Inserter::insert_many`]).
    ///
    /// # Errors
    ///
    /// A validation error (then nothing is inserted) or the database error.
    fn insert_jobs(
        &mut self,
        inserter: &Inserter,
        jobs: &[InsertParams],
    ) -> impl Future<Output = Result<Vec<JobRow>>> + Send;
}

impl PgConnectionExt for PgConnection {
    fn pgmill(&mut self) -> SqlxExecutor<'_> {
        SqlxExecutor(self, CopyState::default())
    }

    async fn insert_job<A: JobArgs>(&mut self, inserter: &Inserter, args: A) -> Result<JobRow> {
        inserter.insert(&mut self.pgmill(), args).await
    }

    async fn insert_job_with<A: JobArgs>(
        &mut self,
        inserter: &Inserter,
        args: A,
        opts: InsertOpts,
    ) -> Result<JobRow> {
        inserter.insert_with(&mut self.pgmill(), args, opts).await
    }

    async fn insert_jobs(
        &mut self,
        inserter: &Inserter,
        jobs: &[InsertParams],
    ) -> Result<Vec<JobRow>> {
        inserter.insert_many(&mut self.pgmill(), jobs).await
    }
}

impl Executor for SqlxConnection {
    type Transaction<'t> = SqlxTransaction<'t>;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        self.1.check()?;
        execute(&mut self.0, stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        self.1.check()?;
        query(&mut self.0, stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.1.check()?;
        execute_script(&mut self.0, sql).await
    }

    async fn begin(&mut self) -> Result<SqlxTransaction<'_>> {
        self.1.check()?;
        begin(&mut self.0, &self.1).await
    }

    fn supports_copy(&self) -> bool {
        true
    }

    fn min_copy_rows(&self) -> usize {
        MIN_COPY_ROWS
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        self.1.guard(copy_in(&mut self.0, copy)).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: pgmill::driver::CopyChunks) -> Result<u64> {
        self.1.guard(copy_in_stream(&mut self.0, sql, data)).await
    }
}

impl Executor for SqlxExecutor<'_> {
    type Transaction<'t>
        = SqlxTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        self.1.check()?;
        execute(self.0, stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        self.1.check()?;
        query(self.0, stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.1.check()?;
        execute_script(self.0, sql).await
    }

    async fn begin(&mut self) -> Result<SqlxTransaction<'_>> {
        self.1.check()?;
        begin(self.0, &self.1).await
    }

    fn supports_copy(&self) -> bool {
        true
    }

    fn min_copy_rows(&self) -> usize {
        MIN_COPY_ROWS
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        self.1.guard(copy_in(self.0, copy)).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: pgmill::driver::CopyChunks) -> Result<u64> {
        self.1.guard(copy_in_stream(self.0, sql, data)).await
    }
}

impl Executor for SqlxTransaction<'_> {
    type Transaction<'t>
        = SqlxTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        self.1.check()?;
        execute(&mut self.0, stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        self.1.check()?;
        query(&mut self.0, stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.1.check()?;
        execute_script(&mut self.0, sql).await
    }

    /// Opens a savepoint (sqlx does so when the connection is already in a transaction).
    async fn begin(&mut self) -> Result<SqlxTransaction<'_>> {
        self.1.check()?;
        begin(&mut self.0, &self.1).await
    }

    fn supports_copy(&self) -> bool {
        true
    }

    fn min_copy_rows(&self) -> usize {
        MIN_COPY_ROWS
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        self.1.guard(copy_in(&mut self.0, copy)).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: pgmill::driver::CopyChunks) -> Result<u64> {
        self.1.guard(copy_in_stream(&mut self.0, sql, data)).await
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

async fn execute(conn: &mut PgConnection, stmt: &Statement) -> Result<u64> {
    let done = bound(stmt)?.execute(conn).await.map_err(db_error)?;
    Ok(done.rows_affected())
}

async fn query(conn: &mut PgConnection, stmt: &Statement) -> Result<Vec<Row>> {
    // All rows are fetched before decoding, so a column that fails to decode never leaves a
    // half-read result on the connection.
    let rows = bound(stmt)?.fetch_all(conn).await.map_err(db_error)?;
    decode_rows(&rows)
}

async fn execute_script(conn: &mut PgConnection, sql: &str) -> Result<()> {
    sqlx::raw_sql(AssertSqlSafe(sql))
        .execute(conn)
        .await
        .map_err(db_error)?;
    Ok(())
}

async fn begin<'c>(conn: &'c mut PgConnection, copy: &CopyState) -> Result<SqlxTransaction<'c>> {
    conn.begin()
        .await
        .map(|tx| SqlxTransaction(tx, copy.clone()))
        .map_err(db_error)
}

/// Streams chunks of core's text-format rows into one `COPY ... FROM STDIN`.
async fn copy_in_stream(
    conn: &mut PgConnection,
    sql: &str,
    mut data: pgmill::driver::CopyChunks,
) -> Result<u64> {
    let mut writer = conn.copy_in_raw(sql).await.map_err(db_error)?;
    while let Some(chunk) = data.recv().await {
        if let Err(e) = writer.send(chunk).await {
            if let Err(abort) = writer.abort("pgmill: sending COPY data failed").await {
                tracing::debug!(error = %abort, "aborting a failed COPY failed too");
            }
            return Err(db_error(e));
        }
    }
    writer.finish().await.map_err(db_error)
}

async fn copy_in(conn: &mut PgConnection, copy: &CopyIn) -> Result<u64> {
    let mut writer = conn.copy_in_raw(copy.sql()).await.map_err(db_error)?;
    let sent = writer.send(copy.data()).await.map(|_| ());
    if let Err(err) = sent {
        // Leave the connection out of COPY mode if it is still alive; the send error is the one
        // worth reporting.
        if let Err(abort) = writer.abort("pgmill: sending COPY data failed").await {
            tracing::debug!(error = %abort, "aborting a failed COPY failed too");
        }
        return Err(db_error(err));
    }
    writer.finish().await.map_err(db_error)
}

/// The statement as a sqlx query with every parameter bound with its exact Postgres type.
fn bound(stmt: &Statement) -> Result<Query<'static, Postgres, PgArguments>> {
    // Core renders its SQL once per schema from validated, quoted names, and binds every value:
    // the text is safe to prepare, and the `Arc<str>` is shared without a copy.
    let mut query = sqlx::query(AssertSqlSafe(Arc::clone(stmt.shared_sql())));
    for (i, value) in stmt.params().iter().enumerate() {
        bind(&mut query, value).map_err(|e| param_error(i + 1, e))?;
    }
    Ok(query)
}

fn bind(query: &mut Query<'_, Postgres, PgArguments>, value: &Value) -> Result<(), BoxDynError> {
    match value {
        Value::Null(ty) => bind_null(query, *ty),
        Value::Bool(v) => query.try_bind(*v),
        Value::Int2(v) => query.try_bind(*v),
        Value::Int4(v) => query.try_bind(*v),
        Value::Int8(v) => query.try_bind(*v),
        Value::Float8(v) => query.try_bind(*v),
        Value::Text(v) => query.try_bind(v.as_str()),
        Value::Bytea(v) => query.try_bind(v.as_slice()),
        Value::Jsonb(v) => query.try_bind(Json(v)),
        Value::Timestamptz(v) => query.try_bind(*v),
        Value::Interval(v) => query.try_bind(to_interval(*v)?),
        Value::TextArray(v) => query.try_bind(v.as_slice()),
        Value::Int8Array(v) => query.try_bind(v.as_slice()),
        Value::JsonbArray(v) => query.try_bind(v.as_slice()),
        Value::TimestamptzArray(v) => query.try_bind(v.as_slice()),
        other => Err(format!("no sqlx binding for {} values", other.pg_type().name()).into()),
    }
}

fn bind_null(query: &mut Query<'_, Postgres, PgArguments>, ty: PgType) -> Result<(), BoxDynError> {
    match ty {
        PgType::Bool => query.try_bind(None::<bool>),
        PgType::Int2 => query.try_bind(None::<i16>),
        PgType::Int4 => query.try_bind(None::<i32>),
        PgType::Int8 => query.try_bind(None::<i64>),
        PgType::Float8 => query.try_bind(None::<f64>),
        PgType::Text => query.try_bind(None::<String>),
        PgType::Bytea => query.try_bind(None::<Vec<u8>>),
        PgType::Jsonb => query.try_bind(None::<Json<serde_json::Value>>),
        PgType::Timestamptz => query.try_bind(None::<DateTime<Utc>>),
        PgType::Interval => query.try_bind(None::<PgInterval>),
        PgType::TextArray => query.try_bind(None::<Vec<String>>),
        PgType::Int8Array => query.try_bind(None::<Vec<i64>>),
        PgType::JsonbArray => query.try_bind(None::<Vec<serde_json::Value>>),
        PgType::TimestamptzArray => query.try_bind(None::<Vec<DateTime<Utc>>>),
        other => Err(format!("no sqlx binding for NULL {}", other.name()).into()),
    }
}

/// A duration as a Postgres interval of microseconds (sub-microsecond parts are truncated, as
/// Postgres does).
fn to_interval(d: TimeDelta) -> Result<PgInterval, BoxDynError> {
    let microseconds = d
        .num_microseconds()
        .ok_or_else(|| format!("interval {d} does not fit in 64-bit microseconds"))?;
    Ok(PgInterval {
        months: 0,
        days: 0,
        microseconds,
    })
}

/// A Postgres interval as a duration; months have no fixed length, so they are refused.
fn from_interval(i: PgInterval) -> Result<TimeDelta, BoxDynError> {
    if i.months != 0 {
        return Err(format!(
            "an interval of {} months has no fixed duration; cast it to days or seconds",
            i.months
        )
        .into());
    }
    TimeDelta::try_days(i64::from(i.days))
        .and_then(|days| days.checked_add(&TimeDelta::microseconds(i.microseconds)))
        .ok_or_else(|| "interval out of range for a duration".into())
}

/// How one column is read, chosen once per result from its type's OID.
#[derive(Debug, Clone, Copy)]
enum ColumnKind {
    Bool,
    Int2,
    Int4,
    Int8,
    Float8,
    Text,
    Bytea,
    Jsonb,
    Timestamptz,
    /// `timestamp` without time zone, read as UTC.
    Timestamp,
    Interval,
    TextArray,
    Int8Array,
    JsonbArray,
    TimestamptzArray,
}

impl ColumnKind {
    /// The kind for a type OID (built-in OIDs are fixed in `pg_type.dat`).
    fn of_oid(oid: u32) -> Option<Self> {
        Some(match oid {
            16 => ColumnKind::Bool,
            21 => ColumnKind::Int2,
            23 => ColumnKind::Int4,
            20 => ColumnKind::Int8,
            701 => ColumnKind::Float8,
            // text, name, bpchar, varchar
            25 | 19 | 1042 | 1043 => ColumnKind::Text,
            17 => ColumnKind::Bytea,
            // jsonb, json
            3802 | 114 => ColumnKind::Jsonb,
            1184 => ColumnKind::Timestamptz,
            1114 => ColumnKind::Timestamp,
            1186 => ColumnKind::Interval,
            // text[], varchar[]
            1009 | 1015 => ColumnKind::TextArray,
            1016 => ColumnKind::Int8Array,
            3807 => ColumnKind::JsonbArray,
            1185 => ColumnKind::TimestamptzArray,
            _ => return None,
        })
    }

    /// The type a NULL of this column carries.
    fn pg_type(self) -> PgType {
        match self {
            ColumnKind::Bool => PgType::Bool,
            ColumnKind::Int2 => PgType::Int2,
            ColumnKind::Int4 => PgType::Int4,
            ColumnKind::Int8 => PgType::Int8,
            ColumnKind::Float8 => PgType::Float8,
            ColumnKind::Text => PgType::Text,
            ColumnKind::Bytea => PgType::Bytea,
            ColumnKind::Jsonb => PgType::Jsonb,
            ColumnKind::Timestamptz | ColumnKind::Timestamp => PgType::Timestamptz,
            ColumnKind::Interval => PgType::Interval,
            ColumnKind::TextArray => PgType::TextArray,
            ColumnKind::Int8Array => PgType::Int8Array,
            ColumnKind::JsonbArray => PgType::JsonbArray,
            ColumnKind::TimestamptzArray => PgType::TimestamptzArray,
        }
    }

    fn decode(self, raw: PgValueRef<'_>) -> Result<Value, BoxDynError> {
        if raw.is_null() {
            return Ok(Value::Null(self.pg_type()));
        }
        Ok(match self {
            ColumnKind::Bool => Value::Bool(decode(raw)?),
            ColumnKind::Int2 => Value::Int2(decode(raw)?),
            ColumnKind::Int4 => Value::Int4(decode(raw)?),
            ColumnKind::Int8 => Value::Int8(decode(raw)?),
            ColumnKind::Float8 => Value::Float8(decode(raw)?),
            ColumnKind::Text => Value::Text(decode(raw)?),
            ColumnKind::Bytea => Value::Bytea(decode(raw)?),
            ColumnKind::Jsonb => Value::Jsonb(decode::<Json<serde_json::Value>>(raw)?.0),
            ColumnKind::Timestamptz => Value::Timestamptz(decode(raw)?),
            ColumnKind::Timestamp => Value::Timestamptz(decode::<NaiveDateTime>(raw)?.and_utc()),
            ColumnKind::Interval => Value::Interval(from_interval(decode(raw)?)?),
            ColumnKind::TextArray => Value::TextArray(decode(raw)?),
            ColumnKind::Int8Array => Value::Int8Array(decode(raw)?),
            ColumnKind::JsonbArray => Value::JsonbArray(decode(raw)?),
            ColumnKind::TimestamptzArray => Value::TimestamptzArray(decode(raw)?),
        })
    }
}

fn decode<'r, T: Decode<'r, Postgres>>(raw: PgValueRef<'r>) -> Result<T, BoxDynError> {
    T::decode(raw)
}

/// Decodes a result; column names are shared by every row.
fn decode_rows(rows: &[PgRow]) -> Result<Vec<Row>> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let columns: Arc<[String]> = first
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let kinds = first
        .columns()
        .iter()
        .map(|c| {
            let ty = c.type_info();
            ty.oid()
                .and_then(|oid| ColumnKind::of_oid(oid.0))
                .ok_or_else(|| column_error(c.name(), ty.name(), "not a type pgmill reads".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    rows.iter()
        .map(|row| {
            let values = kinds
                .iter()
                .enumerate()
                .map(|(i, kind)| {
                    let raw = row.try_get_raw(i).map_err(db_error)?;
                    let type_name = raw.type_info().name().to_owned();
                    kind.decode(raw)
                        .map_err(|e| column_error(&columns[i], &type_name, e))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Row::new(Arc::clone(&columns), values))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_convert_both_ways_in_microseconds() {
        let d = TimeDelta::days(3) + TimeDelta::microseconds(4_005_006);
        let i = to_interval(d).unwrap();
        assert_eq!(
            (i.months, i.days, i.microseconds),
            (0, 0, d.num_microseconds().unwrap())
        );
        assert_eq!(from_interval(i).unwrap(), d);
        let with_days = PgInterval {
            months: 0,
            days: 2,
            microseconds: -1,
        };
        assert_eq!(
            from_interval(with_days).unwrap(),
            TimeDelta::days(2) - TimeDelta::microseconds(1)
        );
    }

    #[test]
    fn intervals_with_months_are_refused() {
        let month = PgInterval {
            months: 1,
            days: 0,
            microseconds: 0,
        };
        assert!(from_interval(month).is_err());
    }

    #[test]
    fn text_like_and_json_types_share_a_kind() {
        for oid in [25, 19, 1042, 1043] {
            assert!(matches!(ColumnKind::of_oid(oid), Some(ColumnKind::Text)));
        }
        assert!(matches!(ColumnKind::of_oid(114), Some(ColumnKind::Jsonb)));
        assert!(ColumnKind::of_oid(1700).is_none(), "numeric is not read");
    }
}
