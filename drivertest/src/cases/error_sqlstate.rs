//! Errors cross the seam with their SQLSTATE, and a lost connection is told apart.

use std::time::Duration;

use pgmill::driver::{Driver, Executor, Statement, Transaction};

use crate::{Harness, TestContext};

/// Asserts the SQLSTATE of a server error, where the driver can report every SQLSTATE.
fn assert_sqlstate<H: Harness>(err: &pgmill::Error, code: &str) {
    let db = err
        .as_database()
        .unwrap_or_else(|| panic!("not a database error: {err:?}"));
    assert_eq!(db.kind(), pgmill::DbErrorKind::Server, "{err}");
    if H::REPORTS_EVERY_SQLSTATE {
        assert_eq!(err.sqlstate(), Some(code), "{err}");
    } else {
        assert!(err.sqlstate().is_none_or(|c| c == code), "{err}");
    }
}

async fn error_of<H: Harness>(setup: &str, sql: &str) -> pgmill::Error {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    if !setup.is_empty() {
        ctx.script(&ctx.schema.render(setup)).await;
    }
    let mut conn = ctx.conn().await;
    let err = conn
        .execute(&ctx.stmt(sql))
        .await
        .expect_err("statement fails");
    assert!(!err.is_connection_lost(), "{err}");
    // The connection is still usable after a server error.
    let one: i32 = conn
        .query_scalar(&Statement::new("SELECT 1::int AS one"))
        .await
        .expect("usable after error");
    assert_eq!(one, 1);
    err
}

/// A duplicate key reports 23505 and `is_unique_violation`.
pub async fn unique_violation_keeps_its_sqlstate<H: Harness>() {
    let err = error_of::<H>(
        "CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1);",
        "INSERT INTO {schema}.t VALUES (1)",
    )
    .await;
    assert_eq!(err.sqlstate(), Some("23505"), "{err}");
    assert!(err.is_unique_violation());
    assert!(err.to_string().contains("duplicate key"), "{err}");
}

/// A syntax error reports 42601.
pub async fn syntax_error_keeps_its_sqlstate<H: Harness>() {
    let err = error_of::<H>("", "SELEC 1").await;
    assert_sqlstate::<H>(&err, "42601");
}

/// A missing table reports 42P01.
pub async fn undefined_table_keeps_its_sqlstate<H: Harness>() {
    let err = error_of::<H>("", "SELECT * FROM {schema}.missing").await;
    assert_sqlstate::<H>(&err, "42P01");
}

/// A failed CHECK reports 23514.
pub async fn check_violation_keeps_its_sqlstate<H: Harness>() {
    let err = error_of::<H>(
        "CREATE TABLE {schema}.t (n int CHECK (n > 0));",
        "INSERT INTO {schema}.t VALUES (-1)",
    )
    .await;
    assert_eq!(err.sqlstate(), Some("23514"), "{err}");
}

/// Division by zero reports 22012.
pub async fn division_by_zero_keeps_its_sqlstate<H: Harness>() {
    let err = error_of::<H>("", "SELECT 1 / (random() * 0)::int").await;
    assert_sqlstate::<H>(&err, "22012");
}

/// A write in a read-only transaction reports 25006 and `is_read_only`.
pub async fn read_only_transaction_keeps_its_sqlstate<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    ctx.script(&ctx.schema.render("CREATE TABLE {schema}.t (n int)"))
        .await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute_script("SET TRANSACTION READ ONLY")
        .await
        .expect("set read only");
    let err = tx
        .execute(&ctx.stmt("INSERT INTO {schema}.t VALUES (1)"))
        .await
        .expect_err("read only");
    assert_eq!(err.sqlstate(), Some("25006"), "{err}");
    assert!(err.is_read_only());
    tx.rollback().await.expect("rollback");
}

/// A statement after an error in a transaction reports 25P02.
pub async fn aborted_transaction_keeps_its_sqlstate<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    tx.execute(&Statement::new("SELECT 1 / 0"))
        .await
        .expect_err("division by zero");
    let err = tx
        .execute(&Statement::new("SELECT 1"))
        .await
        .expect_err("aborted");
    assert_sqlstate::<H>(&err, "25P02");
    tx.rollback().await.expect("rollback");
}

