//! Column values in Postgres's binary format, for drivers whose library hands over a field's
//! bytes and type OID rather than a decoded value (diesel): one decoder per [`ColumnType`], so a
//! driver can also copy a result's bytes out of its library and decode them later, elsewhere.
//!
//! Every decoder takes the bytes of one non-NULL field and returns a message when they are not a
//! value of the type (the driver names the column). Arrays are one-dimensional, without NULL
//! elements, as core's values hold them; an empty array has no dimension.

use chrono::{DateTime, Utc};

use super::column_type::ColumnType;
use super::value::Value;
use super::{interval, timestamp};

/// The value of a field of type `ty`.
///
/// # Errors
///
/// A message when `raw` is not a value of `ty`.
pub fn decode(ty: ColumnType, raw: &[u8]) -> Result<Value, String> {
    Ok(match ty {
        ColumnType::Bool => Value::Bool(bool(raw)?),
        ColumnType::Int2 => Value::Int2(int2(raw)?),
        ColumnType::Int4 => Value::Int4(int4(raw)?),
        ColumnType::Int8 => Value::Int8(int8(raw)?),
        ColumnType::Float8 => Value::Float8(float8(raw)?),
        ColumnType::Text => Value::Text(text(raw)?),
        ColumnType::Bytea => Value::Bytea(raw.to_vec()),
        ColumnType::Jsonb | ColumnType::Json => Value::Jsonb(json(ty, raw)?),
        // A `timestamp` has a `timestamptz`'s bytes: microseconds since 2000-01-01, read in UTC.
        ColumnType::Timestamptz | ColumnType::Timestamp => {
            Value::Timestamptz(timestamp::from_binary(raw)?)
        }
        ColumnType::Interval => Value::Interval(interval::from_binary(raw)?),
        ColumnType::TextArray => Value::TextArray(text_array(raw)?),
        ColumnType::Int8Array => Value::Int8Array(array(raw, int8)?),
        ColumnType::JsonbArray | ColumnType::JsonArray => Value::JsonbArray(json_array(ty, raw)?),
        ColumnType::TimestamptzArray => Value::TimestamptzArray(timestamptz_array(raw)?),
    })
}

/// A `boolean`: one byte, 0 or 1.
///
/// # Errors
///
/// A message when `raw` is not one byte.
pub fn bool(raw: &[u8]) -> Result<bool, String> {
    match raw {
        [b] => Ok(*b != 0),
        _ => Err(size_error("boolean", raw, 1)),
    }
}

/// A `smallint`: two bytes, big-endian.
///
/// # Errors
///
/// A message when `raw` is not two bytes.
pub fn int2(raw: &[u8]) -> Result<i16, String> {
    Ok(i16::from_be_bytes(fixed("smallint", raw)?))
}

/// An `integer`: four bytes, big-endian.
///
/// # Errors
///
/// A message when `raw` is not four bytes.
pub fn int4(raw: &[u8]) -> Result<i32, String> {
    Ok(i32::from_be_bytes(fixed("integer", raw)?))
}

/// A `bigint`: eight bytes, big-endian.
///
/// # Errors
///
/// A message when `raw` is not eight bytes.
pub fn int8(raw: &[u8]) -> Result<i64, String> {
    Ok(i64::from_be_bytes(fixed("bigint", raw)?))
}

/// A `double precision`: an IEEE 754 double, big-endian.
///
/// # Errors
///
/// A message when `raw` is not eight bytes.
pub fn float8(raw: &[u8]) -> Result<f64, String> {
    Ok(f64::from_be_bytes(fixed("double precision", raw)?))
}

/// A `text` (or `varchar`, `char(n)`, `name`): its UTF-8 bytes.
///
/// # Errors
///
/// A message when `raw` is not UTF-8.
pub fn text(raw: &[u8]) -> Result<String, String> {
    std::str::from_utf8(raw)
        .map(str::to_owned)
        .map_err(|e| format!("text is not UTF-8: {e}"))
}

/// A [`ColumnType::Jsonb`] (version byte 1, then the JSON text) or [`ColumnType::Json`] (the
/// JSON text alone).
///
/// # Errors
///
/// A message for another column type, another version of `jsonb` or text that is not JSON.
pub fn json(ty: ColumnType, raw: &[u8]) -> Result<serde_json::Value, String> {
    let text = match (ty, raw) {
        (ColumnType::Json, _) => raw,
        (ColumnType::Jsonb, [1, text @ ..]) => text,
        (ColumnType::Jsonb, [version, ..]) => {
            return Err(format!("jsonb of unknown version {version}"));
        }
        (ColumnType::Jsonb, []) => return Err("jsonb of no bytes".to_owned()),
        (other, _) => return Err(format!("{other:?} is not read as JSON")),
    };
    serde_json::from_slice(text).map_err(|e| format!("invalid JSON: {e}"))
}

