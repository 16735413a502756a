//! Core's values through sqlx: each [`Value`] bound with its exact Postgres type, each column
//! decoded by the [`ColumnType`] of its type OID.

use std::sync::Arc;

use chrono::{DateTime, NaiveDateTime, Utc};
use pgmill::Result;
use pgmill::driver::{
    ColumnType, PgType, Row, RowSource, RowView, Statement, Value, decode_result, decode_values,
    interval, timestamp,
};
use sqlx::error::BoxDynError;
use sqlx::postgres::types::PgInterval;
use sqlx::postgres::{PgArguments, PgRow, PgValueFormat, PgValueRef};
use sqlx::query::Query;
use sqlx::types::Json;
use sqlx::{
    Arguments as _, AssertSqlSafe, Column as _, Decode, Postgres, Row as _, TypeInfo as _,
    ValueRef as _,
};

use crate::error::{column_error, db_error, param_error};

/// The statement as a sqlx query with every parameter bound with its exact Postgres type.
pub(crate) fn bound(stmt: &Statement) -> Result<Query<'static, Postgres, PgArguments>> {
    // The arguments have room for every value before the first is encoded: sqlx's own binding
    // grows their types and their buffer as values come (two or three allocations a statement).
    let mut args = PgArguments::default();
    args.reserve(stmt.params().len(), encoded_size(stmt.params()));
    for (i, value) in stmt.params().iter().enumerate() {
        bind(&mut args, value).map_err(|e| param_error(i + 1, e))?;
    }
    // Core renders its SQL once per schema from validated, quoted names, and binds every value:
    // the text is safe to prepare, and the `Arc<str>` is shared without a copy.
    Ok(sqlx::query_with(
        AssertSqlSafe(Arc::clone(stmt.shared_sql())),
        args,
    ))
}

/// About the bytes `params` take encoded (each value's length word and its data): a hint for
/// the arguments' buffer, exact for most values, a guess for JSON.
fn encoded_size(params: &[Value]) -> usize {
    params
        .iter()
        .map(|v| {
            4 + match v {
                Value::Null(_) => 0,
                Value::Bool(_) => 1,
                Value::Int2(_) => 2,
                Value::Int4(_) => 4,
                Value::Int8(_) | Value::Float8(_) | Value::Timestamptz(_) => 8,
                Value::Interval(_) => 16,
                Value::Text(v) => v.len(),
                Value::Bytea(v) => v.len(),
                Value::TextArray(v) => 20 + v.iter().map(|s| 4 + s.len()).sum::<usize>(),
                Value::Int8Array(v) => 20 + 12 * v.len(),
                Value::TimestamptzArray(v) => 20 + 12 * v.len(),
                Value::JsonbArray(v) => 20 + 68 * v.len(),
                _ => 64,
            }
        })
        .sum()
}

fn bind(args: &mut PgArguments, value: &Value) -> Result<(), BoxDynError> {
    match value {
        Value::Null(ty) => bind_null(args, *ty),
        Value::Bool(v) => args.add(*v),
        Value::Int2(v) => args.add(*v),
        Value::Int4(v) => args.add(*v),
        Value::Int8(v) => args.add(*v),
        Value::Float8(v) => args.add(*v),
        Value::Text(v) => args.add(v.as_str()),
        Value::Bytea(v) => args.add(v.as_slice()),
        Value::Jsonb(v) => args.add(Json(v)),
        Value::Timestamptz(v) => args.add(*v),
        Value::Interval(v) => {
            let (months, days, microseconds) = interval::to_parts(*v)?;
            args.add(PgInterval {
                months,
                days,
                microseconds,
            })
        }
        Value::TextArray(v) => args.add(v.as_slice()),
        Value::Int8Array(v) => args.add(v.as_slice()),
        Value::JsonbArray(v) => args.add(v.as_slice()),
        Value::TimestamptzArray(v) => args.add(v.as_slice()),
        other => Err(format!("no sqlx binding for {} values", other.pg_type().name()).into()),
    }
}

