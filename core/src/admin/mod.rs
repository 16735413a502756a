//! The operator API's types: what [`Client`](crate::Client)'s methods for looking at and acting on
//! jobs, queues, periodic schedules, retention, clients and leadership take and return (the CLI
//! and the dashboard use the same methods).
//!
//! Listings, counts and bulk actions share one [`JobFilter`] (by state, queue and kind).

mod cluster;
mod dead;
mod job_bulk;
mod job_filter;
mod job_list;
mod job_summary;
mod migration;
mod periodic;
mod queue;
mod queue_stat;
mod retention;
mod storage;

pub use cluster::{ClientRow, LeaderRow};
pub use dead::{
    DeadCursor, DeadFilter, DeadJob, DeadListPage, DeadListParams, DeadReason, RedriveReport,
};
pub use job_bulk::{BulkAction, JobBatch};
pub use job_filter::JobFilter;
pub use job_list::{JobListPage, JobListParams};
pub use job_summary::{JobSummary, JobSummaryPage, JobSummaryParams};
pub use migration::MigrationRow;
pub use periodic::PeriodicRow;
pub(crate) use queue::UNKNOWN_KIND_PROBE;
pub use queue::{QueueActivity, QueueOverview, QueueRow, UnknownKindJobs, UnservedQueue};
pub use queue_stat::{MAX_QUEUE_STAT_BINS, QueueStatParams, QueueStatPoint, QueueStats};
pub use retention::{EVERY_QUEUE, RetentionRule};
pub use storage::{HolderKind, VacuumHolder, VacuumHorizon};

pub(crate) use job_summary::DEFAULT_PREVIEW_CHARS;
pub(crate) use queue::LIVE_STATES;
