//! Rows of every shape decode into core's [`Row`](pgmill::driver::Row).

use chrono::TimeDelta;
use pgmill::driver::{Executor, PgType, Statement, Value};
use serde_json::json;

use crate::{Harness, TestContext};

async fn query<H: Harness>(sql: &str) -> Vec<pgmill::driver::Row> {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let rows = ctx
        .conn()
        .await
        .query(&Statement::new(sql.to_owned()))
        .await;
    rows.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Column names come back as aliased, in select-list order.
pub async fn columns_keep_their_names_and_order<H: Harness>() {
    let rows =
        query::<H>("SELECT 1::int AS zeta, 'x'::text AS alpha, true AS \"Mixed Case\"").await;
    assert_eq!(rows[0].columns(), ["zeta", "alpha", "Mixed Case"]);
    assert_eq!(rows[0].get::<String>("alpha").unwrap(), "x");
    assert!(rows[0].get::<bool>("Mixed Case").unwrap());
}

/// A query matching nothing returns no rows.
pub async fn zero_rows_decode_as_empty<H: Harness>() {
    assert!(
        query::<H>("SELECT 1::int AS a WHERE false")
            .await
            .is_empty()
    );
}

/// Many rows decode, in order.
pub async fn five_thousand_rows_decode<H: Harness>() {
    let rows = query::<H>(
        "SELECT g::bigint AS n, repeat('x', g % 7)::text AS s FROM generate_series(1, 5000) g ORDER BY g",
    )
    .await;
    assert_eq!(rows.len(), 5000);
    let sum: i64 = rows.iter().map(|r| r.get::<i64>("n").unwrap()).sum();
    assert_eq!(sum, 5000 * 5001 / 2);
    assert_eq!(rows[4999].get::<String>("s").unwrap(), "x".repeat(5000 % 7));
}

/// smallint, integer and bigint columns keep their widths.
pub async fn integer_widths_are_kept<H: Harness>() {
    let rows = query::<H>("SELECT 1::smallint AS a, 2::integer AS b, 3::bigint AS c").await;
    assert_eq!(
        rows[0].values(),
        [Value::Int2(1), Value::Int4(2), Value::Int8(3)]
    );
}

/// varchar, name and char(n) columns read as text.
pub async fn varchar_name_and_bpchar_decode_as_text<H: Harness>() {
    let rows = query::<H>(
        "SELECT 'v'::varchar AS v, 'n'::name AS n, 'c'::char(3) AS c, NULL::varchar AS z",
    )
    .await;
    assert_eq!(
        rows[0].values(),
        [
            Value::Text("v".into()),
            Value::Text("n".into()),
            Value::Text("c  ".into()),
            Value::Null(PgType::Text),
        ]
    );
}

/// json columns read as jsonb values.
pub async fn json_decodes_as_jsonb<H: Harness>() {
    let rows = query::<H>("SELECT '{\"a\": [1, \"b\"]}'::json AS j").await;
    assert_eq!(rows[0].values(), [Value::Jsonb(json!({"a": [1, "b"]}))]);
}

/// json[] columns read as jsonb[] values.
pub async fn json_array_decodes_as_jsonb_array<H: Harness>() {
    let rows = query::<H>("SELECT ARRAY['{\"a\": 1}', '[2]']::json[] AS j").await;
    assert_eq!(
        rows[0].values(),
        [Value::JsonbArray(vec![json!({"a": 1}), json!([2])])]
    );
}

/// An interval with a days part reads as the whole duration.
pub async fn interval_with_days_decodes<H: Harness>() {
    let rows = query::<H>("SELECT interval '2 days 03:00:00.5' AS i").await;
    assert_eq!(
        rows[0].values(),
        [Value::Interval(
            TimeDelta::days(2) + TimeDelta::hours(3) + TimeDelta::milliseconds(500)
        )]
    );
}

/// A column of a type core does not use is a decode error, and the connection stays usable.
pub async fn unsupported_type_is_a_decode_error<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let err = conn
        .query(&Statement::new("SELECT 1.5::numeric AS n"))
        .await
        .expect_err("numeric is not a core type");
    assert!(!err.is_connection_lost(), "{err}");
    assert!(err.to_string().contains('n'), "{err}");
    let one: i32 = conn
        .query_scalar(&Statement::new("SELECT 1::int AS one"))
        .await
        .expect("connection still usable");
    assert_eq!(one, 1);
}

