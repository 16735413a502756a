//! The operator API's types: what [`Client`](crate::Client)'s methods for looking at and acting on
//! jobs, queues, periodic schedules, clients and leadership take and return (the CLI and the
//! dashboard use the same methods).

pub use crate::query::{
    BulkAction, ClientRow, JobBatch, JobListPage, JobListParams, JobSummary, JobSummaryPage,
    JobSummaryParams, LeaderRow, MigrationRow, PeriodicRow, QueueActivity, QueueOverview, QueueRow,
    UnservedQueue,
};
