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
