//! pgmill: a Postgres-backed background job queue.
//!
//! Jobs are rows in Postgres; workers in any number of processes claim and run them. Postgres is
//! the only moving part. The engine in this crate talks to Postgres only through the traits in
//! [`driver`], implemented by one crate per database library, so you enqueue with the stack your
//! application already uses:
//!
//! | your stack      | driver crate                   | enqueue inside your transaction          |
//! |-----------------|--------------------------------|------------------------------------------|
//! | sqlx 0.9        | `pgmill-driver-sqlx`           | `tx.insert_job(..)` on `Transaction`     |
//! | tokio-postgres  | `pgmill-driver-tokio-postgres` | `tx.insert_job(..)` on `Transaction`     |
//! | diesel 2.3      | `pgmill-driver-diesel`         | `conn.insert_job(..)` in `transaction()` |
//!
//! # Quick start
//!
//! Define job args ([`JobArgs`]: a kind plus serde) and a [`Worker`], build a [`Client`] over a
//! driver, migrate, start, insert:
//!
//! ```no_run
//! use pgmill::{Client, Job, JobArgs, JobError, Worker};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct SendEmail {
//!     to: String,
//! }
//!
//! impl JobArgs for SendEmail {
//!     const KIND: &'static str = "send_email";
//! }
//!
//! struct SendEmailWorker;
//!
//! impl Worker<SendEmail> for SendEmailWorker {
//!     async fn work(&self, job: &Job<SendEmail>) -> Result<(), JobError> {
//!         tracing::info!(to = %job.args.to, "sending the e-mail");
//!         Ok(()) // an error retries with backoff; JobError::cancel/discard/snooze say otherwise
//!     }
//! }
//!
//! # async fn run<D: pgmill::driver::Driver>(driver: D) -> pgmill::Result<()> {
//! let client = Client::builder(driver) // e.g. pgmill_driver_sqlx::SqlxDriver::new(pool)
//!     .queue("default", 50)
//!     .worker(SendEmailWorker)
//!     .build()?;
//! client.migrate().await?;
//! client.start().await?;
//! client.insert(SendEmail { to: "ada@example.com".into() }).await?;
//! // ...
//! client.stop().await; // finish running jobs, then stop
//! # Ok(())
//! # }
//! ```
//!
//! # Unique jobs
//!
//! [`InsertOpts::unique`] makes a job unique by what [`UniqueOpts`] asks for: its args (all of
//! them or some fields), its queue, the period its scheduled time falls in (by the database
//! clock), and the states in which a job keeps duplicates out (by default all but `cancelled` and
//! `discarded`; the states before a job finishes always count, so a running job is never
//! duplicated). An insert that finds a duplicate, from any process, inserts nothing and returns
//! the existing job; [`InsertResult::skipped_as_duplicate`] says so (a duplicate inserted by a
//! transaction still open makes the insert wait for that transaction's outcome). Single,
//! many and bulk inserts and every driver's `tx.insert_job(..)` behave alike:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use pgmill::{InsertOpts, JobArgs, UniqueOpts};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Reindex {
//!     index: String,
//! }
//!
//! impl JobArgs for Reindex {
//!     const KIND: &'static str = "reindex";
//! }
//!
//! # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> pgmill::Result<()> {
//! // One reindex of an index per queue and ten minutes.
//! let once = InsertOpts::new().unique(
//!     UniqueOpts::new()
//!         .by_args()
//!         .by_queue()
//!         .by_period(Duration::from_secs(600)),
//! );
//! let job = client
//!     .insert_with(Reindex { index: "users_email".into() }, once.clone())
//!     .await?;
//! let dup = client
//!     .insert_with(Reindex { index: "users_email".into() }, once)
//!     .await?;
//! assert!(!job.skipped_as_duplicate && dup.skipped_as_duplicate);
//! assert_eq!(dup.id, job.id); // the existing job, as it is now
//! # Ok(())
//! # }
//! ```
//!
//! # What a client does
//!
//! | component | what it does |
//! |-----------|--------------|
//! | inserter | writes jobs through any executor, the application's transaction included; announces due jobs by a debounced `NOTIFY` sent in the inserting transaction, and a client's commit watcher announces those whose notification was debounced away once their transaction commits |
//! | producers | one per queue: claim due jobs in one `FOR UPDATE SKIP LOCKED` statement for the free slots plus a small buffer ([`Config::prefetch`]), when notified, when the buffer runs low, or on the poll timer |
//! | executor | decodes args, applies the timeout, catches panics, maps the result to an outcome |
//! | completer | records outcomes in batches, one UPDATE each, fenced on the claim that ran (its fencing token) |
//! | notifier | one LISTEN connection for insert, control and leadership topics, scoped to the schema; reconnects and re-polls |
//! | heartbeat | keeps the client's liveness row; detects a database restart or failover and re-asserts or releases its jobs |
//! | elector | leader lease with terms; only the leader runs maintenance |
//! | maintenance | scheduler, rescuer, job and queue cleaners, analyzer, periodic enqueuer and (with metrics on) the queue sampler, each under a supervisor |
//!
//! Jobs move through [`JobState`]s; retries use the [`RetryPolicy`] (default `attempt⁴` seconds
//! with jitter); [`PeriodicJob`]s are durable cron or interval schedules; [`Client::subscribe`]
//! streams [`Event`]s; queues can be paused and running jobs cancelled from any process.
//!
//! # Errors
//!
//! Two error types meet in an application, one on each side of the queue.
//!
//! **A worker returns [`JobError`].** `Ok(())` completes the job. `?` converts every error into a
//! retryable `JobError`: any `std::error::Error`, an `anyhow::Error`, an `eyre::Report`, a `String`
//! or a `&str` (no feature to enable: anyhow and eyre convert into a [`BoxError`] themselves). The
//! attempt records the whole chain of causes, outermost first (`loading invoice 7: connection
//! refused`), in [`JobRow::errors`]; the job is retried with backoff until its attempts are used
//! up. [`JobError::cancel`], [`JobError::discard`] and [`JobError::snooze`] say otherwise. Args
//! that do not deserialize into the worker's type are discarded at once, without running the
//! worker: retrying cannot fix them. The attempt's error says why and the row keeps the raw args,
//! to be fixed and retried by hand ([`Client::job_retry`] after an update).
//!
//! ```
//! use anyhow::Context;
//! use pgmill::{Job, JobArgs, JobError, Worker};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Invoice {
//!     id: i64,
//! }
//!
//! impl JobArgs for Invoice {
//!     const KIND: &'static str = "invoice";
//! }
//!
//! fn load(id: i64) -> anyhow::Result<String> {
//!     std::fs::read_to_string(format!("/invoices/{id}")).context("reading the invoice")
//! }
//!
//! struct InvoiceWorker;
//!
//! impl Worker<Invoice> for InvoiceWorker {
//!     async fn work(&self, job: &Job<Invoice>) -> Result<(), JobError> {
//!         if job.args.id <= 0 {
//!             return Err(JobError::discard("invoice ids are positive")); // never retried
//!         }
//!         let text = load(job.args.id)?; // anyhow: retried, chain recorded
//!         let total: f64 = text.trim().parse()?; // std error: retried
//!         tracing::info!(total, "invoice sent");
//!         Ok(())
//!     }
//! }
//! ```
//!
//! **The client's methods return [`pgmill::Result<T>`](Result)**, whose error is [`Error`]: one
//! `#[non_exhaustive]` enum for the database (with [`Error::sqlstate`] and
//! [`Error::is_connection_lost`] to ask what happened without matching), bad names, bad
//! configuration, migrations and timeouts. It is a `std::error::Error + Send + Sync + 'static`, so
//! it goes into `anyhow`/`eyre` with `?`, into a worker's `JobError` with `?`, and into an
//! application's own error type with `#[from]`:
//!
//! ```no_run
//! use pgmill::{Client, JobArgs};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Welcome {
//!     user_id: i64,
//! }
//!
//! impl JobArgs for Welcome {
//!     const KIND: &'static str = "welcome";
//! }
//!
//! /// The application's own error type.
//! #[derive(Debug, thiserror::Error)]
//! enum AppError {
//!     #[error("the job queue failed")]
//!     Queue(#[from] pgmill::Error),
//!     #[error("no such user {0}")]
//!     NoSuchUser(i64),
//! }
//!
//! impl AppError {
//!     /// Worth answering 503 (try again) rather than 500.
//!     fn is_transient(&self) -> bool {
//!         matches!(self, AppError::Queue(e) if e.is_connection_lost())
//!     }
//! }
//!
//! async fn sign_up<D: pgmill::driver::Driver>(
//!     client: &Client<D>,
//!     user_id: i64,
//! ) -> Result<(), AppError> {
//!     if user_id <= 0 {
//!         return Err(AppError::NoSuchUser(user_id));
//!     }
//!     client.insert(Welcome { user_id }).await?; // pgmill::Error -> AppError::Queue
//!     Ok(())
//! }
//! # let _ = AppError::NoSuchUser(0).is_transient();
//! ```
//!
//! # Modules
//!
//! The crate root holds the types an application uses. Besides it: [`prelude`] (the names every
//! worker file needs), [`maintenance`] (the leader's services, for running a pass by hand),
//! [`middleware`] (code of your own around every attempt and insert; pgmill's job spans, metrics
//! and trace propagation), [`testing`] (a job built by hand and a worker run on it without a
//! client, for tests; the `pgmill-test` crate builds on it) and [`driver`] (the seam driver crates
//! implement; not for applications).
//!
//! # Schema
//!
//! pgmill's tables live in one schema (default `public`), named through [`Schema`], and are
//! created by the [`Migrator`] ([`Client::migrate`] runs it):
//!
//! ```no_run
//! # async fn run<E: pgmill::driver::Executor>(conn: &mut E) -> pgmill::Result<()> {
//! let schema = pgmill::Schema::new("jobs")?;
//! pgmill::Migrator::new(schema).up(conn, None).await?;
//! # Ok(())
//! # }
//! ```

