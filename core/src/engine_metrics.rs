//! Every metric pgmill emits ([`METRICS`]), and the sink the engine's components emit them
//! through: the `metrics` facade's global recorder, or one given in
//! [`MetricsConfig::recorder`](crate::middleware::MetricsConfig).
//!
//! Labels are bounded: a job's kind and queue, and small fixed sets (`outcome`, `state`); never a
//! job id or args.

use std::fmt;
use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, Recorder, Unit};

/// Attempts by kind, queue and outcome.
pub(crate) const JOB_ATTEMPTS: &str = "pgmill_job_attempts_total";
/// Attempts that ran past their timeout (a worker that blocked its thread), by kind and queue.
pub(crate) const RAN_PAST_TIMEOUT: &str = "pgmill_job_ran_past_timeout_total";
/// Jobs inserted by kind and queue.
pub(crate) const JOBS_INSERTED: &str = "pgmill_jobs_inserted_total";
/// Jobs of dead clients given back or discarded by the rescuer.
pub(crate) const JOBS_RESCUED: &str = "pgmill_jobs_rescued_total";
/// Late results of superseded attempts.
pub(crate) const SUPERSEDED: &str = "pgmill_completer_superseded_total";
/// Listener reconnects.
pub(crate) const NOTIFIER_RECONNECTS: &str = "pgmill_notifier_reconnects_total";
/// Terms this client won.
pub(crate) const LEADER_ELECTIONS: &str = "pgmill_leader_elections_total";
/// From due to claimed.
pub(crate) const QUEUE_WAIT: &str = "pgmill_job_queue_wait_seconds";
/// How long attempts run.
pub(crate) const RUN_TIME: &str = "pgmill_job_run_seconds";
/// How long a claim takes.
pub(crate) const CLAIM_SECONDS: &str = "pgmill_claim_seconds";
/// Jobs per claim.
pub(crate) const CLAIM_JOBS: &str = "pgmill_claim_jobs";
/// Claims sent before the claim before them was decoded.
pub(crate) const CLAIMS_OVERLAPPED: &str = "pgmill_claims_overlapped_total";
/// How long a completer flush takes.
pub(crate) const FLUSH_SECONDS: &str = "pgmill_completer_flush_seconds";
/// Outcomes per completer flush.
pub(crate) const FLUSH_OUTCOMES: &str = "pgmill_completer_flush_outcomes";
/// Jobs per queue and state, sampled by the leader.
pub(crate) const QUEUE_JOBS: &str = "pgmill_queue_jobs";
/// Age of the oldest due available job per queue, sampled by the leader.
pub(crate) const QUEUE_OLDEST_AVAILABLE: &str = "pgmill_queue_oldest_available_seconds";
/// 1 when a live client works the queue, sampled by the leader.
pub(crate) const QUEUE_SERVED: &str = "pgmill_queue_served";
/// This process's clients whose notification listener is down.
pub(crate) const LISTENER_DOWN: &str = "pgmill_listener_down";
/// Jobs this client is running, per queue.
pub(crate) const CLIENT_RUNNING: &str = "pgmill_client_running_jobs";
/// 1 while this client leads.
pub(crate) const IS_LEADER: &str = "pgmill_is_leader";
/// [`METRICS`] entry.
pub(crate) const DEAD_JOBS: &str = "pgmill_dead_jobs";
/// [`METRICS`] entry.
pub(crate) const DEAD_REDRIVEN: &str = "pgmill_dead_redriven_total";
/// [`METRICS`] entry.
pub(crate) const DEAD_PURGED: &str = "pgmill_dead_purged_total";
/// [`METRICS`] entry.
pub(crate) const VACUUM_HORIZON_SECONDS: &str = "pgmill_vacuum_horizon_seconds";
/// [`METRICS`] entry.
pub(crate) const VACUUM_HORIZON_XMIN_AGE: &str = "pgmill_vacuum_horizon_xmin_age";

/// What kind of metric one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricKind {
    /// Only goes up.
    Counter,
    /// Goes up and down; the last value counts.
    Gauge,
    /// A distribution of observations.
    Histogram,
}

/// One metric pgmill emits: its name, kind, unit, labels and meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricInfo {
    /// The name, as exporters show it.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// The unit.
    pub unit: Unit,
    /// The names of its labels.
    pub labels: &'static [&'static str],
    /// What it measures.
    pub description: &'static str,
}

const fn info(
    name: &'static str,
    kind: MetricKind,
    unit: Unit,
    labels: &'static [&'static str],
    description: &'static str,
) -> MetricInfo {
    MetricInfo {
        name,
        kind,
        unit,
        labels,
        description,
    }
}

