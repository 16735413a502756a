//! Executors over pooled connections, transactions and the application's own clients.
//!
//! Every statement runs with `query_typed` / `execute_typed`: one round trip, an unnamed
//! statement (so it also works behind PgBouncer in transaction mode), and parameter types sent
//! explicitly from each [`Value`]'s [`PgType`], so the server never has to infer them. Parameters
//! are borrowed from the [`Statement`], never cloned, and results are decoded by each column's
//! type into core's [`Row`].

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use deadpool_postgres::Object;
use futures_util::SinkExt;
use pgmill::driver::{CopyIn, Executor, PgType, Row, Statement, Transaction, Value};
use pgmill::{InsertOpts, InsertParams, Inserter, JobArgs, JobRow, Result};
use postgres_types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, GenericClient};

use crate::error::{codec_error, db_error};

type BoxError = Box<dyn StdError + Sync + Send>;

/// The size of the `CopyData` messages a COPY is streamed in.
const COPY_CHUNK_BYTES: usize = 1 << 20;

/// A connection checked out of the [`TokioPostgresDriver`](crate::TokioPostgresDriver)'s pool.
///
/// Returned to the pool when dropped. Use [`TokioPostgresConnection::into_inner`] to reach the
/// deadpool object (and through it the `tokio_postgres::Client`).
#[derive(Debug)]
pub struct TokioPostgresConnection(Object);

impl TokioPostgresConnection {
    pub(crate) fn into_object(self) -> Object {
        self.0
    }

    pub(crate) fn new(object: Object) -> Self {
        TokioPostgresConnection(object)
    }

    /// The pooled deadpool object; it goes back to the pool when dropped.
    pub fn into_inner(self) -> Object {
        self.0
    }

    fn client(&self) -> &Client {
        &self.0
    }
}

impl Executor for TokioPostgresConnection {
    type Transaction<'t>
        = TokioPostgresTransaction<'t>
    where
        Self: 't;

    /// Pooled connections prepare each statement once and keep it in deadpool's per-connection
    /// cache: the engine runs the same few statements over and over, and planning them on every
    /// call costs more than running them.
    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        let params = Params::new(stmt)?;
        let prepared = self
            .0
            .prepare_typed_cached(stmt.sql(), &params.types())
            .await
            .map_err(db_error)?;
        self.client()
            .execute(&prepared, &params.values())
            .await
            .map_err(db_error)
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        let params = Params::new(stmt)?;
        let prepared = self
            .0
            .prepare_typed_cached(stmt.sql(), &params.types())
            .await
            .map_err(db_error)?;
        let rows = self
            .client()
            .query(&prepared, &params.values())
            .await
            .map_err(db_error)?;
        decode_rows(&rows)
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        execute_script(self.client(), sql).await
    }

    async fn begin(&mut self) -> Result<TokioPostgresTransaction<'_>> {
        // deadpool's `ClientWrapper::transaction` returns its own wrapper; take tokio-postgres's.
        let client: &mut Client = &mut self.0;
        let tx = client.transaction().await.map_err(db_error)?;
        Ok(TokioPostgresTransaction(tx))
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        copy_in(self.client(), copy).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: pgmill::driver::CopyChunks) -> Result<u64> {
        copy_in_stream(self.client(), sql, data).await
    }
}

/// An executor over the application's own tokio-postgres client or transaction.
///
/// Made by [`GenericClientExt::pgmill`](crate::GenericClientExt::pgmill); it runs pgmill's
/// statements on whatever `C` is, so inside the app's transaction they commit or roll back with
/// it. [`Executor::begin`] opens a transaction on a client and a savepoint inside a transaction.
pub struct TokioPostgresExecutor<'a, C> {
    client: &'a mut C,
}

impl<'a, C> TokioPostgresExecutor<'a, C>
where
    C: GenericClient + Send + Sync,
{
    /// Wraps the application's client or transaction.
    pub fn new(client: &'a mut C) -> Self {
        TokioPostgresExecutor { client }
    }

    /// The wrapped client or transaction.
    pub fn get_mut(&mut self) -> &mut C {
        self.client
    }
}