/// Asking for a scalar of an empty result is an error, not a panic.
pub async fn query_scalar_of_no_rows_is_an_error<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let err = ctx
        .conn()
        .await
        .query_scalar::<i64>(&Statement::new("SELECT 1::bigint AS a WHERE false"))
        .await
        .expect_err("no rows");
    assert!(matches!(err, pgmill::Error::Decode { .. }), "{err}");
}

/// Rows read in place ([`Executor::query_with`]): every typed reader reads its type (NULL as
/// `None`), a typed read of a column of another type or a NULL where a value is required is an
/// error naming the column, and the connection stays usable.
pub async fn rows_read_in_place_read_each_type_and_refuse_others<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let sql = "SELECT g::bigint AS id, (g % 3)::smallint AS small, ('k' || g)::text AS kind, \
               jsonb_build_object('i', g) AS args, \
               timestamptz '2026-01-02 03:04:05.678901+00' + g * interval '1 second' AS at, \
               ARRAY['a', 'b']::text[] AS names, ARRAY['{\"x\": 1}'::jsonb] AS docs, \
               NULL::jsonb AS nothing, 'abc'::varchar AS label, \
               json_build_object('j', g) AS plain, ARRAY['[1, 2]'::json] AS plains \
               FROM generate_series(1, 3) g ORDER BY g";
    let read = conn
        .query_with(&Statement::new(sql), |row| {
            row.expect_columns(&[
                "id", "small", "kind", "args", "at", "names", "docs", "nothing", "label", "plain",
                "plains",
            ])?;
            Ok((
                row.read::<i64>(0)?,
                row.read::<i16>(1)?,
                row.read::<String>(2)?,
                row.read::<serde_json::Value>(3)?,
                row.read::<chrono::DateTime<chrono::Utc>>(4)?,
                row.read::<Vec<String>>(5)?,
                row.read::<Vec<serde_json::Value>>(6)?,
                row.read::<Option<serde_json::Value>>(7)?,
                row.read::<String>(8)?,
                // `json` read by the `jsonb` readers.
                row.read::<serde_json::Value>(9)?,
                row.read::<Vec<serde_json::Value>>(10)?,
            ))
        })
        .await
        .unwrap();
    assert_eq!(read.len(), 3);
    let (id, small, kind, args, at, names, docs, nothing, label, plain, plains) = &read[1];
    assert_eq!((plain, plains), (&json!({"j": 2}), &vec![json!([1, 2])]));
    assert_eq!((*id, *small, kind.as_str()), (2, 2, "k2"));
    assert_eq!(*args, json!({"i": 2}));
    assert_eq!(
        at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "2026-01-02T03:04:07.678901Z"
    );
    assert_eq!(*names, ["a", "b"]);
    assert_eq!(*docs, [json!({"x": 1})]);
    assert_eq!((nothing, label.as_str()), (&None, "abc"));

    let mistyped = conn
        .query_with(&Statement::new(sql), |row| row.read::<i16>(0))
        .await
        .expect_err("a bigint read as a smallint");
    assert!(mistyped.to_string().contains("id"), "{mistyped}");
    let text_as_json = conn
        .query_with(&Statement::new(sql), |row| row.read::<serde_json::Value>(2))
        .await
        .expect_err("text read as jsonb");
    assert!(text_as_json.to_string().contains("kind"), "{text_as_json}");
    let null = conn
        .query_with(&Statement::new(sql), |row| row.read::<serde_json::Value>(7))
        .await
        .expect_err("a NULL where a value is required");
    assert!(null.to_string().contains("nothing"), "{null}");
    let renamed = conn
        .query_with(&Statement::new(sql), |row| row.expect_columns(&["id"]))
        .await
        .expect_err("fewer columns than the result has");
    assert!(matches!(renamed, pgmill::Error::Decode { .. }), "{renamed}");

    // Times before Postgres's epoch (2000) count back from it; `infinity` has no UTC time, read in
    // place or whole, and is an error naming its column.
    let edges = Statement::new(
        "SELECT timestamptz '1999-12-31 23:59:59.999999+00' AS before, \
         timestamptz 'infinity' AS never",
    );
    let before = conn
        .query_with(&edges, |row| row.read::<chrono::DateTime<chrono::Utc>>(0))
        .await
        .unwrap();
    assert_eq!(
        before[0].to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "1999-12-31T23:59:59.999999Z"
    );
    let never = conn
        .query_with(&edges, |row| row.read::<chrono::DateTime<chrono::Utc>>(1))
        .await
        .expect_err("infinity read in place");
    assert!(never.to_string().contains("never"), "{never}");
    let never = conn.query(&edges).await.expect_err("infinity read whole");
    assert!(never.to_string().contains("never"), "{never}");
    let one: i32 = conn
        .query_scalar(&Statement::new("SELECT 1::int AS one"))
        .await
        .expect("connection still usable");
    assert_eq!(one, 1);
}

