//! Transactions and savepoints through [`Executor::begin`].

use pgmill::driver::{Executor, Transaction};

use crate::{Harness, TestContext};

async fn with_table<H: Harness>() -> TestContext<H::Driver> {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(
        &ctx.schema
            .render("CREATE TABLE {schema}.t (n int NOT NULL)"),
    )
    .await;
    ctx
}

/// Rows written in a committed transaction are visible on other connections.
pub async fn commit_makes_rows_visible_to_others<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1), (2)"))
        .await
        .expect("insert");
    tx.commit().await.expect("commit");
    assert_eq!(ctx.count("t").await, 2);
}

/// Rows written in a rolled-back transaction are gone.
pub async fn rollback_discards_rows<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
        .await
        .expect("insert");
    tx.rollback().await.expect("rollback");
    assert_eq!(ctx.count("t").await, 0);
    let n: i64 = conn
        .query_scalar(&ctx.stmt("SELECT count(*) AS n FROM {schema}.t"))
        .await
        .expect("connection usable after rollback");
    assert_eq!(n, 0);
}

/// Uncommitted rows are not visible to other connections.
pub async fn uncommitted_rows_are_invisible_to_others<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
        .await
        .expect("insert");
    assert_eq!(ctx.count("t").await, 0);
    let inside: i64 = tx
        .query_scalar(&ctx.stmt("SELECT count(*) AS n FROM {schema}.t"))
        .await
        .expect("count inside");
    assert_eq!(inside, 1);
    tx.commit().await.expect("commit");
    assert_eq!(ctx.count("t").await, 1);
}

/// Dropping a transaction without committing rolls it back, and the connection is reusable.
pub async fn drop_without_commit_rolls_back<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    {
        let mut tx = conn.begin().await.expect("begin");
        tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
            .await
            .expect("insert");
    }
    let mut tx = conn
        .begin()
        .await
        .expect("begin again on the same connection");
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (2)"))
        .await
        .expect("insert");
    tx.commit().await.expect("commit");
    let rows = conn
        .query(&ctx.stmt("SELECT n::bigint AS n FROM {schema}.t"))
        .await
        .expect("select");
    let ns: Vec<i64> = rows.iter().map(|r| r.get("n").unwrap()).collect();
    assert_eq!(ns, [2]);
}

/// Rolling back a savepoint undoes only its own work.
pub async fn savepoint_rollback_keeps_outer_work<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
        .await
        .expect("outer insert");
    {
        let mut sp = tx.begin().await.expect("savepoint");
        sp.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (2)"))
            .await
            .expect("inner insert");
        sp.execute(&ctx.stmt("INSERT INTO {schema}.nope VALUES (3)"))
            .await
            .expect_err("fails inside the savepoint");
        sp.rollback().await.expect("rollback to savepoint");
    }
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (4)"))
        .await
        .expect("outer transaction still usable");
    tx.commit().await.expect("commit");
    let rows = conn
        .query(&ctx.stmt("SELECT n::bigint AS n FROM {schema}.t ORDER BY n"))
        .await
        .expect("select");
    let ns: Vec<i64> = rows.iter().map(|r| r.get("n").unwrap()).collect();
    assert_eq!(ns, [1, 4]);
}

/// A released savepoint's work is still undone by the outer rollback.
pub async fn released_savepoint_is_discarded_by_outer_rollback<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    {
        let mut sp = tx.begin().await.expect("savepoint");
        sp.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
            .await
            .expect("insert");
        sp.commit().await.expect("release savepoint");
    }
    tx.rollback().await.expect("rollback");
    assert_eq!(ctx.count("t").await, 0);
}

/// `execute` reports how many rows a statement changed.
pub async fn execute_returns_affected_rows<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    let inserted = conn
        .execute(&ctx.stmt("INSERT INTO {schema}.t SELECT g FROM generate_series(1, 7) g"))
        .await
        .expect("insert");
    assert_eq!(inserted, 7);
    let updated = conn
        .execute(
            &ctx.stmt("UPDATE {schema}.t SET n = n + 10 WHERE n > $1::int")
                .bind(4_i32),
        )
        .await
        .expect("update");
    assert_eq!(updated, 3);
}

/// A script of several statements runs them all.
pub async fn execute_script_runs_several_statements<H: Harness>() {
    let ctx = with_table::<H>().await;
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.t VALUES (1); INSERT INTO {schema}.t VALUES (2);\n\
         -- a comment\nCREATE TABLE {schema}.u (s text); INSERT INTO {schema}.u VALUES ('$1');",
    ))
    .await;
    assert_eq!(ctx.count("t").await, 2);
    assert_eq!(ctx.count("u").await, 1);
}

/// After a failed statement and a rollback, the connection serves the next transaction.
pub async fn error_then_rollback_leaves_connection_usable<H: Harness>() {
    let ctx = with_table::<H>().await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (NULL)"))
        .await
        .expect_err("not null violation");
    tx.rollback().await.expect("rollback");
    let mut tx = conn.begin().await.expect("begin again");
    tx.execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (5)"))
        .await
        .expect("insert");
    tx.commit().await.expect("commit");
    assert_eq!(ctx.count("t").await, 1);
}
