//! Maintenance services: background passes that keep the job table moving and tidy.
//!
//! Each service has the same skeleton: a config with documented defaults, `new` validating it, a
//! loop around `run_once` (which tests call directly), and a failed pass that logs and continues.

mod job_scheduler;

pub use job_scheduler::{
    DEFAULT_SCHEDULER_INTERVAL, DEFAULT_SCHEDULER_LIMIT, JobScheduler, JobSchedulerConfig,
    JobSchedulerRunOnceResult,
};
