//! pgmill: a Postgres-backed background job queue.
//!
//! Jobs are rows in Postgres; workers in any number of processes claim and run them. Postgres is
//! the only moving part. The engine in this crate talks to Postgres only through the traits in
//! [`driver`], implemented by one crate per database library:
//!
//! | your stack      | driver crate                   |
//! |-----------------|--------------------------------|
//! | sqlx 0.9        | `pgmill-driver-sqlx`           |
//! | tokio-postgres  | `pgmill-driver-tokio-postgres` |
//! | diesel 2.3      | `pgmill-driver-diesel`         |
//!
//! Each driver lets you enqueue inside your application's own transaction: commit and the job
//! exists, roll back and it never did.
//!
//! # Schema
//!
//! pgmill's tables live in one schema (default `public`), named through [`Schema`], and are
//! created by the [`Migrator`]:
//!
//! ```no_run
//! # async fn run<E: pgmill::driver::Executor>(conn: &mut E) -> pgmill::Result<()> {
//! let schema = pgmill::Schema::new("jobs")?;
//! pgmill::Migrator::new(schema).up(conn, None).await?;
//! # Ok(())
//! # }
//! ```

pub mod driver;
mod error;
mod ident;
mod migrator;
mod query;
mod schema;

pub use error::{
    DbError, DbErrorKind, Error, Result, SQLSTATE_READ_ONLY_SQL_TRANSACTION,
    SQLSTATE_SERIALIZATION_FAILURE, SQLSTATE_UNIQUE_VIOLATION,
};
pub use ident::{MAX_NAME_LEN, MAX_SCHEMA_LEN, quote_ident, validate_name, validate_schema_name};
pub use migrator::{Direction, MigrateReport, MigrationStatus, Migrator};
pub use query::MigrationRow;
pub use schema::{SCHEMA_MARKER, Schema};