/// Every metric pgmill emits when metrics are on
/// ([`ClientBuilder::metrics`](crate::ClientBuilder::metrics)).
pub const METRICS: &[MetricInfo] = &[
    info(
        JOB_ATTEMPTS,
        MetricKind::Counter,
        Unit::Count,
        &["kind", "queue", "outcome"],
        "attempts finished, by what they left the job as: completed, retryable, discarded, cancelled, snoozed or interrupted",
    ),
    info(
        RAN_PAST_TIMEOUT,
        MetricKind::Counter,
        Unit::Count,
        &["kind", "queue"],
        "attempts that ran past their timeout because the worker blocked its thread, so the timeout could not stop it (their result stands)",
    ),
    info(
        JOBS_INSERTED,
        MetricKind::Counter,
        Unit::Count,
        &["kind", "queue"],
        "jobs handed to the database by an insert of this process (counted before the statement; a rolled-back transaction's jobs count too)",
    ),
    info(
        JOBS_RESCUED,
        MetricKind::Counter,
        Unit::Count,
        &["queue", "state"],
        "running jobs of dead clients (or past the hard deadline) the leader's rescuer gave back (state available) or discarded (out of attempts)",
    ),
    info(
        SUPERSEDED,
        MetricKind::Counter,
        Unit::Count,
        &[],
        "late outcomes of superseded attempts that changed nothing (fence drops)",
    ),
    info(
        NOTIFIER_RECONNECTS,
        MetricKind::Counter,
        Unit::Count,
        &[],
        "times the notification listener reconnected (producers then re-poll)",
    ),
    info(
        LEADER_ELECTIONS,
        MetricKind::Counter,
        Unit::Count,
        &[],
        "leader terms this client won; summed over clients, the changes of leader",
    ),
    info(
        QUEUE_WAIT,
        MetricKind::Histogram,
        Unit::Seconds,
        &["kind", "queue"],
        "time from a job being due (scheduled_at) to an attempt being claimed, by the database clock",
    ),
    info(
        RUN_TIME,
        MetricKind::Histogram,
        Unit::Seconds,
        &["kind", "queue"],
        "time an attempt ran, middleware included",
    ),
    info(
        CLAIM_SECONDS,
        MetricKind::Histogram,
        Unit::Seconds,
        &["queue"],
        "time one claim (fetch) took, connection included",
    ),
    info(
        CLAIM_JOBS,
        MetricKind::Histogram,
        Unit::Count,
        &["queue"],
        "jobs one claim returned (zero for an empty poll)",
    ),
    info(
        CLAIMS_OVERLAPPED,
        MetricKind::Counter,
        Unit::Count,
        &["queue"],
        "claims sent as soon as the claim before them arrived, before its jobs were decoded and handed out (back-to-back full claims: many workers, short jobs)",
    ),
    info(
        FLUSH_SECONDS,
        MetricKind::Histogram,
        Unit::Seconds,
        &[],
        "time one completer flush (one UPDATE of many outcomes) took, connection included",
    ),
    info(
        FLUSH_OUTCOMES,
        MetricKind::Histogram,
        Unit::Count,
        &[],
        "outcomes recorded by one completer flush",
    ),
    info(
        QUEUE_JOBS,
        MetricKind::Gauge,
        Unit::Count,
        &["queue", "state"],
        "jobs per queue and live state (available, scheduled, pending, running, retryable), sampled by the leader; other clients report 0 once they stop leading",
    ),
    info(
        QUEUE_OLDEST_AVAILABLE,
        MetricKind::Gauge,
        Unit::Seconds,
        &["queue"],
        "age of the queue's oldest due available job (0 when none), sampled by the leader",
    ),
    info(
        QUEUE_SERVED,
        MetricKind::Gauge,
        Unit::Count,
        &["queue"],
        "1 when a live client works the queue, 0 when none does (its jobs wait), for every registered queue and every queue holding live jobs, sampled by the leader",
    ),
    info(
        CLIENT_RUNNING,
        MetricKind::Gauge,
        Unit::Count,
        &["queue"],
        "attempts running in this process's clients",
    ),
    info(
        IS_LEADER,
        MetricKind::Gauge,
        Unit::Count,
        &[],
        "1 while a client of this process leads its schema, else 0",
    ),
    info(
        DEAD_JOBS,
        MetricKind::Gauge,
        Unit::Count,
        &["queue"],
        "jobs in the dead-letter queue per queue, sampled by the leader (they enter it as the attempts counter's discarded outcomes and the rescuer's discards)",
    ),
    info(
        DEAD_REDRIVEN,
        MetricKind::Counter,
        Unit::Count,
        &[],
        "dead-letter jobs this process redrove back into their queues",
    ),
    info(
        DEAD_PURGED,
        MetricKind::Counter,
        Unit::Count,
        &[],
        "dead-letter jobs this process purged",
    ),
    info(
        VACUUM_HORIZON_SECONDS,
        MetricKind::Gauge,
        Unit::Seconds,
        &[],
        "how long the oldest snapshot holding vacuum back on the database has been held (0 when none, or when no holder's start is visible to the role), sampled by the leader",
    ),
    info(
        VACUUM_HORIZON_XMIN_AGE,
        MetricKind::Gauge,
        Unit::Count,
        &[],
        "how many transactions old the oldest snapshot holding vacuum back is (0 when none), sampled by the leader",
    ),
    info(
        LISTENER_DOWN,
        MetricKind::Gauge,
        Unit::Count,
        &[],
        "clients of this process whose notification listener is down: being opened, or reopened after losing its connection (their producers poll meanwhile); 0 while listening, polling only by configuration, or stopped",
    ),
];

