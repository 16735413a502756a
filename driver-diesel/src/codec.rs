//! Core's statements through diesel, and rows decoded dynamically.
//!
//! A statement runs as a [`SqlStatement`]: core's SQL with one typed bind per [`Value`], which
//! diesel keeps in the connection's prepared statement cache, keyed by its SQL and bind types, so
//! the engine's few statements are each prepared once per connection instead of parsed and
//! planned on every call (unless the connection's cache is disabled,
//! `set_prepared_statement_cache_size(CacheSize::Disabled)`), whether they run for rows or for a
//! count. Unnamed, diesel never caches it: one round trip, for a transaction-mode pooler.
//!
//! Every result is loaded one way: [`CopiedRaw`] implements diesel's [`QueryableByName`] by hand
//! and, instead of looking columns up by name, copies every field's type OID and bytes (diesel's
//! results are in Postgres's binary format) into a [`RawResult`] ([`query_raw`]). Its rows are
//! decoded when read, by the [`ColumnType`] core gives for each OID, with core's decoders
//! ([`binary`]): into core's rows for [`query`], or in place, later and elsewhere, for
//! [`Executor::query_held`](pgmill::driver::Executor::query_held) (and so for
//! `Executor::query_with`, whose default reads those). diesel only carries the bytes.

use std::cell::RefCell;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::deserialize::{self, QueryableByName};
use diesel::pg::Pg;
use diesel::pg::data_types::PgInterval;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::row::{Field, NamedRow, Row as DieselRow};
use diesel::sql_types::{
    Array, BigInt, Binary, Bool, Double, Integer, Interval, Jsonb, Nullable, SmallInt, Text,
    Timestamptz, Untyped,
};
use diesel::{PgConnection, QueryResult, RunQueryDsl};
use pgmill::driver::{
    ColumnType, PgType, Row, RowSource, RowView, Statement, Value, binary, decode_values, interval,
    timestamp,
};
use pgmill::{DbError, DbErrorKind, Error, Result};

use crate::error::query_error;

/// How statements are sent on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Statements {
    /// Through the connection's prepared statement cache.
    Cached,
    /// Unnamed, each parsed and planned in its one round trip (as diesel sends a `sql_query`).
    Unnamed,
}

/// Runs a statement for its affected-row count.
pub(crate) fn execute(conn: &mut PgConnection, stmt: &Statement, how: Statements) -> Result<u64> {
    let rows = SqlStatement::new(stmt, how)?
        .execute(conn)
        .map_err(query_error)?;
    Ok(rows as u64)
}

/// Runs a statement and decodes every row dynamically, into core's rows.
pub(crate) fn query(
    conn: &mut PgConnection,
    stmt: &Statement,
    how: Statements,
) -> Result<Vec<Row>> {
    query_raw(conn, stmt, how)?.into_rows()
}

/// Runs a statement and copies its rows' fields out of diesel's result ([`RawResult`]), to be
/// decoded later: the load builds no value.
pub(crate) fn query_raw(
    conn: &mut PgConnection,
    stmt: &Statement,
    how: Statements,
) -> Result<RawResult> {
    let statement = SqlStatement::new(stmt, how)?;
    // Loads do not nest, so whatever the slot held is left over from a load that panicked.
    RAW_RESULT.with(|r| *r.borrow_mut() = Some(RawResult::default()));
    let loaded = with_fresh_columns(|| statement.load::<CopiedRaw>(conn));
    let raw = RAW_RESULT.with(|r| r.borrow_mut().take());
    let copied = loaded.map_err(load_error)?.len();
    match raw {
        Some(raw) if raw.rows == copied => Ok(raw.finish()),
        _ => Err(Error::decode(
            "result",
            format!("{copied} rows loaded, not all of them copied"),
        )),
    }
}

thread_local! {
    /// The result the load running on this thread copies its rows into, if it copies them.
    static RAW_RESULT: RefCell<Option<RawResult>> = const { RefCell::new(None) };
}

