//! Workers run jobs: the [`Worker`] trait, the [`Workers`] registry, and [`JobError`], the typed
//! outcome of a failed attempt.

use std::any::Any;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use futures_util::FutureExt;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::driver::{BlockingExecutor, Executor};
use crate::error::{Error, Result};
use crate::fast_hash::FastMap;
use crate::job::{JobId, JobRow};
use crate::job_args::JobArgs;
use crate::query::{SetStateParams, job_set_state_if_running_many};
use crate::schema::Schema;
use crate::work::claim_tokens::NO_CLAIM;

/// A boxed error, as workers return them.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// A job being worked: its decoded args, its row, and a cancellation signal.
#[derive(Debug)]
pub struct Job<A> {
    /// The decoded arguments.
    pub args: A,
    row: Arc<JobRow>,
    schema: Schema,
    cancel: CancellationToken,
    recorded: AtomicBool,
}

impl<A> Job<A> {
    pub(crate) fn new(
        args: A,
        row: Arc<JobRow>,
        schema: Schema,
        cancel: CancellationToken,
    ) -> Self {
        Job {
            args,
            row,
            schema,
            cancel,
            recorded: AtomicBool::new(false),
        }
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.row.id
    }

    /// The attempt being run, from 1.
    pub fn attempt(&self) -> i16 {
        self.row.attempt
    }

    /// The full row as fetched (state `running`).
    pub fn row(&self) -> &JobRow {
        &self.row
    }

    /// Resolves when the job's work should stop: the client is stopping hard, or the job was
    /// cancelled. Work that does not await can poll [`Job::is_cancelled`] instead. (A timeout drops
    /// the work future.)
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// True once the job's work should stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn completed_params(&self) -> [SetStateParams; 1] {
        [SetStateParams {
            id: self.row.id,
            attempt: self.row.attempt,
            claim_token: self.row.claim_token.unwrap_or(NO_CLAIM),
            outcome: "completed",
            delay: TimeDelta::zero(),
            error: None,
        }]
    }

    /// Completes this job inside the application's own transaction, so the job is completed
    /// exactly when the worker's own writes commit. Returns false when the attempt was superseded
    /// (the job is no longer running this attempt), in which case the transaction should roll back.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn complete_in<E: Executor>(&self, exec: &mut E) -> Result<bool> {
        let stmt = job_set_state_if_running_many(
            &self.schema,
            &self.completed_params(),
            TimeDelta::zero(),
        );
        let done = exec.execute(&stmt).await? == 1;
        self.recorded.fetch_or(done, Ordering::Relaxed);
        Ok(done)
    }

    /// [`Job::complete_in`] for a blocking executor (diesel).
    ///
    /// # Errors
    ///
    /// The database error.
    pub fn complete_in_blocking<E: BlockingExecutor>(&self, exec: &mut E) -> Result<bool> {
        let stmt = job_set_state_if_running_many(
            &self.schema,
            &self.completed_params(),
            TimeDelta::zero(),
        );
        let done = exec.execute(&stmt)? == 1;
        self.recorded.fetch_or(done, Ordering::Relaxed);
        Ok(done)
    }
}

