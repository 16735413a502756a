//! Core's statements through diesel, and rows decoded dynamically.
//!
//! A statement runs as a [`SqlStatement`]: `diesel::sql_query(sql).into_boxed::<Pg>()` with one
//! typed bind per [`Value`], which diesel keeps in the connection's prepared statement cache,
//! keyed by its SQL and bind types, so the engine's few statements are each prepared once per
//! connection instead of parsed and planned on every call (unless the connection's cache is
//! disabled, `set_prepared_statement_cache_size(CacheSize::Disabled)`). Unnamed, it is a plain
//! `sql_query`, which diesel never caches: one round trip, for a transaction-mode pooler.
//!
//! [`DynamicRow`] implements diesel's [`QueryableByName`] by hand and, instead of looking columns
//! up by name, walks every field of the row, reads its type OID with [`PgValue::get_oid`] and
//! decodes it by the [`ColumnType`] core gives for that OID, with the matching `FromSql` impl.

use std::cell::RefCell;
use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::deserialize::{self, FromSql, QueryableByName};
use diesel::pg::data_types::PgInterval;
use diesel::pg::{Pg, PgValue};
use diesel::query_builder::{AstPass, BoxedSqlQuery, Query, QueryFragment, QueryId, SqlQuery};
use diesel::row::{Field, NamedRow, Row as DieselRow};
use diesel::sql_types::{
    Array, BigInt, Binary, Bool, Double, Integer, Interval, Json, Jsonb, Nullable, SmallInt, Text,
    Timestamp, Timestamptz, Untyped,
};
use diesel::{PgConnection, QueryResult, RunQueryDsl};
use pgmill::driver::{ColumnType, PgType, Row, Statement, Value, interval};
use pgmill::{DbError, DbErrorKind, Error, Result};

use crate::error::query_error;

/// How statements are sent on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Statements {
    /// Through the connection's prepared statement cache.
    Cached,
    /// Unnamed, each parsed and planned in its one round trip (`sql_query`).
    Unnamed,
}

/// Runs a statement for its affected-row count.
pub(crate) fn execute(conn: &mut PgConnection, stmt: &Statement, how: Statements) -> Result<u64> {
    let rows = SqlStatement::new(stmt, how)?
        .execute(conn)
        .map_err(query_error)?;
    Ok(rows as u64)
}

/// Runs a statement and decodes every row dynamically.
pub(crate) fn query(
    conn: &mut PgConnection,
    stmt: &Statement,
    how: Statements,
) -> Result<Vec<Row>> {
    let statement = SqlStatement::new(stmt, how)?;
    let rows = with_fresh_columns(|| statement.load::<DynamicRow>(conn)).map_err(|e| match e {
        diesel::result::Error::DeserializationError(inner) => match inner.downcast::<Error>() {
            Ok(decode) => *decode,
            Err(other) => query_error(diesel::result::Error::DeserializationError(other)),
        },
        other => query_error(other),
    })?;
    Ok(finish_rows(rows))
}

/// A statement as diesel runs it: `sql_query(sql)` with each parameter bound with its SQL type.
/// `sql_query` marks itself unsafe to cache; cached, this says it is safe (pgmill's statements
/// are fixed SQL texts with typed binds), so diesel keys the prepared statement by its SQL and
/// bind types. Unnamed, it leaves `sql_query`'s answer, and diesel sends it unnamed.
struct SqlStatement<'a> {
    query: BoxedSqlQuery<'a, Pg, SqlQuery>,
    how: Statements,
}

impl<'a> SqlStatement<'a> {
    fn new(stmt: &'a Statement, how: Statements) -> Result<Self> {
        Ok(SqlStatement {
            query: boxed_query(stmt)?,
            how,
        })
    }
}

impl QueryId for SqlStatement<'_> {
    type QueryId = ();

    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for SqlStatement<'_> {
    type SqlType = Untyped;
}

impl RunQueryDsl<PgConnection> for SqlStatement<'_> {}

impl QueryFragment<Pg> for SqlStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.query.walk_ast(out)
    }

    fn is_safe_to_cache_prepared(&self, backend: &Pg) -> QueryResult<bool> {
        match self.how {
            Statements::Cached => Ok(true),
            Statements::Unnamed => self.query.is_safe_to_cache_prepared(backend),
        }
    }
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
        Value::Interval(v) => {
            let (months, days, micros) = interval::to_parts(*v)
                .map_err(|m| Error::from(DbError::new(DbErrorKind::Codec, m)))?;
            q.bind::<Interval, _>(PgInterval::new(micros, days, months))
        }
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

