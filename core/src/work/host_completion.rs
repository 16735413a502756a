//! A job completed inside the application's own transaction ([`Job::complete_in`]): the
//! completer's fenced statement for one job, run on the host's executor, so the job is completed
//! exactly when the worker's own writes commit. The executor then records nothing for the
//! attempt (it sees [`Job::recorded`]).

use std::sync::atomic::Ordering;

use chrono::TimeDelta;

use crate::driver::{BlockingExecutor, Executor};
use crate::error::Result;
use crate::job::Job;
use crate::query::{SetStateParams, job_set_state_if_running_many};
use crate::work::claim_tokens::NO_CLAIM;

impl<A> Job<A> {
    fn completed_params(&self) -> [SetStateParams; 1] {
        [SetStateParams {
            id: self.row().id,
            attempt: self.row().attempt,
            claim_token: self.row().claim_token.unwrap_or(NO_CLAIM),
            outcome: "completed",
            delay: TimeDelta::zero(),
            error: None,
        }]
    }

    /// Completes this job inside the application's own transaction, so the job is completed
    /// exactly when the worker's own writes commit. Returns false when the attempt was superseded
    /// (the job is no longer running this attempt), in which case the transaction should roll back.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn complete_in<E: Executor>(&self, exec: &mut E) -> Result<bool> {
        let stmt = job_set_state_if_running_many(
            &self.schema,
            &self.completed_params(),
            TimeDelta::zero(),
        );
        let done = exec.execute(&stmt).await? == 1;
        self.recorded.fetch_or(done, Ordering::Relaxed);
        Ok(done)
    }

    /// [`Job::complete_in`] for a blocking executor (diesel).
    ///
    /// # Errors
    ///
    /// The database error.
    pub fn complete_in_blocking<E: BlockingExecutor>(&self, exec: &mut E) -> Result<bool> {
        let stmt = job_set_state_if_running_many(
            &self.schema,
            &self.completed_params(),
            TimeDelta::zero(),
        );
        let done = exec.execute(&stmt)? == 1;
        self.recorded.fetch_or(done, Ordering::Relaxed);
        Ok(done)
    }
}
