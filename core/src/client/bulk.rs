//! The operator API's actions on many jobs at once: count what a filter matches, then retry,
//! cancel or delete the matching jobs in batches under a keyset cursor, so an operator (the CLI,
//! the dashboard) can show the count first and progress as it goes, and no statement locks more
//! than one batch.

use serde_json::json;

use super::Client;
use crate::admin::{BulkAction, JobBatch, JobListParams};
use crate::cluster::notifier::ControlMessage;
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, Transaction};
use crate::error::{Error, Result};
use crate::query::{JobBulkRow, job_bulk, job_count, queue_control_notify};

impl<D: Driver> Client<D> {
    /// How many jobs match the filter of `params` (its cursor and page size are ignored).
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_count(&self, params: &JobListParams) -> Result<u64> {
        self.count(params, None).await
    }

    /// How many jobs matching the filter of `params` `action` would change: those in the states
    /// of [`BulkAction::states`]. Show it before running [`Client::job_bulk`].
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_bulk_count(&self, action: BulkAction, params: &JobListParams) -> Result<u64> {
        self.count(params, Some(action)).await
    }

    async fn count(&self, params: &JobListParams, action: Option<BulkAction>) -> Result<u64> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let n: i64 = conn
            .query_scalar(&job_count(self.schema(), params, action))
            .await?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Applies `action` to the next batch of jobs matching the filter of `params`: up to its page
    /// size ([`JobListParams::limit`], default 100), in id order after its cursor
    /// ([`JobListParams::after`]), among the jobs the action changes ([`BulkAction::states`]).
    /// Call it again with the batch's `next_cursor` until that is `None`; each batch commits on
    /// its own. Cancelled running jobs are told to their clients, retried jobs wake the queues'
    /// producers, as the one-job methods do.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> pgmill::Result<()> {
    /// use pgmill::JobState;
    /// use pgmill::admin::{BulkAction, JobListParams};
    ///
    /// let mut params = JobListParams::new()
    ///     .queues(["mailers"])
    ///     .states([JobState::Discarded])
    ///     .limit(500);
    /// let total = client.job_bulk_count(BulkAction::Retry, &params).await?;
    /// let mut done = 0;
    /// loop {
    ///     let batch = client.job_bulk(BulkAction::Retry, &params).await?;
    ///     done += batch.changed;
    ///     tracing::info!(done, total, "retrying");
    ///     match batch.next_cursor {
    ///         Some(cursor) => params = params.after(cursor),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The database error; the batches before it stay done. A retry leaves out unique jobs whose
    /// key another job holds now (they count as matched, not changed); should two of them hold the
    /// same key in one batch, [`Error::Conflict`](crate::Error::Conflict).
    pub async fn job_bulk(&self, action: BulkAction, params: &JobListParams) -> Result<JobBatch> {
        let error = json!({"attempt": 0, "error": "cancelled by an operator", "panic": false});
        let stmt = job_bulk(self.schema(), action, params, error);
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let row: JobBulkRow = if action == BulkAction::Cancel {
            // The running jobs' clients are told in the transaction that marks them.
            let mut tx = conn.begin().await?;
            let row = one_row(tx.query_opt(&stmt).await?)?;
            if !row.running.is_empty() {
                let messages: Vec<serde_json::Value> = row
                    .running
                    .iter()
                    .map(|(job_id, queue)| {
                        json!(ControlMessage::Cancel {
                            job_id: *job_id,
                            queue: queue.clone(),
                        })
                    })
                    .collect();
                tx.execute(&queue_control_notify(self.schema(), &messages))
                    .await?;
            }
            tx.commit().await?;
            row
        } else {
            one_row(conn.query_opt(&stmt).await.map_err(|e| {
                super::admin::unique_conflict(e, || "a batch of jobs cannot be retried".into())
            })?)?
        };
        drop(conn);
        for (id, queue) in &row.running {
            if let Some(h) = self.inner.queues.get(queue) {
                h.cancel_job(*id);
            }
        }
        self.announce(row.available_queues.iter().cloned());
        Ok(row.batch(params))
    }
}

fn one_row(row: Option<JobBulkRow>) -> Result<JobBulkRow> {
    row.ok_or_else(|| Error::decode("bulk action result", "the statement returned no row"))
}
