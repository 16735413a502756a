//! The pgmill driver conformance suite, run against the sqlx driver.

use pgmill::driver::{Executor, Row, Statement};
use pgmill::{DbError, DbErrorKind, InsertParams, Inserter, JobRow};
use pgmill_driver_sqlx::{PgConnectionExt, SqlxDriver};
use sqlx::{Connection, PgConnection};

struct Harness;

/// Errors of the sqlx calls the harness makes itself (the driver maps its own).
fn sqlx_error(e: sqlx::Error) -> pgmill::Error {
    DbError::new(DbErrorKind::Other, e.to_string())
        .with_source(e)
        .into()
}

impl pgmill_drivertest::Harness for Harness {
    type Driver = SqlxDriver;

    // sqlx 0.9 does not count the answer to the `CopyFail` it sends for a dropped COPY.
    const REUSES_CONNECTION_AFTER_DROPPED_COPY: bool = false;

    async fn connect(url: &str, max_connections: u32) -> pgmill::Result<SqlxDriver> {
        SqlxDriver::connect(url, max_connections).await
    }

    async fn host_transaction(
        url: &str,
        statements: Vec<Statement>,
        commit: bool,
    ) -> pgmill::Result<Vec<Vec<Row>>> {
        let mut conn = PgConnection::connect(url).await.map_err(sqlx_error)?;
        let mut tx = conn.begin().await.map_err(sqlx_error)?;
        let mut results = Vec::with_capacity(statements.len());
        for stmt in &statements {
            results.push(tx.pgmill().query(stmt).await?);
        }
        if commit {
            tx.commit().await.map_err(sqlx_error)?;
        } else {
            tx.rollback().await.map_err(sqlx_error)?;
        }
        conn.close().await.map_err(sqlx_error)?;
        Ok(results)
    }

    async fn host_insert(
        url: &str,
        inserter: &Inserter,
        jobs: Vec<InsertParams>,
        commit: bool,
    ) -> pgmill::Result<Vec<JobRow>> {
        let mut conn = PgConnection::connect(url).await.map_err(sqlx_error)?;
        let mut tx = conn.begin().await.map_err(sqlx_error)?;
        let rows = tx.insert_jobs(inserter, &jobs).await?;
        if commit {
            tx.commit().await.map_err(sqlx_error)?;
        } else {
            tx.rollback().await.map_err(sqlx_error)?;
        }
        conn.close().await.map_err(sqlx_error)?;
        Ok(rows)
    }
}

pgmill_drivertest::conformance_suite!(Harness);

/// Behaviour specific to this driver, beyond the shared suite.
mod sqlx_listener {
    use std::time::Duration;

    use pgmill::driver::{Driver, Listener, ListenerEvent};
    use pgmill_drivertest::Harness as _;
    use pgmill_drivertest::testdb;
    use sqlx::{Connection, PgConnection};

    use super::Harness;

    /// sqlx's own `try_recv` reconnects inside its future, so a caller that drops the future
    /// mid-reconnect would never hear of the gap; this listener keeps the reconnect across calls.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reconnect_is_reported_even_when_next_event_is_cancelled_midway() {
        let url = testdb::url();
        let tag = testdb::fresh_schema_name();
        let sep = if url.contains('?') { '&' } else { '?' };
        let driver = Harness::connect(&format!("{url}{sep}application_name={tag}"), 2)
            .await
            .expect("driver connects");
        let mut listener = driver.listener().await.expect("listener opens");
        let channel = format!("{tag}.cancelled");
        listener.listen(&channel).await.expect("listen");

        let mut conn = PgConnection::connect(&url).await.expect("connects");
        sqlx::query("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = $1")
            .bind(&tag)
            .execute(&mut conn)
            .await
            .expect("terminates the listener's backend");

        // Every poll that times out drops the `next_event` future, many of them during the
        // reconnect (a new connection and its LISTEN take longer than a millisecond).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let event = loop {
            match tokio::time::timeout(Duration::from_millis(1), listener.next_event()).await {
                Ok(event) => break event.expect("listener event"),
                Err(_) => assert!(
                    tokio::time::Instant::now() < deadline,
                    "the reconnect was never reported"
                ),
            }
        };
        assert_eq!(event, ListenerEvent::Reconnected);

        sqlx::query("SELECT pg_notify($1, 'after')")
            .bind(&channel)
            .execute(&mut conn)
            .await
            .expect("notify");
        let event = tokio::time::timeout(Duration::from_secs(20), listener.next_event())
            .await
            .expect("an event arrives in time")
            .expect("listener event");
        match event {
            ListenerEvent::Notification(n) => {
                assert_eq!(
                    (n.channel.as_str(), n.payload.as_str()),
                    (channel.as_str(), "after")
                );
            }
            other => panic!("expected the notification, got {other:?}"),
        }
        conn.close().await.expect("closes");
    }
}
