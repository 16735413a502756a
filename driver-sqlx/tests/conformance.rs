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
