//! Runs one attempt: inside the job's span ([`JobTracing`]) and the registered middleware, finds
//! its worker, decodes its args, applies the timeout, catches panics, maps the result to an
//! outcome and hands it to the completer.

use std::any::Any;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::engine_metrics::MetricsSink;
use crate::job::JobRow;
use crate::job_error::JobAction;
use crate::middleware::{JobTracing, Middleware, MiddlewareStack, Next};
use crate::outcome::Outcome;
use crate::retry_policy::RetryPolicy;
use crate::schema::Schema;
use crate::work::completer::Completion;
use crate::work::timeout_overrun::TimeoutOverruns;
use crate::worker::{WorkResult, Workers, panic_message};

/// How a client runs attempts: its workers, retry policy and default timeout, inside the tracing
/// middleware and then the registered middleware.
pub(crate) struct JobExecutorConfig {
    /// One worker per kind.
    pub(crate) workers: Workers,
    /// When a failed attempt is retried, unless its worker says.
    pub(crate) retry_policy: Arc<dyn RetryPolicy>,
    /// How long an attempt may run, unless its worker says.
    pub(crate) default_timeout: Option<Duration>,
    /// The job span around every attempt.
    pub(crate) tracing: JobTracing,
    /// The registered middleware, inside the span.
    pub(crate) middleware: MiddlewareStack,
}

/// Everything needed to run jobs; shared by a client's producers.
#[derive(Clone)]
pub(crate) struct JobExecutor {
    workers: Workers,
    schema: Schema,
    retry_policy: Arc<dyn RetryPolicy>,
    default_timeout: Option<Duration>,
    completer: mpsc::Sender<Completion>,
    tracing: JobTracing,
    middleware: MiddlewareStack,
    overruns: Arc<TimeoutOverruns>,
}

impl JobExecutor {
    /// The kinds this executor has workers for: the only kinds its client claims.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.workers.kinds()
    }

    /// An executor for jobs of `schema`, running attempts as `config` says, sending their
    /// outcomes to `completer` and counting attempts that ran past their timeout into `metrics`.
    /// It needs no database (a test runs it without a client, [`crate::testing`]), so it takes
    /// these two of a client's shared parts only.
    pub(crate) fn new(
        schema: Schema,
        metrics: MetricsSink,
        config: JobExecutorConfig,
        completer: mpsc::Sender<Completion>,
    ) -> Self {
        let JobExecutorConfig {
            workers,
            retry_policy,
            default_timeout,
            tracing,
            middleware,
        } = config;
        JobExecutor {
            workers,
            schema,
            retry_policy,
            default_timeout,
            completer,
            tracing,
            middleware,
            overruns: Arc::new(TimeoutOverruns::new(metrics)),
        }
    }

    /// Runs `job` to an outcome and queues the outcome for the completer. `kill` interrupts the
    /// work (hard stop): the job goes back to available with its attempt given back.
    ///
    /// `cancel` is the job's own token: an operator cancelling the running job cancels it, which
    /// drops the work and ends the job cancelled. The producer also cancels it on a hard stop, so
    /// the worker sees [`Job::cancelled`](crate::Job::cancelled) either way; `kill` wins when both
    /// fired.
    ///
    /// The attempt runs inside the tracing middleware and then the registered middleware, outside
    /// the interruption: middleware sees every outcome, interrupts and cancels included.
    pub(crate) async fn execute(
        &self,
        job: Arc<JobRow>,
        kill: &CancellationToken,
        cancel: &CancellationToken,
    ) {
        // Shared with the worker's `Job` and then the completer: never deep-copied.
        let attempt = Attempt {
            executor: self,
            job: &job,
            kill,
            cancel,
            started: Instant::now(),
            finished: OnceLock::new(),
            ran_past_timeout: OnceLock::new(),
        };
        let outcome = if kill.is_cancelled() {
            // A buffered job whose stop or cancel came before it started never runs (nor passes
            // through middleware: there is no attempt to wrap).
            Outcome::Interrupt
        } else if cancel.is_cancelled() {
            Outcome::Cancel {
                error: "cancelled by an operator before it started".to_owned(),
            }
        } else {
            let chain = self.middleware.for_kind(&job.kind);
            self.tracing.work(&job, Next::new(chain, &attempt)).await
        };
        let finished_at = attempt.finished_at();
        let ran_past_timeout = attempt.ran_past_timeout.get().copied();
        let completion = Completion {
            run_time: finished_at.saturating_duration_since(attempt.started),
            finished_at,
            outcome,
            job,
            ran_past_timeout,
        };
        if self.completer.send(completion).await.is_err() {
            // Only when the completer is gone, which the client prevents while jobs run.
            warn!("completer closed; outcome not recorded, the rescuer will recover the job");
        }
    }

    /// Gives a claimed job that never started back to its queue: recorded as an interrupted
    /// attempt (available again, attempt given back), or cancelled if an operator asked for it.
    pub(crate) async fn release(&self, job: Arc<JobRow>) {
        let completion = Completion {
            job,
            outcome: Outcome::Interrupt,
            run_time: Duration::ZERO,
            finished_at: Instant::now(),
            ran_past_timeout: None,
        };
        if self.completer.send(completion).await.is_err() {
            warn!("completer closed; a buffered job stays claimed until the rescuer recovers it");
        }
    }

    pub(crate) fn schema_ref(&self) -> &Schema {
        &self.schema
    }

    fn retry_delay(&self, job: &JobRow, next_retry: Option<TimeDelta>) -> TimeDelta {
        next_retry.unwrap_or_else(|| self.retry_policy.next_retry(job.attempt))
    }

    fn outcome(&self, job: &JobRow, result: WorkResult) -> Outcome {
        match result {
            WorkResult::Ok { recorded } => Outcome::Completed { recorded },
            WorkResult::Failed { error, next_retry } => match error.action() {
                JobAction::Retry => Outcome::Retry {
                    delay: self.retry_delay(job, next_retry),
                    error: error.message(),
                    panic: false,
                },
                JobAction::Cancel => Outcome::Cancel {
                    error: error.message(),
                },
                JobAction::Discard => Outcome::Discard {
                    error: error.message(),
                },
                JobAction::Snooze(d) => Outcome::Snooze {
                    delay: TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX),
                },
            },
            WorkResult::Panicked {
                message,
                next_retry,
            } => Outcome::Retry {
                delay: self.retry_delay(job, next_retry),
                error: format!("panicked: {message}"),
                panic: true,
            },
            WorkResult::TimedOut { after, next_retry } => Outcome::Retry {
                delay: self.retry_delay(job, next_retry),
                error: format!("timed out after {after:?}"),
                panic: false,
            },
            // Args that do not decode never will: discarded at once, the raw args left in the row.
            WorkResult::Undecodable(error) => Outcome::Discard {
                error: format!("{error}; discarded without retrying, the args are kept in the row"),
            },
            // Taken apart by `Attempt::run_worker`, which records the overrun.
            WorkResult::RanPastTimeout { result, .. } => self.outcome(job, *result),
        }
    }
}

