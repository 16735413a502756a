//! The blocking executor over a `diesel::PgConnection`: binding [`Value`]s, decoding rows, and
//! transactions through diesel's own transaction manager.
//!
//! Statements run as `diesel::sql_query(sql).into_boxed::<Pg>()` with one typed bind per
//! parameter. Rows are decoded dynamically: [`DynamicRow`] implements diesel's
//! [`QueryableByName`] by hand and, instead of looking columns up by name, walks every field of
//! the row, reads its type OID with [`PgValue::get_oid`] and decodes it with the matching
//! `FromSql` impl.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::deserialize::{self, FromSql, QueryableByName};
use diesel::pg::data_types::PgInterval;
use diesel::pg::{Pg, PgValue};
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::row::{Field, NamedRow, Row as DieselRow};
use diesel::sql_types::{
    Array, BigInt, Binary, Bool, Double, Integer, Interval, Json, Jsonb, Nullable, SmallInt, Text,
    Timestamp, Timestamptz,
};
use diesel::{PgConnection, RunQueryDsl};
use pgmill::driver::{BlockingExecutor, BlockingTransaction, PgType, Row, Statement, Value};
use pgmill::{
    DbError, DbErrorKind, Error, InsertOpts, InsertParams, Inserter, JobArgs, JobRow, Result,
};

use crate::error::query_error;

/// Runs pgmill's statements on a `diesel::PgConnection` the application owns, typically inside
/// its own `conn.transaction(|conn| ..)`.
///
/// Get one with [`PgConnectionExt::pgmill`]. It is blocking, like diesel: statements run on the
/// calling thread, in whatever transaction the connection is in.
pub struct DieselExecutor<'a>(pub &'a mut PgConnection);

impl fmt::Debug for DieselExecutor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DieselExecutor").finish_non_exhaustive()
    }
}

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
    fn pgmill(&mut self) -> DieselExecutor<'_>;

    /// Inserts one job with its kind's default options, in the connection's current transaction.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`]: a validation error or the database error.
    fn insert_job<A: JobArgs>(&mut self, inserter: &Inserter, args: A) -> Result<JobRow> {
        inserter.insert_blocking(&mut self.pgmill(), args)
    }

    /// Inserts one job with options over its kind's defaults.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert`].
    fn insert_job_with<A: JobArgs>(
        &mut self,
        inserter: &Inserter,
        args: A,
        opts: impl Into<Option<InsertOpts>>,
    ) -> Result<JobRow> {
        inserter.insert_with_blocking(&mut self.pgmill(), args, opts)
    }

    /// Inserts many jobs in one round trip and returns them in input order.
    ///
    /// # Errors
    ///
    /// As [`Inserter::insert_many`]; nothing is inserted when any job is invalid.
    fn insert_jobs(&mut self, inserter: &Inserter, jobs: &[InsertParams]) -> Result<Vec<JobRow>> {
        inserter.insert_many_blocking(&mut self.pgmill(), jobs)
    }
}

impl PgConnectionExt for PgConnection {
    fn pgmill(&mut self) -> DieselExecutor<'_> {
        DieselExecutor(self)
    }
}

impl BlockingExecutor for DieselExecutor<'_> {
    type Transaction<'t>
        = DieselTransaction<'t>
    where
        Self: 't;

    fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        execute(self.0, stmt)
    }

    fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        query(self.0, stmt)
    }

    fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.0.batch_execute(sql).map_err(query_error)
    }

    fn begin(&mut self) -> Result<DieselTransaction<'_>> {
        DieselTransaction::begin(self.0)
    }
}

/// A transaction (or, nested, a savepoint) opened by [`BlockingExecutor::begin`] on a diesel
/// connection, through diesel's own transaction manager.
///
/// Because it goes through `AnsiTransactionManager`, it nests correctly with the application's
/// `conn.transaction(..)` calls: inside one, it is a savepoint. Dropped without
/// [`BlockingTransaction::commit`], it rolls back.
pub struct DieselTransaction<'a> {
    conn: &'a mut PgConnection,
    open: bool,
}

