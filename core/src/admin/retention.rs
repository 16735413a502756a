//! Retention rules kept in the database: how long finished jobs are kept, per final state and
//! queue, over the clients' configuration.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::job::JobState;

/// The queue name a rule for every queue has.
pub const EVERY_QUEUE: &str = "*";

/// How long finished jobs of one final state are kept, for one queue or for every queue
/// ([`Client::retention_set`](crate::Client::retention_set)).
///
/// The leader's cleaner applies, to each finished job, its queue's own rule for its state, else
/// the rule for every queue ([`EVERY_QUEUE`]), else the retention in its own configuration
/// ([`JobCleanerConfig`](crate::maintenance::JobCleanerConfig)). A rule takes effect at the
/// cleaner's next pass, in whichever client leads, without a deploy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionRule {
    /// The queue the rule is for, or [`EVERY_QUEUE`].
    pub queue: String,
    /// The final state: completed, cancelled or discarded (the dead-letter queue).
    pub state: JobState,
    /// How long after finishing (for discarded jobs: after entering the dead-letter queue) a job
    /// is kept; `None` keeps it until an operator removes it.
    pub keep: Option<Duration>,
    /// When the rule was last set.
    pub updated_at: DateTime<Utc>,
}

impl RetentionRule {
    /// True for the rule of every queue.
    pub fn is_for_every_queue(&self) -> bool {
        self.queue == EVERY_QUEUE
    }
}
