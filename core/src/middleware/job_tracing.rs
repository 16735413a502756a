//! The built-in tracing middleware: one `pgmill.job` span per attempt, and a line when it starts,
//! finishes or fails.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use tracing::field::Empty;
use tracing::{Instrument, Span, debug, info_span, warn};

use super::trace_propagator::{TracePropagator, stored};
use super::{Middleware, Next};
use crate::job::JobRow;
use crate::outcome::Outcome;

/// The span every attempt runs in, and the lines logged at its start, finish and failure.
///
/// A client always runs it as the outermost layer, so the worker's own logs, the application's
/// middleware and any database calls made while working carry the job's fields. The span is
/// `pgmill.job` at INFO level, with
///
/// | field | value |
/// |---|---|
/// | `job_id`, `kind`, `queue`, `priority` | the job's |
/// | `attempt`, `max_attempts` | this attempt (from 1) and the most the job gets |
/// | `outcome` | recorded at the end: `completed`, `retryable`, `discarded`, `cancelled`, `snoozed`, `interrupted` |
/// | `duration_ms` | recorded at the end: how long the attempt ran |
/// | `otel.kind`, `otel.status_code` | `consumer`; `error` for a failed attempt (read by `tracing-opentelemetry`) |
///
/// At DEBUG it logs `job started` (with `queue_wait_ms`, from due to claimed) and `job finished`
/// (with `outcome` and `duration_ms`); a failed attempt logs at WARN instead, with the `error`
/// and what happens next (`next` is `retry` with `retry_in_ms` and `retry_at`, or `discard`, or
/// `cancel`). When INFO spans are filtered out, the WARN line carries the job's fields itself.
///
/// With a [`TracePropagator`], the span continues the trace that inserted the job.
#[derive(Clone, Default)]
pub struct JobTracing {
    propagator: Option<Arc<dyn TracePropagator>>,
}

impl JobTracing {
    /// The tracing middleware; `propagator` makes each attempt's span continue the inserting
    /// trace stored in the job's metadata.
    pub fn new(propagator: Option<Arc<dyn TracePropagator>>) -> Self {
        JobTracing { propagator }
    }
}

impl fmt::Debug for JobTracing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobTracing")
            .field("propagator", &self.propagator)
            .finish()
    }
}

impl Middleware for JobTracing {
    async fn work<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> Outcome {
        let span = info_span!(
            "pgmill.job",
            job_id = job.id.0,
            kind = %job.kind,
            queue = %job.queue,
            attempt = job.attempt,
            max_attempts = job.max_attempts,
            priority = job.priority,
            outcome = Empty,
            duration_ms = Empty,
            otel.kind = "consumer",
            otel.status_code = Empty,
        );
        if let Some(propagator) = &self.propagator
            && !span.is_disabled()
            && let Some(headers) = stored(job)
        {
            propagator.extract(&headers, &span);
        }
        // The attempt's own clock: its start, and one read at its end shared with the executor.
        let attempt = next.attempt();
        let outcome = async {
            debug!(queue_wait_ms = millis(queue_wait(job)), "job started");
            next.run().await
        }
        .instrument(span.clone())
        .await;
        let elapsed = attempt
            .finished_at()
            .saturating_duration_since(attempt.started());
        let result = outcome.result(job.attempt, job.max_attempts);
        span.record("outcome", result);
        span.record("duration_ms", millis(elapsed));
        if outcome.is_failure() {
            span.record("otel.status_code", "error");
        }
        span.in_scope(|| log_finish(&span, job, &outcome, result, elapsed));
        outcome
    }
}

/// From due to claimed, by the database clock.
fn queue_wait(job: &JobRow) -> Duration {
    job.attempted_at
        .and_then(|at| (at - job.scheduled_at).to_std().ok())
        .unwrap_or_default()
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What the job does after a failed attempt, for the WARN line.
fn next_step(outcome: &Outcome, result: &str) -> (&'static str, Option<TimeDelta>) {
    match (outcome, result) {
        (Outcome::Retry { delay, .. }, "retryable") => ("retry", Some(*delay)),
        (Outcome::Cancel { .. }, _) => ("cancel", None),
        _ => ("discard", None),
    }
}

fn log_finish(span: &Span, job: &JobRow, outcome: &Outcome, result: &str, elapsed: Duration) {
    let duration_ms = millis(elapsed);
    let Some(error) = outcome.error() else {
        debug!(outcome = result, duration_ms, "job finished");
        return;
    };
    let (next, delay) = next_step(outcome, result);
    let message = match (next, delay) {
        ("retry", Some(_)) => "job attempt failed; it will be retried",
        ("cancel", _) => "job attempt failed; the job is cancelled",
        _ if matches!(outcome, Outcome::Retry { .. }) => {
            "job attempt failed; no attempts left, the job is discarded"
        }
        _ => "job attempt failed; the job is discarded",
    };
    let retry_in_ms = delay.map(|d| d.num_milliseconds());
    let retry_at = delay
        .and_then(|d| Utc::now().checked_add_signed(d))
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    if span.is_disabled() {
        // The span's fields are not on the line: put the job's own there.
        warn!(
            job_id = job.id.0,
            kind = %job.kind,
            queue = %job.queue,
            attempt = job.attempt,
            max_attempts = job.max_attempts,
            error,
            next,
            retry_in_ms,
            retry_at,
            duration_ms,
            "{message}"
        );
    } else {
        warn!(error, next, retry_in_ms, retry_at, duration_ms, "{message}");
    }
}