/// What diesel's load of a [`query_raw`] yields per row: nothing, the row's fields having been
/// copied into [`RAW_RESULT`].
struct CopiedRaw;

impl QueryableByName<Pg> for CopiedRaw {
    fn build<'a>(row: &impl NamedRow<'a, Pg>) -> deserialize::Result<Self> {
        let columns = shared_columns(row);
        RAW_RESULT.with(|r| -> deserialize::Result<()> {
            match r.borrow_mut().as_mut() {
                Some(raw) => Ok(raw.push(row, columns)?),
                None => Err("a row copied without a result to copy it into".into()),
            }
        })?;
        Ok(CopiedRaw)
    }
}

/// A load's error: a decoding error of core's as it was raised, anything else as a query error.
fn load_error(e: diesel::result::Error) -> Error {
    match e {
        diesel::result::Error::DeserializationError(inner) => match inner.downcast::<Error>() {
            Ok(decode) => *decode,
            Err(other) => query_error(diesel::result::Error::DeserializationError(other)),
        },
        other => query_error(other),
    }
}

/// A result's fields as the server sent them, copied out of diesel's rows on the thread that
/// loads them ([`query_raw`]) and decoded later, on any thread and as often as asked
/// ([`Executor::query_held`](pgmill::driver::Executor::query_held)): the load copies bytes, the
/// decoding waits for whoever reads them.
#[derive(Debug, Default)]
pub(crate) struct RawResult {
    columns: Arc<[String]>,
    /// How many rows there are.
    rows: usize,
    /// Per column, the type a NULL in it reads as: the type another row shows, as [`query`]
    /// gives it.
    null_types: Vec<PgType>,
    /// Every non-NULL field's bytes, one after another.
    data: Vec<u8>,
    /// Every field, row by row: its type OID (0 for NULL) and where its bytes end in `data`
    /// (they start where the previous field's end).
    fields: Vec<(u32, usize)>,
}

impl RawResult {
    /// Copies one row's fields, the first row setting the result's columns.
    fn push<'a, R: DieselRow<'a, Pg>>(&mut self, row: &R, columns: Arc<[String]>) -> Result<()> {
        for (i, name) in columns.iter().enumerate() {
            let field = field_of(row, i, name)?;
            let oid = match field.value() {
                Some(value) => {
                    self.data.extend_from_slice(value.as_bytes());
                    value.get_oid().get()
                }
                None => 0,
            };
            self.fields.push((oid, self.data.len()));
        }
        self.columns = columns;
        self.rows += 1;
        Ok(())
    }

    /// Decodes every row into core's row of values.
    fn into_rows(mut self) -> Result<Vec<Row>> {
        let columns = Arc::clone(&self.columns);
        let mut rows = Vec::with_capacity(self.rows);
        self.read_each(&mut |row| {
            rows.push(Row::new(
                Arc::clone(&columns),
                decode_values(row.width(), |i| row.value(i))?,
            ));
            Ok(())
        })?;
        Ok(rows)
    }

    /// Settles each column's NULL type once every row is in.
    fn finish(mut self) -> Self {
        let width = self.columns.len();
        self.null_types = (0..width)
            .map(|col| {
                (0..self.rows)
                    .map(|row| self.fields[row * width + col].0)
                    .find(|&oid| oid != 0)
                    .and_then(ColumnType::from_oid)
                    .map_or(UNKNOWN_NULL_TYPE, ColumnType::pg_type)
            })
            .collect();
        self
    }
}

impl RowSource for RawResult {
    fn len(&self) -> usize {
        self.rows
    }

    fn read_each(&mut self, read: &mut dyn FnMut(&mut dyn RowView) -> Result<()>) -> Result<()> {
        (0..self.rows).try_for_each(|row| read(&mut RawRow { result: self, row }))
    }
}

/// One row of a [`RawResult`].
struct RawRow<'r> {
    result: &'r RawResult,
    row: usize,
}

