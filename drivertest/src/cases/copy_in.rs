//! Bulk `COPY ... FROM STDIN`, or the multi-row `INSERT` drivers without COPY fall back to.

use chrono::{TimeDelta, TimeZone, Utc};
use pgmill::DbErrorKind;
use pgmill::driver::{CopyIn, Driver, Executor, PgType, Transaction, Value};
use serde_json::json;

use crate::{Harness, TestContext};

const TABLE: &str =
    "CREATE TABLE {schema}.c (n bigint, s text, j jsonb, ts timestamptz, tags text[])";
const COPY: &str = "COPY {schema}.c (n, s, j, ts, tags) FROM STDIN";

fn row(i: i64) -> Vec<Value> {
    let base = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    vec![
        Value::Int8(i),
        Value::Text(format!("row {i}\twith tab")),
        Value::Jsonb(json!({"i": i, "k": "v\\\n"})),
        Value::Timestamptz(base + TimeDelta::microseconds(i)),
        Value::TextArray(vec![format!("t{i}"), "x,y".into()]),
    ]
}

/// 10,000 rows go in with COPY where the driver has it, or one multi-row INSERT otherwise.
pub async fn ten_thousand_rows_are_copied_or_inserted_by_fallback<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(&ctx.schema.render(TABLE)).await;
    let mut conn = ctx.conn().await;
    let rows: Vec<Vec<Value>> = (0..10_000).map(row).collect();
    if conn.supports_copy() {
        let mut copy = CopyIn::new(ctx.schema.render(COPY));
        for r in &rows {
            copy.push_row(r);
        }
        assert_eq!(copy.rows(), 10_000);
        assert_eq!(conn.copy_in(&copy).await.expect("copy"), 10_000);
    } else {
        let err = conn
            .copy_in(&CopyIn::new(ctx.schema.render(COPY)))
            .await
            .expect_err("no COPY");
        assert!(matches!(err, pgmill::Error::Unsupported(_)), "{err}");
        let column = |i: usize| -> Vec<Value> { rows.iter().map(|r| r[i].clone()).collect() };
        let ns: Vec<i64> = column(0)
            .into_iter()
            .map(|v| match v {
                Value::Int8(n) => n,
                _ => unreachable!(),
            })
            .collect();
        let ss: Vec<String> = column(1)
            .into_iter()
            .map(|v| match v {
                Value::Text(s) => s,
                _ => unreachable!(),
            })
            .collect();
        let js: Vec<serde_json::Value> = column(2)
            .into_iter()
            .map(|v| match v {
                Value::Jsonb(j) => j,
                _ => unreachable!(),
            })
            .collect();
        let inserted = conn
            .execute(
                &ctx.stmt(
                    "INSERT INTO {schema}.c (n, s, j) \
                     SELECT * FROM unnest($1::bigint[], $2::text[], $3::jsonb[])",
                )
                .bind(ns)
                .bind(ss)
                .bind(js),
            )
            .await
            .expect("fallback insert");
        assert_eq!(inserted, 10_000);
    }
    assert_eq!(ctx.count("c").await, 10_000);
    let last = conn
        .query(&ctx.stmt("SELECT n, s, j FROM {schema}.c WHERE n = 9999"))
        .await
        .expect("select");
    assert_eq!(last[0].values()[..3], row(9999)[..3]);
}

/// Tabs, newlines, backslashes, quotes, NULLs and non-ASCII text survive COPY's text format.
pub async fn copied_rows_keep_special_characters<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(&ctx.schema.render(TABLE)).await;
    let mut conn = ctx.conn().await;
    if !conn.supports_copy() {
        return; // Covered by the fallback in the case above.
    }
    let rows = vec![
        vec![
            Value::Int8(1),
            Value::Text("tab\there\nnew\\line \"q\" 'a' ü 🦀 \\N".into()),
            Value::Jsonb(json!({"s": "\t\n\\\"", "n": null, "u": "日本"})),
            Value::Timestamptz(Utc.with_ymd_and_hms(1999, 12, 31, 23, 59, 59).unwrap()),
            Value::TextArray(vec![
                "a\"b".into(),
                "c\\d".into(),
                "".into(),
                "NULL".into(),
                "e\tf".into(),
            ]),
        ],
        vec![
            Value::Int8(2),
            Value::Null(PgType::Text),
            Value::Null(PgType::Jsonb),
            Value::Null(PgType::Timestamptz),
            Value::Null(PgType::TextArray),
        ],
        vec![
            Value::Int8(3),
            Value::Text(String::new()),
            Value::Jsonb(json!([])),
            Value::Timestamptz(Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()),
            Value::TextArray(vec![]),
        ],
    ];
    let mut copy = CopyIn::new(ctx.schema.render(COPY));
    for r in &rows {
        copy.push_row(r);
    }
    assert_eq!(conn.copy_in(&copy).await.expect("copy"), 3);
    let back = conn
        .query(&ctx.stmt("SELECT n, s, j, ts, tags FROM {schema}.c ORDER BY n"))
        .await
        .expect("select");
    for (got, want) in back.iter().zip(&rows) {
        assert_eq!(got.values(), &want[..]);
    }
}