fn bind_null(args: &mut PgArguments, ty: PgType) -> Result<(), BoxDynError> {
    match ty {
        PgType::Bool => args.add(None::<bool>),
        PgType::Int2 => args.add(None::<i16>),
        PgType::Int4 => args.add(None::<i32>),
        PgType::Int8 => args.add(None::<i64>),
        PgType::Float8 => args.add(None::<f64>),
        PgType::Text => args.add(None::<String>),
        PgType::Bytea => args.add(None::<Vec<u8>>),
        PgType::Jsonb => args.add(None::<Json<serde_json::Value>>),
        PgType::Timestamptz => args.add(None::<DateTime<Utc>>),
        PgType::Interval => args.add(None::<PgInterval>),
        PgType::TextArray => args.add(None::<Vec<String>>),
        PgType::Int8Array => args.add(None::<Vec<i64>>),
        PgType::JsonbArray => args.add(None::<Vec<serde_json::Value>>),
        PgType::TimestamptzArray => args.add(None::<Vec<DateTime<Utc>>>),
        other => Err(format!("no sqlx binding for NULL {}", other.name()).into()),
    }
}

/// Decodes a result; column types are looked up once, from the first row.
pub(crate) fn decode_rows(rows: &[PgRow]) -> Result<Vec<Row>> {
    let types = column_types(rows)?;
    decode_result(
        rows,
        |row| row.columns().iter().map(|c| c.name()),
        |row| decode_values(types.len(), |i| decode_column(row, &types, i)),
    )
}

/// A result's library rows and their column types, held to be read later
/// ([`pgmill::driver::HeldRows`]).
pub(crate) struct LibraryRows {
    rows: Vec<PgRow>,
    types: Vec<ColumnType>,
}

impl LibraryRows {
    /// Holds `rows`, their column types looked up once, from the first row.
    pub(crate) fn new(rows: Vec<PgRow>) -> Result<Self> {
        let types = column_types(&rows)?;
        Ok(LibraryRows { rows, types })
    }
}

impl RowSource for LibraryRows {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn read_each(&mut self, read: &mut dyn FnMut(&mut dyn RowView) -> Result<()>) -> Result<()> {
        let types = &self.types;
        self.rows
            .iter()
            .try_for_each(|row| read(&mut LibraryRow { row, types }))
    }
}

/// The types of a result's columns, from its first row (none for an empty result).
fn column_types(rows: &[PgRow]) -> Result<Vec<ColumnType>> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    first
        .columns()
        .iter()
        .map(|c| {
            let ty = c.type_info();
            ty.oid()
                .and_then(|oid| ColumnType::from_oid(oid.0))
                .ok_or_else(|| column_error(c.name(), ty.name(), "not a type pgmill reads".into()))
        })
        .collect()
}

/// Decodes column `i` of `row`, whose result's columns have `types`.
fn decode_column(row: &PgRow, types: &[ColumnType], i: usize) -> Result<Value> {
    let raw = row.try_get_raw(i).map_err(db_error)?;
    // The type's name only for an error: naming it for every value was an allocation per column
    // of every row.
    decode_value(types[i], raw).map_err(|e| {
        let column = row.column(i);
        column_error(column.name(), column.type_info().name(), e)
    })
}

/// A library row read in place: each column decoded by its type when asked for.
struct LibraryRow<'r> {
    row: &'r PgRow,
    types: &'r [ColumnType],
}

impl RowView for LibraryRow<'_> {
    fn width(&self) -> usize {
        self.types.len()
    }

    fn name(&self, i: usize) -> &str {
        self.row.column(i).name()
    }

    fn value(&mut self, i: usize) -> Result<Value> {
        decode_column(self.row, self.types, i)
    }

    fn int2(&mut self, i: usize) -> Result<Option<i16>> {
        self.typed(i, &[ColumnType::Int2])
    }

    fn int8(&mut self, i: usize) -> Result<Option<i64>> {
        self.typed(i, &[ColumnType::Int8])
    }

    fn text(&mut self, i: usize) -> Result<Option<String>> {
        self.typed(i, &[ColumnType::Text])
    }

    fn jsonb(&mut self, i: usize) -> Result<Option<serde_json::Value>> {
        // sqlx tells json from jsonb by the value's type itself.
        self.typed(i, &[ColumnType::Jsonb, ColumnType::Json])
    }

    fn timestamptz(&mut self, i: usize) -> Result<Option<DateTime<Utc>>> {
        Ok(self
            .typed::<PgTimestamptz>(i, &[ColumnType::Timestamptz])?
            .map(|t| t.0))
    }

    fn text_array(&mut self, i: usize) -> Result<Option<Vec<String>>> {
        self.typed(i, &[ColumnType::TextArray])
    }

    fn jsonb_array(&mut self, i: usize) -> Result<Option<Vec<serde_json::Value>>> {
        self.typed(i, &[ColumnType::JsonbArray, ColumnType::JsonArray])
    }
}

