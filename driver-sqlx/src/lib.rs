//! pgmill's driver for [sqlx](https://docs.rs/sqlx) 0.9: run the job queue on your `PgPool`, and
//! run pgmill's statements inside your own sqlx transactions.
//!
//! # Quick start
//!
//! Wrap the pool your application already has in a [`SqlxDriver`]; the engine takes its
//! connections from it. To enqueue inside a transaction of your own, bring [`PgConnectionExt`]
//! into scope and insert on the transaction: commit and the job exists, roll back and it never
//! did.
//!
//! ```no_run
//! use pgmill::{Inserter, JobArgs, Migrator, Schema};
//! use pgmill_driver_sqlx::{PgConnectionExt, SqlxDriver};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct SendInvoice {
//!     order_id: i64,
//! }
//!
//! impl JobArgs for SendInvoice {
//!     const KIND: &'static str = "send_invoice";
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let pool = sqlx::PgPool::connect("postgres://localhost/app").await?;
//! let driver = SqlxDriver::new(pool.clone());
//! let schema = Schema::new("jobs")?;
//!
//! // Create or upgrade pgmill's tables, on a pooled connection.
//! let mut conn = pool.acquire().await?;
//! Migrator::new(schema.clone()).up(&mut conn.pgmill(), None).await?;
//!
//! // The application's write and the job commit together.
//! let inserter = Inserter::new(schema);
//! let mut tx = pool.begin().await?;
//! sqlx::query("INSERT INTO orders (id) VALUES ($1)")
//!     .bind(42_i64)
//!     .execute(&mut *tx)
//!     .await?;
//! tx.insert_job(&inserter, SendInvoice { order_id: 42 }).await?;
//! tx.commit().await?;
//! # let _ = driver;
//! # Ok(())
//! # }
//! ```
//!
//! # What it provides
//!
//! | pgmill                         | here                                                                |
//! |--------------------------------|---------------------------------------------------------------------|
//! | `Driver`                       | [`SqlxDriver`], over a `sqlx::PgPool`                               |
//! | `Executor`                     | [`SqlxExecutor`], over anything that derefs to a `PgConnection`     |
//! | ... on a pooled connection     | [`SqlxConnection`], over a [`PooledConnection`]                     |
//! | ... on your connection         | `SqlxExecutor<&mut PgConnection>`, from [`PgConnectionExt::pgmill`] |
//! | `Transaction` (and savepoints) | [`SqlxTransaction`]                                                 |
//! | `Listener`                     | [`SqlxListener`], over `sqlx::postgres::PgListener`                 |
//! | bulk insert                    | `COPY ... FROM STDIN` (`PgConnection::copy_in_raw`)                 |
//!
//! The engine's statements are short, and sqlx pings every connection that returns to its pool.
//! So a connection the engine releases with nothing left on it skips the pool for a moment: the
//! engine's next acquire takes it back without the ping (at most two connections, for at most
//! 50 ms; see [`SqlxDriver::new`]).
//!
//! Errors come back as [`pgmill::Error`] with the SQLSTATE kept; a killed backend or a dropped
//! socket reports [`pgmill::Error::is_connection_lost`].
//!
//! Behind a transaction-mode pooler (PgBouncer's `pool_mode = transaction`), build the driver
//! with [`SqlxDriver::unnamed_statements`] and [`SqlxDriver::with_listener_url`], and insert in
//! your own transactions through [`SqlxExecutor::unnamed`] (`tx.pgmill().unnamed()`).
//!
//! The listener takes one connection out of the pool for as long as it lives (sqlx's
//! `PgListener::connect_with`), so give the pool one connection more than the engine's workers
//! need.

mod codec;
mod driver;
mod error;
mod executor;
mod listener;

pub use driver::SqlxDriver;
pub use executor::{
    PgConnectionExt, PooledConnection, SqlxConnection, SqlxExecutor, SqlxTransaction,
};
pub use listener::SqlxListener;