impl fmt::Debug for DieselTransaction<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DieselTransaction")
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl<'a> DieselTransaction<'a> {
    fn begin(conn: &'a mut PgConnection) -> Result<Self> {
        AnsiTransactionManager::begin_transaction(conn).map_err(query_error)?;
        Ok(DieselTransaction { conn, open: true })
    }
}

impl Drop for DieselTransaction<'_> {
    fn drop(&mut self) {
        if self.open {
            self.open = false;
            if let Err(e) = AnsiTransactionManager::rollback_transaction(self.conn) {
                tracing::warn!(error = %e, "rolling back a dropped diesel transaction failed");
            }
        }
    }
}

impl BlockingExecutor for DieselTransaction<'_> {
    type Transaction<'t>
        = DieselTransaction<'t>
    where
        Self: 't;

    fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        execute(self.conn, stmt)
    }

    fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        query(self.conn, stmt)
    }

    fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.conn.batch_execute(sql).map_err(query_error)
    }

    fn begin(&mut self) -> Result<DieselTransaction<'_>> {
        DieselTransaction::begin(self.conn)
    }
}

impl BlockingTransaction for DieselTransaction<'_> {
    fn commit(mut self) -> Result<()> {
        self.open = false;
        AnsiTransactionManager::commit_transaction(self.conn).map_err(query_error)
    }

    fn rollback(mut self) -> Result<()> {
        self.open = false;
        AnsiTransactionManager::rollback_transaction(self.conn).map_err(query_error)
    }
}

/// Runs a statement for its affected-row count.
pub(crate) fn execute(conn: &mut PgConnection, stmt: &Statement) -> Result<u64> {
    let rows = boxed_query(stmt)?.execute(conn).map_err(query_error)?;
    Ok(rows as u64)
}

/// Runs a statement and decodes every row dynamically.
pub(crate) fn query(conn: &mut PgConnection, stmt: &Statement) -> Result<Vec<Row>> {
    let rows = boxed_query(stmt)?
        .load::<DynamicRow>(conn)
        .map_err(|e| match e {
            diesel::result::Error::DeserializationError(inner) => match inner.downcast::<Error>() {
                Ok(decode) => *decode,
                Err(other) => query_error(diesel::result::Error::DeserializationError(other)),
            },
            other => query_error(other),
        })?;
    Ok(finish_rows(rows))
}

/// The statement's SQL with every parameter bound with its SQL type.
fn boxed_query(stmt: &Statement) -> Result<BoxedSqlQuery<'_, Pg, SqlQuery>> {
    let mut q = diesel::sql_query(stmt.sql()).into_boxed::<Pg>();
    for value in stmt.params() {
        q = bind(q, value)?;
    }
    Ok(q)
}

fn bind<'f>(
    q: BoxedSqlQuery<'f, Pg, SqlQuery>,
    value: &'f Value,
) -> Result<BoxedSqlQuery<'f, Pg, SqlQuery>> {
    Ok(match value {
        Value::Null(ty) => bind_null(q, *ty)?,
        Value::Bool(v) => q.bind::<Bool, _>(v),
        Value::Int2(v) => q.bind::<SmallInt, _>(v),
        Value::Int4(v) => q.bind::<Integer, _>(v),
        Value::Int8(v) => q.bind::<BigInt, _>(v),
        Value::Float8(v) => q.bind::<Double, _>(v),
        Value::Text(v) => q.bind::<Text, _>(v),
        Value::Bytea(v) => q.bind::<Binary, _>(v),
        Value::Jsonb(v) => q.bind::<Jsonb, _>(v),
        Value::Timestamptz(v) => q.bind::<Timestamptz, _>(v),
        Value::Interval(v) => q.bind::<Interval, _>(interval_to_pg(*v)?),
        Value::TextArray(v) => q.bind::<Array<Text>, _>(v),
        Value::Int8Array(v) => q.bind::<Array<BigInt>, _>(v),
        Value::JsonbArray(v) => q.bind::<Array<Jsonb>, _>(v),
        Value::TimestamptzArray(v) => q.bind::<Array<Timestamptz>, _>(v),
        other => return Err(unsupported_type(other.pg_type())),
    })
}

