//! Every parameter type bound and read back unchanged.

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use pgmill::driver::{Executor, PgType, Statement, Value};
use serde_json::json;

use crate::{Harness, TestContext};

/// Binds `value` as `$1::<type>` and reads it back.
async fn round_trip<H: Harness>(value: Value) -> Value {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let sql = format!("SELECT $1::{} AS v", value.pg_type().name());
    let stmt = Statement::new(sql).bind(value);
    let rows = ctx
        .conn()
        .await
        .query(&stmt)
        .await
        .expect("round trip query");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].columns(), ["v"]);
    rows[0].values()[0].clone()
}

async fn assert_round_trips<H: Harness>(values: Vec<Value>) {
    for v in values {
        assert_same::<H>(&round_trip::<H>(v.clone()).await, &v);
    }
}

/// Equal values; a NULL's type is compared only where the driver can report it.
fn assert_same<H: Harness>(got: &Value, want: &Value) {
    if want.is_null() && !H::TYPES_NULL_COLUMNS {
        assert!(got.is_null(), "expected NULL, got {got:?}");
    } else {
        assert_eq!(got, want);
    }
}

fn ts(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, micros: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap() + TimeDelta::microseconds(micros)
}

/// `boolean` both ways.
pub async fn bool_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![Value::Bool(true), Value::Bool(false)]).await;
}

/// `smallint` including its limits.
pub async fn int2_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::Int2(0),
        Value::Int2(i16::MIN),
        Value::Int2(i16::MAX),
    ])
    .await;
}

/// `integer` including its limits.
pub async fn int4_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![Value::Int4(i32::MIN), Value::Int4(i32::MAX)]).await;
}

/// `bigint` including its limits.
pub async fn int8_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::Int8(i64::MIN),
        Value::Int8(i64::MAX),
        Value::Int8(-1),
    ])
    .await;
}

/// `double precision`, including infinities and the smallest subnormal.
pub async fn float8_round_trips_including_extremes<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::Float8(0.1),
        Value::Float8(-1.5e300),
        Value::Float8(f64::MIN_POSITIVE),
        Value::Float8(5e-324),
        Value::Float8(f64::INFINITY),
        Value::Float8(f64::NEG_INFINITY),
    ])
    .await;
    match round_trip::<H>(Value::Float8(f64::NAN)).await {
        Value::Float8(f) => assert!(f.is_nan()),
        other => panic!("expected NaN, got {other:?}"),
    }
}

/// `text` with non-ASCII characters, quotes, backslashes and the empty string.
pub async fn text_round_trips_non_ascii_and_empty<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::Text(String::new()),
        Value::Text("héllo wörld 日本語 🦀".into()),
        Value::Text("it's \"quoted\" \\ back\tslash\nnew line".into()),
    ])
    .await;
}

/// `bytea` with every byte value.
pub async fn bytea_round_trips<H: Harness>() {
    let all: Vec<u8> = (0..=255).collect();
    assert_round_trips::<H>(vec![Value::Bytea(all), Value::Bytea(Vec::new())]).await;
}

/// `jsonb` objects, arrays and scalars, nested and non-ASCII.
pub async fn jsonb_round_trips_nested_values<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::Jsonb(json!({"a": [1, 2.5, null, true], "b": {"c": "ünï\u{1F980}"}, "": ""})),
        Value::Jsonb(json!([])),
        Value::Jsonb(json!("just a string")),
        Value::Jsonb(json!(9_007_199_254_740_993_i64)),
        Value::Jsonb(json!(null)),
    ])
    .await;
}

/// A 1 MB `jsonb` document.
pub async fn jsonb_of_one_megabyte_round_trips<H: Harness>() {
    let items: Vec<_> = (0..10_000)
        .map(|i| json!({"i": i, "s": format!("item-{i:08}-ä-{}", "x".repeat(80))}))
        .collect();
    let doc = json!({ "items": items });
    assert!(doc.to_string().len() > 1_000_000);
    assert_round_trips::<H>(vec![Value::Jsonb(doc)]).await;
}

