//! How one attempt ended: the [`Outcome`] the executor hands to the completer, and that
//! [middleware](crate::middleware) reads or decides.

use std::fmt;

use chrono::TimeDelta;
use serde_json::json;

use crate::event::EventKind;
use crate::job::JobRow;
use crate::query::SetStateParams;
use crate::work::claim_tokens::NO_CLAIM;

/// How one attempt of a job ended, as the completer records it.
///
/// Middleware reads it after [`Next::run`](crate::middleware::Next::run) returns, and can return
/// one of its own without running the worker (built with [`Outcome::completed`],
/// [`Outcome::retry`], ...). Variants gain fields over time, so match them with `..`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The worker succeeded; the job ends `completed`.
    #[non_exhaustive]
    Completed {
        /// True when the worker already completed the job in its own transaction
        /// ([`Job::complete_in`](crate::Job::complete_in)).
        recorded: bool,
    },
    /// The attempt failed: the job runs again after `delay`, or is discarded when this was its
    /// last attempt.
    #[non_exhaustive]
    Retry {
        /// Time until the next attempt.
        delay: TimeDelta,
        /// The error, as recorded in the job's `errors`.
        error: String,
        /// True when the worker panicked.
        panic: bool,
    },
    /// The job is discarded (it ends `discarded`, never retried).
    #[non_exhaustive]
    Discard {
        /// The error.
        error: String,
    },
    /// The job is cancelled (it ends `cancelled`, never retried).
    #[non_exhaustive]
    Cancel {
        /// Why.
        error: String,
    },
    /// The job runs again after `delay` without using up an attempt.
    #[non_exhaustive]
    Snooze {
        /// Time until it runs again.
        delay: TimeDelta,
    },
    /// A hard stop interrupted the attempt: the job is available again, its attempt given back.
    Interrupt,
}

impl Outcome {
    /// Success.
    pub fn completed() -> Self {
        Outcome::Completed { recorded: false }
    }

    /// A failed attempt, retried after `delay` (or discarded when it was the last attempt).
    pub fn retry(delay: TimeDelta, error: impl fmt::Display) -> Self {
        Outcome::Retry {
            delay,
            error: error.to_string(),
            panic: false,
        }
    }

    /// The job is discarded.
    pub fn discard(error: impl fmt::Display) -> Self {
        Outcome::Discard {
            error: error.to_string(),
        }
    }

    /// The job is cancelled.
    pub fn cancel(error: impl fmt::Display) -> Self {
        Outcome::Cancel {
            error: error.to_string(),
        }
    }

    /// The job runs again after `delay` without using up an attempt.
    pub fn snooze(delay: TimeDelta) -> Self {
        Outcome::Snooze { delay }
    }

    /// A short name: `completed`, `retry`, `discard`, `cancel`, `snooze` or `interrupt`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Completed { .. } => "completed",
            Outcome::Retry { .. } => "retry",
            Outcome::Discard { .. } => "discard",
            Outcome::Cancel { .. } => "cancel",
            Outcome::Snooze { .. } => "snooze",
            Outcome::Interrupt => "interrupt",
        }
    }

    /// What the attempt leaves the job as, for a job on attempt `attempt` of `max_attempts`:
    /// `completed`, `retryable` (to run again), `discarded`, `cancelled`, `snoozed` or
    /// `interrupted`. A retry of the last attempt is `discarded`. (An operator's cancel request
    /// that arrives while the attempt runs can still end the job cancelled.)
    pub fn result(&self, attempt: i16, max_attempts: i16) -> &'static str {
        match self {
            Outcome::Completed { .. } => "completed",
            Outcome::Retry { .. } if attempt >= max_attempts => "discarded",
            Outcome::Retry { .. } => "retryable",
            Outcome::Discard { .. } => "discarded",
            Outcome::Cancel { .. } => "cancelled",
            Outcome::Snooze { .. } => "snoozed",
            Outcome::Interrupt => "interrupted",
        }
    }

    /// The error of a retried, discarded or cancelled attempt.
    pub fn error(&self) -> Option<&str> {
        match self {
            Outcome::Retry { error, .. }
            | Outcome::Discard { error }
            | Outcome::Cancel { error } => Some(error),
            _ => None,
        }
    }

    /// True for a retried, discarded or cancelled attempt.
    pub fn is_failure(&self) -> bool {
        self.error().is_some()
    }

    pub(crate) fn params(&self, job: &JobRow) -> SetStateParams {
        let error = |message: &str, panic: bool| {
            Some(json!({"attempt": job.attempt, "error": message, "panic": panic}))
        };
        let (outcome, delay, error) = match self {
            Outcome::Completed { .. } => ("completed", TimeDelta::zero(), None),
            Outcome::Retry {
                delay,
                error: e,
                panic,
            } => ("retry", *delay, error(e, *panic)),
            Outcome::Discard { error: e } => ("discard", TimeDelta::zero(), error(e, false)),
            Outcome::Cancel { error: e } => ("cancel", TimeDelta::zero(), error(e, false)),
            Outcome::Snooze { delay } => ("snooze", *delay, None),
            Outcome::Interrupt => ("interrupt", TimeDelta::zero(), None),
        };
        SetStateParams {
            id: job.id,
            attempt: job.attempt,
            claim_token: job.claim_token.unwrap_or(NO_CLAIM),
            outcome,
            delay,
            error,
        }
    }

    pub(crate) fn event_kind(&self) -> EventKind {
        match self {
            Outcome::Completed { .. } => EventKind::JobCompleted,
            Outcome::Retry { .. } | Outcome::Discard { .. } => EventKind::JobFailed,
            Outcome::Cancel { .. } => EventKind::JobCancelled,
            Outcome::Snooze { .. } => EventKind::JobSnoozed,
            Outcome::Interrupt => EventKind::JobInterrupted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_of_the_last_attempt_leaves_the_job_discarded() {
        let retry = Outcome::retry(TimeDelta::seconds(1), "boom");
        assert_eq!(retry.result(1, 3), "retryable");
        assert_eq!(retry.result(3, 3), "discarded");
        assert_eq!(retry.error(), Some("boom"));
        assert!(retry.is_failure());
        assert_eq!(Outcome::completed().result(3, 3), "completed");
        assert!(!Outcome::snooze(TimeDelta::seconds(1)).is_failure());
        assert_eq!(Outcome::Interrupt.name(), "interrupt");
    }
}