/// A backend killed with `pg_terminate_backend` is reported as a lost connection, and the next
/// call on the driver succeeds.
pub async fn terminated_backend_is_connection_lost_and_next_call_succeeds<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut victim = ctx.conn().await;
    let pid: i32 = victim
        .query_scalar(&Statement::new("SELECT pg_backend_pid() AS pid"))
        .await
        .expect("pid");
    let terminated: bool = ctx
        .conn()
        .await
        .query_scalar(
            &Statement::new("SELECT pg_terminate_backend($1::int, 10000) AS terminated").bind(pid),
        )
        .await
        .expect("terminate");
    assert!(terminated);
    let err = victim
        .query(&Statement::new("SELECT 1::int AS one"))
        .await
        .expect_err("backend is gone");
    assert!(err.is_connection_lost(), "not reported as lost: {err:?}");
    drop(victim);
    let mut next = tokio::time::timeout(Duration::from_secs(30), ctx.driver.acquire())
        .await
        .expect("acquire in time")
        .expect("acquire");
    let one: i32 = next
        .query_scalar(&Statement::new("SELECT 1::int AS one"))
        .await
        .expect("next call succeeds");
    assert_eq!(one, 1);
}

/// A statement running when its backend is terminated fails with the server's 57P01, which is
/// reported as a lost connection (as is the next call on that connection).
pub async fn statement_in_flight_on_a_terminated_backend_is_connection_lost<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let mut victim = ctx.conn().await;
    let pid: i32 = victim
        .query_scalar(&Statement::new("SELECT pg_backend_pid() AS pid"))
        .await
        .expect("pid");
    let sleeping = tokio::spawn(async move {
        let first = victim.execute(&Statement::new("SELECT pg_sleep(60)")).await;
        let next = victim.execute(&Statement::new("SELECT 1")).await;
        (first, next)
    });
    let mut killer = ctx.conn().await;
    let wait_for_sleep = Statement::new(
        "SELECT count(*) AS n FROM pg_stat_activity \
         WHERE pid = $1::int AND wait_event = 'PgSleep'",
    )
    .bind(pid);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while killer
        .query_scalar::<i64>(&wait_for_sleep)
        .await
        .expect("poll")
        == 0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sleep never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    killer
        .execute(&Statement::new("SELECT pg_terminate_backend($1::int, 10000)").bind(pid))
        .await
        .expect("terminate");
    let (first, next) = tokio::time::timeout(Duration::from_secs(20), sleeping)
        .await
        .expect("the statement ends in time")
        .expect("task");
    let first = first.expect_err("terminated");
    assert!(first.is_connection_lost(), "{first}");
    if H::REPORTS_EVERY_SQLSTATE {
        assert_eq!(first.sqlstate(), Some("57P01"), "{first}");
    }
    let next = next.expect_err("connection is gone");
    assert!(next.is_connection_lost(), "{next}");
}

/// A connection handed to `Driver::discard` leaves the pool: the next acquire gets another backend,
/// while a connection simply dropped is reused.
pub async fn discarded_connection_is_never_reused<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let driver = H::connect(&ctx.url, 1).await.expect("pool of one");
    async fn pid<E: Executor>(c: &mut E) -> i32 {
        c.query_scalar(&Statement::new("SELECT pg_backend_pid() AS pid"))
            .await
            .expect("pid")
    }
    let mut first = driver.acquire().await.expect("acquire");
    let first_pid = pid(&mut first).await;
    drop(first);
    let mut again = driver.acquire().await.expect("acquire");
    assert_eq!(
        pid(&mut again).await,
        first_pid,
        "a dropped connection is reused"
    );
    driver.discard(again);
    let mut fresh = tokio::time::timeout(Duration::from_secs(30), driver.acquire())
        .await
        .expect("acquire in time")
        .expect("acquire");
    assert_ne!(
        pid(&mut fresh).await,
        first_pid,
        "a discarded connection is not reused"
    );
}