/// One attempt on its way through the middleware chain to the worker.
pub(crate) struct Attempt<'a> {
    executor: &'a JobExecutor,
    job: &'a Arc<JobRow>,
    kill: &'a CancellationToken,
    cancel: &'a CancellationToken,
    /// When the attempt started: its run time and its timeout count from here.
    started: Instant,
    /// When it finished, read once (by the tracing middleware or the executor, whichever asks
    /// first) so one clock read serves both.
    finished: OnceLock<Instant>,
    /// Set when the worker ran past its timeout.
    ran_past_timeout: OnceLock<Duration>,
}

impl Attempt<'_> {
    pub(crate) fn job(&self) -> &JobRow {
        self.job
    }

    /// When the attempt started.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// When the attempt finished: the first call reads the clock, later ones return the same.
    pub(crate) fn finished_at(&self) -> Instant {
        *self.finished.get_or_init(Instant::now)
    }

    /// Runs the worker under the job's timeout, catching panics; a hard stop interrupts it and an
    /// operator's cancel cancels it.
    pub(crate) async fn run_worker(&self) -> Outcome {
        let (executor, job) = (self.executor, self.job);
        let Some(worker) = executor.workers.get(&job.kind) else {
            return Outcome::Retry {
                delay: executor.retry_policy.next_retry(job.attempt),
                error: format!(
                    "no worker registered for kind {:?} in this client",
                    job.kind
                ),
                panic: false,
            };
        };
        let run = worker.run(
            Arc::clone(job),
            executor.schema.clone(),
            self.cancel.clone(),
            executor.default_timeout,
            self.started,
        );
        // A hard stop cancels every running job's token too (the producer's
        // `cancel_running_on_kill`), so one wait serves both; the kill decides which it was.
        tokio::select! {
            biased;
            result = run => match result {
                WorkResult::RanPastTimeout { timeout, ran, result } => {
                    let mut outcome = executor.outcome(job, *result);
                    let at = (job.kind.as_str(), job.queue.as_str());
                    executor.overruns.record(at, timeout, ran, &mut outcome);
                    let _ = self.ran_past_timeout.set(timeout);
                    outcome
                }
                result => executor.outcome(job, result),
            },
            () = self.cancel.cancelled() => if self.kill.is_cancelled() {
                Outcome::Interrupt
            } else {
                Outcome::Cancel {
                    error: "cancelled by an operator while running".to_owned(),
                }
            },
        }
    }

    /// The outcome of an attempt whose middleware panicked: a failed attempt, retried.
    pub(crate) fn middleware_panicked(&self, panic: &(dyn Any + Send)) -> Outcome {
        Outcome::Retry {
            delay: self.executor.retry_policy.next_retry(self.job.attempt),
            error: format!("middleware panicked: {}", panic_message(panic)),
            panic: true,
        }
    }
}