/// Chunks streamed into one COPY all arrive, in one statement; drivers without COPY say so.
pub async fn streamed_chunks_are_copied_in_one_statement<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(&ctx.schema.render(TABLE)).await;
    let mut conn = ctx.conn().await;
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    if !conn.supports_copy() {
        drop(tx);
        let err = conn
            .copy_in_stream(&ctx.schema.render(COPY), rx)
            .await
            .expect_err("no COPY");
        assert!(matches!(err, pgmill::Error::Unsupported(_)), "{err}");
        return;
    }
    let sql = ctx.schema.render(COPY);
    let feed = async {
        for chunk in 0..5_i64 {
            let mut copy = CopyIn::new(sql.clone());
            for i in chunk * 1_000..(chunk + 1) * 1_000 {
                copy.push_row(&row(i));
            }
            tx.send(copy.into_data())
                .await
                .expect("the COPY takes the chunk");
        }
        drop(tx);
    };
    let (copied, ()) = tokio::join!(conn.copy_in_stream(&sql, rx), feed);
    assert_eq!(copied.expect("streamed copy"), 5_000);
    assert_eq!(ctx.count("c").await, 5_000);
    let last = conn
        .query(&ctx.stmt("SELECT n, s, j FROM {schema}.c WHERE n = 4999"))
        .await
        .expect("select");
    assert_eq!(last[0].values()[..3], row(4999)[..3]);
}

/// A malformed row fails the whole COPY with a server error: nothing is copied and the
/// connection takes the next statement.
pub async fn malformed_row_fails_the_copy_and_keeps_the_connection<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(&ctx.schema.render(TABLE)).await;
    let mut conn = ctx.conn().await;
    if !conn.supports_copy() {
        return; // Covered by the fallback in the first case.
    }
    let mut copy = CopyIn::new(ctx.schema.render(COPY));
    copy.push_row(&row(1));
    copy.push_row(&[Value::Text("not a number".into())]);
    let err = conn.copy_in(&copy).await.expect_err("bad row");
    let db = err.as_database().expect("a database error");
    assert_eq!(db.kind(), DbErrorKind::Server, "{err}");
    if H::REPORTS_EVERY_SQLSTATE {
        assert_eq!(err.sqlstate(), Some("22P02"), "{err}");
    }
    assert_eq!(ctx.count("c").await, 0);
    let mut good = CopyIn::new(ctx.schema.render(COPY));
    good.push_row(&row(2));
    assert_eq!(conn.copy_in(&good).await.expect("next copy"), 1);
}

/// A COPY inside a transaction that rolls back leaves nothing; one that commits is all there.
pub async fn copy_in_a_transaction_commits_or_rolls_back_with_it<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(&ctx.schema.render(TABLE)).await;
    let mut conn = ctx.conn().await;
    if !conn.supports_copy() {
        return;
    }
    let sql = ctx.schema.render(COPY);
    for commit in [false, true] {
        let mut tx = conn.begin().await.expect("begin");
        let (feed, rx) = tokio::sync::mpsc::channel(1);
        let send = async {
            for i in 0..3 {
                let mut copy = CopyIn::new(sql.clone());
                copy.push_row(&row(i));
                feed.send(copy.into_data()).await.expect("chunk");
            }
            drop(feed);
        };
        let (copied, ()) = tokio::join!(tx.copy_in_stream(&sql, rx), send);
        assert_eq!(copied.expect("copy"), 3);
        if commit {
            tx.commit().await.expect("commit");
        } else {
            tx.rollback().await.expect("rollback");
        }
        assert_eq!(ctx.count("c").await, if commit { 3 } else { 0 });
    }
}

/// A streamed COPY whose caller is dropped mid-stream copies nothing. The connection then works,
/// or, where the library cannot recover it, reports itself lost and the pool's next one works.
pub async fn dropped_streamed_copy_copies_nothing<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(&ctx.schema.render(TABLE)).await;
    let mut conn = ctx.conn().await;
    if !conn.supports_copy() {
        return;
    }
    let sql = ctx.schema.render(COPY);
    let (feed, rx) = tokio::sync::mpsc::channel(1);
    let mut first = CopyIn::new(sql.clone());
    first.push_row(&row(1));
    feed.send(first.into_data()).await.expect("first chunk");
    {
        let copy = conn.copy_in_stream(&sql, rx);
        // The first chunk is taken, then the COPY waits for more until it is dropped.
        let timed_out = tokio::time::timeout(std::time::Duration::from_millis(300), copy).await;
        assert!(timed_out.is_err(), "the COPY waits for its sender");
    }
    drop(feed);
    let count = ctx.stmt("SELECT count(*) FROM {schema}.c");
    let after = conn.query(&count).await;
    if H::REUSES_CONNECTION_AFTER_DROPPED_COPY {
        let after = after.expect("the connection works after the dropped COPY");
        assert_eq!(after[0].values()[0], Value::Int8(0));
    } else {
        let err = after.expect_err("the connection is out of step");
        assert!(err.is_connection_lost(), "{err}");
        let mut lost = conn.begin().await.map(|_| ()).expect_err("still lost");
        assert!(lost.is_connection_lost(), "{lost}");
        lost = conn
            .execute(&count)
            .await
            .map(|_| ())
            .expect_err("still lost");
        assert!(lost.is_connection_lost(), "{lost}");
        ctx.driver.discard(conn);
        let mut fresh = ctx.conn().await;
        fresh.query(&count).await.expect("a fresh connection works");
    }
    assert_eq!(ctx.count("c").await, 0);
}