/// Runs jobs of one kind.
///
/// Only [`Worker::work`] is required. Returning `Ok(())` completes the job; an error fails the
/// attempt and the job is retried with backoff until its attempts are used up; [`JobError`]'s
/// constructors cancel, discard or snooze it instead. A panic is caught and recorded like an error.
/// A job whose args do not deserialize into `A` never reaches `work`: it is discarded at once,
/// the decode error recorded and the raw args kept in the row.
///
/// # Examples
///
/// ```
/// use pgmill::{Job, JobArgs, JobError, Worker};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Resize {
///     image_id: i64,
/// }
///
/// impl JobArgs for Resize {
///     const KIND: &'static str = "resize";
/// }
///
/// struct ResizeWorker;
///
/// impl Worker<Resize> for ResizeWorker {
///     async fn work(&self, job: &Job<Resize>) -> Result<(), JobError> {
///         if job.args.image_id < 0 {
///             // Bad input will never succeed: do not retry.
///             return Err(JobError::discard("negative image id"));
///         }
///         // ... resize ...
///         Ok(())
///     }
///
///     fn timeout(&self, _job: &Job<Resize>) -> Option<std::time::Duration> {
///         Some(std::time::Duration::from_secs(30))
///     }
/// }
///
/// let mut workers = pgmill::Workers::new();
/// workers.add(ResizeWorker).unwrap();
/// assert!(workers.add(ResizeWorker).is_err()); // one worker per kind
/// ```
///
/// # Blocking work
///
/// `work` runs on the tokio runtime, next to the client's producers, completer and heartbeat. Work
/// that blocks its thread (a blocking client, `std::thread::sleep`, file or CPU-heavy work) takes
/// a runtime thread from all of them, and cannot be stopped by its [`Worker::timeout`], which
/// drops the work only at an `.await`. Run it in `tokio::task::spawn_blocking` and await that:
///
/// ```
/// use pgmill::{Job, JobArgs, JobError, Worker};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Checksum {
///     path: String,
/// }
///
/// impl JobArgs for Checksum {
///     const KIND: &'static str = "checksum";
/// }
///
/// struct ChecksumWorker;
///
/// impl Worker<Checksum> for ChecksumWorker {
///     async fn work(&self, job: &Job<Checksum>) -> Result<(), JobError> {
///         let path = job.args.path.clone();
///         // Blocking I/O and hashing on the blocking pool; the runtime thread stays free and
///         // the timeout still ends the attempt (the blocking task runs on to its end).
///         let sum = tokio::task::spawn_blocking(move || {
///             std::fs::read(&path).map(|bytes| bytes.iter().map(|&b| u64::from(b)).sum::<u64>())
///         })
///         .await??;
///         tracing::info!(sum, "checksum computed");
///         Ok(())
///     }
/// }
/// ```
///
/// An attempt that ran past its timeout anyway (its worker blocked) keeps its result; it is
/// warned about once per kind in the log, and recorded every time: in the
/// `pgmill_job_ran_past_timeout_total` metric, in the event's
/// [`ran_past_timeout`](crate::Event::ran_past_timeout), and in the attempt's error when it
/// failed.
pub trait Worker<A: JobArgs>: Send + Sync + 'static {
    /// Works one job.
    fn work(&self, job: &Job<A>) -> impl Future<Output = Result<(), JobError>> + Send;

    /// How long one attempt may run before its work is dropped and the attempt fails; `None`
    /// uses the client's job timeout. The work is dropped at an `.await`: see
    /// [blocking work](Worker#blocking-work).
    fn timeout(&self, job: &Job<A>) -> Option<Duration> {
        let _ = job;
        None
    }

    /// How long to wait before retrying after this failed attempt; `None` uses the client's
    /// [`RetryPolicy`](crate::RetryPolicy).
    fn next_retry(&self, job: &Job<A>) -> Option<TimeDelta> {
        let _ = job;
        None
    }
}

/// What a failed attempt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobAction {
    Retry,
    Cancel,
    Discard,
    Snooze(Duration),
}

/// The error a worker returns: retried by default, or cancelling, discarding or snoozing the job.
///
/// Everything that converts into a [`BoxError`] converts into a retryable `JobError`, so `?` works
/// in [`Worker::work`] on any `std::error::Error`, on an [`anyhow::Error`], on an
/// [`eyre::Report`], and on a `String` or `&str`. No feature is needed: anyhow and eyre convert
/// into a `BoxError` themselves, so pgmill depends on neither.
///
/// The attempt's recorded error (in [`JobRow::errors`]) is the whole chain of causes, outermost
/// first, joined by `": "`, as anyhow's `{:#}` prints it: `loading the invoice: connection
/// refused`. A cause whose message the error before it already ends with is not repeated.
///
/// [`anyhow::Error`]: https://docs.rs/anyhow/1/anyhow/struct.Error.html
/// [`eyre::Report`]: https://docs.rs/eyre/0.6/eyre/struct.Report.html
///
/// # Examples
///
/// ```
/// use pgmill::JobError;
///
/// fn parse(input: &str) -> Result<u32, JobError> {
///     let n: u32 = input.parse()?; // a std error: retried
///     if n == 0 {
///         return Err(JobError::discard("zero is never valid")); // never retried
///     }
///     Ok(n)
/// }
///
/// assert_eq!(parse("7").unwrap(), 7);
/// assert_eq!(parse("x").unwrap_err().message(), "invalid digit found in string");
/// ```
pub struct JobError {
    action: JobAction,
    error: Option<BoxError>,
}

impl JobError {
    /// Fails this attempt; the job is retried with backoff until its attempts are used up.
    pub fn retry(error: impl Into<BoxError>) -> Self {
        JobError {
            action: JobAction::Retry,
            error: Some(error.into()),
        }
    }

    /// Cancels the job: it ends `cancelled` and is never retried.
    pub fn cancel(error: impl Into<BoxError>) -> Self {
        JobError {
            action: JobAction::Cancel,
            error: Some(error.into()),
        }
    }

