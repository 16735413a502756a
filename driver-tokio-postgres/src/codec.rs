//! Core's values through tokio-postgres: parameters borrowed from the [`Statement`] and sent with
//! the type of their [`PgType`], columns decoded by the [`ColumnType`] of their type OID.

use std::error::Error as StdError;

use bytes::BytesMut;
use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};
use pgmill::Result;
use pgmill::driver::{
    ColumnType, PgType, Row, RowSource, RowView, Statement, Value, decode_result, decode_values,
    interval, timestamp,
};
use postgres_types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use crate::error::codec_error;

type BoxError = Box<dyn StdError + Sync + Send>;

/// A statement's parameters, borrowed, with the Postgres type each is sent as.
pub(crate) struct Params<'s> {
    values: Vec<(Param<'s>, Type)>,
}

impl<'s> Params<'s> {
    pub(crate) fn new(stmt: &'s Statement) -> Result<Self> {
        let values = stmt
            .params()
            .iter()
            .map(|v| Ok((Param(v), library_type(v.pg_type())?)))
            .collect::<Result<_>>()?;
        Ok(Params { values })
    }

    /// The parameter types, for preparing the statement.
    pub(crate) fn types(&self) -> Vec<Type> {
        self.values.iter().map(|(_, t)| t.clone()).collect()
    }

    /// The values, for running a prepared statement.
    pub(crate) fn values(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|(p, _)| p as &(dyn ToSql + Sync))
            .collect()
    }

    /// The `(value, type)` pairs `query_typed` / `execute_typed` take.
    pub(crate) fn typed(&self) -> Vec<(&(dyn ToSql + Sync), Type)> {
        self.values
            .iter()
            .map(|(p, t)| (p as &(dyn ToSql + Sync), t.clone()))
            .collect()
    }
}

/// The tokio-postgres type a [`PgType`] is bound as: each of today's types named (a lookup by oid
/// is a search through every type the library knows, once per parameter of every statement), any
/// later one found by its oid.
fn library_type(t: PgType) -> Result<Type> {
    let known = match t {
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
        other => return by_oid(other),
    };
    Ok(known)
}