impl<C> fmt::Debug for TokioPostgresExecutor<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioPostgresExecutor")
            .finish_non_exhaustive()
    }
}

impl<C> Executor for TokioPostgresExecutor<'_, C>
where
    C: GenericClient + Send + Sync,
{
    type Transaction<'t>
        = TokioPostgresTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        execute(&*self.client, stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        query(&*self.client, stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        execute_script(&*self.client, sql).await
    }

    async fn begin(&mut self) -> Result<TokioPostgresTransaction<'_>> {
        let tx = self.client.transaction().await.map_err(db_error)?;
        Ok(TokioPostgresTransaction(tx))
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        copy_in(self.client.client(), copy).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: pgmill::driver::CopyChunks) -> Result<u64> {
        copy_in_stream(self.client.client(), sql, data).await
    }
}

/// Enqueues jobs (and runs any of pgmill's statements) on your own tokio-postgres client or
/// transaction.
///
/// Implemented for everything that implements `tokio_postgres::GenericClient`: a `Client` and a
/// `Transaction`. deadpool-postgres's `Object` and `Transaction` deref to those, so the methods work
/// on them too (write `(&mut **obj).insert_job(..)` where method lookup needs help). Jobs inserted
/// in a transaction exist once it commits and never if it rolls back.
///
/// Core operations that open a savepoint of their own ([`Inserter::insert_bulk`],
/// [`Migrator::up`](pgmill::Migrator::up)) also run on `&mut tx.pgmill()`.
///
/// # Examples
///
/// ```no_run
/// use pgmill::{Inserter, JobArgs, Schema};
/// use pgmill_driver_tokio_postgres::GenericClientExt;
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
/// # async fn run(client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let inserter = Inserter::new(Schema::public());
/// let mut tx = client.transaction().await?;
/// tx.execute("UPDATE users SET invited = true WHERE id = $1", &[&7_i64])
///     .await?;
/// let job = tx
///     .insert_job(&inserter, SendEmail { to: "a@example.com".into() })
///     .await?;
/// tx.commit().await?;
/// # let _ = job;
/// # Ok(())
/// # }
/// ```
pub trait GenericClientExt: GenericClient + Send + Sync + Sized {
    /// Borrows this client or transaction as a pgmill [`Executor`], for any of pgmill's
    /// operations.
    fn pgmill(&mut self) -> TokioPostgresExecutor<'_, Self>;

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

impl<C> GenericClientExt for C
where
    C: GenericClient + Send + Sync,
{
    fn pgmill(&mut self) -> TokioPostgresExecutor<'_, Self> {
        TokioPostgresExecutor::new(self)
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

/// A transaction (or savepoint) opened by one of this crate's executors.
///
/// Dropped without [`Transaction::commit`], it rolls back. [`Executor::begin`] on it opens a
/// savepoint.
pub struct TokioPostgresTransaction<'t>(tokio_postgres::Transaction<'t>);

impl<'t> TokioPostgresTransaction<'t> {
    /// The underlying tokio-postgres transaction.
    pub fn into_inner(self) -> tokio_postgres::Transaction<'t> {
        self.0
    }
}

impl fmt::Debug for TokioPostgresTransaction<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioPostgresTransaction")
            .finish_non_exhaustive()
    }
}

impl Executor for TokioPostgresTransaction<'_> {
    type Transaction<'s>
        = TokioPostgresTransaction<'s>
    where
        Self: 's;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        execute(&self.0, stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        query(&self.0, stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        execute_script(&self.0, sql).await
    }

    async fn begin(&mut self) -> Result<TokioPostgresTransaction<'_>> {
        let tx = self.0.transaction().await.map_err(db_error)?;
        Ok(TokioPostgresTransaction(tx))
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        copy_in(self.0.client(), copy).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: pgmill::driver::CopyChunks) -> Result<u64> {
        copy_in_stream(self.0.client(), sql, data).await
    }
}

