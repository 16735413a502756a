//! The operator API's reads for browsing a busy schema (the dashboard uses them): jobs newest
//! first under a keyset cursor, cut to summaries, and recent outcomes per queue. Each is one
//! statement whose cost does not grow with the table's history.

use chrono::TimeDelta;

use super::Client;
use crate::admin::{JobSummaryPage, JobSummaryParams, QueueActivity, QueueOverview};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::Result;
use crate::query::{
    job_count_recent_by_queue, job_list_newest, job_list_newest_page, queue_overview,
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
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let jobs = conn
            .query_as(&job_list_newest(self.schema(), params))
            .await?;
        Ok(job_list_newest_page(jobs, params))
    }

    /// Every registered queue, and every queue name holding live jobs that no client registered,
    /// in name order: each with its live counts, pause state, oldest available job's age, and
    /// whether a live client works it ([`QueueOverview::is_unserved`] flags the queues whose jobs
    /// wait for a client). One statement, whose cost follows the number of queues and their
    /// depth, not the table's history: the overview's live counts.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_overview(&self) -> Result<Vec<QueueOverview>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_as(&queue_overview(self.schema(), self.live_within()))
            .await
    }

    /// Per queue (registered or not) that finished jobs within the last `window`: how many
    /// completed, were discarded and were cancelled, in queue name order. With
    /// [`Client::queue_overview`]'s live counts this is what an overview shows.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_activity(&self, window: TimeDelta) -> Result<Vec<QueueActivity>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_as(&job_count_recent_by_queue(self.schema(), window))
            .await
    }
}
