//! The values the engine binds as parameters and reads back from rows.

use chrono::{DateTime, TimeDelta, Utc};

/// The Postgres type of a [`Value`]; a NULL carries one so every driver can bind it typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PgType {
    /// `boolean`
    Bool,
    /// `smallint`
    Int2,
    /// `integer`
    Int4,
    /// `bigint`
    Int8,
    /// `double precision`
    Float8,
    /// `text`
    Text,
    /// `bytea`
    Bytea,
    /// `jsonb`
    Jsonb,
    /// `timestamptz`
    Timestamptz,
    /// `interval` (days and microseconds; months are not supported)
    Interval,
    /// `text[]`
    TextArray,
    /// `bigint[]`
    Int8Array,
    /// `jsonb[]`
    JsonbArray,
    /// `timestamptz[]`
    TimestamptzArray,
}

impl PgType {
    /// Every type, in declaration order: what a driver must bind and read.
    pub const ALL: [PgType; 14] = [
        PgType::Bool,
        PgType::Int2,
        PgType::Int4,
        PgType::Int8,
        PgType::Float8,
        PgType::Text,
        PgType::Bytea,
        PgType::Jsonb,
        PgType::Timestamptz,
        PgType::Interval,
        PgType::TextArray,
        PgType::Int8Array,
        PgType::JsonbArray,
        PgType::TimestamptzArray,
    ];

    /// The type's name as Postgres spells it in a cast.
    pub fn name(self) -> &'static str {
        match self {
            PgType::Bool => "boolean",
            PgType::Int2 => "smallint",
            PgType::Int4 => "integer",
            PgType::Int8 => "bigint",
            PgType::Float8 => "double precision",
            PgType::Text => "text",
            PgType::Bytea => "bytea",
            PgType::Jsonb => "jsonb",
            PgType::Timestamptz => "timestamptz",
            PgType::Interval => "interval",
            PgType::TextArray => "text[]",
            PgType::Int8Array => "bigint[]",
            PgType::JsonbArray => "jsonb[]",
            PgType::TimestamptzArray => "timestamptz[]",
        }
    }
}

/// One bound parameter or one column value.
///
/// Drivers map each variant to their library's own type, both ways. Columns of types outside this
/// list are a decode error: core's SQL casts every output column to one of them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// SQL NULL of the given type.
    Null(PgType),
    /// `boolean`
    Bool(bool),
    /// `smallint`
    Int2(i16),
    /// `integer`
    Int4(i32),
    /// `bigint`
    Int8(i64),
    /// `double precision`
    Float8(f64),
    /// `text` (also read from `varchar`, `name`, enums cast to text)
    Text(String),
    /// `bytea`
    Bytea(Vec<u8>),
    /// `jsonb` (also read from `json`)
    Jsonb(serde_json::Value),
    /// `timestamptz`
    Timestamptz(DateTime<Utc>),
    /// `interval`
    Interval(TimeDelta),
    /// `text[]`
    TextArray(Vec<String>),
    /// `bigint[]`
    Int8Array(Vec<i64>),
    /// `jsonb[]`
    JsonbArray(Vec<serde_json::Value>),
    /// `timestamptz[]`
    TimestamptzArray(Vec<DateTime<Utc>>),
}

impl Value {
    /// The Postgres type of this value.
    pub fn pg_type(&self) -> PgType {
        match self {
            Value::Null(t) => *t,
            Value::Bool(_) => PgType::Bool,
            Value::Int2(_) => PgType::Int2,
            Value::Int4(_) => PgType::Int4,
            Value::Int8(_) => PgType::Int8,
            Value::Float8(_) => PgType::Float8,
            Value::Text(_) => PgType::Text,
            Value::Bytea(_) => PgType::Bytea,
            Value::Jsonb(_) => PgType::Jsonb,
            Value::Timestamptz(_) => PgType::Timestamptz,
            Value::Interval(_) => PgType::Interval,
            Value::TextArray(_) => PgType::TextArray,
            Value::Int8Array(_) => PgType::Int8Array,
            Value::JsonbArray(_) => PgType::JsonbArray,
            Value::TimestamptzArray(_) => PgType::TimestamptzArray,
        }
    }

    /// True for SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null(_))
    }
}

/// A Rust type that binds as one Postgres type.
///
/// `Option<T>` binds `None` as a NULL of `T`'s type.
pub trait IntoValue {
    /// The Postgres type this binds as.
    const PG_TYPE: PgType;
    /// Converts into a [`Value`].
    fn into_value(self) -> Value;
}

/// A Rust type that can be read from a [`Value`].
pub trait FromValue: Sized {
    /// Converts from a [`Value`], or says why not.
    ///
    /// # Errors
    ///
    /// Returns a message when the value has another type or is NULL where that is not allowed.
    fn from_value(value: Value) -> Result<Self, String>;
}