/// Where the engine's metrics go: nowhere (metrics off), the facade's recorder, or a given one.
#[derive(Clone, Default)]
pub(crate) struct MetricsSink {
    enabled: bool,
    recorder: Option<Arc<dyn Recorder + Send + Sync>>,
}

const METADATA: Metadata<'static> = Metadata::new("pgmill", Level::INFO, Some(module_path!()));

impl MetricsSink {
    /// A sink that emits nothing.
    pub(crate) fn off() -> Self {
        Self::default()
    }

    /// A sink emitting to `recorder`, or to the facade's recorder (global or thread-local) when
    /// `None`.
    pub(crate) fn new(recorder: Option<Arc<dyn Recorder + Send + Sync>>) -> Self {
        MetricsSink {
            enabled: true,
            recorder,
        }
    }

    pub(crate) fn is_on(&self) -> bool {
        self.enabled
    }

    fn with<T>(&self, f: impl FnOnce(&dyn Recorder) -> T) -> T {
        match &self.recorder {
            Some(r) => f(&**r),
            None => metrics::with_recorder(f),
        }
    }

    fn key(name: &'static str, labels: &[(&'static str, &str)]) -> Key {
        let labels: Vec<Label> = labels
            .iter()
            .map(|(k, v)| Label::new(*k, (*v).to_owned()))
            .collect();
        Key::from_parts(name, labels)
    }

    pub(crate) fn counter(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Counter {
        if !self.enabled {
            return Counter::noop();
        }
        let key = Self::key(name, labels);
        self.with(|r| r.register_counter(&key, &METADATA))
    }

    pub(crate) fn gauge(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Gauge {
        if !self.enabled {
            return Gauge::noop();
        }
        let key = Self::key(name, labels);
        self.with(|r| r.register_gauge(&key, &METADATA))
    }

    pub(crate) fn histogram(
        &self,
        name: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Histogram {
        if !self.enabled {
            return Histogram::noop();
        }
        let key = Self::key(name, labels);
        self.with(|r| r.register_histogram(&key, &METADATA))
    }

    /// Registers the unit and description of every metric in [`METRICS`].
    pub(crate) fn describe(&self) {
        if !self.enabled {
            return;
        }
        self.with(|r| {
            for m in METRICS {
                let (name, unit, help) = (m.name.into(), Some(m.unit), m.description.into());
                match m.kind {
                    MetricKind::Counter => r.describe_counter(name, unit, help),
                    MetricKind::Gauge => r.describe_gauge(name, unit, help),
                    MetricKind::Histogram => r.describe_histogram(name, unit, help),
                }
            }
        });
    }
}

impl fmt::Debug for MetricsSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsSink")
            .field("enabled", &self.enabled)
            .field("own_recorder", &self.recorder.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table in docs/observability.md lists every metric with its unit and labels.
    #[test]
    fn the_docs_table_lists_every_metric() {
        let docs = include_str!("../../docs/observability.md");
        let rows: Vec<Vec<String>> = docs
            .lines()
            .filter(|l| l.starts_with("| `pgmill_"))
            .map(|l| {
                l.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_owned())
                    .collect()
            })
            .collect();
        assert_eq!(rows.len(), METRICS.len(), "one row per metric");
        for m in METRICS {
            let row = rows
                .iter()
                .find(|r| r[0] == format!("`{}`", m.name))
                .unwrap_or_else(|| panic!("{} is in the table", m.name));
            let kind = format!("{:?}", m.kind).to_lowercase();
            let unit = m.unit.as_str();
            let labels = m
                .labels
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ");
            assert_eq!(row[1], kind, "{}", m.name);
            assert_eq!(row[2], unit, "{}", m.name);
            assert_eq!(
                row[3],
                if labels.is_empty() {
                    "-".into()
                } else {
                    labels
                },
                "{}",
                m.name
            );
        }
    }
}