/// A `text[]` (or `varchar[]`).
///
/// # Errors
///
/// A message when `raw` is not a one-dimensional array of text without NULLs.
pub fn text_array(raw: &[u8]) -> Result<Vec<String>, String> {
    array(raw, text)
}

/// A [`ColumnType::JsonbArray`] or [`ColumnType::JsonArray`].
///
/// # Errors
///
/// A message for another column type, or when `raw` is not a one-dimensional array of JSON
/// without NULLs.
pub fn json_array(ty: ColumnType, raw: &[u8]) -> Result<Vec<serde_json::Value>, String> {
    let element = match ty {
        ColumnType::JsonbArray => ColumnType::Jsonb,
        ColumnType::JsonArray => ColumnType::Json,
        other => return Err(format!("{other:?} is not read as a JSON array")),
    };
    array(raw, |e| json(element, e))
}

/// A `timestamptz[]`.
///
/// # Errors
///
/// A message when `raw` is not a one-dimensional array of `timestamptz` without NULLs, or one
/// of them has no UTC time.
pub fn timestamptz_array(raw: &[u8]) -> Result<Vec<DateTime<Utc>>, String> {
    array(raw, timestamp::from_binary)
}

/// The elements of a one-dimensional array, each read by `element`: the array's header (number
/// of dimensions, a has-NULLs flag, the element type's OID), its one dimension (length, lower
/// bound), then each element's length (-1 for NULL) and bytes.
fn array<T>(
    raw: &[u8],
    mut element: impl FnMut(&[u8]) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut rest = raw;
    let dimensions = take_i32(&mut rest)?;
    let _has_nulls = take_i32(&mut rest)?;
    let _element_oid = take_i32(&mut rest)?;
    let len = match dimensions {
        0 => 0,
        1 => {
            let len = take_i32(&mut rest)?;
            let _lower_bound = take_i32(&mut rest)?;
            usize::try_from(len).map_err(|_| format!("array of length {len}"))?
        }
        n => return Err(format!("array of {n} dimensions, expected one")),
    };
    // Each element takes at least its 4-byte length, so a length beyond that is a broken array,
    // not a reason to allocate.
    if len > rest.len() / 4 {
        return Err(format!("array of {len} elements in {} bytes", raw.len()));
    }
    let mut elements = Vec::with_capacity(len);
    for _ in 0..len {
        let size = take_i32(&mut rest)?;
        let size = usize::try_from(size).map_err(|_| "array with a NULL element".to_owned())?;
        if size > rest.len() {
            return Err(format!(
                "array element of {size} bytes past the array's end"
            ));
        }
        let (bytes, after) = rest.split_at(size);
        elements.push(element(bytes)?);
        rest = after;
    }
    if !rest.is_empty() {
        return Err(format!(
            "array with {} bytes after its elements",
            rest.len()
        ));
    }
    Ok(elements)
}

/// Takes a big-endian `i32` off the front of `rest`.
fn take_i32(rest: &mut &[u8]) -> Result<i32, String> {
    let Some((head, tail)) = rest.split_first_chunk::<4>() else {
        return Err("array cut short".to_owned());
    };
    *rest = tail;
    Ok(i32::from_be_bytes(*head))
}

/// `raw` as exactly `N` bytes of a `what`.
fn fixed<const N: usize>(what: &str, raw: &[u8]) -> Result<[u8; N], String> {
    raw.try_into().map_err(|_| size_error(what, raw, N))
}

