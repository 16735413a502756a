//! The operator API: look at and act on jobs, queues, periodic schedules and leadership, from any
//! process (the CLI and the dashboard use it too). None of it needs a started client.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::Client;
use crate::admin::{
    ClientRow, JobListPage, JobListParams, LeaderRow, PeriodicRow, QueueOverview, QueueRow,
    UNKNOWN_KIND_PROBE, UnknownKindJobs, UnservedQueue,
};
use crate::cluster::notifier::ControlMessage;
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, Transaction};
use crate::error::{Error, Result};
use crate::ident::validate_name;
use crate::job::{JobId, JobRow, JobState};
use crate::query::{
    QueueName, client_list, job_cancel, job_delete, job_get_by_id, job_list, job_list_page,
    job_release_pending, job_retry, leader_get, periodic_list, periodic_set_paused,
    queue_control_notify, queue_list, queue_overview, queue_pause, queue_resume,
    queue_unknown_kinds,
};

impl<D: Driver> Client<D> {
    /// The current leadership term, if any (possibly expired).
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn leader(&self) -> Result<Option<LeaderRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_opt(&leader_get(self.schema())).await
    }

    /// Every client registered in the schema, by id, with its heartbeat's age, whether it is live
    /// (its heartbeat within this client's [`JobRescuerConfig::client_timeout`]), whether it leads,
    /// and the queues it works. A client removes its row when it stops; a row left by a client
    /// that died shows it not live until the row expires.
    ///
    /// [`JobRescuerConfig::client_timeout`]: crate::maintenance::JobRescuerConfig::client_timeout
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn client_list(&self) -> Result<Vec<ClientRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_as(&client_list(self.schema(), self.live_within()))
            .await
    }

    /// How recent a heartbeat must be for its client to count as live.
    pub(super) fn live_within(&self) -> chrono::TimeDelta {
        chrono::TimeDelta::from_std(self.config().rescuer.client_timeout)
            .unwrap_or(chrono::TimeDelta::MAX)
    }

    /// Every periodic job registered in the schema, with its statistics.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn periodic_list(&self) -> Result<Vec<PeriodicRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_as(&periodic_list(self.schema(), None)).await
    }

    /// One periodic job with its statistics, `None` if not registered.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn periodic_get(&self, name: &str) -> Result<Option<PeriodicRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_opt(&periodic_list(self.schema(), Some(name)))
            .await
    }

    /// Pauses a periodic job: its ticks are not enqueued until resumed (then the missed-ticks
    /// policy applies). Returns false when no such periodic job is registered.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn periodic_pause(&self, name: &str) -> Result<bool> {
        self.periodic_set_paused(name, true).await
    }

    /// Resumes a paused periodic job. Returns false when no such periodic job is registered.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn periodic_resume(&self, name: &str) -> Result<bool> {
        self.periodic_set_paused(name, false).await
    }

    async fn periodic_set_paused(&self, name: &str, paused: bool) -> Result<bool> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let found: Option<QueueName> = conn
            .query_opt(&periodic_set_paused(self.schema(), name, paused))
            .await?;
        Ok(found.is_some())
    }

    /// A job by id.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_get(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_opt(&job_get_by_id(self.schema(), id)).await
    }

    /// A page of jobs, filtered; pass the page's `next_cursor` to [`JobListParams::after`] for the
    /// next one.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_list(&self, params: &JobListParams) -> Result<JobListPage> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let jobs = conn.query_as(&job_list(self.schema(), params)).await?;
        Ok(job_list_page(jobs, params))
    }

    /// Cancels a job from any process. A job not running (available, scheduled, pending,
    /// retryable) is cancelled at once. A running job is marked and its client told (through the
    /// control channel, or its next poll), which drops the job's work; the job then ends
    /// `cancelled`, even if its worker returns an error. Final jobs are left alone. Returns the job
    /// afterwards (still `running` while its client stops it), `None` if missing.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_cancel(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let mut tx = conn.begin().await?;
        let error = json!({"attempt": 0, "error": "cancelled by an operator", "panic": false});
        let job: Option<JobRow> = tx.query_opt(&job_cancel(self.schema(), id, error)).await?;
        if let Some(j) = job.as_ref().filter(|j| j.state == JobState::Running) {
            let msg = ControlMessage::Cancel {
                job_id: j.id,
                queue: j.queue.clone(),
            };
            tx.execute(&queue_control_notify(self.schema(), &[json!(msg)]))
                .await?;
        }
        tx.commit().await?;
        if let Some(j) = job.as_ref().filter(|j| j.state == JobState::Running)
            && let Some(h) = self.inner.queues.get(&j.queue)
        {
            h.cancel_job(j.id);
        }
        Ok(job)
    }

    /// Moves a pending job to available now, or to scheduled when `at` is in the future; other
    /// states are left alone. Returns the job afterwards, `None` if missing.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_release(
        &self,
        id: JobId,
        at: Option<DateTime<Utc>>,
    ) -> Result<Option<JobRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let job: Option<JobRow> = conn
            .query_opt(&job_release_pending(self.schema(), id, at))
            .await?;
        drop(conn);
        if let Some(j) = job.as_ref().filter(|j| j.state == JobState::Available) {
            self.announce([j.queue.clone()]);
        }
        Ok(job)
    }

    /// Every queue registered in the schema, by name, with job counts by state.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_list(&self) -> Result<Vec<QueueRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_as(&queue_list(self.schema(), None, 10_000))
            .await
    }

    /// One queue with its job counts by state, `None` if no producer registered it yet.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_get(&self, name: &str) -> Result<Option<QueueRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_opt(&queue_list(self.schema(), Some(name), 1))
            .await
    }

    /// Queues that hold live jobs (available, scheduled, pending, running or retryable) but that
    /// no live client works, with their counts, in name order. Their jobs wait until a client
    /// working the queue starts: a typo in a queue name, a queue whose workers are all gone, or
    /// rows inserted by hand under a name no client serves show up here, while
    /// [`Client::queue_list`] lists only the queues producers registered. A client works the
    /// queues it was built with and is live as [`Client::client_list`] says.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_list_unserved(&self) -> Result<Vec<UnservedQueue>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let queues: Vec<QueueOverview> = conn
            .query_as(&queue_overview(self.schema(), self.live_within()))
            .await?;
        Ok(queues
            .into_iter()
            .filter(QueueOverview::is_unserved)
            .map(UnservedQueue::from)
            .collect())
    }

    /// Jobs waiting in queues that live clients work whose kind none of those clients has a
    /// worker for, by queue and kind, among the first thousand due jobs of each queue. Each
    /// client claims only the kinds it has workers for (several applications can share a schema
    /// and a queue name), so such a job is never attempted: it waits here, reported, until a
    /// client that knows its kind starts. The leader also logs them and sets
    /// `pgmill_queue_unknown_kind_jobs`.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_unknown_kinds(&self) -> Result<Vec<UnknownKindJobs>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_as(&queue_unknown_kinds(
            self.schema(),
            self.live_within(),
            UNKNOWN_KIND_PROBE,
        ))
        .await
    }

    /// Pauses a queue in every process (`*`: every queue): it fetches nothing more while its
    /// running jobs finish. Persisted, so producers starting later start paused. Returns the
    /// queues paused.
    ///
    /// The queue must exist: registered by a producer, holding live jobs, or one this client is
    /// built to work. To pause a queue before any client works it, use
    /// [`Client::queue_pause_or_create`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`](crate::Error::InvalidName) for a bad name;
    /// [`Error::UnknownQueue`](crate::Error::UnknownQueue) for a queue that does not exist
    /// (nothing is paused or created); the database error.
    pub async fn queue_pause(&self, queue: &str) -> Result<Vec<String>> {
        let create = self.inner.queues.contains_key(queue);
        let names = self.queue_control(queue, true, create).await?;
        if names.is_empty() && queue != "*" {
            return Err(Error::UnknownQueue(queue.to_owned()));
        }
        Ok(names)
    }

    /// Pauses a queue as [`Client::queue_pause`] does, registering it paused if it does not exist
    /// yet, so the producers that start on it later start paused.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`](crate::Error::InvalidName) for a bad name; the database error.
    pub async fn queue_pause_or_create(&self, queue: &str) -> Result<Vec<String>> {
        self.queue_control(queue, true, true).await
    }

    /// Resumes a paused queue in every process (`*`: every queue). Returns the queues resumed:
    /// none for a queue that is not registered (it was never paused).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`](crate::Error::InvalidName) for a bad name; the database error.
    pub async fn queue_resume(&self, queue: &str) -> Result<Vec<String>> {
        self.queue_control(queue, false, false).await
    }

    /// Pauses (registering an unknown queue only if `create`) or resumes `queue`.
    async fn queue_control(&self, queue: &str, pause: bool, create: bool) -> Result<Vec<String>> {
        if queue != "*" {
            validate_name("queue", queue)?;
        }
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let mut tx = conn.begin().await?;
        let (stmt, msg) = if pause {
            (
                queue_pause(self.schema(), queue, create),
                ControlMessage::Pause {
                    queue: queue.to_owned(),
                },
            )
        } else {
            (
                queue_resume(self.schema(), queue),
                ControlMessage::Resume {
                    queue: queue.to_owned(),
                },
            )
        };
        let names: Vec<QueueName> = tx.query_as(&stmt).await?;
        if names.is_empty() && queue != "*" {
            // Nothing by that name: nothing to tell anyone.
            tx.rollback().await?;
            return Ok(Vec::new());
        }
        tx.execute(&queue_control_notify(self.schema(), &[json!(msg)]))
            .await?;
        tx.commit().await?;
        // This process's own producers need no round trip through the listener.
        for (name, h) in &self.inner.queues {
            if queue == "*" || name == queue {
                h.set_paused(pause);
            }
        }
        Ok(names.into_iter().map(|QueueName(n)| n).collect())
    }

    /// Makes a job that is not running available now, with one more attempt if it used them up.
    /// Returns the job afterwards (unchanged if running), `None` if missing.
    ///
    /// # Errors
    ///
    /// [`Error::Conflict`](crate::Error::Conflict) when the job is unique and another job holds
    /// its key now (a duplicate inserted after this one finished); the database error.
    pub async fn job_retry(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let job: Option<JobRow> = conn
            .query_opt(&job_retry(self.schema(), id))
            .await
            .map_err(|e| unique_conflict(e, || format!("job {id} cannot be retried")))?;
        drop(conn);
        if let Some(j) = job.as_ref().filter(|j| j.state == JobState::Available) {
            self.announce([j.queue.clone()]);
        }
        Ok(job)
    }

    /// Deletes a job that is not running; returns it if it was deleted.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_delete(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_opt(&job_delete(self.schema(), id)).await
    }
}

/// A unique violation of a job moving back into its unique states, as a conflict saying so; other
/// errors as they are.
pub(crate) fn unique_conflict(e: Error, what: impl FnOnce() -> String) -> Error {
    if e.is_unique_violation() {
        Error::Conflict(format!(
            "{}: it is a unique job and another job holds its unique key now; \
             retry it once that job has finished",
            what()
        ))
    } else {
        e
    }
}
