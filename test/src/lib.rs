//! Test helpers for applications using pgmill, for any driver: run a worker on a job built by
//! hand, assert that jobs were or were not enqueued (inside an open transaction or after commit),
//! run what was enqueued to completion, and give each test a private schema.
//!
//! | helper | what it does | after |
//! |--------|--------------|-------|
//! | [`InlineWorker`] | runs a worker on a job as a client would (decoding, timeout, panics) and returns the [`Outcome`](pgmill::Outcome) | Oban's `perform_job`, River's `rivertest.Worker` |
//! | [`JobBuilder`] | builds the [`Job`](pgmill::Job) a worker gets, to call `work` directly | |
//! | [`require_inserted`] | a job of a kind, optionally matching some args, queue, priority, scheduled time, was enqueued; returns it | `assert_enqueued`, `RequireInserted[Tx]` |
//! | [`require_not_inserted`] | no such job was enqueued | `refute_enqueued`, `RequireNotInserted[Tx]` |
//! | [`drain`] | starts a client, runs the jobs due so far, stops it | `drain_queue` |
//! | [`test_schema`] | a fresh schema with pgmill's tables, per test | |
//!
//! The assertions take any [`Executor`](pgmill::driver::Executor): a pooled connection sees what
//! was committed, and the application's own transaction (`tx.pgmill()` on sqlx or
//! tokio-postgres, or [`Executor::begin`](pgmill::driver::Executor::begin) on a pooled
//! connection) also sees its own uncommitted inserts. A failed assertion panics with what was
//! expected and what was found:
//!
//! ```text
//! require_inserted: expected a job of kind "send_email" with queue "mail" in schema pgmill_t42_0;
//! found 1 job(s) of that kind, none matching:
//!   job 1: queue: expected "mail", found "default"
//! ```
//!
//! The database is [`pgmill_testdb`]'s (re-exported as [`testdb`]): `DATABASE_URL` when set,
//! otherwise a throwaway cluster started from the installed PostgreSQL binaries.
//!
//! # Example
//!
//! A complete test, on sqlx (any driver works the same way):
//!
//! ```no_run
//! use pgmill::driver::{Driver, Executor, Transaction};
//! use pgmill::{Client, Inserter, Job, JobArgs, JobError, Outcome, Worker};
//! use pgmill_driver_sqlx::SqlxDriver;
//! use pgmill_test::{Expected, InlineWorker, drain, require_inserted, require_not_inserted};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct SendEmail {
//!     to: String,
//! }
//!
//! impl JobArgs for SendEmail {
//!     const KIND: &'static str = "send_email";
//!     fn insert_opts(&self) -> pgmill::InsertOpts {
//!         pgmill::InsertOpts::new().queue("mail")
//!     }
//! }
//!
//! struct SendEmailWorker;
//!
//! impl Worker<SendEmail> for SendEmailWorker {
//!     async fn work(&self, job: &Job<SendEmail>) -> Result<(), JobError> {
//!         if !job.args.to.contains('@') {
//!             return Err(JobError::discard("not an e-mail address"));
//!         }
//!         Ok(())
//!     }
//! }
//!
//! /// The application code under test: signs a user up and enqueues the welcome e-mail in the
//! /// same transaction.
//! async fn sign_up<E: Executor>(tx: &mut E, inserter: &Inserter, email: &str) -> pgmill::Result<()> {
//!     inserter.insert(tx, SendEmail { to: email.into() }).await?;
//!     Ok(())
//! }
//!
//! #[tokio::test]
//! async fn the_worker_refuses_bad_addresses() {
//!     let worker = InlineWorker::new(SendEmailWorker);
//!     let ok = worker.work(SendEmail { to: "ada@example.com".into() }).await.unwrap();
//!     assert!(matches!(ok, Outcome::Completed { .. }));
//!     let bad = worker.work(SendEmail { to: "nobody".into() }).await.unwrap();
//!     assert!(matches!(bad, Outcome::Discard { .. }));
//! }
//!
//! #[tokio::test]
//! async fn signing_up_enqueues_the_welcome_email() -> pgmill::Result<()> {
//!     let driver = SqlxDriver::connect(&pgmill_test::testdb::url(), 4).await?;
//!     let mut conn = driver.acquire().await?;
//!     let schema = pgmill_test::test_schema(&mut conn).await?; // private to this test
//!     let inserter = Inserter::new(schema.clone());
//!     let welcome = Expected::kind::<SendEmail>()
//!         .args(serde_json::json!({"to": "ada@example.com"}))
//!         .queue("mail");
//!
//!     let mut tx = conn.begin().await?;
//!     sign_up(&mut tx, &inserter, "ada@example.com").await?;
//!     require_inserted(&mut tx, &schema, &welcome).await; // seen inside the transaction
//!     require_not_inserted(&mut driver.acquire().await?, &schema, &welcome).await; // not yet outside
//!     tx.commit().await?;
//!     let job = require_inserted(&mut conn, &schema, &welcome).await; // committed
//!     assert_eq!(job.max_attempts, 25);
//!
//!     let client = Client::builder(driver)
//!         .schema(schema)
//!         .queue("mail", 5)
//!         .worker(SendEmailWorker)
//!         .build()?;
//!     let drained = drain(&client).await?; // runs the job, then stops the client
//!     assert_eq!(drained.completed, 1);
//!     Ok(())
//! }
//! ```

mod drain;
mod expected;
mod inserted;
mod schema;

pub use drain::{DEFAULT_DRAIN_TIMEOUT, Drained, drain, drain_within};
pub use expected::Expected;
pub use inserted::{inserted, require_inserted, require_not_inserted};
pub use pgmill::testing::{InlineWorker, JobBuilder};
pub use pgmill_testdb as testdb;
pub use schema::test_schema;