fn bind_null(
    q: BoxedSqlQuery<'_, Pg, SqlQuery>,
    ty: PgType,
) -> Result<BoxedSqlQuery<'_, Pg, SqlQuery>> {
    Ok(match ty {
        PgType::Bool => q.bind::<Nullable<Bool>, _>(None::<bool>),
        PgType::Int2 => q.bind::<Nullable<SmallInt>, _>(None::<i16>),
        PgType::Int4 => q.bind::<Nullable<Integer>, _>(None::<i32>),
        PgType::Int8 => q.bind::<Nullable<BigInt>, _>(None::<i64>),
        PgType::Float8 => q.bind::<Nullable<Double>, _>(None::<f64>),
        PgType::Text => q.bind::<Nullable<Text>, _>(None::<String>),
        PgType::Bytea => q.bind::<Nullable<Binary>, _>(None::<Vec<u8>>),
        PgType::Jsonb => q.bind::<Nullable<Jsonb>, _>(None::<serde_json::Value>),
        PgType::Timestamptz => q.bind::<Nullable<Timestamptz>, _>(None::<DateTime<Utc>>),
        PgType::Interval => q.bind::<Nullable<Interval>, _>(None::<PgInterval>),
        PgType::TextArray => q.bind::<Nullable<Array<Text>>, _>(None::<Vec<String>>),
        PgType::Int8Array => q.bind::<Nullable<Array<BigInt>>, _>(None::<Vec<i64>>),
        PgType::JsonbArray => q.bind::<Nullable<Array<Jsonb>>, _>(None::<Vec<serde_json::Value>>),
        PgType::TimestamptzArray => {
            q.bind::<Nullable<Array<Timestamptz>>, _>(None::<Vec<DateTime<Utc>>>)
        }
        other => return Err(unsupported_type(other)),
    })
}

fn unsupported_type(ty: PgType) -> Error {
    DbError::new(
        DbErrorKind::Codec,
        format!(
            "the diesel driver cannot bind a parameter of type {}",
            ty.name()
        ),
    )
    .into()
}

/// An interval as an exact duration: all microseconds, no days or months (as sqlx binds one).
fn interval_to_pg(d: TimeDelta) -> Result<PgInterval> {
    let microseconds = d.num_microseconds().ok_or_else(|| {
        Error::from(DbError::new(
            DbErrorKind::Codec,
            format!("interval {d} does not fit in 64-bit microseconds"),
        ))
    })?;
    Ok(PgInterval::new(microseconds, 0, 0))
}

fn interval_from_pg(i: PgInterval) -> std::result::Result<TimeDelta, String> {
    if i.months != 0 {
        return Err(format!(
            "interval has {} months; only days and time are supported",
            i.months
        ));
    }
    Ok(TimeDelta::days(i64::from(i.days)) + TimeDelta::microseconds(i.microseconds))
}

