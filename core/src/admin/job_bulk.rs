//! Operator actions on many jobs at once: what each does, and what one batch of it changed.

use crate::admin::JobListParams;
use crate::job::{JobId, JobState};

/// What [`Client::job_bulk`](crate::Client::job_bulk) does to each matching job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkAction {
    /// Makes the job available now, with one more attempt if it used them up, as
    /// [`Client::job_retry`](crate::Client::job_retry) does. Running and available jobs are left
    /// alone.
    Retry,
    /// Cancels the job, as [`Client::job_cancel`](crate::Client::job_cancel) does: at once when
    /// it is not running; a running job is marked and its client told. Final jobs are left
    /// alone.
    Cancel,
    /// Deletes the job, as [`Client::job_delete`](crate::Client::job_delete) does. Running jobs
    /// are left alone.
    Delete,
}

impl BulkAction {
    /// The states of the jobs this action changes.
    pub fn states(self) -> &'static [JobState] {
        match self {
            BulkAction::Retry => &[
                JobState::Scheduled,
                JobState::Pending,
                JobState::Retryable,
                JobState::Completed,
                JobState::Cancelled,
                JobState::Discarded,
            ],
            BulkAction::Cancel => &[
                JobState::Available,
                JobState::Scheduled,
                JobState::Pending,
                JobState::Retryable,
                JobState::Running,
            ],
            BulkAction::Delete => &[
                JobState::Available,
                JobState::Scheduled,
                JobState::Pending,
                JobState::Retryable,
                JobState::Completed,
                JobState::Cancelled,
                JobState::Discarded,
            ],
        }
    }

    /// The action's name, as `job_bulk.sql` takes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BulkAction::Retry => "retry",
            BulkAction::Cancel => "cancel",
            BulkAction::Delete => "delete",
        }
    }

    /// The states `params` asks for that this action changes (all of them when it asks for none).
    pub(crate) fn narrow(self, params: &JobListParams) -> Vec<String> {
        self.states()
            .iter()
            .filter(|s| {
                params
                    .filter
                    .states
                    .as_ref()
                    .is_none_or(|only| only.contains(s))
            })
            .map(|s| s.as_str().to_owned())
            .collect()
    }
}

/// One batch of [`Client::job_bulk`](crate::Client::job_bulk).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobBatch {
    /// Jobs this batch changed.
    pub changed: u64,
    /// The cursor for the next batch ([`JobListParams::after`]), `None` when this batch was the
    /// last.
    pub next_cursor: Option<JobId>,
}
