//! Workers run jobs: the [`Worker`] trait, and the [`Workers`] registry that holds one worker per
//! kind with its args type erased.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::fast_hash::FastMap;
use crate::job::{Job, JobRow};
use crate::job_args::JobArgs;
use crate::job_error::JobError;
use crate::schema::Schema;

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
    fn panic_payloads_become_messages() {
        assert_eq!(panic_message(&"boom"), "boom");
        assert_eq!(panic_message(&String::from("bang")), "bang");
        assert_eq!(panic_message(&42_u8), "panic with a non-string payload");
    }
}
