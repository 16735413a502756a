//! The pgmill conformance suite, run against the tokio-postgres driver.

use pgmill::driver::{Executor, Row, Statement};
use pgmill::{DbError, DbErrorKind, InsertParams, Inserter, JobRow};
use pgmill_driver_tokio_postgres::{GenericClientExt, TokioPostgresDriver};
use tokio_postgres::NoTls;

struct Harness;

impl pgmill_drivertest::Harness for Harness {
    type Driver = TokioPostgresDriver;

    async fn connect(url: &str, max_connections: u32) -> pgmill::Result<TokioPostgresDriver> {
        TokioPostgresDriver::connect(url, max_connections).await
    }

    async fn host_transaction(
        url: &str,
        statements: Vec<Statement>,
        commit: bool,
    ) -> pgmill::Result<Vec<Vec<Row>>> {
        let (mut client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .map_err(library_error)?;
        tokio::spawn(connection);
        let mut tx = client.transaction().await.map_err(library_error)?;
        let mut results = Vec::with_capacity(statements.len());
        for stmt in &statements {
            results.push(tx.pgmill().query(stmt).await?);
        }
        if commit {
            tx.commit().await.map_err(library_error)?;
        } else {
            tx.rollback().await.map_err(library_error)?;
        }
        Ok(results)
    }

    async fn host_insert(
        url: &str,
        inserter: &Inserter,
        jobs: Vec<InsertParams>,
        commit: bool,
    ) -> pgmill::Result<Vec<JobRow>> {
        let (mut client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .map_err(library_error)?;
        tokio::spawn(connection);
        let mut tx = client.transaction().await.map_err(library_error)?;
        let rows = tx.insert_jobs(inserter, &jobs).await?;
        if commit {
            tx.commit().await.map_err(library_error)?;
        } else {
            tx.rollback().await.map_err(library_error)?;
        }
        Ok(rows)
    }
}

/// The app's own tokio-postgres calls fail with the library's error; the harness reports them
/// through pgmill's error only to return them.
fn library_error(e: tokio_postgres::Error) -> pgmill::Error {
    DbError::new(DbErrorKind::Other, e.to_string())
        .with_source(e)
        .into()
}

pgmill_drivertest::conformance_suite!(Harness);

/// Behaviour specific to this driver, beyond the shared suite.
mod tokio_postgres_driver {
    use std::time::Duration;

    use pgmill::driver::{Driver, Executor, Listener, ListenerEvent, Statement};
    use pgmill_driver_tokio_postgres::{GenericClientExt, TokioPostgresDriver};
    use pgmill_drivertest::testdb;
    use tokio_postgres::NoTls;

    const WAIT: Duration = Duration::from_secs(20);

    /// A `next_event` dropped again and again while the listener reconnects (as a `select!`
    /// against a fast timer would) still ends in `Reconnected`: the reconnect is kept across calls.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reconnect_is_reported_even_when_next_event_is_cancelled_midway() {
        let url = testdb::url();
        let tag = testdb::fresh_schema_name();
        let sep = if url.contains('?') { '&' } else { '?' };
        let driver = TokioPostgresDriver::connect(&format!("{url}{sep}application_name={tag}"), 1)
            .await
            .expect("driver connects");
        let mut listener = driver.listener().await.expect("listener opens");
        let channel = format!("{tag}.cancelled");
        listener.listen(&channel).await.expect("listen");

        let (client, connection) = tokio_postgres::connect(&url, NoTls)
            .await
            .expect("connects");
        tokio::spawn(connection);
        client
            .execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity \
                 WHERE application_name = $1",
                &[&tag],
            )
            .await
            .expect("terminates the listener's backend");

        let mut cancelled = 0;
        let event = loop {
            match tokio::time::timeout(Duration::from_millis(1), listener.next_event()).await {
                Ok(event) => break event.expect("listener event"),
                Err(_) => {
                    cancelled += 1;
                    assert!(cancelled < 30_000, "no event after {cancelled} polls");
                }
            }
        };
        assert_eq!(event, ListenerEvent::Reconnected);

        client
            .execute("SELECT pg_notify($1, 'after')", &[&channel])
            .await
            .expect("notify");
        match tokio::time::timeout(WAIT, listener.next_event())
            .await
            .expect("an event arrives in time")
            .expect("listener event")
        {
            ListenerEvent::Notification(n) => assert_eq!(n.payload, "after"),
            other => panic!("expected the notification, got {other:?}"),
        }
    }

    /// A statement running when its backend is terminated fails with the server's 57P01, which
    /// is reported as a lost connection (as is the next call on that connection).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn statement_in_flight_on_a_terminated_backend_is_connection_lost() {
        let driver = TokioPostgresDriver::connect(&testdb::url(), 2)
            .await
            .expect("driver connects");
        let mut victim = driver.acquire().await.expect("acquire");
        let pid: i32 = victim
            .query_scalar(&Statement::new("SELECT pg_backend_pid() AS pid"))
            .await
            .expect("pid");
        let sleeping = tokio::spawn(async move {
            let first = victim.execute(&Statement::new("SELECT pg_sleep(60)")).await;
            let next = victim.execute(&Statement::new("SELECT 1")).await;
            (first, next)
        });
        let mut killer = driver.acquire().await.expect("acquire");
        let wait_for_sleep = Statement::new(
            "SELECT count(*) AS n FROM pg_stat_activity \
             WHERE pid = $1::int AND wait_event = 'PgSleep'",
        )
        .bind(pid);
        let deadline = tokio::time::Instant::now() + WAIT;
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
        let (first, next) = tokio::time::timeout(WAIT, sleeping)
            .await
            .expect("the statement ends in time")
            .expect("task");
        let first = first.expect_err("terminated");
        assert!(first.is_connection_lost(), "{first}");
        assert_eq!(first.sqlstate(), Some("57P01"), "{first}");
        let next = next.expect_err("connection is gone");
        assert!(next.is_connection_lost(), "{next}");
    }

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
}
