//! The operator API's reads for browsing a busy schema (the dashboard uses them): jobs newest
//! first under a keyset cursor, cut to summaries, and recent outcomes per queue. Each is one
//! statement whose cost does not grow with the table's history.

use chrono::TimeDelta;

use super::Client;
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::Result;
use crate::query::{
    JobSummaryPage, JobSummaryParams, QueueActivity, job_count_recent_by_queue, job_list_newest,
    job_list_newest_page,
};

impl<D: Driver> Client<D> {
    /// A page of jobs, newest first, filtered, with args and the last error cut to previews
    /// (large args are never read out in full). Pass the page's `next_cursor` to
    /// [`JobSummaryParams::before`] for the next (older) page; a page costs about the same at
    /// any table size.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_list_newest(&self, params: &JobSummaryParams) -> Result<JobSummaryPage> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        let jobs = conn
            .query_as(&job_list_newest(self.schema(), params))
            .await?;
        Ok(job_list_newest_page(jobs, params))
    }

    /// Per queue (registered or not) that finished jobs within the last `window`: how many
    /// completed, were discarded and were cancelled, in queue name order. With
    /// [`Client::queue_list`]'s live counts this is what an overview shows.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_activity(&self, window: TimeDelta) -> Result<Vec<QueueActivity>> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        conn.query_as(&job_count_recent_by_queue(self.schema(), window))
            .await
    }
}
