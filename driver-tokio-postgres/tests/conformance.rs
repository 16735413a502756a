//! The pgmill conformance suite, run against the tokio-postgres driver, plus what only this
//! driver has (deadpool's pooled objects).

use pgmill_driver_tokio_postgres::{GenericClientExt, TokioPostgresDriver};
use pgmill_drivertest::{HostDone, HostWork, harness_error};
use tokio_postgres::NoTls;

struct Harness;

impl pgmill_drivertest::Harness for Harness {
    type Driver = TokioPostgresDriver;

    async fn connect(url: &str, max_connections: u32) -> pgmill::Result<TokioPostgresDriver> {
        TokioPostgresDriver::connect(url, max_connections).await
    }

    async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
        let (mut client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .map_err(harness_error)?;
        tokio::spawn(connection);
        let mut tx = client.transaction().await.map_err(harness_error)?;
        let done = pgmill_drivertest::run_host_work!(async tx, work);
        Ok(done)
    }
}

pgmill_drivertest::conformance_suite!(Harness);

/// Behaviour specific to this driver, beyond the shared suite.
mod tokio_postgres_driver {
    use pgmill::driver::{Driver, Executor, Statement};
    use pgmill_driver_tokio_postgres::{GenericClientExt, TokioPostgresDriver};
    use pgmill_drivertest::testdb;

    /// deadpool's pooled objects and their transactions reach the extension trait through deref.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deadpool_objects_and_transactions_get_the_extension_trait() {
        let driver = TokioPostgresDriver::connect(&testdb::url(), 1)
            .await
            .expect("driver connects");
        let mut object = driver.acquire().await.expect("acquire").into_inner();
        let stmt = Statement::new("SELECT $1::bigint AS n").bind(5_i64);
        let n: i64 = object
            .pgmill()
            .query_scalar(&stmt)
            .await
            .expect("on object");
        assert_eq!(n, 5);
        let mut tx = object.transaction().await.expect("deadpool transaction");
        let n: i64 = tx
            .pgmill()
            .query_scalar(&stmt)
            .await
            .expect("on transaction");
        assert_eq!(n, 5);
        tx.rollback().await.expect("rollback");
    }

    /// The pool built by `connect` hands out the connection returned last (LIFO), so a few
    /// callers at a time keep to the same few server backends instead of rotating through all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connect_builds_a_pool_that_hands_out_the_connection_returned_last() {
        let driver = TokioPostgresDriver::connect(&testdb::url(), 4)
            .await
            .expect("driver connects");
        let pid = "SELECT pg_backend_pid()";
        let first = driver.pool().get().await.expect("first checkout");
        let second = driver.pool().get().await.expect("second checkout");
        let first_pid: i32 = first.query_one(pid, &[]).await.unwrap().get(0);
        let second_pid: i32 = second.query_one(pid, &[]).await.unwrap().get(0);
        assert_ne!(first_pid, second_pid, "two connections at once");
        // Returned in this order, the second is the one returned last.
        drop(first);
        drop(second);
        let next = driver.pool().get().await.expect("next checkout");
        let next_pid: i32 = next.query_one(pid, &[]).await.unwrap().get(0);
        assert_eq!(
            next_pid, second_pid,
            "the connection returned last comes first"
        );
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Receipt {
        order_id: i64,
    }

    impl pgmill::JobArgs for Receipt {
        const KIND: &'static str = "receipt";
    }

    /// On deadpool's objects and transactions, `DeadpoolClientExt` prepares each statement once
    /// per connection (unless unnamed), and inserts follow the application's transaction.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deadpool_ext_prepares_once_per_connection_and_follows_the_transaction() {
        use pgmill_driver_tokio_postgres::DeadpoolClientExt;
        use pgmill_drivertest::prepared::{COUNT_PREPARED_MARKED, marked};
        let ctx =
            pgmill_drivertest::TestContext::<TokioPostgresDriver>::migrated::<super::Harness>()
                .await;
        let inserter = pgmill::Inserter::new(ctx.schema.clone());
        for unnamed in [false, true] {
            let driver = TokioPostgresDriver::connect(&ctx.url, 1).await.unwrap();
            let mut object = driver.acquire().await.unwrap().into_inner();
            for n in 0..3 {
                let exec = object.pgmill();
                let mut exec = if unnamed { exec.unnamed() } else { exec };
                let got: i64 = exec.query_scalar(&marked(n)).await.unwrap();
                assert_eq!(got, n);
            }
            let mut tx = object.transaction().await.unwrap();
            let exec = tx.pgmill();
            let mut exec = if unnamed { exec.unnamed() } else { exec };
            let got: i64 = exec.query_scalar(&marked(7)).await.unwrap();
            assert_eq!(got, 7);
            let dropped = inserter
                .insert(&mut exec, Receipt { order_id: 1 })
                .await
                .unwrap();
            tx.rollback().await.unwrap();
            let mut tx = object.transaction().await.unwrap();
            let kept = tx
                .insert_job(&inserter, Receipt { order_id: 2 })
                .await
                .unwrap();
            tx.commit().await.unwrap();
            let mut conn = ctx.conn().await;
            let ids: Vec<i64> = conn
                .query(&ctx.stmt("SELECT id AS id FROM {schema}.pgmill_job"))
                .await
                .unwrap()
                .iter()
                .map(|r| r.get("id").unwrap())
                .collect();
            assert!(!ids.contains(&dropped.id.0), "rolled back");
            assert!(ids.contains(&kept.id.0), "committed");
            let prepared: i64 = object
                .pgmill()
                .query_scalar(&Statement::new(COUNT_PREPARED_MARKED))
                .await
                .unwrap();
            assert_eq!(prepared, i64::from(!unnamed), "unnamed: {unnamed}");
        }
    }
}

/// The engine behind a transaction-mode PgBouncer.
mod through_pgbouncer {
    use pgmill_driver_tokio_postgres::TokioPostgresDriver;
    use pgmill_drivertest::{HostDone, HostWork};

    struct Harness;

    impl pgmill_drivertest::Harness for Harness {
        type Driver = TokioPostgresDriver;

        fn url() -> String {
            pgmill_drivertest::pgbouncer_url()
        }

        async fn connect(url: &str, max_connections: u32) -> pgmill::Result<TokioPostgresDriver> {
            TokioPostgresDriver::connect(url, max_connections)
                .await?
                .unnamed_statements()
                .with_listener_url(&pgmill_drivertest::testdb::url())
        }

        async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
            <super::Harness as pgmill_drivertest::Harness>::run_host_transaction(url, work).await
        }
    }

    pgmill_drivertest::pooler_suite!(Harness);

    /// Through the pooler with no listener at all: the client works in poll-only mode.
    mod poll_only {
        use pgmill_drivertest::{HostDone, HostWork, PollOnly};

        struct Harness;

        impl pgmill_drivertest::Harness for Harness {
            type Driver = PollOnly<super::TokioPostgresDriver>;

            fn url() -> String {
                pgmill_drivertest::pgbouncer_url()
            }

            async fn connect(url: &str, max_connections: u32) -> pgmill::Result<Self::Driver> {
                Ok(PollOnly::new(
                    super::TokioPostgresDriver::connect(url, max_connections)
                        .await?
                        .unnamed_statements(),
                ))
            }

            async fn run_host_transaction(url: &str, work: HostWork) -> pgmill::Result<HostDone> {
                <super::super::Harness as pgmill_drivertest::Harness>::run_host_transaction(
                    url, work,
                )
                .await
            }
        }

        pgmill_drivertest::pooler_poll_only_suite!(Harness);
    }
}
