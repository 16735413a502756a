//! Queues as operators see them: registered, with their live jobs counted, served or not, and
//! what each finished recently.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::job::JobState;

/// The states [`QueueRow::counts`] counts: every state a job is in before it finishes.
pub(crate) const LIVE_STATES: [JobState; 5] = [
    JobState::Available,
    JobState::Scheduled,
    JobState::Pending,
    JobState::Running,
    JobState::Retryable,
];

/// A queue, as registered by the producers working it, with its live jobs counted by state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueRow {
    /// The queue's name.
    pub name: String,
    /// When a producer first registered it.
    pub created_at: DateTime<Utc>,
    /// When a producer last refreshed it (or it was paused or resumed).
    pub updated_at: DateTime<Utc>,
    /// When it was paused; `None` while it runs.
    pub paused_at: Option<DateTime<Utc>>,
    /// Free-form metadata.
    pub metadata: serde_json::Value,
    /// How many of its jobs are in each live state (available, scheduled, pending, running,
    /// retryable), every one of them present, zero when none. Finished jobs
    /// (completed, cancelled, discarded) are not counted: each count is one range of the job
    /// table's `(state, queue)` index, so reading them costs as much as the queue is deep, however
    /// many finished jobs the table keeps. List those with
    /// [`Client::job_list`](crate::Client::job_list).
    pub counts: BTreeMap<JobState, i64>,
    /// How long its oldest due available job has been due (database clock); `None` when it has
    /// none.
    pub oldest_available_age: Option<Duration>,
}

/// A queue as an overview shows it ([`Client::queue_overview`](crate::Client::queue_overview)):
/// registered, or holding live jobs under a name no client registered, with its live counts and
/// whether a live client works it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueueOverview {
    /// The queue's name, as its jobs carry it.
    pub name: String,
    /// True when it has a row in `pgmill_queue` (a producer worked it once, or it was paused);
    /// false for a name no client ever worked, such as a typo.
    pub registered: bool,
    /// When it was paused; `None` while it runs or is not registered.
    pub paused_at: Option<DateTime<Utc>>,
    /// True when a live client (heartbeat within the client timeout) works it.
    pub served: bool,
    /// How many of its jobs are in each live state, as in [`QueueRow::counts`].
    pub counts: BTreeMap<JobState, i64>,
    /// How long its oldest due available job has been due (database clock).
    pub oldest_available_age: Option<Duration>,
}

impl QueueOverview {
    /// True when it holds live jobs that no live client works: they wait until one starts.
    pub fn is_unserved(&self) -> bool {
        !self.served && self.counts.values().any(|n| *n > 0)
    }
}

/// A queue that holds live jobs but that no live client works
/// ([`Client::queue_list_unserved`](crate::Client::queue_list_unserved)): its jobs wait until a
/// client working it starts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnservedQueue {
    /// The queue's name, as its jobs carry it.
    pub name: String,
    /// True when it has a row in `pgmill_queue` (a producer worked it once, or it was paused);
    /// false for a name no client ever worked, such as a typo.
    pub registered: bool,
    /// When it was paused; `None` while it runs or is not registered.
    pub paused_at: Option<DateTime<Utc>>,
    /// How many of its jobs are in each live state, as in [`QueueRow::counts`].
    pub counts: BTreeMap<JobState, i64>,
    /// How long its oldest due available job has been due (database clock).
    pub oldest_available_age: Option<Duration>,
}

/// Most due jobs per queue read to find [`UnknownKindJobs`], by the operator API and the leader's
/// sampler alike.
pub(crate) const UNKNOWN_KIND_PROBE: usize = 1_000;

/// Jobs of one kind waiting in a queue that live clients work, none of which has a worker for
/// the kind ([`Client::queue_unknown_kinds`](crate::Client::queue_unknown_kinds)). A client
/// claims only the kinds it has workers for, so these jobs are never attempted: they wait, in
/// their place, until a client that knows the kind starts. Typical causes: a worker removed
/// while jobs of its kind were queued, a kind name changed, a job inserted by another
/// application whose workers are not running.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnknownKindJobs {
    /// The queue.
    pub queue: String,
    /// The kind no live client working the queue knows.
    pub kind: String,
    /// How many such jobs are among the first jobs due in the queue (at most the number read
    /// per queue, a thousand: a lower bound when the queue is deeper).
    pub num_jobs: i64,
    /// When the longest-waiting of them came due (database clock).
    pub due_since: DateTime<Utc>,
}

impl From<QueueOverview> for UnservedQueue {
    fn from(q: QueueOverview) -> Self {
        UnservedQueue {
            name: q.name,
            registered: q.registered,
            paused_at: q.paused_at,
            counts: q.counts,
            oldest_available_age: q.oldest_available_age,
        }
    }
}

/// What one queue finished within a recent window.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueActivity {
    /// The queue (any queue with jobs, registered or not).
    pub queue: String,
    /// Jobs completed within the window.
    pub completed: i64,
    /// Jobs discarded within the window (attempts used up, or discarded by their worker).
    pub discarded: i64,
    /// Jobs cancelled within the window.
    pub cancelled: i64,
}

impl QueueActivity {
    /// Discarded jobs as a fraction of completed and discarded ones, `None` when neither.
    pub fn failure_rate(&self) -> Option<f64> {
        let finished = self.completed + self.discarded;
        #[allow(clippy::cast_precision_loss)]
        (finished > 0).then(|| self.discarded as f64 / finished as f64)
    }
}