impl<'r> LibraryRow<'r> {
    /// Reads column `i` as `T` when its type is one of `accepted`, NULL as `None`. The types
    /// were read once per result ([`column_types`]), so each value is only decoded, without
    /// sqlx's per-value type check (`Row::try_get`), which costs more than the decoding.
    fn typed<T: Decode<'r, Postgres>>(
        &self,
        i: usize,
        accepted: &[ColumnType],
    ) -> Result<Option<T>> {
        let column = || self.row.column(i);
        if !accepted.contains(&self.types[i]) {
            let expected = accepted[0].pg_type().name();
            return Err(column_error(
                column().name(),
                column().type_info().name(),
                format!("read as {expected}").into(),
            ));
        }
        let raw = self.row.try_get_raw(i).map_err(db_error)?;
        if raw.is_null() {
            return Ok(None);
        }
        T::decode(raw)
            .map(Some)
            .map_err(|e| column_error(column().name(), column().type_info().name(), e))
    }
}

fn decode_value(ty: ColumnType, raw: PgValueRef<'_>) -> Result<Value, BoxDynError> {
    if raw.is_null() {
        return Ok(Value::Null(ty.pg_type()));
    }
    Ok(match ty {
        ColumnType::Bool => Value::Bool(decode(raw)?),
        ColumnType::Int2 => Value::Int2(decode(raw)?),
        ColumnType::Int4 => Value::Int4(decode(raw)?),
        ColumnType::Int8 => Value::Int8(decode(raw)?),
        ColumnType::Float8 => Value::Float8(decode(raw)?),
        ColumnType::Text => Value::Text(decode(raw)?),
        ColumnType::Bytea => Value::Bytea(decode(raw)?),
        // sqlx tells json from jsonb by the value's type itself.
        ColumnType::Jsonb | ColumnType::Json => {
            Value::Jsonb(decode::<Json<serde_json::Value>>(raw)?.0)
        }
        ColumnType::Timestamptz => Value::Timestamptz(decode::<PgTimestamptz>(raw)?.0),
        ColumnType::Timestamp => Value::Timestamptz(decode::<NaiveDateTime>(raw)?.and_utc()),
        ColumnType::Interval => {
            let i: PgInterval = decode(raw)?;
            Value::Interval(interval::from_parts(i.months, i.days, i.microseconds)?)
        }
        ColumnType::TextArray => Value::TextArray(decode(raw)?),
        ColumnType::Int8Array => Value::Int8Array(decode(raw)?),
        ColumnType::JsonbArray | ColumnType::JsonArray => Value::JsonbArray(decode(raw)?),
        ColumnType::TimestamptzArray => Value::TimestamptzArray(decode(raw)?),
        other => return Err(format!("no sqlx decoding for {other:?} columns").into()),
    })
}

/// A `timestamptz` column: in the binary format (every prepared statement's results) read through
/// core's [`timestamp`] module, which takes fewer steps than sqlx's `chrono` decoder; in the text
/// format (simple queries) read by sqlx.
struct PgTimestamptz(DateTime<Utc>);

impl<'r> Decode<'r, Postgres> for PgTimestamptz {
    fn decode(raw: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(PgTimestamptz(match raw.format() {
            PgValueFormat::Binary => timestamp::from_binary(raw.as_bytes()?)?,
            PgValueFormat::Text => DateTime::<Utc>::decode(raw)?,
        }))
    }
}

fn decode<'r, T: Decode<'r, Postgres>>(raw: PgValueRef<'r>) -> Result<T, BoxDynError> {
    T::decode(raw)
}