impl RawRow<'_> {
    /// Field `i`'s type OID and bytes, `None` for NULL.
    fn field(&self, i: usize) -> Result<Option<(u32, &[u8])>> {
        let width = self.width();
        if i >= width {
            return Err(Error::decode(format!("column {i}"), "missing field"));
        }
        let at = self.row * width + i;
        let (oid, end) = self.result.fields[at];
        let start = at
            .checked_sub(1)
            .map_or(0, |before| self.result.fields[before].1);
        Ok((oid != 0).then(|| (oid, &self.result.data[start..end])))
    }

    /// Reads column `i` with `read` when its type is one of `accepted` (the first named in the
    /// error when it is not), NULL as `None`: straight from the field's bytes into the Rust type,
    /// without the [`Value`] [`RowView::value`] builds.
    fn typed<T>(
        &self,
        i: usize,
        accepted: &[ColumnType],
        read: impl FnOnce(ColumnType, &[u8]) -> std::result::Result<T, String>,
    ) -> Result<Option<T>> {
        let Some((oid, raw)) = self.field(i)? else {
            return Ok(None);
        };
        let what = || format!("column {:?} (type oid {oid})", self.name(i));
        let ty = ColumnType::from_oid(oid)
            .filter(|ty| accepted.contains(ty))
            .ok_or_else(|| {
                let expected = accepted.first().map_or("?", |t| t.pg_type().name());
                Error::decode(what(), format!("cannot be read as {expected}"))
            })?;
        read(ty, raw)
            .map(Some)
            .map_err(|e| Error::decode(what(), e))
    }
}

/// A copied row as core's [`RowView`], each field decoded from Postgres's binary format by
/// core's [`binary`] decoders when read.
impl RowView for RawRow<'_> {
    fn width(&self) -> usize {
        self.result.columns.len()
    }

    fn name(&self, i: usize) -> &str {
        self.result.columns.get(i).map_or("", String::as_str)
    }

    fn value(&mut self, i: usize) -> Result<Value> {
        let Some((oid, raw)) = self.field(i)? else {
            let null = self.result.null_types.get(i).copied();
            return Ok(Value::Null(null.unwrap_or(UNKNOWN_NULL_TYPE)));
        };
        ColumnType::from_oid(oid)
            .ok_or_else(|| format!("unsupported column type (oid {oid})"))
            .and_then(|ty| binary::decode(ty, raw))
            .map_err(|e| Error::decode(format!("column {:?} (type oid {oid})", self.name(i)), e))
    }

    fn int2(&mut self, i: usize) -> Result<Option<i16>> {
        self.typed(i, &[ColumnType::Int2], |_, raw| binary::int2(raw))
    }

    fn int8(&mut self, i: usize) -> Result<Option<i64>> {
        self.typed(i, &[ColumnType::Int8], |_, raw| binary::int8(raw))
    }

    fn text(&mut self, i: usize) -> Result<Option<String>> {
        self.typed(i, &[ColumnType::Text], |_, raw| binary::text(raw))
    }

    fn jsonb(&mut self, i: usize) -> Result<Option<serde_json::Value>> {
        self.typed(i, &[ColumnType::Jsonb, ColumnType::Json], binary::json)
    }

    fn timestamptz(&mut self, i: usize) -> Result<Option<DateTime<Utc>>> {
        self.typed(i, &[ColumnType::Timestamptz], |_, raw| {
            timestamp::from_binary(raw)
        })
    }

    fn text_array(&mut self, i: usize) -> Result<Option<Vec<String>>> {
        self.typed(i, &[ColumnType::TextArray], |_, raw| {
            binary::text_array(raw)
        })
    }

    fn jsonb_array(&mut self, i: usize) -> Result<Option<Vec<serde_json::Value>>> {
        self.typed(
            i,
            &[ColumnType::JsonbArray, ColumnType::JsonArray],
            binary::json_array,
        )
    }
}