impl Transaction for TokioPostgresTransaction<'_> {
    async fn commit(self) -> Result<()> {
        self.0.commit().await.map_err(db_error)
    }

    async fn rollback(self) -> Result<()> {
        self.0.rollback().await.map_err(db_error)
    }
}

// ---- the one implementation every executor above delegates to ----

async fn execute<C: GenericClient + Sync>(client: &C, stmt: &Statement) -> Result<u64> {
    let params = Params::new(stmt)?;
    client
        .execute_typed(stmt.sql(), &params.typed())
        .await
        .map_err(db_error)
}

async fn query<C: GenericClient + Sync>(client: &C, stmt: &Statement) -> Result<Vec<Row>> {
    let params = Params::new(stmt)?;
    let rows = client
        .query_typed(stmt.sql(), &params.typed())
        .await
        .map_err(db_error)?;
    decode_rows(&rows)
}

async fn execute_script<C: GenericClient + Sync>(client: &C, sql: &str) -> Result<()> {
    client.batch_execute(sql).await.map_err(db_error)
}

/// Streams chunks of core's text-format rows into one `COPY ... FROM STDIN`, each chunk
/// flushed as it arrives.
async fn copy_in_stream(
    client: &Client,
    sql: &str,
    mut data: pgmill::driver::CopyChunks,
) -> Result<u64> {
    let sink = client.copy_in::<_, Bytes>(sql).await.map_err(db_error)?;
    let mut sink = pin!(sink);
    while let Some(chunk) = data.recv().await {
        sink.send(Bytes::from(chunk)).await.map_err(db_error)?;
    }
    sink.as_mut().finish().await.map_err(db_error)
}

/// Streams core's text-format rows through `COPY ... FROM STDIN` (on a transaction's client the
/// COPY runs inside that transaction: it is the same connection).
async fn copy_in(client: &Client, copy: &CopyIn) -> Result<u64> {
    let sink = client
        .copy_in::<_, Bytes>(copy.sql())
        .await
        .map_err(db_error)?;
    let mut sink = pin!(sink);
    let data = Bytes::copy_from_slice(copy.data());
    let mut offset = 0;
    while offset < data.len() {
        let end = data.len().min(offset + COPY_CHUNK_BYTES);
        sink.feed(data.slice(offset..end)).await.map_err(db_error)?;
        offset = end;
    }
    sink.as_mut().finish().await.map_err(db_error)
}

// ---- binding ----

/// A statement's parameters, borrowed, with the Postgres type each is sent as.
struct Params<'s> {
    values: Vec<(Param<'s>, Type)>,
}

impl<'s> Params<'s> {
    fn new(stmt: &'s Statement) -> Result<Self> {
        let values = stmt
            .params()
            .iter()
            .map(|v| Ok((Param(v), pg_type(v.pg_type())?)))
            .collect::<Result<_>>()?;
        Ok(Params { values })
    }

    /// The parameter types, for preparing the statement.
    fn types(&self) -> Vec<Type> {
        self.values.iter().map(|(_, t)| t.clone()).collect()
    }

    /// The values, for running a prepared statement.
    fn values(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|(p, _)| p as &(dyn ToSql + Sync))
            .collect()
    }

    /// The `(value, type)` pairs `query_typed` / `execute_typed` take.
    fn typed(&self) -> Vec<(&(dyn ToSql + Sync), Type)> {
        self.values
            .iter()
            .map(|(p, t)| (p as &(dyn ToSql + Sync), t.clone()))
            .collect()
    }
}

/// The tokio-postgres type a [`PgType`] is bound as.
fn pg_type(t: PgType) -> Result<Type> {
    Ok(match t {
        PgType::Bool => Type::BOOL,
        PgType::Int2 => Type::INT2,
        PgType::Int4 => Type::INT4,
        PgType::Int8 => Type::INT8,
        PgType::Float8 => Type::FLOAT8,
        PgType::Text => Type::TEXT,
        PgType::Bytea => Type::BYTEA,
        PgType::Jsonb => Type::JSONB,
        PgType::Timestamptz => Type::TIMESTAMPTZ,
        PgType::Interval => Type::INTERVAL,
        PgType::TextArray => Type::TEXT_ARRAY,
        PgType::Int8Array => Type::INT8_ARRAY,
        PgType::JsonbArray => Type::JSONB_ARRAY,
        PgType::TimestamptzArray => Type::TIMESTAMPTZ_ARRAY,
        other => {
            return Err(codec_error(format!(
                "parameter type {} is not supported by the tokio-postgres driver",
                other.name()
            )));
        }
    })
}

