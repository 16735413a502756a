//! tokio-postgres driver for pgmill, the Postgres-backed job queue.
//!
//! It gives the engine a [`TokioPostgresDriver`] over a `deadpool_postgres::Pool`, and gives your
//! application [`GenericClientExt::pgmill`], so pgmill's statements run inside **your own**
//! tokio-postgres transaction: commit and the job exists, roll back and it never did.
//!
//! | piece                         | what it is                                                  |
//! |-------------------------------|-------------------------------------------------------------|
//! | [`TokioPostgresDriver`]       | the engine's handle: pool plus listener config              |
//! | [`TokioPostgresConnection`]   | a pooled connection (an `Executor`)                         |
//! | [`TokioPostgresExecutor`]     | an `Executor` over your own `Client` or `Transaction`       |
//! | [`TokioPostgresTransaction`]  | the same, over a transaction opened by `Executor::begin`    |
//! | [`AsGenericClient`]           | what those two run on: `&mut` your client, or a transaction |
//! | [`GenericClientExt`]          | `insert_job` / `.pgmill()` on any `GenericClient`           |
//! | [`DeadpoolClientExt`]         | the same on deadpool's objects and transactions, prepared   |
//! | [`TokioPostgresListener`]     | the dedicated LISTEN connection, reconnecting on its own    |
//!
//! On your own `Client` or `Transaction`, statements run with `query_typed` / `execute_typed`:
//! one round trip, no named prepared statement, parameter types sent explicitly. Pooled connections prepare each of
//! the engine's statements once and keep it in deadpool's cache, unless
//! [`TokioPostgresDriver::unnamed_statements`] says otherwise (behind a transaction-mode pooler
//! such as PgBouncer; see also [`TokioPostgresDriver::with_listener_url`]). COPY is supported.
//!
//! # Quick start: enqueue in your own transaction
//!
//! ```no_run
//! use pgmill::driver::{Executor, Statement};
//! use pgmill::{Inserter, JobArgs, Schema};
//! use pgmill_driver_tokio_postgres::GenericClientExt;
//! use serde::{Deserialize, Serialize};
//! use tokio_postgres::NoTls;
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
//! let (mut client, connection) =
//!     tokio_postgres::connect("postgres://localhost/app", NoTls).await?;
//! tokio::spawn(connection);
//! let inserter = Inserter::new(Schema::public());
//!
//! let mut tx = client.transaction().await?;
//! tx.execute("UPDATE orders SET paid = true WHERE id = $1", &[&42_i64])
//!     .await?;
//! tx.insert_job(&inserter, SendInvoice { order_id: 42 }).await?;
//! // Any statement core builds runs in the same transaction through `pgmill()`.
//! let stmt = Statement::new("SELECT $1::text AS greeting").bind("hello");
//! let rows = tx.pgmill().query(&stmt).await?;
//! assert_eq!(rows.len(), 1);
//! tx.commit().await?;
//! # Ok(())
//! # }
//! ```
//!
//! With deadpool-postgres (the pool this driver is built on), import [`DeadpoolClientExt`]
//! instead: on a pooled object and on its transactions, pgmill's statements are then prepared
//! once per connection in deadpool's statement cache rather than parsed and planned on every
//! call (`tx.pgmill().unnamed()` behind a transaction-mode pooler). [`GenericClientExt`] works
//! on them too, through deref to the tokio-postgres types (`(&mut **obj).insert_job(..)` spells
//! it out), with unnamed statements.

mod codec;
mod driver;
mod error;
mod executor;
mod listener;

pub use driver::TokioPostgresDriver;
pub use executor::{
    AsGenericClient, Deadpool, DeadpoolClient, DeadpoolClientExt, GenericClientExt,
    TokioPostgresConnection, TokioPostgresExecutor, TokioPostgresTransaction,
};
pub use listener::TokioPostgresListener;