/// The tokio-postgres type with `t`'s oid.
fn by_oid(t: PgType) -> Result<Type> {
    Type::from_oid(t.oid()).ok_or_else(|| {
        codec_error(format!(
            "parameter type {} is not supported by the tokio-postgres driver",
            t.name()
        ))
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

    // The type is chosen from the value itself (`library_type`) and each variant checks it again
    // above.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A duration as an `interval`, in the binary format core's [`interval`] module encodes (the
/// library has no interval type of its own).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PgInterval(TimeDelta);

impl ToSql for PgInterval {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.extend_from_slice(&interval::to_binary(self.0)?);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for PgInterval {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(PgInterval(interval::from_binary(raw)?))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
}

/// A `timestamptz` column read through core's [`timestamp`] module, which reads the binary
/// format in fewer steps than the library's `chrono` decoder.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PgTimestamptz(DateTime<Utc>);

impl<'a> FromSql<'a> for PgTimestamptz {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(PgTimestamptz(timestamp::from_binary(raw)?))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
}

/// Decodes a result.
pub(crate) fn decode_rows(rows: &[tokio_postgres::Row]) -> Result<Vec<Row>> {
    decode_result(
        rows,
        |row| row.columns().iter().map(|c| c.name()),
        |row| decode_values(row.len(), |i| decode_column(row, i)),
    )
}

/// A result's library rows, held to be read later ([`pgmill::driver::HeldRows`]).
pub(crate) struct LibraryRows(pub(crate) Vec<tokio_postgres::Row>);

impl RowSource for LibraryRows {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn read_each(&mut self, read: &mut dyn FnMut(&mut dyn RowView) -> Result<()>) -> Result<()> {
        self.0.iter().try_for_each(|row| read(&mut LibraryRow(row)))
    }
}

/// A library row read in place: each column decoded by its type when asked for.
struct LibraryRow<'r>(&'r tokio_postgres::Row);

impl RowView for LibraryRow<'_> {
    fn width(&self) -> usize {
        self.0.len()
    }

    fn name(&self, i: usize) -> &str {
        self.0.columns()[i].name()
    }

    fn value(&mut self, i: usize) -> Result<Value> {
        decode_column(self.0, i)
    }

    fn int2(&mut self, i: usize) -> Result<Option<i16>> {
        typed(self.0, i)
    }

    fn int8(&mut self, i: usize) -> Result<Option<i64>> {
        typed(self.0, i)
    }

    fn text(&mut self, i: usize) -> Result<Option<String>> {
        typed(self.0, i)
    }

    fn jsonb(&mut self, i: usize) -> Result<Option<serde_json::Value>> {
        typed(self.0, i)
    }

    fn timestamptz(&mut self, i: usize) -> Result<Option<DateTime<Utc>>> {
        Ok(typed::<PgTimestamptz>(self.0, i)?.map(|t| t.0))
    }

    fn text_array(&mut self, i: usize) -> Result<Option<Vec<String>>> {
        typed(self.0, i)
    }

    fn jsonb_array(&mut self, i: usize) -> Result<Option<Vec<serde_json::Value>>> {
        typed(self.0, i)
    }
}

/// Decodes column `i` by its type.
fn decode_column(row: &tokio_postgres::Row, i: usize) -> Result<Value> {
    let column = &row.columns()[i];
    let Some(ty) = ColumnType::from_oid(column.type_().oid()) else {
        return Err(codec_error(format!(
            "column {:?} has type {}, which pgmill does not decode",
            column.name(),
            column.type_()
        )));
    };
    let null = ty.pg_type();
    // The library's `FromSql` impls accept every type of a variant (text, varchar, bpchar and
    // name for `String`; json and jsonb for `serde_json::Value`).
    match ty {
        ColumnType::Bool => get(row, i, null, Value::Bool),
        ColumnType::Int2 => get(row, i, null, Value::Int2),
        ColumnType::Int4 => get(row, i, null, Value::Int4),
        ColumnType::Int8 => get(row, i, null, Value::Int8),
        ColumnType::Float8 => get(row, i, null, Value::Float8),
        ColumnType::Text => get(row, i, null, Value::Text),
        ColumnType::Bytea => get(row, i, null, Value::Bytea),
        ColumnType::Jsonb | ColumnType::Json => get(row, i, null, Value::Jsonb),
        ColumnType::Timestamptz => get(row, i, null, |t: PgTimestamptz| Value::Timestamptz(t.0)),
        ColumnType::Timestamp => get(row, i, null, |t: NaiveDateTime| {
            Value::Timestamptz(t.and_utc())
        }),
        ColumnType::Interval => get(row, i, null, |d: PgInterval| Value::Interval(d.0)),
        ColumnType::TextArray => get(row, i, null, Value::TextArray),
        ColumnType::Int8Array => get(row, i, null, Value::Int8Array),
        ColumnType::JsonbArray | ColumnType::JsonArray => get(row, i, null, Value::JsonbArray),
        ColumnType::TimestamptzArray => get(row, i, null, |v: Vec<DateTime<Utc>>| {
            Value::TimestamptzArray(v)
        }),
        other => Err(codec_error(format!(
            "column {:?} has type {other:?}, which the tokio-postgres driver does not decode",
            column.name()
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
    Ok(match typed(row, i)? {
        Some(v) => wrap(v),
        None => Value::Null(null),
    })
}

/// Reads column `i` as `T` (the library checks that `T` reads the column's type), NULL as `None`.
fn typed<'r, T: FromSql<'r>>(row: &'r tokio_postgres::Row, i: usize) -> Result<Option<T>> {
    row.try_get::<_, Option<T>>(i).map_err(|e| {
        let column = &row.columns()[i];
        let cause = e.source().map(ToString::to_string).unwrap_or_default();
        codec_error(format!(
            "cannot decode column {:?} of type {}: {cause}",
            column.name(),
            column.type_()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_named_is_the_librarys_type_of_its_oid() {
        for t in PgType::ALL {
            assert_eq!(library_type(t).unwrap(), by_oid(t).unwrap(), "{t:?}");
        }
    }

    #[test]
    fn intervals_go_through_the_library_in_the_binary_format() {
        let d = TimeDelta::days(40) + TimeDelta::microseconds(7);
        let mut buf = BytesMut::new();
        PgInterval(d).to_sql(&Type::INTERVAL, &mut buf).unwrap();
        assert_eq!(PgInterval::from_sql(&Type::INTERVAL, &buf).unwrap().0, d);
    }

    #[test]
    fn timestamps_read_as_the_librarys_decoder_reads_them() {
        let t = DateTime::from_timestamp_micros(1_764_633_600_123_456).unwrap();
        let mut buf = BytesMut::new();
        t.to_sql(&Type::TIMESTAMPTZ, &mut buf).unwrap();
        let ours = PgTimestamptz::from_sql(&Type::TIMESTAMPTZ, &buf).unwrap().0;
        let library = DateTime::<Utc>::from_sql(&Type::TIMESTAMPTZ, &buf).unwrap();
        assert_eq!((ours, library), (t, t));
        assert!(PgTimestamptz::accepts(&Type::TIMESTAMPTZ));
        assert!(!PgTimestamptz::accepts(&Type::TIMESTAMP));
    }

    #[test]
    fn every_pg_type_maps_to_a_library_type() {
        assert_eq!(library_type(PgType::Int8).unwrap(), Type::INT8);
        assert_eq!(library_type(PgType::JsonbArray).unwrap(), Type::JSONB_ARRAY);
        assert_eq!(library_type(PgType::Interval).unwrap(), Type::INTERVAL);
    }
}
