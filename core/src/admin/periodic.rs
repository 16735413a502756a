//! Periodic schedules as operators see them.

use chrono::{DateTime, Utc};

use crate::job::JobId;

/// A periodic job's schedule state and statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeriodicRow {
    /// The periodic job's name.
    pub name: String,
    /// Its schedule, as text (a cron expression or `every <duration>`).
    pub schedule: String,
    /// When it is due next.
    pub next_run_at: DateTime<Utc>,
    /// True while paused.
    pub paused: bool,
    /// When a job was last enqueued for it.
    pub last_run_at: Option<DateTime<Utc>>,
    /// The job last enqueued.
    pub last_job_id: Option<JobId>,
    /// When a run last completed.
    pub last_success_at: Option<DateTime<Utc>>,
    /// When a run last ended discarded or cancelled.
    pub last_failure_at: Option<DateTime<Utc>>,
    /// Jobs enqueued.
    pub run_count: i64,
    /// Runs completed.
    pub success_count: i64,
    /// Runs discarded or cancelled.
    pub failure_count: i64,
    /// Runs failed since the last success.
    pub consecutive_failures: i64,
}
