//! Attempts that ran past their timeout: the [`TimeoutOverruns`] of a client's executor.
//!
//! A timeout drops an attempt's work future, which only takes effect at an `.await`. A worker
//! that blocks its thread (`std::thread::sleep`, a blocking client, a long computation) is never
//! polled again before it returns, so it runs past its timeout and its result stands. Such an
//! attempt is warned about once per kind in the log, and recorded every time: in the
//! `pgmill_job_ran_past_timeout_total` metric, in the event's
//! [`ran_past_timeout`](crate::Event::ran_past_timeout), and in the attempt's error when it
//! failed.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use tracing::{debug, warn};

use crate::engine_metrics::{MetricsSink, RAN_PAST_TIMEOUT};
use crate::outcome::Outcome;

/// Warns about and counts the attempts that ran past their timeout.
#[derive(Debug)]
pub(crate) struct TimeoutOverruns {
    metrics: MetricsSink,
    warned_kinds: Mutex<HashSet<String>>,
}

impl TimeoutOverruns {
    /// Counts into `metrics`; no kind warned about yet.
    pub(crate) fn new(metrics: MetricsSink) -> Self {
        TimeoutOverruns {
            metrics,
            warned_kinds: Mutex::default(),
        }
    }

    /// Records that an attempt of `kind` in `queue` ran for `ran`, past its `timeout`: warns the
    /// first time for its kind (later ones log at debug), counts it, and notes it in `outcome`'s
    /// error.
    pub(crate) fn record(
        &self,
        (kind, queue): (&str, &str),
        timeout: Duration,
        ran: Duration,
        outcome: &mut Outcome,
    ) {
        let first = self
            .warned_kinds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(kind.to_owned());
        if first {
            warn!(
                kind,
                timeout_ms = timeout.as_millis() as u64,
                run_time_ms = ran.as_millis() as u64,
                "an attempt ran past its timeout: its worker blocked its thread, so the timeout \
                 could not stop it (run blocking work in tokio::task::spawn_blocking); \
                 warned once per kind"
            );
        } else {
            debug!(
                kind,
                timeout_ms = timeout.as_millis() as u64,
                run_time_ms = ran.as_millis() as u64,
                "an attempt ran past its timeout"
            );
        }
        self.metrics
            .counter(RAN_PAST_TIMEOUT, &[("kind", kind), ("queue", queue)])
            .increment(1);
        if let Outcome::Retry { error, .. }
        | Outcome::Discard { error }
        | Outcome::Cancel { error } = outcome
        {
            error.push_str(&format!(
                " (the attempt ran {ran:?}, past its timeout of {timeout:?}: the worker blocked \
                 its thread)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_attempt_gets_a_note_and_a_completed_one_keeps_its_outcome() {
        let overruns = TimeoutOverruns::new(MetricsSink::off());
        let job = ("blocking", "default");
        let mut failed = Outcome::retry(chrono::TimeDelta::zero(), "gave up");
        overruns.record(
            job,
            Duration::from_millis(100),
            Duration::from_millis(450),
            &mut failed,
        );
        assert_eq!(
            failed.error(),
            Some(
                "gave up (the attempt ran 450ms, past its timeout of 100ms: the worker blocked \
                 its thread)"
            )
        );
        let mut completed = Outcome::completed();
        overruns.record(
            job,
            Duration::from_millis(100),
            Duration::from_millis(450),
            &mut completed,
        );
        assert_eq!(completed, Outcome::completed());
        assert_eq!(
            overruns.warned_kinds.lock().unwrap().len(),
            1,
            "one kind warned once"
        );
    }
}
