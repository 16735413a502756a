//! What a driver crate provides to run the conformance suite.

use std::future::Future;

use pgmill::driver::{Driver, Row, Statement};
use pgmill::{DbError, DbErrorKind, InsertParams, InsertResult, Inserter, Result};

/// Connects the conformance suite to one driver.
///
/// A driver crate implements it on a local unit struct in its `tests/conformance.rs`: how to
/// build its driver, and how to run [`HostWork`] in a transaction of the application's own
/// connection type. [`conformance_suite!`](crate::conformance_suite) then runs every case on it.
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

    /// The database the cases run against: [`testdb::url`](crate::testdb::url) (`DATABASE_URL`
    /// or the process's throwaway cluster) unless the harness says otherwise, as the pooler runs
    /// do ([`pgbouncer_url`](crate::pgbouncer_url)).
    fn url() -> String {
        crate::testdb::url()
    }

    /// Builds the driver over a fresh pool (at most `max_connections`) connected to `url`.
    fn connect(
        url: &str,
        max_connections: u32,
    ) -> impl Future<Output = Result<Self::Driver>> + Send;

    /// Runs `work` inside a transaction of the application's own connection type, opened the
    /// library's own way (sqlx `Transaction`, tokio-postgres `Transaction`, diesel
    /// `conn.transaction(..)`) on a connection of its own to `url`, through the driver's extension
    /// trait on that type: each statement through `pgmill()`, then the jobs through
    /// `insert_jobs`. Commits when [`HostWork::commit`] is true, rolls back otherwise.
    ///
    /// [`run_host_work!`](crate::run_host_work) runs the work once the transaction is open;
    /// errors of the library calls the harness makes itself can be reported with
    /// [`harness_error`].
    fn run_host_transaction(
        url: &str,
        work: HostWork,
    ) -> impl Future<Output = Result<HostDone>> + Send;

    /// Runs `statements` in a host transaction ([`Harness::run_host_transaction`]) and returns
    /// each statement's rows.
    fn host_transaction(
        url: &str,
        statements: Vec<Statement>,
        commit: bool,
    ) -> impl Future<Output = Result<Vec<Vec<Row>>>> + Send {
        let work = HostWork {
            statements,
            jobs: None,
            commit,
        };
        async move { Ok(Self::run_host_transaction(url, work).await?.rows) }
    }

    /// Inserts `jobs` in a host transaction with `tx.insert_jobs(&inserter, &jobs)`
    /// ([`Harness::run_host_transaction`]) and returns the insert results as seen inside the
    /// transaction.
    fn host_insert(
        url: &str,
        inserter: &Inserter,
        jobs: Vec<InsertParams>,
        commit: bool,
    ) -> impl Future<Output = Result<Vec<InsertResult>>> + Send {
        let work = HostWork {
            statements: Vec::new(),
            jobs: Some((inserter.clone(), jobs)),
            commit,
        };
        async move { Ok(Self::run_host_transaction(url, work).await?.jobs) }
    }
}

/// What [`Harness::run_host_transaction`] runs in the application's transaction, in this order.
#[derive(Debug, Default)]
pub struct HostWork {
    /// Statements to run through the extension trait's `pgmill()` executor, each for its rows.
    pub statements: Vec<Statement>,
    /// Jobs to insert through the extension trait's `insert_jobs`, with the inserter to use.
    pub jobs: Option<(Inserter, Vec<InsertParams>)>,
    /// Commit the transaction at the end; roll it back when false.
    pub commit: bool,
}

/// Runs a [`HostWork`] on the host transaction `$tx` through the driver's extension trait (which
/// must be in scope): each statement with `$tx.pgmill()`, then the jobs with
/// `$tx.insert_jobs(..)`. Evaluates to the [`HostDone`]; an error returns early, through `?`.
///
/// - `async`, for an [`Executor`](pgmill::driver::Executor): awaits each call, then ends `$tx`
///   with the library's `commit()` or `rollback()` future, as [`HostWork::commit`] says (sqlx's
///   and tokio-postgres's transactions end so).
/// - `blocking`, for a [`BlockingExecutor`](pgmill::driver::BlockingExecutor): leaves ending the
///   transaction to the caller (diesel's `conn.transaction(..)` commits when its closure returns
///   `Ok`).
#[macro_export]
macro_rules! run_host_work {
    (async $tx:ident, $work:expr) => {{
        let work: &$crate::HostWork = &$work;
        let mut done = $crate::HostDone::default();
        for stmt in &work.statements {
            done.rows
                .push($crate::__private::Executor::query(&mut $tx.pgmill(), stmt).await?);
        }
        if let Some((inserter, jobs)) = &work.jobs {
            done.jobs = $tx.insert_jobs(inserter, jobs).await?;
        }
        let end = if work.commit {
            $tx.commit().await
        } else {
            $tx.rollback().await
        };
        end.map_err($crate::harness_error)?;
        done
    }};
    (blocking $tx:ident, $work:expr) => {{
        let work: &$crate::HostWork = &$work;
        let mut done = $crate::HostDone::default();
        for stmt in &work.statements {
            done.rows.push($crate::__private::BlockingExecutor::query(
                &mut $tx.pgmill(),
                stmt,
            )?);
        }
        if let Some((inserter, jobs)) = &work.jobs {
            done.jobs = $tx.insert_jobs(inserter, jobs)?;
        }
        done
    }};
}

/// What [`Harness::run_host_transaction`] got back inside the transaction.
#[derive(Debug, Default)]
pub struct HostDone {
    /// The rows of each statement, in order.
    pub rows: Vec<Vec<Row>>,
    /// What the insert did with each job, in input order.
    pub jobs: Vec<InsertResult>,
}

/// An error of a library call the harness makes itself (connecting, beginning, committing), as
/// pgmill's error; the driver maps the errors of its own calls.
pub fn harness_error(e: impl std::error::Error + Send + Sync + 'static) -> pgmill::Error {
    DbError::new(DbErrorKind::Other, e.to_string())
        .with_source(e)
        .into()
}