/// Type OIDs of the column types the driver decodes (`pg_type.oid`, stable across versions).
mod oid {
    pub(super) const BOOL: u32 = 16;
    pub(super) const BYTEA: u32 = 17;
    pub(super) const NAME: u32 = 19;
    pub(super) const INT8: u32 = 20;
    pub(super) const INT2: u32 = 21;
    pub(super) const INT4: u32 = 23;
    pub(super) const TEXT: u32 = 25;
    pub(super) const JSON: u32 = 114;
    pub(super) const FLOAT8: u32 = 701;
    pub(super) const TEXT_ARRAY: u32 = 1009;
    pub(super) const VARCHAR_ARRAY: u32 = 1015;
    pub(super) const INT8_ARRAY: u32 = 1016;
    pub(super) const BPCHAR: u32 = 1042;
    pub(super) const VARCHAR: u32 = 1043;
    pub(super) const TIMESTAMP: u32 = 1114;
    pub(super) const TIMESTAMPTZ_ARRAY: u32 = 1185;
    pub(super) const TIMESTAMPTZ: u32 = 1184;
    pub(super) const INTERVAL: u32 = 1186;
    pub(super) const JSONB: u32 = 3802;
    pub(super) const JSONB_ARRAY: u32 = 3807;
}

/// Decodes one non-NULL value by its type OID.
fn decode(value: PgValue<'_>) -> deserialize::Result<Value> {
    let v = match value.get_oid().get() {
        oid::BOOL => Value::Bool(<bool as FromSql<Bool, Pg>>::from_sql(value)?),
        oid::INT2 => Value::Int2(<i16 as FromSql<SmallInt, Pg>>::from_sql(value)?),
        oid::INT4 => Value::Int4(<i32 as FromSql<Integer, Pg>>::from_sql(value)?),
        oid::INT8 => Value::Int8(<i64 as FromSql<BigInt, Pg>>::from_sql(value)?),
        oid::FLOAT8 => Value::Float8(<f64 as FromSql<Double, Pg>>::from_sql(value)?),
        oid::TEXT | oid::VARCHAR | oid::NAME | oid::BPCHAR => {
            Value::Text(<String as FromSql<Text, Pg>>::from_sql(value)?)
        }
        oid::BYTEA => Value::Bytea(<Vec<u8> as FromSql<Binary, Pg>>::from_sql(value)?),
        oid::JSONB => Value::Jsonb(<serde_json::Value as FromSql<Jsonb, Pg>>::from_sql(value)?),
        oid::JSON => Value::Jsonb(<serde_json::Value as FromSql<Json, Pg>>::from_sql(value)?),
        oid::TIMESTAMPTZ => Value::Timestamptz(
            <DateTime<Utc> as FromSql<Timestamptz, Pg>>::from_sql(value)?,
        ),
        oid::TIMESTAMP => Value::Timestamptz(
            <NaiveDateTime as FromSql<Timestamp, Pg>>::from_sql(value)?.and_utc(),
        ),
        oid::INTERVAL => Value::Interval(interval_from_pg(<PgInterval as FromSql<
            Interval,
            Pg,
        >>::from_sql(value)?)?),
        oid::TEXT_ARRAY | oid::VARCHAR_ARRAY => {
            Value::TextArray(<Vec<String> as FromSql<Array<Text>, Pg>>::from_sql(value)?)
        }
        oid::INT8_ARRAY => {
            Value::Int8Array(<Vec<i64> as FromSql<Array<BigInt>, Pg>>::from_sql(value)?)
        }
        oid::JSONB_ARRAY => Value::JsonbArray(<Vec<serde_json::Value> as FromSql<
            Array<Jsonb>,
            Pg,
        >>::from_sql(value)?),
        oid::TIMESTAMPTZ_ARRAY => Value::TimestamptzArray(<Vec<DateTime<Utc>> as FromSql<
            Array<Timestamptz>,
            Pg,
        >>::from_sql(value)?),
        other => return Err(format!("unsupported column type (oid {other})").into()),
    };
    Ok(v)
}

/// The type a NULL is reported as when no row of the result shows the column's type: diesel hands
/// out no type OID for a NULL field.
const UNKNOWN_NULL_TYPE: PgType = PgType::Text;

