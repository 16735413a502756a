//! Building blocks for testing workers and enqueuers without a running client: a [`Job`] built by
//! hand ([`JobBuilder`]), a worker run on it the way a client runs it ([`InlineWorker`]), and jobs
//! listed through any executor, an open transaction included ([`job_list`]).
//!
//! The `pgmill-test` crate builds its assertions (`require_inserted`, `require_not_inserted`,
//! `drain`) and a private schema per test on these; most tests use that crate.
//!
//! # Examples
//!
//! ```
//! use pgmill::testing::{InlineWorker, JobBuilder};
//! use pgmill::{Job, JobArgs, JobError, Outcome, Worker};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Greet {
//!     name: String,
//! }
//!
//! impl JobArgs for Greet {
//!     const KIND: &'static str = "greet";
//! }
//!
//! struct GreetWorker;
//!
//! impl Worker<Greet> for GreetWorker {
//!     async fn work(&self, job: &Job<Greet>) -> Result<(), JobError> {
//!         if job.args.name.is_empty() {
//!             return Err(JobError::discard("no name"));
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> pgmill::Result<()> {
//! // Call `work` directly on a job built by hand...
//! let job = JobBuilder::new(Greet { name: "Ada".into() }).attempt(3).build()?;
//! assert_eq!(job.attempt(), 3);
//! GreetWorker.work(&job).await.unwrap();
//!
//! // ...or run the worker as a client would: decoding, timeout, panics, outcome.
//! let worker = InlineWorker::new(GreetWorker);
//! let outcome = worker.work(Greet { name: String::new() }).await?;
//! assert!(matches!(outcome, Outcome::Discard { ref error, .. } if error == "no name"));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::admin::{JobListPage, JobListParams};
use crate::client::Config;
use crate::driver::Executor;
use crate::engine_metrics::MetricsSink;
use crate::error::{Error, Result};
use crate::job::Job;
use crate::job::{JobId, JobRow, JobState};
use crate::job_args::JobArgs;
use crate::middleware::{JobTracing, MiddlewareStack};
use crate::outcome::Outcome;
use crate::query::job_list_page;
use crate::retry_policy::{DefaultRetryPolicy, RetryPolicy};
use crate::schema::Schema;
use crate::work::job_executor::{JobExecutor, JobExecutorConfig};
use crate::worker::{Worker, Workers};

/// Builds a [`Job`] (or the running [`JobRow`] it wraps) for a test, as a client would hand it to
/// its worker: state `running`, attempt 1 of 25, queue `default`, priority 1, the args stored as
/// JSON and decoded back.
pub struct JobBuilder<A> {
    row: JobRow,
    args: std::result::Result<serde_json::Value, String>,
    schema: Schema,
    cancel: CancellationToken,
    _args: PhantomData<fn() -> A>,
}

impl<A: JobArgs> JobBuilder<A> {
    /// A job of kind `A::KIND` carrying `args`.
    pub fn new(args: A) -> Self {
        let now = Utc::now();
        let json = serde_json::to_value(&args).map_err(|e| e.to_string());
        let row = JobRow {
            id: JobId(1),
            state: JobState::Running,
            queue: "default".to_owned(),
            kind: A::KIND.to_owned(),
            args: json.clone().unwrap_or_default(),
            metadata: serde_json::json!({}),
            priority: 1,
            attempt: 1,
            max_attempts: 25,
            attempted_at: Some(now),
            attempted_by: vec!["pgmill-testing".to_owned()],
            created_at: now,
            scheduled_at: now,
            finalized_at: None,
            errors: Vec::new(),
            tags: Vec::new(),
            claim_token: None,
        };
        JobBuilder {
            row,
            args: json,
            schema: Schema::public(),
            cancel: CancellationToken::new(),
            _args: PhantomData,
        }
    }

    /// The job's id (default 1).
    pub fn id(mut self, id: JobId) -> Self {
        self.row.id = id;
        self
    }

    /// The attempt being run, from 1 (default 1).
    pub fn attempt(mut self, attempt: i16) -> Self {
        self.row.attempt = attempt;
        self
    }

    /// Attempts allowed (default 25).
    pub fn max_attempts(mut self, max_attempts: i16) -> Self {
        self.row.max_attempts = max_attempts;
        self
    }

    /// The queue (default `default`).
    pub fn queue(mut self, queue: &str) -> Self {
        queue.clone_into(&mut self.row.queue);
        self
    }

    /// The priority, 1 to 4 (default 1).
    pub fn priority(mut self, priority: i16) -> Self {
        self.row.priority = priority;
        self
    }

    /// The metadata (default `{}`).
    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.row.metadata = metadata;
        self
    }

    /// The tags (default none).
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.row.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// The schema [`Job::complete_in`] writes to (default `public`).
    pub fn schema(mut self, schema: Schema) -> Self {
        self.schema = schema;
        self
    }

    /// Starts the job already cancelled, as when an operator cancels it or the client stops
    /// hard: [`Job::is_cancelled`] is true.
    pub fn cancelled(self) -> Self {
        self.cancel.cancel();
        self
    }

    /// The row the job carries.
    pub fn row(&self) -> &JobRow {
        &self.row
    }

    /// The job, its args decoded from their JSON as a fetched job's are.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the args do not serialize to JSON or do not decode back into `A`.
    pub fn build(self) -> Result<Job<A>> {
        let json = self
            .args
            .map_err(|e| Error::decode(format!("args of {}", A::KIND), e))?;
        let args = A::deserialize(&json)
            .map_err(|e| Error::decode(format!("args of {}", A::KIND), e.to_string()))?;
        Ok(Job::new(args, Arc::new(self.row), self.schema, self.cancel))
    }
}