/// One borrowed parameter; encodes through the library's own `ToSql` for its variant.
#[derive(Debug)]
struct Param<'s>(&'s Value);

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self.0 {
            // NULLs are typed by the `Type` sent beside them, so any NULL fits.
            Value::Null(_) => Ok(IsNull::Yes),
            Value::Bool(v) => v.to_sql_checked(ty, out),
            Value::Int2(v) => v.to_sql_checked(ty, out),
            Value::Int4(v) => v.to_sql_checked(ty, out),
            Value::Int8(v) => v.to_sql_checked(ty, out),
            Value::Float8(v) => v.to_sql_checked(ty, out),
            Value::Text(v) => v.to_sql_checked(ty, out),
            Value::Bytea(v) => v.to_sql_checked(ty, out),
            Value::Jsonb(v) => v.to_sql_checked(ty, out),
            Value::Timestamptz(v) => v.to_sql_checked(ty, out),
            Value::Interval(v) => PgInterval(*v).to_sql_checked(ty, out),
            Value::TextArray(v) => v.to_sql_checked(ty, out),
            Value::Int8Array(v) => v.to_sql_checked(ty, out),
            Value::JsonbArray(v) => v.to_sql_checked(ty, out),
            Value::TimestamptzArray(v) => v.to_sql_checked(ty, out),
            other => Err(format!("unsupported parameter type {}", other.pg_type().name()).into()),
        }
    }

    // The type is chosen from the value itself (`pg_type`) and each variant checks it again above.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// `interval` in Postgres's binary format: microseconds (i64), days (i32), months (i32).
///
/// Encoded as microseconds only; decoded with days counted as 24 hours. Months have no fixed
/// length, so decoding an interval with months is an error (core's SQL never produces one).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PgInterval(TimeDelta);

const MICROS_PER_DAY: i64 = 86_400_000_000;

