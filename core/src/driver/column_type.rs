//! Type OIDs: which Postgres type a [`PgType`] binds as, and how a result column is read.
//!
//! The built-in types' OIDs are fixed (`pg_type.dat`) and the same on every server, so this is
//! the one table of them: drivers read a column's OID from their library and ask
//! [`ColumnType::from_oid`] how to decode it.

use super::value::PgType;

const BOOL: u32 = 16;
const BYTEA: u32 = 17;
const NAME: u32 = 19;
const INT8: u32 = 20;
const INT2: u32 = 21;
const INT4: u32 = 23;
const TEXT: u32 = 25;
const JSON: u32 = 114;
const JSON_ARRAY: u32 = 199;
const FLOAT8: u32 = 701;
const TEXT_ARRAY: u32 = 1009;
const VARCHAR_ARRAY: u32 = 1015;
const INT8_ARRAY: u32 = 1016;
const BPCHAR: u32 = 1042;
const VARCHAR: u32 = 1043;
const TIMESTAMP: u32 = 1114;
const TIMESTAMPTZ: u32 = 1184;
const TIMESTAMPTZ_ARRAY: u32 = 1185;
const INTERVAL: u32 = 1186;
const JSONB: u32 = 3802;
const JSONB_ARRAY: u32 = 3807;

impl PgType {
    /// The type's OID, for libraries that bind parameters by OID.
    pub fn oid(self) -> u32 {
        match self {
            PgType::Bool => BOOL,
            PgType::Int2 => INT2,
            PgType::Int4 => INT4,
            PgType::Int8 => INT8,
            PgType::Float8 => FLOAT8,
            PgType::Text => TEXT,
            PgType::Bytea => BYTEA,
            PgType::Jsonb => JSONB,
            PgType::Timestamptz => TIMESTAMPTZ,
            PgType::Interval => INTERVAL,
            PgType::TextArray => TEXT_ARRAY,
            PgType::Int8Array => INT8_ARRAY,
            PgType::JsonbArray => JSONB_ARRAY,
            PgType::TimestamptzArray => TIMESTAMPTZ_ARRAY,
        }
    }
}

/// The type of a result column pgmill reads, as far as decoding it needs to know.
///
/// Every [`PgType`] is one. A few more types read as one of them ([`ColumnType::pg_type`]):
/// `name`, `char(n)` and `varchar` as `text` and `varchar[]` as `text[]`, whose bytes are text's;
/// `json` as `jsonb`, `json[]` as `jsonb[]` and `timestamp` as a `timestamptz` in UTC, which keep a
/// variant of their own because their bytes differ. Any other column is a decode error: core's SQL
/// casts every output column to a [`PgType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColumnType {
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
    /// `text`, `varchar`, `char(n)` or `name`
    Text,
    /// `bytea`
    Bytea,
    /// `jsonb`
    Jsonb,
    /// `json`, read as `jsonb`
    Json,
    /// `timestamptz`
    Timestamptz,
    /// `timestamp` without time zone, read as a `timestamptz` in UTC
    Timestamp,
    /// `interval`
    Interval,
    /// `text[]` or `varchar[]`
    TextArray,
    /// `bigint[]`
    Int8Array,
    /// `jsonb[]`
    JsonbArray,
    /// `json[]`, read as `jsonb[]`
    JsonArray,
    /// `timestamptz[]`
    TimestamptzArray,
}

impl ColumnType {
    /// How a column of the type with this OID is read; `None` for a type pgmill does not read.
    pub fn from_oid(oid: u32) -> Option<Self> {
        Some(match oid {
            BOOL => ColumnType::Bool,
            INT2 => ColumnType::Int2,
            INT4 => ColumnType::Int4,
            INT8 => ColumnType::Int8,
            FLOAT8 => ColumnType::Float8,
            TEXT | NAME | BPCHAR | VARCHAR => ColumnType::Text,
            BYTEA => ColumnType::Bytea,
            JSONB => ColumnType::Jsonb,
            JSON => ColumnType::Json,
            TIMESTAMPTZ => ColumnType::Timestamptz,
            TIMESTAMP => ColumnType::Timestamp,
            INTERVAL => ColumnType::Interval,
            TEXT_ARRAY | VARCHAR_ARRAY => ColumnType::TextArray,
            INT8_ARRAY => ColumnType::Int8Array,
            JSONB_ARRAY => ColumnType::JsonbArray,
            JSON_ARRAY => ColumnType::JsonArray,
            TIMESTAMPTZ_ARRAY => ColumnType::TimestamptzArray,
            _ => return None,
        })
    }

    /// The type the column's values read as; a NULL in the column is a NULL of this type.
    pub fn pg_type(self) -> PgType {
        match self {
            ColumnType::Bool => PgType::Bool,
            ColumnType::Int2 => PgType::Int2,
            ColumnType::Int4 => PgType::Int4,
            ColumnType::Int8 => PgType::Int8,
            ColumnType::Float8 => PgType::Float8,
            ColumnType::Text => PgType::Text,
            ColumnType::Bytea => PgType::Bytea,
            ColumnType::Jsonb | ColumnType::Json => PgType::Jsonb,
            ColumnType::Timestamptz | ColumnType::Timestamp => PgType::Timestamptz,
            ColumnType::Interval => PgType::Interval,
            ColumnType::TextArray => PgType::TextArray,
            ColumnType::Int8Array => PgType::Int8Array,
            ColumnType::JsonbArray | ColumnType::JsonArray => PgType::JsonbArray,
            ColumnType::TimestamptzArray => PgType::TimestamptzArray,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pg_type_is_read_back_as_itself() {
        for ty in PgType::ALL {
            let column = ColumnType::from_oid(ty.oid()).expect("a column type");
            assert_eq!(column.pg_type(), ty, "{ty:?}");
        }
    }

    #[test]
    fn text_like_json_and_timestamp_columns_read_as_core_types() {
        for oid in [TEXT, NAME, BPCHAR, VARCHAR] {
            assert_eq!(ColumnType::from_oid(oid), Some(ColumnType::Text));
        }
        assert_eq!(
            ColumnType::from_oid(JSON).map(ColumnType::pg_type),
            Some(PgType::Jsonb)
        );
        assert_eq!(
            ColumnType::from_oid(TIMESTAMP).map(ColumnType::pg_type),
            Some(PgType::Timestamptz)
        );
        assert_eq!(ColumnType::from_oid(1700), None, "numeric is not read");
    }
}
