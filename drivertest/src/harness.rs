//! What a driver crate provides to run the conformance suite.

use std::future::Future;

use pgmill::driver::{Driver, Row, Statement};
use pgmill::{InsertParams, Inserter, JobRow, Result};

/// Connects the conformance suite to one driver.
///
/// A driver crate implements it on a local unit struct in its `tests/conformance.rs` and joins
/// the suite with one line: `pgmill_drivertest::conformance_suite!(Harness);`.
pub trait Harness: Send + Sync + 'static {
    /// The driver under test.
    type Driver: Driver;

    /// False when the library cannot report the SQLSTATE of every server error. diesel 2.3 exposes
    /// only the codes behind its error kinds (unique, foreign key, not null and check violations,
    /// serialization failure, read-only transaction), which are the ones the engine acts on.
    const REPORTS_EVERY_SQLSTATE: bool = true;

    /// False when the library cannot tell the type of a NULL column (diesel 2.3's stable API has
    /// no type for a NULL field); such NULLs decode as NULL of some type.
    const TYPES_NULL_COLUMNS: bool = true;

    /// False when a connection cannot be used again after a streamed COPY on it was dropped
    /// mid-way, and the driver reports it lost instead (sqlx 0.9 leaves the protocol out of step).
    const REUSES_CONNECTION_AFTER_DROPPED_COPY: bool = true;

    /// Builds the driver over a fresh pool (at most `max_connections`) connected to `url`.
    fn connect(
        url: &str,
        max_connections: u32,
    ) -> impl Future<Output = Result<Self::Driver>> + Send;

    /// Runs `statements` inside a transaction of the application's own connection type, opened
    /// the library's own way (sqlx `Transaction`, tokio-postgres `Transaction`, diesel
    /// `conn.transaction(..)`), through the driver's extension trait on that type. Commits when
    /// `commit` is true, rolls back otherwise, and returns each statement's rows.
    fn host_transaction(
        url: &str,
        statements: Vec<Statement>,
        commit: bool,
    ) -> impl Future<Output = Result<Vec<Vec<Row>>>> + Send;

    /// Inserts `jobs` inside a transaction of the application's own connection type through the
    /// driver's extension trait (`tx.insert_jobs(&inserter, &jobs)`), then commits or rolls back.
    /// Returns the inserted rows as seen inside the transaction.
    fn host_insert(
        url: &str,
        inserter: &Inserter,
        jobs: Vec<InsertParams>,
        commit: bool,
    ) -> impl Future<Output = Result<Vec<JobRow>>> + Send;
}
