//! Statements run on the application's own transaction type, through the driver's extension trait.

use pgmill::driver::Value;

use crate::{Harness, TestContext};

async fn with_table<H: Harness>() -> TestContext<H::Driver> {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(
        &ctx.schema
            .render("CREATE TABLE {schema}.t (n bigint NOT NULL, s text)"),
    )
    .await;
    ctx
}

/// Committed on the app's transaction: the rows exist.
pub async fn committed_statements_are_visible<H: Harness>() {
    let ctx = with_table::<H>().await;
    let stmts = vec![
        ctx.stmt("INSERT INTO {schema}.t VALUES ($1::bigint, $2::text)")
            .bind(1_i64)
            .bind("one"),
        ctx.stmt("INSERT INTO {schema}.t VALUES ($1::bigint, $2::text)")
            .bind(2_i64)
            .bind(None::<String>),
    ];
    H::host_transaction(&ctx.url, stmts, true)
        .await
        .expect("host transaction commits");
    assert_eq!(ctx.count("t").await, 2);
}

/// Rolled back on the app's transaction: the rows never existed.
pub async fn rolled_back_statements_are_gone<H: Harness>() {
    let ctx = with_table::<H>().await;
    let stmts = vec![
        ctx.stmt("INSERT INTO {schema}.t VALUES ($1::bigint, $2::text)")
            .bind(1_i64)
            .bind("one"),
    ];
    let rows = H::host_transaction(&ctx.url, stmts, false)
        .await
        .expect("host transaction rolls back");
    assert_eq!(rows.len(), 1);
    assert_eq!(ctx.count("t").await, 0);
}

/// Statements inside the app's transaction see its earlier writes and return rows.
pub async fn rows_are_returned_inside_host_transaction<H: Harness>() {
    let ctx = with_table::<H>().await;
    let stmts = vec![
        ctx.stmt("INSERT INTO {schema}.t VALUES (7, 'seven') RETURNING n::bigint AS n"),
        ctx.stmt("SELECT count(*) AS c, max(s) AS s FROM {schema}.t"),
    ];
    let rows = H::host_transaction(&ctx.url, stmts, false)
        .await
        .expect("host transaction");
    assert_eq!(rows[0][0].values(), [Value::Int8(7)]);
    assert_eq!(
        rows[1][0].values(),
        [Value::Int8(1), Value::Text("seven".into())]
    );
    assert_eq!(ctx.count("t").await, 0);
}