/// `timestamptz` keeps microseconds, far in the past and the future.
pub async fn timestamptz_round_trips_to_the_microsecond<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::Timestamptz(ts(2026, 11, 30, 13, 45, 6, 123_456)),
        Value::Timestamptz(ts(1900, 1, 1, 0, 0, 0, 1)),
        Value::Timestamptz(ts(2999, 12, 31, 23, 59, 59, 999_999)),
        Value::Timestamptz(ts(1970, 1, 1, 0, 0, 0, 0)),
    ])
    .await;
}

/// `interval`, positive, negative and sub-second.
pub async fn interval_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::Interval(TimeDelta::seconds(5)),
        Value::Interval(TimeDelta::microseconds(1)),
        Value::Interval(TimeDelta::days(3) + TimeDelta::microseconds(4_005_006)),
        Value::Interval(TimeDelta::milliseconds(-1500)),
        Value::Interval(TimeDelta::zero()),
    ])
    .await;
}

/// `text[]` whose elements need quoting in an array literal.
pub async fn text_array_round_trips_with_special_characters<H: Harness>() {
    let items = [
        "plain",
        "",
        "with,comma",
        "{braces}",
        "\"quotes\"",
        "back\\slash",
        "NULL",
        "日本",
        " spaced ",
    ];
    assert_round_trips::<H>(vec![Value::TextArray(
        items.iter().map(|s| s.to_string()).collect(),
    )])
    .await;
}

/// `bigint[]`.
pub async fn int8_array_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![Value::Int8Array(vec![1, -2, i64::MAX, i64::MIN])]).await;
}

/// `jsonb[]` of mixed documents.
pub async fn jsonb_array_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![Value::JsonbArray(vec![
        json!({"at": "2026-01-01", "error": "boom \"quoted\""}),
        json!([1, 2]),
        json!("s"),
    ])])
    .await;
}

/// `timestamptz[]`.
pub async fn timestamptz_array_round_trips<H: Harness>() {
    assert_round_trips::<H>(vec![Value::TimestamptzArray(vec![
        ts(2026, 1, 2, 3, 4, 5, 6),
        ts(2000, 2, 29, 0, 0, 0, 0),
    ])])
    .await;
}

/// Empty arrays of every array type.
pub async fn empty_arrays_round_trip<H: Harness>() {
    assert_round_trips::<H>(vec![
        Value::TextArray(vec![]),
        Value::Int8Array(vec![]),
        Value::JsonbArray(vec![]),
        Value::TimestamptzArray(vec![]),
    ])
    .await;
}

/// A NULL of every type binds typed and reads back as NULL of that type.
pub async fn null_of_every_type_round_trips<H: Harness>() {
    assert_round_trips::<H>(PgType::ALL.into_iter().map(Value::Null).collect()).await;
}

/// Fifty parameters of mixed types bind to their own placeholders.
pub async fn fifty_parameters_bind_in_order<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut cols = Vec::new();
    let mut stmt_params = Vec::new();
    for i in 1..=50 {
        let v = match i % 3 {
            0 => Value::Int8(i),
            1 => Value::Text(format!("t{i}")),
            _ => Value::Null(PgType::Jsonb),
        };
        cols.push(format!("${i}::{} AS c{i}", v.pg_type().name()));
        stmt_params.push(v);
    }
    let mut stmt = Statement::new(format!("SELECT {}", cols.join(", ")));
    for p in stmt_params.iter().cloned() {
        stmt.push(p);
    }
    let rows = ctx.conn().await.query(&stmt).await.expect("query");
    assert_eq!(rows[0].values().len(), stmt_params.len());
    for (got, want) in rows[0].values().iter().zip(&stmt_params) {
        assert_same::<H>(got, want);
    }
    assert_eq!(rows[0].columns()[49], "c50");
}