/// Rows held undecoded ([`Executor::query_held`], how the producer reads a claim): read after the
/// connection has run its next statement, on another task, and twice (numbers and timestamps read
/// the same the second time), they decode as the same statement read in place does; an empty
/// result holds no row; a typed read of another type is an error naming the column.
pub async fn held_rows_are_read_later_elsewhere_and_twice<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let sql = Statement::new(
        "SELECT g::bigint AS id, (g % 3)::smallint AS small, ('k' || g)::text AS kind, \
         jsonb_build_object('i', g) AS args, \
         timestamptz '2026-01-02 03:04:05.678901+00' + g * interval '1 second' AS at, \
         CASE WHEN g = 2 THEN NULL ELSE ARRAY['a', 'b']::text[] END AS names \
         FROM generate_series(1, 3) g ORDER BY g",
    );
    type Decoded = (
        i64,
        i16,
        String,
        serde_json::Value,
        chrono::DateTime<chrono::Utc>,
        Option<Vec<String>>,
    );
    fn decode(row: &mut dyn pgmill::driver::RowView) -> pgmill::Result<Decoded> {
        row.expect_columns(&["id", "small", "kind", "args", "at", "names"])?;
        Ok((
            row.read(0)?,
            row.read(1)?,
            row.read(2)?,
            row.read(3)?,
            row.read(4)?,
            row.read(5)?,
        ))
    }
    let in_place = conn.query_with(&sql, decode).await.unwrap();
    let mut held = conn.query_held(&sql).await.unwrap();
    assert_eq!(held.len(), 3);
    // The connection goes on to its next statement before the rows are read.
    let one: i32 = conn
        .query_scalar(&Statement::new("SELECT 1::int AS one"))
        .await
        .unwrap();
    assert_eq!(one, 1);
    let (numbers, decoded) = tokio::spawn(async move {
        let mut numbers = Vec::new();
        held.read_each(|row| {
            numbers.push((
                row.read::<i64>(0)?,
                row.read::<i16>(1)?,
                row.read::<chrono::DateTime<chrono::Utc>>(4)?,
            ));
            Ok(())
        })
        .unwrap();
        (numbers, held.decode(decode).unwrap())
    })
    .await
    .unwrap();
    assert_eq!(decoded, in_place);
    assert_eq!(
        numbers,
        in_place
            .iter()
            .map(|(id, small, _, _, at, _)| (*id, *small, *at))
            .collect::<Vec<_>>()
    );
    assert_eq!(decoded[1].5, None);
    assert_eq!(decoded[2].3, json!({"i": 3}));
    // Every column read as a value is the value `query` gives, a NULL of its column's type too.
    let rows = conn.query(&sql).await.unwrap();
    let values = conn
        .query_held(&sql)
        .await
        .unwrap()
        .decode(|row| {
            (0..row.width())
                .map(|i| row.value(i))
                .collect::<pgmill::Result<Vec<_>>>()
        })
        .unwrap();
    assert_eq!(
        values,
        rows.iter().map(|r| r.values().to_vec()).collect::<Vec<_>>()
    );
    assert_eq!(
        values[1][5],
        pgmill::driver::Value::Null(pgmill::driver::PgType::TextArray)
    );

    let none = conn
        .query_held(&Statement::new("SELECT 1::bigint AS a WHERE false"))
        .await
        .unwrap();
    assert!(none.is_empty());
    let mut mistyped = conn.query_held(&sql).await.unwrap();
    let err = mistyped
        .decode(|row| row.read::<serde_json::Value>(2))
        .expect_err("text read as jsonb");
    assert!(err.to_string().contains("kind"), "{err}");
}