/// Decodes one non-NULL value by the column type of its OID.
fn decode(value: PgValue<'_>) -> deserialize::Result<Value> {
    let oid = value.get_oid().get();
    let ty =
        ColumnType::from_oid(oid).ok_or_else(|| format!("unsupported column type (oid {oid})"))?;
    let v = match ty {
        ColumnType::Bool => Value::Bool(<bool as FromSql<Bool, Pg>>::from_sql(value)?),
        ColumnType::Int2 => Value::Int2(<i16 as FromSql<SmallInt, Pg>>::from_sql(value)?),
        ColumnType::Int4 => Value::Int4(<i32 as FromSql<Integer, Pg>>::from_sql(value)?),
        ColumnType::Int8 => Value::Int8(<i64 as FromSql<BigInt, Pg>>::from_sql(value)?),
        ColumnType::Float8 => Value::Float8(<f64 as FromSql<Double, Pg>>::from_sql(value)?),
        ColumnType::Text => Value::Text(<String as FromSql<Text, Pg>>::from_sql(value)?),
        ColumnType::Bytea => Value::Bytea(<Vec<u8> as FromSql<Binary, Pg>>::from_sql(value)?),
        ColumnType::Jsonb => {
            Value::Jsonb(<serde_json::Value as FromSql<Jsonb, Pg>>::from_sql(value)?)
        }
        ColumnType::Json => {
            Value::Jsonb(<serde_json::Value as FromSql<Json, Pg>>::from_sql(value)?)
        }
        ColumnType::Timestamptz => Value::Timestamptz(<DateTime<Utc> as FromSql<
            Timestamptz,
            Pg,
        >>::from_sql(value)?),
        ColumnType::Timestamp => Value::Timestamptz(
            <NaiveDateTime as FromSql<Timestamp, Pg>>::from_sql(value)?.and_utc(),
        ),
        ColumnType::Interval => {
            let i = <PgInterval as FromSql<Interval, Pg>>::from_sql(value)?;
            Value::Interval(interval::from_parts(i.months, i.days, i.microseconds)?)
        }
        ColumnType::TextArray => {
            Value::TextArray(<Vec<String> as FromSql<Array<Text>, Pg>>::from_sql(value)?)
        }
        ColumnType::Int8Array => {
            Value::Int8Array(<Vec<i64> as FromSql<Array<BigInt>, Pg>>::from_sql(value)?)
        }
        ColumnType::JsonbArray => Value::JsonbArray(<Vec<serde_json::Value> as FromSql<
            Array<Jsonb>,
            Pg,
        >>::from_sql(value)?),
        ColumnType::JsonArray => Value::JsonbArray(<Vec<serde_json::Value> as FromSql<
            Array<Json>,
            Pg,
        >>::from_sql(value)?),
        ColumnType::TimestamptzArray => Value::TimestamptzArray(<Vec<DateTime<Utc>> as FromSql<
            Array<Timestamptz>,
            Pg,
        >>::from_sql(value)?),
        other => return Err(format!("unsupported column type {other:?} (oid {oid})").into()),
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
    /// The column names of the result being loaded on this thread, read from its first row and
    /// shared by the rest ([`query`] empties it before and after each load).
    static RESULT_COLUMNS: RefCell<Option<Arc<[String]>>> = const { RefCell::new(None) };
}

/// The names of the columns of the result `row` belongs to: read from the result's first row
/// only (every row of a result has the same columns).
fn shared_columns<'a, R: DieselRow<'a, Pg>>(row: &R) -> Arc<[String]> {
    RESULT_COLUMNS.with(|columns| {
        let mut columns = columns.borrow_mut();
        let columns = columns.get_or_insert_with(|| {
            (0..row.field_count())
                .map(|i| {
                    DieselRow::get(row, i)
                        .and_then(|f| f.field_name().map(str::to_owned))
                        .unwrap_or_default()
                })
                .collect()
        });
        Arc::clone(columns)
    })
}

/// Runs `load` with [`RESULT_COLUMNS`] empty before and after it, so the names read from its
/// first row are neither a previous result's nor left for the next.
fn with_fresh_columns<T>(load: impl FnOnce() -> T) -> T {
    let forget = || RESULT_COLUMNS.with(|c| c.borrow_mut().take());
    forget();
    let loaded = load();
    forget();
    loaded
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