/// A statement as diesel runs it: core's SQL with each parameter bound with its SQL type.
///
/// diesel caches a prepared statement only when every fragment of the query says it may, and
/// `sql_query` always says no; diesel's `execute` asks through a reference, whose answer comes
/// from walking the fragments again (not from an override of `is_safe_to_cache_prepared`), so
/// this says it in its walk: cached, it marks nothing, and diesel keys the prepared statement by
/// its SQL and bind types; unnamed, it marks itself unsafe to cache, and diesel sends it unnamed.
///
/// diesel writes a placeholder (`$1`, `$2`, ...) into the SQL for every parameter it binds, where
/// a hand-written query puts them. Core's SQL already names its parameters (some more than once,
/// not always in order), so the placeholders diesel writes go in a comment after it, which the
/// server ignores, and the values bind to core's `$n` in the same order.
struct SqlStatement<'a> {
    stmt: &'a Statement,
    how: Statements,
    /// The statement's interval parameters in diesel's form, in order (diesel binds references).
    intervals: Vec<PgInterval>,
}

impl<'a> SqlStatement<'a> {
    fn new(stmt: &'a Statement, how: Statements) -> Result<Self> {
        let mut intervals = Vec::new();
        for value in stmt.params() {
            match value {
                Value::Interval(v) => {
                    let (months, days, micros) = interval::to_parts(*v)
                        .map_err(|m| Error::from(DbError::new(DbErrorKind::Codec, m)))?;
                    intervals.push(PgInterval::new(micros, days, months));
                }
                Value::Null(ty) if null_of(*ty).is_none() => return Err(unsupported_type(*ty)),
                Value::Null(_)
                | Value::Bool(_)
                | Value::Int2(_)
                | Value::Int4(_)
                | Value::Int8(_)
                | Value::Float8(_)
                | Value::Text(_)
                | Value::Bytea(_)
                | Value::Jsonb(_)
                | Value::Timestamptz(_)
                | Value::TextArray(_)
                | Value::Int8Array(_)
                | Value::JsonbArray(_)
                | Value::TimestamptzArray(_) => {}
                other => return Err(unsupported_type(other.pg_type())),
            }
        }
        Ok(SqlStatement {
            stmt,
            how,
            intervals,
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
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        if self.how == Statements::Unnamed {
            out.unsafe_to_cache_prepared();
        }
        out.push_sql(self.stmt.sql());
        out.push_sql("\n-- diesel's placeholders:");
        let mut intervals = self.intervals.iter();
        for value in self.stmt.params() {
            out.push_sql(" ");
            match value {
                Value::Interval(_) => match intervals.next() {
                    Some(i) => out.push_bind_param::<Interval, _>(i)?,
                    None => return Err(not_bindable(value.pg_type())),
                },
                _ => bind(&mut out, value)?,
            }
        }
        Ok(())
    }
}

/// Binds `value`, any but an interval, with its SQL type.
fn bind<'b>(out: &mut AstPass<'_, 'b, Pg>, value: &'b Value) -> QueryResult<()> {
    match value {
        Value::Null(ty) => match null_of(*ty) {
            Some(bind_null) => bind_null(out),
            None => Err(not_bindable(*ty)),
        },
        Value::Bool(v) => out.push_bind_param::<Bool, _>(v),
        Value::Int2(v) => out.push_bind_param::<SmallInt, _>(v),
        Value::Int4(v) => out.push_bind_param::<Integer, _>(v),
        Value::Int8(v) => out.push_bind_param::<BigInt, _>(v),
        Value::Float8(v) => out.push_bind_param::<Double, _>(v),
        Value::Text(v) => out.push_bind_param::<Text, _>(v),
        Value::Bytea(v) => out.push_bind_param::<Binary, _>(v),
        Value::Jsonb(v) => out.push_bind_param::<Jsonb, _>(v),
        Value::Timestamptz(v) => out.push_bind_param::<Timestamptz, _>(v),
        Value::TextArray(v) => out.push_bind_param::<Array<Text>, _>(v),
        Value::Int8Array(v) => out.push_bind_param::<Array<BigInt>, _>(v),
        Value::JsonbArray(v) => out.push_bind_param::<Array<Jsonb>, _>(v),
        Value::TimestamptzArray(v) => out.push_bind_param::<Array<Timestamptz>, _>(v),
        other => Err(not_bindable(other.pg_type())),
    }
}

/// A NULL of SQL type `ty`, as a function binding it; `None` for a type this driver cannot bind.
#[allow(clippy::type_complexity)]
fn null_of(ty: PgType) -> Option<for<'x, 'b> fn(&'x mut AstPass<'_, 'b, Pg>) -> QueryResult<()>> {
    Some(match ty {
        PgType::Bool => |out| out.push_bind_param::<Nullable<Bool>, _>(&None::<bool>),
        PgType::Int2 => |out| out.push_bind_param::<Nullable<SmallInt>, _>(&None::<i16>),
        PgType::Int4 => |out| out.push_bind_param::<Nullable<Integer>, _>(&None::<i32>),
        PgType::Int8 => |out| out.push_bind_param::<Nullable<BigInt>, _>(&None::<i64>),
        PgType::Float8 => |out| out.push_bind_param::<Nullable<Double>, _>(&None::<f64>),
        PgType::Text => |out| out.push_bind_param::<Nullable<Text>, _>(&None::<&str>),
        PgType::Bytea => |out| out.push_bind_param::<Nullable<Binary>, _>(&None::<&[u8]>),
        PgType::Jsonb => {
            |out| out.push_bind_param::<Nullable<Jsonb>, _>(&None::<&serde_json::Value>)
        }
        PgType::Timestamptz => {
            |out| out.push_bind_param::<Nullable<Timestamptz>, _>(&None::<DateTime<Utc>>)
        }
        PgType::Interval => |out| out.push_bind_param::<Nullable<Interval>, _>(&None::<PgInterval>),
        PgType::TextArray => {
            |out| out.push_bind_param::<Nullable<Array<Text>>, _>(&None::<&[String]>)
        }
        PgType::Int8Array => {
            |out| out.push_bind_param::<Nullable<Array<BigInt>>, _>(&None::<&[i64]>)
        }
        PgType::JsonbArray => {
            |out| out.push_bind_param::<Nullable<Array<Jsonb>>, _>(&None::<&[serde_json::Value]>)
        }
        PgType::TimestamptzArray => {
            |out| out.push_bind_param::<Nullable<Array<Timestamptz>>, _>(&None::<&[DateTime<Utc>]>)
        }
        _ => return None,
    })
}

/// diesel's error for a parameter it was given no way to bind ([`SqlStatement::new`] refuses
/// those first).
fn not_bindable(ty: PgType) -> diesel::result::Error {
    diesel::result::Error::SerializationError(unsupported_type(ty).into())
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

/// The type a NULL is reported as when no row of the result shows the column's type: diesel hands
/// out no type OID for a NULL field.
const UNKNOWN_NULL_TYPE: PgType = PgType::Text;

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

/// Field `i` (column `name`) of `row`; an error naming the column when the row has none.
fn field_of<'a, 'r, R: DieselRow<'a, Pg>>(row: &'r R, i: usize, name: &str) -> Result<R::Field<'r>>
where
    'a: 'r,
{
    DieselRow::get(row, i).ok_or_else(|| Error::decode(format!("column {name:?}"), "missing field"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_take_the_type_other_rows_show() {
        let raw = RawResult {
            columns: vec!["a".to_owned()].into(),
            rows: 2,
            null_types: Vec::new(),
            data: 1_i64.to_be_bytes().to_vec(),
            fields: vec![(0, 0), (20, 8)],
        }
        .finish();
        let rows = raw.into_rows().unwrap();
        assert_eq!(rows[0].values(), &[Value::Null(PgType::Int8)]);
        assert_eq!(rows[1].values(), &[Value::Int8(1)]);
    }
}
