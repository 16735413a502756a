//! The pgmill driver conformance suite, run against the sqlx driver.

use pgmill_driver_sqlx::{PgConnectionExt, SqlxDriver};
use pgmill_drivertest::{HostDone, HostWork, harness_error};
use sqlx::{Connection, PgConnection};

struct Harness;

impl pgmill_drivertest::Harness for Harness {
    type Driver = SqlxDriver;

    // sqlx 0.9 does not count the answer to the `CopyFail` it sends for a dropped COPY.
    const REUSES_CONNECTION_AFTER_DROPPED_COPY: bool = false;

    async fn connect(url: &str, max_connections: u32) -> pgmill::Result<SqlxDriver> {
        SqlxDriver::connect(url, max_connections).await
    }

    async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
        let mut conn = PgConnection::connect(url).await.map_err(harness_error)?;
        let mut tx = conn.begin().await.map_err(harness_error)?;
        let done = pgmill_drivertest::run_host_work!(async tx, work);
        conn.close().await.map_err(harness_error)?;
        Ok(done)
    }
}

pgmill_drivertest::conformance_suite!(Harness);

/// The engine behind a transaction-mode PgBouncer: pooled connections with unnamed statements,
/// the listener on a direct connection (or none: poll-only).
mod through_pgbouncer {
    use pgmill::driver::Executor;
    use pgmill_driver_sqlx::{PgConnectionExt, SqlxDriver};
    use pgmill_drivertest::{HostDone, HostWork, PollOnly, harness_error};
    use sqlx::{Connection, PgConnection};

    struct Harness;

    impl pgmill_drivertest::Harness for Harness {
        type Driver = SqlxDriver;
        const REUSES_CONNECTION_AFTER_DROPPED_COPY: bool = false;

        fn url() -> String {
            pgmill_drivertest::pgbouncer_url()
        }

        async fn connect(url: &str, max_connections: u32) -> pgmill::Result<SqlxDriver> {
            SqlxDriver::connect(url, max_connections)
                .await?
                .unnamed_statements()
                .with_listener_url(&pgmill_drivertest::testdb::url())
        }

        async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
            unnamed_host_transaction(url, work).await
        }
    }

    /// The application's own transaction through the pooler, pgmill's statements in it through
    /// `tx.pgmill().unnamed()` (sqlx's cached statements collide on the pooler's server
    /// connections).
    async fn unnamed_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
        let mut conn = PgConnection::connect(url).await.map_err(harness_error)?;
        let mut tx = conn.begin().await.map_err(harness_error)?;
        let mut done = HostDone::default();
        for stmt in &work.statements {
            done.rows.push(tx.pgmill().unnamed().query(stmt).await?);
        }
        if let Some((inserter, jobs)) = &work.jobs {
            done.jobs = inserter
                .insert_many(&mut tx.pgmill().unnamed(), jobs)
                .await?;
        }
        let end = if work.commit {
            tx.commit().await
        } else {
            tx.rollback().await
        };
        end.map_err(harness_error)?;
        conn.close().await.map_err(harness_error)?;
        Ok(done)
    }

    pgmill_drivertest::pooler_suite!(Harness);

    /// Through the pooler with no listener at all: the client works in poll-only mode.
    mod poll_only {
        use super::*;

        struct Harness;

        impl pgmill_drivertest::Harness for Harness {
            type Driver = PollOnly<SqlxDriver>;

            fn url() -> String {
                pgmill_drivertest::pgbouncer_url()
            }

            async fn connect(url: &str, max_connections: u32) -> pgmill::Result<Self::Driver> {
                Ok(PollOnly::new(
                    SqlxDriver::connect(url, max_connections)
                        .await?
                        .unnamed_statements(),
                ))
            }

            async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
                unnamed_host_transaction(url, work).await
            }
        }

        pgmill_drivertest::pooler_poll_only_suite!(Harness);
    }
}