    /// Discards the job: it ends `discarded` and is never retried.
    pub fn discard(error: impl Into<BoxError>) -> Self {
        JobError {
            action: JobAction::Discard,
            error: Some(error.into()),
        }
    }

    /// Runs the job again after `delay`, without using up an attempt.
    pub fn snooze(delay: Duration) -> Self {
        JobError {
            action: JobAction::Snooze(delay),
            error: None,
        }
    }

    pub(crate) fn action(&self) -> JobAction {
        self.action
    }

    /// The error's message with its chain of causes, as the attempt records it (empty for a
    /// snooze): each cause after the first joined by `": "`.
    pub fn message(&self) -> String {
        self.error
            .as_deref()
            .map(|e| error_chain(e))
            .unwrap_or_default()
    }
}

impl fmt::Debug for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobError")
            .field("action", &self.action)
            .field("error", &self.error)
            .finish()
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.action, &self.error) {
            (JobAction::Snooze(d), _) => write!(f, "snoozed for {d:?}"),
            (_, Some(e)) => e.fmt(f),
            (_, None) => f.write_str("job failed"),
        }
    }
}

/// Every error (`std::error::Error`, `anyhow::Error`, `eyre::Report`, `String`, `&str`) fails
/// the attempt, to be retried.
impl<E: Into<BoxError>> From<E> for JobError {
    fn from(e: E) -> Self {
        JobError::retry(e)
    }
}

/// `error` and its chain of sources, outermost first, joined by `": "`; a source whose message
/// the text so far already ends with (an error that prints its cause itself) is not repeated.
fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let message = cause.to_string();
        if !message.is_empty() && !text.ends_with(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = cause.source();
    }
    text
}

/// How one run of a worker ended, before the executor maps it to an outcome.
#[derive(Debug)]
pub(crate) enum WorkResult {
    /// Succeeded; `recorded` when the worker already completed the job in its own transaction.
    Ok {
        recorded: bool,
    },
    Failed {
        error: JobError,
        next_retry: Option<TimeDelta>,
    },
    Panicked {
        message: String,
        next_retry: Option<TimeDelta>,
    },
    TimedOut {
        after: Duration,
        next_retry: Option<TimeDelta>,
    },
    Undecodable(String),
    /// The work ended on its own after its `timeout` had passed, which only a worker blocking its
    /// thread does (a timeout drops the work at an `.await`); `result` stands.
    RanPastTimeout {
        timeout: Duration,
        ran: Duration,
        result: Box<WorkResult>,
    },
}

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A worker with its args type erased, so the registry can hold every kind.
pub(crate) trait ErasedWorker: Send + Sync {
    fn run(
        &self,
        row: Arc<JobRow>,
        schema: Schema,
        cancel: CancellationToken,
        default_timeout: Option<Duration>,
        started: Instant,
    ) -> BoxFuture<WorkResult>;
}

struct Registered<A, W> {
    worker: Arc<W>,
    _args: PhantomData<fn() -> A>,
}

impl<A: JobArgs, W: Worker<A>> ErasedWorker for Registered<A, W> {
    fn run(
        &self,
        row: Arc<JobRow>,
        schema: Schema,
        cancel: CancellationToken,
        default_timeout: Option<Duration>,
        started: Instant,
    ) -> BoxFuture<WorkResult> {
        let worker = Arc::clone(&self.worker);
        Box::pin(async move {
            let args = match A::deserialize(&row.args) {
                Ok(args) => args,
                Err(e) => {
                    return WorkResult::Undecodable(format!(
                        "cannot decode args of {}: {e}",
                        A::KIND
                    ));
                }
            };
            let job = Job::new(args, row, schema, cancel);
            let timeout = worker.timeout(&job).or(default_timeout);
            let work = AssertUnwindSafe(worker.work(&job)).catch_unwind();
            // Timed from the attempt's start (`timeout_at`: no clock read of its own); a timeout
            // too long to add is none.
            let deadline = timeout.and_then(|t| Some((t, started.checked_add(t)?)));
            let result = match deadline {
                Some((t, at)) => tokio::time::timeout_at(at.into(), work)
                    .await
                    .map_err(|_| t),
                None => Ok(work.await),
            };
            // Only work that blocked its thread ends on its own past its deadline.
            let ran_past = match (deadline, &result) {
                (Some((t, _)), Ok(_)) => Some((t, started.elapsed())).filter(|&(t, ran)| ran > t),
                _ => None,
            };
            let result = match result {
                Ok(Ok(Ok(()))) => WorkResult::Ok {
                    recorded: job.recorded.load(Ordering::Relaxed),
                },
                Ok(Ok(Err(error))) => WorkResult::Failed {
                    next_retry: worker.next_retry(&job),
                    error,
                },
                Ok(Err(panic)) => WorkResult::Panicked {
                    message: panic_message(&*panic),
                    next_retry: worker.next_retry(&job),
                },
                Err(after) => WorkResult::TimedOut {
                    after,
                    next_retry: worker.next_retry(&job),
                },
            };
            match ran_past {
                Some((timeout, ran)) => WorkResult::RanPastTimeout {
                    timeout,
                    ran,
                    result: Box::new(result),
                },
                None => result,
            }
        })
    }
}

pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// The workers of a client, one per job kind.
#[derive(Clone, Default)]
pub struct Workers {
    by_kind: FastMap<&'static str, Arc<dyn ErasedWorker>>,
}

impl Workers {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `worker` for the kind `A::KIND`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] when that kind already has a worker;
    /// [`Error::InvalidName`] when the kind name is invalid.
    pub fn add<A: JobArgs, W: Worker<A>>(&mut self, worker: W) -> Result<&mut Self> {
        crate::ident::validate_name("kind", A::KIND)?;
        if self.by_kind.contains_key(A::KIND) {
            return Err(Error::InvalidConfig(format!(
                "kind {:?} already has a worker",
                A::KIND
            )));
        }
        self.by_kind.insert(
            A::KIND,
            Arc::new(Registered {
                worker: Arc::new(worker),
                _args: PhantomData,
            }),
        );
        Ok(self)
    }

    /// The kinds that have a worker.
    pub fn kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.by_kind.keys().copied()
    }

    /// True when no worker is registered.
    pub fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }

    pub(crate) fn get(&self, kind: &str) -> Option<&Arc<dyn ErasedWorker>> {
        self.by_kind.get(kind)
    }
}

impl fmt::Debug for Workers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kinds: Vec<_> = self.kinds().collect();
        kinds.sort_unstable();
        f.debug_struct("Workers").field("kinds", &kinds).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_convert_and_keep_their_action() {
        let e: JobError = std::io::Error::other("disk full").into();
        assert_eq!(e.action(), JobAction::Retry);
        assert_eq!(e.message(), "disk full");
        assert_eq!(JobError::cancel("stop").action(), JobAction::Cancel);
        assert_eq!(JobError::discard("bad").action(), JobAction::Discard);
        let s = JobError::snooze(Duration::from_secs(5));
        assert_eq!(s.action(), JobAction::Snooze(Duration::from_secs(5)));
        assert_eq!(s.to_string(), "snoozed for 5s");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("loading invoice 7")]
    struct Loading(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("sending the e-mail: {0}")]
    struct SaysItsCause(#[source] std::io::Error);

    fn anyhow_fails() -> Result<(), JobError> {
        let root = anyhow::anyhow!("connection refused");
        Err(root
            .context("loading invoice 7")
            .context("sending the e-mail"))?;
        Ok(())
    }

    fn eyre_fails() -> Result<(), JobError> {
        let root = eyre::eyre!("connection refused");
        Err(root.wrap_err("loading invoice 7"))?;
        Ok(())
    }

    #[test]
    fn anyhow_and_eyre_convert_with_question_mark_keeping_the_chain() {
        let e = anyhow_fails().unwrap_err();
        assert_eq!(e.action(), JobAction::Retry);
        assert_eq!(
            e.message(),
            "sending the e-mail: loading invoice 7: connection refused"
        );
        let e = eyre_fails().unwrap_err();
        assert_eq!(e.action(), JobAction::Retry);
        assert_eq!(e.message(), "loading invoice 7: connection refused");
    }

    #[test]
    fn std_error_chains_are_recorded_without_repeating_a_cause() {
        let e: JobError = Loading(std::io::Error::other("disk full")).into();
        assert_eq!(e.message(), "loading invoice 7: disk full");
        let e: JobError = SaysItsCause(std::io::Error::other("timed out")).into();
        assert_eq!(e.message(), "sending the e-mail: timed out");
        let e: JobError = "plain text".into();
        assert_eq!(e.message(), "plain text");
        let e = JobError::cancel(Loading(std::io::Error::other("gone")));
        assert_eq!(e.message(), "loading invoice 7: gone");
    }

    #[test]
    fn panic_payloads_become_messages() {
        assert_eq!(panic_message(&"boom"), "boom");
        assert_eq!(panic_message(&String::from("bang")), "bang");
        assert_eq!(panic_message(&42_u8), "panic with a non-string payload");
    }
}