fn size_error(what: &str, raw: &[u8], expected: usize) -> String {
    format!("{what} has {} bytes, expected {expected}", raw.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-dimensional array of `elements` in the binary format, element type `oid`.
    fn array_bytes(oid: i32, elements: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        let dims = i32::from(!elements.is_empty());
        out.extend(dims.to_be_bytes());
        out.extend(0_i32.to_be_bytes());
        out.extend(oid.to_be_bytes());
        if !elements.is_empty() {
            out.extend(i32::try_from(elements.len()).unwrap().to_be_bytes());
            out.extend(1_i32.to_be_bytes());
        }
        for e in elements {
            out.extend(i32::try_from(e.len()).unwrap().to_be_bytes());
            out.extend(*e);
        }
        out
    }

    #[test]
    fn scalars_read_their_fixed_sizes_and_nothing_else() {
        assert_eq!(decode(ColumnType::Bool, &[1]), Ok(Value::Bool(true)));
        assert_eq!(decode(ColumnType::Int2, &[0xff, 0xfe]), Ok(Value::Int2(-2)));
        assert_eq!(
            decode(ColumnType::Int4, &7_i32.to_be_bytes()),
            Ok(Value::Int4(7))
        );
        assert_eq!(
            decode(ColumnType::Int8, &i64::MIN.to_be_bytes()),
            Ok(Value::Int8(i64::MIN))
        );
        assert_eq!(
            decode(ColumnType::Float8, &1.5_f64.to_be_bytes()),
            Ok(Value::Float8(1.5))
        );
        assert_eq!(int8(&[0; 4]).unwrap_err(), "bigint has 4 bytes, expected 8");
        assert!(bool(&[]).is_err());
        assert!(int2(&[1, 2, 3]).is_err());
    }

    #[test]
    fn text_and_bytea_are_their_bytes() {
        assert_eq!(
            decode(ColumnType::Text, "é".as_bytes()),
            Ok(Value::Text("é".to_owned()))
        );
        assert!(text(&[0xff]).unwrap_err().contains("UTF-8"));
        assert_eq!(
            decode(ColumnType::Bytea, &[0, 255]),
            Ok(Value::Bytea(vec![0, 255]))
        );
    }

    #[test]
    fn jsonb_has_a_version_byte_and_json_has_none() {
        let v = serde_json::json!({"a": [1, "b"]});
        assert_eq!(
            decode(ColumnType::Jsonb, b"\x01{\"a\":[1,\"b\"]}"),
            Ok(Value::Jsonb(v.clone()))
        );
        assert_eq!(
            decode(ColumnType::Json, b"{\"a\": [1, \"b\"]}"),
            Ok(Value::Jsonb(v))
        );
        assert_eq!(
            json(ColumnType::Jsonb, b"\x02{}").unwrap_err(),
            "jsonb of unknown version 2"
        );
        assert!(json(ColumnType::Jsonb, b"").is_err());
        assert!(json(ColumnType::Text, b"{}").is_err());
        assert!(json_array(ColumnType::Jsonb, &array_bytes(3802, &[])).is_err());
        assert!(
            json(ColumnType::Jsonb, b"\x01{")
                .unwrap_err()
                .contains("invalid JSON")
        );
    }

    #[test]
    fn arrays_read_each_element_in_order() {
        let raw = array_bytes(25, &[b"a", b"", "ü".as_bytes()]);
        assert_eq!(
            decode(ColumnType::TextArray, &raw),
            Ok(Value::TextArray(vec![
                "a".into(),
                String::new(),
                "ü".into()
            ]))
        );
        assert_eq!(
            decode(ColumnType::TextArray, &array_bytes(25, &[])),
            Ok(Value::TextArray(vec![]))
        );
        let raw = array_bytes(20, &[&3_i64.to_be_bytes(), &(-4_i64).to_be_bytes()]);
        assert_eq!(
            decode(ColumnType::Int8Array, &raw),
            Ok(Value::Int8Array(vec![3, -4]))
        );
        let raw = array_bytes(3802, &[b"\x01{}", b"\x011"]);
        assert_eq!(
            decode(ColumnType::JsonbArray, &raw),
            Ok(Value::JsonbArray(vec![
                serde_json::json!({}),
                serde_json::json!(1)
            ]))
        );
        let raw = array_bytes(114, &[b"[true]"]);
        assert_eq!(
            decode(ColumnType::JsonArray, &raw),
            Ok(Value::JsonbArray(vec![serde_json::json!([true])]))
        );
        let raw = array_bytes(1184, &[&0_i64.to_be_bytes()]);
        assert_eq!(
            decode(ColumnType::TimestamptzArray, &raw),
            Ok(Value::TimestamptzArray(vec![
                DateTime::from_timestamp(946_684_800, 0).unwrap()
            ]))
        );
    }

    #[test]
    fn broken_arrays_are_errors_not_panics() {
        let good = array_bytes(25, &[b"ab", b"c"]);
        for cut in 0..good.len() {
            assert!(text_array(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(
            text_array(&trailing)
                .unwrap_err()
                .contains("after its elements")
        );
        let mut null = array_bytes(25, &[b"x"]);
        null.truncate(20);
        null.extend((-1_i32).to_be_bytes());
        assert_eq!(text_array(&null).unwrap_err(), "array with a NULL element");
        let mut two_dims = array_bytes(25, &[b"x"]);
        two_dims[..4].copy_from_slice(&2_i32.to_be_bytes());
        assert!(text_array(&two_dims).unwrap_err().contains("2 dimensions"));
        let mut huge = array_bytes(25, &[b"x"]);
        huge[12..16].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(text_array(&huge).unwrap_err().contains("elements in"));
    }
}