/// A connection the engine releases with nothing left on it is kept for the driver's next
/// acquire, skipping sqlx's release check (`after_release`, then a ping), and goes back to the
/// pool after a moment. One released inside a transaction, or with a call cut off mid-way, goes
/// back at once, and sqlx's check deals with what was left on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_settled_connections_skip_the_pools_release_check() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use pgmill::driver::{Driver, Executor, Statement};

    async fn released_to_reach(released: &AtomicUsize, n: usize) {
        let started = Instant::now();
        while released.load(Ordering::SeqCst) < n {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{} of {n} releases to the pool",
                released.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(released.load(Ordering::SeqCst), n);
    }

    let url = pgmill_drivertest::testdb::url();
    let released = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&released);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .test_before_acquire(false)
        .after_release(move |_, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(true) })
        })
        .connect(&url)
        .await
        .unwrap();
    let driver = SqlxDriver::new(pool.clone());
    // Back-to-back statements, each on a connection of its own: one connection, never checked.
    for n in 0..5_i64 {
        let mut conn = driver.acquire().await.unwrap();
        let got: i64 = conn
            .query_scalar(&Statement::new("SELECT $1::bigint AS n").bind(n))
            .await
            .unwrap();
        assert_eq!(got, n);
    }
    assert_eq!(
        released.load(Ordering::SeqCst),
        0,
        "no check between statements"
    );
    assert_eq!(pool.size(), 1, "one connection for all five");
    // Kept out of the pool briefly, then back in it, through the check.
    released_to_reach(&released, 1).await;
    // Dropped inside a transaction: back at once; sqlx rolls the transaction back.
    {
        let mut conn = driver.acquire().await.unwrap();
        let mut tx = conn.begin().await.unwrap();
        tx.execute(&Statement::new("CREATE TEMP TABLE warm_probe (x int)"))
            .await
            .unwrap();
        // The transaction and its connection go here, neither committed nor rolled back.
    }
    released_to_reach(&released, 2).await;
    let mut conn = driver.acquire().await.unwrap();
    let probe = conn
        .execute(&Statement::new("SELECT 1 FROM warm_probe"))
        .await;
    assert!(probe.is_err(), "the dropped transaction's table is gone");
    drop(conn);
    released_to_reach(&released, 3).await;
    // A call cut off while the server works on it: its answer, a failure, arrives after the
    // caller has gone. The connection goes back at once, and the next statement (on whatever
    // connection) does not read that failure as its own.
    {
        let mut conn = driver.acquire().await.unwrap();
        let cut = tokio::time::timeout(
            Duration::from_millis(100),
            conn.execute_script("SELECT pg_sleep(0.3); SELECT 1/0"),
        )
        .await;
        assert!(cut.is_err(), "the call was cut off");
    }
    // At once, before a kept connection would have gone back to the pool.
    let mut conn = driver.acquire().await.unwrap();
    let got: i64 = conn
        .query_scalar(&Statement::new("SELECT 7::bigint AS n"))
        .await
        .expect("the next statement reads its own answer");
    assert_eq!(got, 7);
    drop(conn);
    released_to_reach(&released, 5).await;
}

/// sqlx's own acquire future takes kilobytes. The driver's must not carry it inline: every
/// claim's, completion's and insert's future holds the driver's acquire future, and is copied
/// whole each time it is built and moved (callgrind of a work-through at 100 workers: about five
/// such copies per statement, 1,000 instructions per job, before the pool's future was boxed).
#[tokio::test]
async fn acquire_future_does_not_carry_the_pools_inline() {
    use pgmill::driver::Driver;

    // A lazy pool never connects until asked for a connection; neither future is polled.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .connect_lazy("postgres://pgmill@127.0.0.1:1/never")
        .unwrap();
    let driver = SqlxDriver::new(pool.clone());
    let pools = std::mem::size_of_val(&pool.acquire());
    let drivers = std::mem::size_of_val(&driver.acquire());
    assert!(
        drivers * 4 < pools,
        "the driver's acquire future is {drivers} bytes, sqlx's own {pools}"
    );
}
