//! Maintenance services: background passes that keep the job table moving and tidy.
//!
//! Each service has the same skeleton: a config with documented defaults, `new` validating it, a
//! loop around `run_once` (which tests call directly), and a failed pass that logs and continues.
//! The scheduler, rescuer, cleaners, analyzer, periodic enqueuer and queue statistics rollup run
//! only on the leader, started and
//! stopped with each term by the queue maintainer, each under a supervisor that restarts a
//! service that panics. (Any client's own large insert also has the analyzer look once, before
//! the insert returns.)
//!
//! A [`Client`](crate::Client) runs these services itself. They are public for tests and for
//! running a pass by hand (`run_once`), e.g. from an operator's script.

mod job_analyzer;
mod job_cleaner;
mod job_rescuer;
mod job_scheduler;
mod periodic_enqueuer;
mod queue_cleaner;
mod queue_maintainer;
mod queue_sampler;
mod queue_stat_rollup;

pub use job_analyzer::{
    DEFAULT_ANALYZER_GROWTH, DEFAULT_ANALYZER_INTERVAL, DEFAULT_ANALYZER_MIN_ROWS, JobAnalyzer,
    JobAnalyzerConfig, JobAnalyzerRunOnceResult,
};
pub use job_cleaner::{
    DEFAULT_CANCELLED_RETENTION, DEFAULT_COMPLETED_RETENTION, DEFAULT_DISCARDED_RETENTION,
    JobCleaner, JobCleanerConfig, JobCleanerRunOnceResult,
};
pub use job_rescuer::{
    DEFAULT_CLIENT_RETENTION, DEFAULT_CLIENT_TIMEOUT, DEFAULT_RESCUE_AFTER,
    DEFAULT_RESCUER_INTERVAL, JobRescuer, JobRescuerConfig, JobRescuerRunOnceResult,
};
pub use job_scheduler::{
    DEFAULT_SCHEDULER_INTERVAL, DEFAULT_SCHEDULER_LIMIT, JobScheduler, JobSchedulerConfig,
    JobSchedulerRunOnceResult,
};
pub(crate) use periodic_enqueuer::{DEFAULT_PERIODIC_INTERVAL, PeriodicEnqueuerConfig};
pub use queue_cleaner::{
    DEFAULT_QUEUE_RETENTION, QueueCleaner, QueueCleanerConfig, QueueCleanerRunOnceResult,
};
pub(crate) use queue_maintainer::{QueueMaintainer, QueueMaintainerConfig};
pub use queue_stat_rollup::{
    DEFAULT_QUEUE_STAT_BUCKET, DEFAULT_QUEUE_STAT_RETENTION, QueueStatConfig, QueueStatRollup,
    QueueStatRunOnceResult,
};
