//! diesel 2.3 driver for the pgmill job queue.
//!
//! It has two halves:
//!
//! - **Your transactions (blocking).** diesel's `conn.transaction(|conn| ..)` takes a synchronous
//!   closure, so pgmill's statements run there through [`PgConnectionExt::pgmill`], a blocking
//!   executor on your own `PgConnection`: commit and the job exists, roll back and it never did.
//! - **The engine (async).** [`DieselDriver`] wraps a deadpool-diesel pool; each statement runs
//!   inside `Object::interact` on tokio's blocking pool. A connection the engine releases clean
//!   is kept for its next statement for up to 50 ms, which spares deadpool-diesel's recycle check
//!   (a blocking-pool call of its own); see [`DieselDriver::from_pool`]. Its [`DieselListener`]
//!   is a dedicated connection polled for notifications on its own thread, reconnecting by
//!   itself.
//!
//! | feature                     | diesel driver                                                 |
//! |-----------------------------|---------------------------------------------------------------|
//! | enqueue in your transaction | yes, blocking, on `PgConnection` (and pooled connections)     |
//! | LISTEN/NOTIFY               | yes, polled on a thread every 1 ms (0.25 ms while busy)       |
//! | COPY for bulk inserts       | yes, streamed through diesel's `copy_from` (see below)        |
//! | SQLSTATE of server errors   | partial (see below)                                           |
//! | type of a NULL column       | partial (see below)                                           |
//!
//! # Limits that come from diesel
//!
//! - **COPY through a static target.** diesel's `copy_from` renders its target from a type,
//!   not a value, and the engine's table lives in a schema chosen at run time. The driver hands
//!   the target to diesel through a thread-local for the duration of the call, and accepts only
//!   the form the engine writes (`COPY <table> (<columns>) FROM STDIN`, text format). It relies
//!   on diesel's `CopyTarget::walk_target`, which diesel documents as hidden: a diesel upgrade
//!   that changes it breaks this driver's build, not its behaviour.
//! - **SQLSTATE.** diesel keeps the SQLSTATE of a server error only as a `DatabaseErrorKind`. The
//!   driver maps those kinds back (23505, 23503, 23502, 23514, 23001, 23P01, 40001, 25006),
//!   recognises a few codes from the server's English message (40P01, 57014, 55P03), and reports a
//!   lost connection as such; any other server error has no SQLSTATE.
//! - **NULL types.** diesel gives no type for a NULL field, so a NULL reads as
//!   `Value::Null(type)` of its column's type when another row of the result shows it, and as
//!   `Value::Null(PgType::Text)` otherwise. Reading it as `Option<T>` works either way.
//!
//! # Quick start
//!
//! Insert jobs inside your own diesel transaction with [`PgConnectionExt`]. The closure's error
//! type must accept both diesel's and pgmill's errors:
//!
//! ```no_run
//! use diesel::{Connection, PgConnection};
//! use pgmill::{Inserter, JobArgs, Schema};
//! use pgmill_driver_diesel::PgConnectionExt;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct SendReceipt {
//!     order_id: i64,
//! }
//!
//! impl JobArgs for SendReceipt {
//!     const KIND: &'static str = "send_receipt";
//! }
//!
//! #[derive(Debug)]
//! enum AppError {
//!     Db(diesel::result::Error),
//!     Queue(pgmill::Error),
//! }
//!
//! impl From<diesel::result::Error> for AppError {
//!     fn from(e: diesel::result::Error) -> Self {
//!         AppError::Db(e)
//!     }
//! }
//!
//! impl From<pgmill::Error> for AppError {
//!     fn from(e: pgmill::Error) -> Self {
//!         AppError::Queue(e)
//!     }
//! }
//!
//! fn main() -> Result<(), AppError> {
//!     let mut conn = PgConnection::establish("postgres://localhost/app")
//!         .expect("database is reachable");
//!     let inserter = Inserter::new(Schema::public());
//!     conn.transaction(|conn| {
//!         // ... your own diesel queries, e.g. inserting the order ...
//!         let job = conn.insert_job(&inserter, SendReceipt { order_id: 42 })?;
//!         tracing::info!(job_id = %job.id, "receipt queued");
//!         Ok(())
//!     })
//! }
//! ```
//!
//! Any statement of pgmill's can run there too, through the blocking executor
//! `conn.pgmill()` ([`DieselExecutor`]).
//!
//! The engine side takes a [`DieselDriver`]:
//!
//! ```no_run
//! # async fn run() -> pgmill::Result<()> {
//! let driver = pgmill_driver_diesel::DieselDriver::connect("postgres://localhost/app", 10).await?;
//! # let _ = driver;
//! # Ok(())
//! # }
//! ```

mod codec;
mod copy;
mod driver;
mod error;
mod executor;
mod listener;

pub use driver::DieselDriver;
pub use executor::{
    DieselConnection, DieselExecutor, DieselPoolExecutor, DieselPoolTransaction, DieselTransaction,
    PgConnectionExt, PooledConnection,
};
pub use listener::DieselListener;