pub mod admin;
mod client;
mod cluster;
mod connection_lease;
pub mod driver;
mod engine_metrics;
mod error;
mod event;
mod fast_hash;
mod ident;
mod insert;
mod job;
mod job_args;
mod job_error;
pub mod maintenance;
pub mod middleware;
mod migrator;
mod outcome;
mod periodic;
pub mod prelude;
mod query;
mod retry_policy;
mod schema;
mod service;
mod shared_parts;
#[cfg(feature = "signal")]
mod shutdown;
pub mod testing;
mod unique;
mod work;
mod worker;

pub use client::{Client, ClientBuilder, ClientStats, Config, QueueConfig};
pub use cluster::elector::ElectorConfig;
pub use cluster::health::{Health, ListenerState};
pub use error::{DbError, DbErrorKind, Error, Result};
pub use event::{Event, EventKind, Subscription};
pub use insert::inserter::Inserter;
pub use job::{AttemptError, InsertResult, Job, JobId, JobRow, JobState};
pub use job_args::{InsertOpts, InsertParams, JobArgs};
pub use job_error::{BoxError, JobError};
pub use migrator::{Direction, MigrateReport, MigrationStatus, Migrator};
pub use outcome::Outcome;
pub use periodic::{MissedTicks, PeriodicJob, Schedule};
pub use retry_policy::{DefaultRetryPolicy, RetryPolicy};
pub use schema::Schema;
#[cfg(feature = "signal")]
pub use shutdown::shutdown_signal;
pub use unique::UniqueOpts;
pub use work::completer::CompleterConfig;
pub use worker::{Worker, Workers};
