//! The operator API over the dead-letter queue and the job tables' storage: list the jobs that
//! were discarded, redrive them back under their own ids, purge them, and name what holds vacuum
//! back.

use std::collections::BTreeSet;

use super::Client;
use crate::admin::{DeadFilter, DeadListPage, DeadListParams, RedriveReport, VacuumHorizon};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::engine_metrics::{DEAD_PURGED, DEAD_REDRIVEN};
use crate::error::{Error, Result};
use crate::job::JobId;
use crate::query::{
    PurgeRow, RedriveRow, job_dead_list, job_dead_list_page, job_dead_purge, job_dead_redrive,
    storage_horizon,
};

/// Jobs redriven or purged per statement: each batch commits on its own, so no statement locks
/// more than this many dead jobs.
const DEAD_BATCH: usize = 1_000;

/// The most holders [`Client::vacuum_horizon`] names.
const HORIZON_HOLDERS: usize = 10;

impl<D: Driver> Client<D> {
    /// A page of the dead-letter queue, newest first: the jobs that were discarded (their
    /// attempts used up, discarded by their worker, or rescued with no attempt left), each with
    /// why and when. Pass the page's `next_cursor` to [`DeadListParams::before`] for the next
    /// (older) page.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn dead_list(&self, params: &DeadListParams) -> Result<DeadListPage> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let jobs = conn.query_as(&job_dead_list(self.schema(), params)).await?;
        Ok(job_dead_list_page(jobs, params))
    }

    /// Puts the dead-letter jobs `filter` matches back into their queues, under their own ids,
    /// available now with one more attempt than they used (their errors and attempts kept), in
    /// batches of 1,000 that each commit on their own, and wakes their queues. A unique job whose
    /// key another job holds now stays in the dead-letter queue and is reported as a conflict: it
    /// would be a second job under the key.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> pgmill::Result<()> {
    /// use pgmill::admin::DeadFilter;
    ///
    /// let report = client.dead_redrive(&DeadFilter::new().queues(["mailers"])).await?;
    /// tracing::info!(redriven = report.redriven.len(), conflicts = report.conflicts.len(), "redriven");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a filter that is empty and does not ask for every job
    /// ([`DeadFilter::all`]): nothing is changed. The database error; the batches before it stay
    /// done.
    pub async fn dead_redrive(&self, filter: &DeadFilter) -> Result<RedriveReport> {
        bounded(filter, "redrive")?;
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let mut report = RedriveReport::default();
        let mut after = JobId(0);
        loop {
            let stmt = job_dead_redrive(self.schema(), filter, after, DEAD_BATCH);
            let row: RedriveRow = conn
                .query_opt(&stmt)
                .await?
                .ok_or_else(|| Error::decode("dead redrive", "no row"))?;
            let queues: BTreeSet<String> = row.redriven.iter().map(|(_, q)| q.clone()).collect();
            if !queues.is_empty() {
                self.announce(queues);
            }
            self.inner
                .parts
                .metrics
                .counter(DEAD_REDRIVEN, &[])
                .increment(row.redriven.len() as u64);
            report
                .redriven
                .extend(row.redriven.into_iter().map(|(id, _)| id));
            report.conflicts.extend(row.conflicts);
            match row.last_id {
                Some(last) if usize::try_from(row.num_matched).unwrap_or(0) >= DEAD_BATCH => {
                    after = JobId(last);
                }
                _ => return Ok(report),
            }
        }
    }

    /// Deletes the dead-letter jobs `filter` matches, in batches of 1,000 that each commit on
    /// their own; returns how many were deleted.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a filter that is empty and does not ask for every job
    /// ([`DeadFilter::all`]): nothing is deleted. The database error; the batches before it stay
    /// done.
    pub async fn dead_purge(&self, filter: &DeadFilter) -> Result<u64> {
        bounded(filter, "purge")?;
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let mut purged = 0;
        let mut after = JobId(0);
        loop {
            let stmt = job_dead_purge(self.schema(), filter, after, DEAD_BATCH);
            let row: PurgeRow = conn
                .query_opt(&stmt)
                .await?
                .ok_or_else(|| Error::decode("dead purge", "no row"))?;
            let n = u64::try_from(row.num_purged).unwrap_or(0);
            purged += n;
            self.inner
                .parts
                .metrics
                .counter(DEAD_PURGED, &[])
                .increment(n);
            match row.last_id {
                Some(last) if usize::try_from(row.num_matched).unwrap_or(0) >= DEAD_BATCH => {
                    after = JobId(last);
                }
                _ => return Ok(purged),
            }
        }
    }

    /// What holds vacuum back on this database: the sessions, replication slots and prepared
    /// transactions whose snapshot is older than the newest, oldest first (at most ten). While
    /// one holds, dead rows of every table pile up; see [`VacuumHorizon`]. A role without
    /// `pg_read_all_stats` sees other roles' sessions without their start or state
    /// ([`VacuumHorizon::has_hidden_holders`]).
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn vacuum_horizon(&self) -> Result<VacuumHorizon> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let holders = conn
            .query_as(&storage_horizon(self.schema(), HORIZON_HOLDERS))
            .await?;
        Ok(VacuumHorizon { holders })
    }
}

/// Refuses an action over the dead-letter queue with no filter that did not ask for every job.
fn bounded(filter: &DeadFilter, action: &str) -> Result<()> {
    if filter.is_bounded() {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "a dead-letter {action} needs a filter (queues, kinds or ids) or DeadFilter::all()"
        )))
    }
}