macro_rules! value_type {
    ($ty:ty, $variant:ident) => {
        impl IntoValue for $ty {
            const PG_TYPE: PgType = PgType::$variant;
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
        }
    };
}

value_type!(bool, Bool);
value_type!(i16, Int2);
value_type!(i32, Int4);
value_type!(i64, Int8);
value_type!(f64, Float8);
value_type!(String, Text);
value_type!(Vec<u8>, Bytea);
value_type!(serde_json::Value, Jsonb);
value_type!(DateTime<Utc>, Timestamptz);
value_type!(TimeDelta, Interval);
value_type!(Vec<String>, TextArray);
value_type!(Vec<i64>, Int8Array);
value_type!(Vec<serde_json::Value>, JsonbArray);
value_type!(Vec<DateTime<Utc>>, TimestamptzArray);

impl IntoValue for &str {
    const PG_TYPE: PgType = PgType::Text;
    fn into_value(self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl<T: IntoValue> IntoValue for Option<T> {
    const PG_TYPE: PgType = T::PG_TYPE;
    fn into_value(self) -> Value {
        match self {
            Some(v) => v.into_value(),
            None => Value::Null(T::PG_TYPE),
        }
    }
}

impl IntoValue for Value {
    // A `Value` carries its own type; this constant is only used for `Option<Value>`.
    const PG_TYPE: PgType = PgType::Text;
    fn into_value(self) -> Value {
        self
    }
}

fn mismatch(expected: &str, got: &Value) -> String {
    if got.is_null() {
        format!("expected {expected}, found NULL")
    } else {
        format!("expected {expected}, found {}", got.pg_type().name())
    }
}

macro_rules! from_value {
    ($ty:ty, $name:literal, $($pat:pat => $e:expr),+ $(,)?) => {
        impl FromValue for $ty {
            fn from_value(value: Value) -> Result<Self, String> {
                match value {
                    $($pat => Ok($e),)+
                    other => Err(mismatch($name, &other)),
                }
            }
        }
    };
}

from_value!(bool, "boolean", Value::Bool(v) => v);
from_value!(i16, "smallint", Value::Int2(v) => v);
from_value!(i32, "integer", Value::Int4(v) => v, Value::Int2(v) => i32::from(v));
from_value!(i64, "bigint",
    Value::Int8(v) => v,
    Value::Int4(v) => i64::from(v),
    Value::Int2(v) => i64::from(v),
);
from_value!(f64, "double precision", Value::Float8(v) => v);
from_value!(String, "text", Value::Text(v) => v);
from_value!(Vec<u8>, "bytea", Value::Bytea(v) => v);
from_value!(serde_json::Value, "jsonb", Value::Jsonb(v) => v);
from_value!(DateTime<Utc>, "timestamptz", Value::Timestamptz(v) => v);
from_value!(TimeDelta, "interval", Value::Interval(v) => v);
from_value!(Vec<String>, "text[]", Value::TextArray(v) => v);
from_value!(Vec<i64>, "bigint[]", Value::Int8Array(v) => v);
from_value!(Vec<serde_json::Value>, "jsonb[]", Value::JsonbArray(v) => v);
from_value!(Vec<DateTime<Utc>>, "timestamptz[]", Value::TimestamptzArray(v) => v);

impl FromValue for Value {
    fn from_value(value: Value) -> Result<Self, String> {
        Ok(value)
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Null(_) => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_type_once_in_declaration_order() {
        for (i, t) in PgType::ALL.into_iter().enumerate() {
            // A new type fails to compile here until it has its place in `PgType::ALL`.
            let place = match t {
                PgType::Bool => 0,
                PgType::Int2 => 1,
                PgType::Int4 => 2,
                PgType::Int8 => 3,
                PgType::Float8 => 4,
                PgType::Text => 5,
                PgType::Bytea => 6,
                PgType::Jsonb => 7,
                PgType::Timestamptz => 8,
                PgType::Interval => 9,
                PgType::TextArray => 10,
                PgType::Int8Array => 11,
                PgType::JsonbArray => 12,
                PgType::TimestamptzArray => 13,
            };
            assert_eq!(place, i, "{t:?}");
        }
    }

    #[test]
    fn none_binds_as_a_typed_null() {
        assert_eq!(None::<i64>.into_value(), Value::Null(PgType::Int8));
        assert_eq!(Some("a").into_value(), Value::Text("a".into()));
    }

    #[test]
    fn integers_widen_but_never_narrow() {
        assert_eq!(i64::from_value(Value::Int4(7)), Ok(7));
        assert!(i16::from_value(Value::Int8(7)).is_err());
        assert_eq!(
            i64::from_value(Value::Null(PgType::Int8)),
            Err("expected bigint, found NULL".into())
        );
        assert_eq!(
            Option::<i64>::from_value(Value::Null(PgType::Int8)),
            Ok(None)
        );
    }
}