/// One row decoded without knowing its shape in advance.
///
/// `sql_query(..).load::<DynamicRow>(conn)` calls [`QueryableByName::build`] with diesel's full
/// row (a `NamedRow` is also a `Row`), so every field is reachable by index: its name, its raw
/// value and, for non-NULL values, its type OID.
struct DynamicRow {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

thread_local! {
    /// The column names of the last row decoded on this thread, shared by the next rows with the
    /// same names so a result's rows hold one `Arc<[String]>`.
    static LAST_COLUMNS: RefCell<Option<Arc<[String]>>> = const { RefCell::new(None) };
}

fn shared_columns<'a, R: DieselRow<'a, Pg>>(row: &R) -> Arc<[String]> {
    let count = row.field_count();
    let names = |i: usize| DieselRow::get(row, i).and_then(|f| f.field_name().map(str::to_owned));
    LAST_COLUMNS.with(|last| {
        let mut last = last.borrow_mut();
        if let Some(cols) = last.as_ref() {
            let same = cols.len() == count
                && cols.iter().enumerate().all(|(i, c)| {
                    DieselRow::get(row, i).is_some_and(|f| f.field_name().unwrap_or_default() == c)
                });
            if same {
                return Arc::clone(cols);
            }
        }
        let cols: Arc<[String]> = (0..count).map(|i| names(i).unwrap_or_default()).collect();
        *last = Some(Arc::clone(&cols));
        cols
    })
}

impl QueryableByName<Pg> for DynamicRow {
    fn build<'a>(row: &impl NamedRow<'a, Pg>) -> deserialize::Result<Self> {
        let columns = shared_columns(row);
        let mut values = Vec::with_capacity(columns.len());
        for (i, name) in columns.iter().enumerate() {
            let field = DieselRow::get(row, i)
                .ok_or_else(|| Error::decode(format!("column {name:?}"), "missing field"))?;
            let value = match field.value() {
                None => Value::Null(UNKNOWN_NULL_TYPE),
                Some(raw) => {
                    let oid = raw.get_oid();
                    decode(raw).map_err(|e| {
                        Error::decode(format!("column {name:?} (type oid {oid})"), e.to_string())
                    })?
                }
            };
            values.push(value);
        }
        Ok(DynamicRow { columns, values })
    }
}

/// Turns decoded rows into core's rows, giving each NULL its column's type when another row of
/// the result shows it.
fn finish_rows(rows: Vec<DynamicRow>) -> Vec<Row> {
    let mut rows = rows;
    if rows.len() > 1 {
        let width = rows[0].values.len();
        for col in 0..width {
            let known = rows.iter().find_map(|r| match r.values.get(col) {
                Some(Value::Null(_)) | None => None,
                Some(v) => Some(v.pg_type()),
            });
            if let Some(ty) = known {
                for r in &mut rows {
                    if let Some(v @ Value::Null(_)) = r.values.get_mut(col) {
                        *v = Value::Null(ty);
                    }
                }
            }
        }
    }
    rows.into_iter()
        .map(|r| Row::new(r.columns, r.values))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_bind_as_exact_microseconds() {
        let pg = interval_to_pg(TimeDelta::seconds(90_061)).unwrap();
        assert_eq!(
            (pg.microseconds, pg.days, pg.months),
            (90_061_000_000, 0, 0)
        );
        let back = interval_from_pg(PgInterval::new(1_000_000, 2, 0)).unwrap();
        assert_eq!(back, TimeDelta::days(2) + TimeDelta::seconds(1));
        assert!(interval_from_pg(PgInterval::new(0, 0, 1)).is_err());
    }

    #[test]
    fn nulls_take_the_type_other_rows_show() {
        let cols: Arc<[String]> = vec!["a".to_owned()].into();
        let rows = finish_rows(vec![
            DynamicRow {
                columns: Arc::clone(&cols),
                values: vec![Value::Null(UNKNOWN_NULL_TYPE)],
            },
            DynamicRow {
                columns: Arc::clone(&cols),
                values: vec![Value::Int8(1)],
            },
        ]);
        assert_eq!(rows[0].values(), &[Value::Null(PgType::Int8)]);
    }
}