impl ToSql for PgInterval {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let micros = self
            .0
            .num_microseconds()
            .ok_or("interval is too large for Postgres (more than i64 microseconds)")?;
        out.put_i64(micros);
        out.put_i32(0);
        out.put_i32(0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for PgInterval {
    fn from_sql(_: &Type, mut raw: &'a [u8]) -> Result<Self, BoxError> {
        if raw.len() != 16 {
            return Err(format!("interval has {} bytes, expected 16", raw.len()).into());
        }
        let micros = raw.get_i64();
        let days = raw.get_i32();
        let months = raw.get_i32();
        if months != 0 {
            return Err(format!(
                "interval has {months} months, which have no fixed length; \
                 cast it to days or seconds in SQL"
            )
            .into());
        }
        i64::from(days)
            .checked_mul(MICROS_PER_DAY)
            .and_then(|d| d.checked_add(micros))
            .map(|us| PgInterval(TimeDelta::microseconds(us)))
            .ok_or_else(|| "interval is out of range".into())
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
}

// ---- decoding ----

/// Decodes a result; every row shares one list of column names.
fn decode_rows(rows: &[tokio_postgres::Row]) -> Result<Vec<Row>> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let columns: Arc<[String]> = first
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    rows.iter()
        .map(|row| {
            let values = (0..columns.len())
                .map(|i| decode_column(row, i))
                .collect::<Result<Vec<_>>>()?;
            Ok(Row::new(Arc::clone(&columns), values))
        })
        .collect()
}

/// Decodes column `i` by its Postgres type.
fn decode_column(row: &tokio_postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_();
    match *ty {
        Type::BOOL => get(row, i, PgType::Bool, Value::Bool),
        Type::INT2 => get(row, i, PgType::Int2, Value::Int2),
        Type::INT4 => get(row, i, PgType::Int4, Value::Int4),
        Type::INT8 => get(row, i, PgType::Int8, Value::Int8),
        Type::FLOAT8 => get(row, i, PgType::Float8, Value::Float8),
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
            get(row, i, PgType::Text, Value::Text)
        }
        Type::BYTEA => get(row, i, PgType::Bytea, Value::Bytea),
        Type::JSONB | Type::JSON => get(row, i, PgType::Jsonb, Value::Jsonb),
        Type::TIMESTAMPTZ => get(row, i, PgType::Timestamptz, Value::Timestamptz),
        Type::TIMESTAMP => get(row, i, PgType::Timestamptz, |t: NaiveDateTime| {
            Value::Timestamptz(t.and_utc())
        }),
        Type::INTERVAL => get(row, i, PgType::Interval, |d: PgInterval| {
            Value::Interval(d.0)
        }),
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY => get(row, i, PgType::TextArray, Value::TextArray),
        Type::INT8_ARRAY => get(row, i, PgType::Int8Array, Value::Int8Array),
        Type::JSONB_ARRAY | Type::JSON_ARRAY => get(row, i, PgType::JsonbArray, Value::JsonbArray),
        Type::TIMESTAMPTZ_ARRAY => {
            get(row, i, PgType::TimestamptzArray, |v: Vec<DateTime<Utc>>| {
                Value::TimestamptzArray(v)
            })
        }
        _ => Err(codec_error(format!(
            "column {:?} has type {}, which pgmill does not decode",
            row.columns()[i].name(),
            ty
        ))),
    }
}

/// Reads column `i` as `T`; NULL becomes a [`Value::Null`] of `null`.
fn get<'r, T: FromSql<'r>>(
    row: &'r tokio_postgres::Row,
    i: usize,
    null: PgType,
    wrap: impl FnOnce(T) -> Value,
) -> Result<Value> {
    match row.try_get::<_, Option<T>>(i) {
        Ok(Some(v)) => Ok(wrap(v)),
        Ok(None) => Ok(Value::Null(null)),
        Err(e) => {
            let column = &row.columns()[i];
            let cause = e.source().map(ToString::to_string).unwrap_or_default();
            Err(codec_error(format!(
                "cannot decode column {:?} of type {}: {cause}",
                column.name(),
                column.type_()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(d: TimeDelta) -> TimeDelta {
        let mut buf = BytesMut::new();
        PgInterval(d).to_sql(&Type::INTERVAL, &mut buf).unwrap();
        PgInterval::from_sql(&Type::INTERVAL, &buf).unwrap().0
    }

    #[test]
    fn interval_round_trips_through_the_binary_format() {
        for d in [
            TimeDelta::zero(),
            TimeDelta::microseconds(1),
            TimeDelta::seconds(-90),
            TimeDelta::days(40) + TimeDelta::microseconds(7),
        ] {
            assert_eq!(round_trip(d), d);
        }
    }

    #[test]
    fn interval_days_count_as_24_hours_and_months_are_rejected() {
        let mut raw = BytesMut::new();
        raw.put_i64(5);
        raw.put_i32(2);
        raw.put_i32(0);
        let d = PgInterval::from_sql(&Type::INTERVAL, &raw).unwrap().0;
        assert_eq!(d, TimeDelta::days(2) + TimeDelta::microseconds(5));

        let mut raw = BytesMut::new();
        raw.put_i64(0);
        raw.put_i32(0);
        raw.put_i32(1);
        assert!(PgInterval::from_sql(&Type::INTERVAL, &raw).is_err());
    }

    #[test]
    fn every_pg_type_maps_to_a_library_type() {
        assert_eq!(pg_type(PgType::Int8).unwrap(), Type::INT8);
        assert_eq!(pg_type(PgType::JsonbArray).unwrap(), Type::JSONB_ARRAY);
        assert_eq!(pg_type(PgType::Interval).unwrap(), Type::INTERVAL);
    }
}
