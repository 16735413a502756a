//! The operator API's reads for browsing a busy schema (the dashboard uses them): jobs newest
//! first under a keyset cursor, cut to summaries, recent outcomes per queue, and queue statistics
//! over time. Each is one statement whose cost does not grow with the table's history.

use std::time::Duration;

use chrono::TimeDelta;

use super::Client;
use crate::admin::{
    JobSummaryPage, JobSummaryParams, QueueActivity, QueueOverview, QueueStatParams, QueueStats,
};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::query::{
    QueueName, QueueStatSeriesRow, job_count_recent_by_queue, job_list_newest,
    job_list_newest_page, queue_overview, queue_stat_queues, queue_stat_series,
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

impl<D: Driver> Client<D> {
    /// A queue's statistics over time (or all queues' together), as the leader's rollup recorded
    /// them ([`Config::queue_stats`](crate::Config::queue_stats)): per bin, the jobs completed,
    /// discarded, cancelled and retried, the pickup wait's 95th percentile, and samples of the
    /// depth by state and of the oldest available job's wait. Every bin of the window is present,
    /// oldest first; [`QueueStatPoint::covered`](crate::admin::QueueStatPoint::covered) tells a
    /// bin with nothing recorded from one where nothing happened.
    ///
    /// It reads only the rollup's table, a row or two per bucket in the window, whatever the
    /// number of jobs.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> pgmill::Result<()> {
    /// use pgmill::admin::QueueStatParams;
    ///
    /// let stats = client.queue_stats(&QueueStatParams::last_hour().queue("emails")?).await?;
    /// let failed: i64 = stats.points.iter().map(|p| p.failed()).sum();
    /// println!("emails: {failed} failures in the last hour");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The database error (an undefined table when the schema predates the statistics: run the
    /// migrations).
    pub async fn queue_stats(&self, params: &QueueStatParams) -> Result<QueueStats> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let rows: Vec<QueueStatSeriesRow> = conn
            .query_as(&queue_stat_series(self.schema(), params))
            .await?;
        let now = rows
            .first()
            .map(|r| r.now)
            .ok_or_else(|| Error::decode("queue statistics", "no bin"))?;
        Ok(QueueStats {
            queue: params.queue_name().map(str::to_owned),
            now,
            bin: params.bin(),
            points: rows.into_iter().map(|r| r.point).collect(),
        })
    }

    /// The queues that have statistics within the last `window` (the queues
    /// [`Client::queue_stats`] can chart over it), in name order, at most `limit`. Reads only the
    /// statistics of the window, never the job table.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_stat_queues(&self, window: Duration, limit: usize) -> Result<Vec<String>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let names: Vec<QueueName> = conn
            .query_as(&queue_stat_queues(self.schema(), window, limit))
            .await?;
        Ok(names.into_iter().map(|n| n.0).collect())
    }
}