impl<A> fmt::Debug for JobBuilder<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobBuilder")
            .field("row", &self.row)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// Runs one worker on jobs built by hand, as a client runs an attempt: the args decoded from JSON,
/// the worker's timeout (or the client's default, 60 s) applied, a panic caught, and the result
/// turned into the [`Outcome`] the client would record, with the default retry policy. Nothing is
/// written to the database (unless the worker writes itself).
pub struct InlineWorker<A> {
    workers: Workers,
    job_timeout: Option<Duration>,
    retry_policy: Arc<dyn RetryPolicy>,
    _args: PhantomData<fn() -> A>,
}

impl<A: JobArgs> InlineWorker<A> {
    /// Runs `worker` for jobs of kind `A::KIND`.
    ///
    /// # Panics
    ///
    /// When `A::KIND` is not a valid kind name.
    pub fn new<W: Worker<A>>(worker: W) -> Self {
        let mut workers = Workers::new();
        if let Err(e) = workers.add(worker) {
            panic!("cannot run a worker for {:?}: {e}", A::KIND);
        }
        InlineWorker {
            workers,
            job_timeout: Config::default().job_timeout,
            retry_policy: Arc::new(DefaultRetryPolicy),
            _args: PhantomData,
        }
    }

    /// The timeout of jobs whose worker sets none, as [`Config::job_timeout`](crate::Config)
    /// (default 60 s; `None` for no timeout).
    pub fn job_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.job_timeout = timeout;
        self
    }

    /// Runs the worker on a job of `args` built with [`JobBuilder::new`].
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the args do not serialize to JSON.
    pub async fn work(&self, args: A) -> Result<Outcome> {
        self.work_job(JobBuilder::new(args)).await
    }

    /// Runs the worker on `job`.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the args do not serialize to JSON (args that do not decode back
    /// into `A` are the outcome [`Outcome::Discard`], as in a client).
    pub async fn work_job(&self, job: JobBuilder<A>) -> Result<Outcome> {
        if let Err(e) = &job.args {
            return Err(Error::decode(format!("args of {}", A::KIND), e.clone()));
        }
        let (tx, mut rx) = mpsc::channel(1);
        let config = JobExecutorConfig {
            workers: self.workers.clone(),
            retry_policy: Arc::clone(&self.retry_policy),
            default_timeout: self.job_timeout,
            tracing: JobTracing::default(),
            middleware: MiddlewareStack::default(),
        };
        let executor = JobExecutor::new(job.schema, MetricsSink::off(), config, tx);
        executor
            .execute(Arc::new(job.row), &CancellationToken::new(), &job.cancel)
            .await;
        let completion = rx
            .recv()
            .await
            .ok_or_else(|| Error::InvalidConfig("the attempt reported no outcome".into()))?;
        Ok(completion.outcome)
    }
}

impl<A> fmt::Debug for InlineWorker<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InlineWorker")
            .field("workers", &self.workers)
            .field("job_timeout", &self.job_timeout)
            .finish_non_exhaustive()
    }
}

/// A page of the jobs in `schema` matching `params`, read through `exec`: a pooled connection, or
/// an open transaction, whose uncommitted inserts it sees. The same listing as
/// [`Client::job_list`](crate::Client::job_list), without a client.
///
/// # Errors
///
/// The database error.
pub async fn job_list<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    params: &JobListParams,
) -> Result<JobListPage> {
    let jobs = exec
        .query_as(&crate::query::job_list(schema, params))
        .await?;
    Ok(job_list_page(jobs, params))
}
