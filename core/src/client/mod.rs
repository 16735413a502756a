//! The client: runs producers and the completer for its queues, inserts jobs, and administers them.

mod config;
mod inserter;

pub use config::{
    ClientBuilder, Config, DEFAULT_EVENT_BUFFER, DEFAULT_FETCH_LIMIT, DEFAULT_JOB_TIMEOUT,
    DEFAULT_POLL_INTERVAL, DEFAULT_QUEUE_REFRESH_INTERVAL, MAX_WORKERS_PER_QUEUE, QueueConfig,
};
pub use inserter::Inserter;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use serde_json::json;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::completer::{BatchCompleter, CompleterStats};
use crate::driver::{Driver, Executor, Transaction};
use crate::error::Result;
use crate::event::{EventSender, Subscription};
use crate::ident::validate_name;
use crate::job::JobState;
use crate::job::{JobId, JobRow};
use crate::job_args::{InsertOpts, InsertParams, JobArgs};
use crate::job_executor::JobExecutor;
use crate::maintenance::JobScheduler;
use crate::migrator::{MigrateReport, Migrator};
use crate::notifier::{ControlMessage, NotificationRouter, Notifier};
use crate::producer::{Producer, QueueHandle};
use crate::query::{
    JobListPage, JobListParams, QueueName, QueueRow, job_cancel, job_delete, job_get_by_id,
    job_list, job_list_page, job_notify_insert, job_release_pending, job_retry,
    queue_control_notify, queue_list, queue_pause, queue_resume,
};
use crate::schema::Schema;
use crate::service::Service;
use crate::worker::Workers;

/// Counters of a client since it was built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// Outcomes recorded in the database.
    pub recorded_outcomes: u64,
    /// Outcomes of superseded attempts, which changed nothing (fencing).
    pub superseded_results: u64,
    /// Completer flushes (UPDATE statements).
    pub completer_flushes: u64,
}

/// A pgmill client: works its queues with its workers, and inserts and administers jobs.
///
/// Cheap to clone; clones share one client. Build with [`Client::builder`].
pub struct Client<D: Driver> {
    inner: Arc<ClientInner<D>>,
}

impl<D: Driver> Clone for Client<D> {
    fn clone(&self) -> Self {
        Client {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct ClientInner<D: Driver> {
    driver: D,
    config: Config,
    id: String,
    workers: Workers,
    inserter: Inserter,
    events: Arc<EventSender>,
    stats: Arc<CompleterStats>,
    queues: HashMap<String, Arc<QueueHandle>>,
    running: Mutex<Option<Running>>,
}

/// The tasks of a started client.
struct Running {
    producers: Vec<Service>,
    maintenance: Vec<Service>,
    completer: Service,
    kill: CancellationToken,
}

impl<D: Driver> fmt::Debug for Client<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.inner.id)
            .field("schema", &self.inner.config.schema)
            .field("queues", &self.inner.config.queues)
            .field("workers", &self.inner.workers)
            .finish_non_exhaustive()
    }
}

fn default_client_id() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "host".to_owned());
    let host: String = host.chars().take(60).collect();
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

impl<D: Driver> Client<D> {
    /// Starts building a client over `driver`.
    pub fn builder(driver: D) -> ClientBuilder<D> {
        ClientBuilder::new(driver)
    }

    pub(crate) fn from_parts(
        driver: D,
        config: Config,
        workers: Workers,
        known_kinds: Option<BTreeSet<String>>,
    ) -> Self {
        let mut inserter = Inserter::new(config.schema.clone())
            .with_notify_cooldown(config.insert_notify_cooldown);
        if let Some(kinds) = known_kinds {
            inserter = inserter.with_known_kinds(kinds);
        }
        let queues = config
            .queues
            .keys()
            .map(|q| (q.clone(), Arc::new(QueueHandle::default())))
            .collect();
        Client {
            inner: Arc::new(ClientInner {
                id: config.id.clone().unwrap_or_else(default_client_id),
                events: Arc::new(EventSender::new(config.event_buffer)),
                stats: Arc::new(CompleterStats::default()),
                driver,
                config,
                workers,
                inserter,
                queues,
                running: Mutex::new(None),
            }),
        }
    }

    /// This client's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The schema worked.
    pub fn schema(&self) -> &Schema {
        &self.inner.config.schema
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.inner.driver
    }

    /// The inserter, for inserting through other executors (the application's transaction).
    pub fn inserter(&self) -> &Inserter {
        &self.inner.inserter
    }

    /// Migrates the schema to the latest version.
    ///
    /// # Errors
    ///
    /// The migration error.
    pub async fn migrate(&self) -> Result<MigrateReport> {
        let mut conn = self.inner.driver.acquire().await?;
        Migrator::new(self.schema().clone())
            .up(&mut conn, None)
            .await
    }

    /// Subscribes to events about finished attempts.
    pub fn subscribe(&self) -> Subscription {
        self.inner.events.subscribe()
    }

    /// Counters since the client was built.
    pub fn stats(&self) -> ClientStats {
        let s = &self.inner.stats;
        ClientStats {
            recorded_outcomes: s.recorded.load(Ordering::Relaxed),
            superseded_results: s.superseded.load(Ordering::Relaxed),
            completer_flushes: s.flushes.load(Ordering::Relaxed),
        }
    }

    /// Starts working the configured queues in the background; returns once started. Starting a
    /// started client does nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) for bad maintenance settings.
    pub async fn start(&self) -> Result<()> {
        let mut running = self.inner.running.lock().await;
        if running.is_some() {
            return Ok(());
        }
        let cfg = &self.inner.config;
        let (tx, rx) = mpsc::channel(cfg.completer.buffer);
        let completer = Service::new();
        let stopping = completer.token();
        completer
            .start(
                BatchCompleter {
                    driver: self.inner.driver.clone(),
                    schema: cfg.schema.clone(),
                    config: cfg.completer.clone(),
                    events: Arc::clone(&self.inner.events),
                    stats: Arc::clone(&self.inner.stats),
                }
                .run(rx, stopping),
            )
            .await;
        let executor = JobExecutor {
            workers: self.inner.workers.clone(),
            schema: cfg.schema.clone(),
            retry_policy: Arc::clone(&cfg.retry_policy),
            default_timeout: cfg.job_timeout,
            completer: tx,
        };
        let kill = CancellationToken::new();
        let mut producers = Vec::new();
        for (queue, q) in &cfg.queues {
            let producer = Producer {
                driver: self.inner.driver.clone(),
                queue: queue.clone(),
                client_id: self.inner.id.clone(),
                max_workers: q.max_workers,
                fetch_limit: cfg.fetch_limit,
                poll_interval: cfg.poll_interval,
                poll_only: self.poll_only(),
                refresh_interval: cfg.queue_refresh_interval,
                executor: executor.clone(),
                handle: Arc::clone(&self.inner.queues[queue]),
            };
            let service = Service::new();
            service
                .start(producer.run(service.token(), kill.clone()))
                .await;
            producers.push(service);
        }
        // The producers hold the only senders now: the completer ends after the last job.
        drop(executor);
        let mut maintenance = Vec::new();
        if !cfg.queues.is_empty() {
            // Until leader election exists every working client runs the scheduler; its UPDATE
            // skips rows another scheduler holds, so running it twice only costs a query.
            let scheduler = JobScheduler::new(
                self.inner.driver.clone(),
                cfg.schema.clone(),
                cfg.scheduler.clone(),
            )?;
            let queues = self.inner.queues.clone();
            let service = Service::new();
            service
                .start(scheduler.run(service.token(), move |r| {
                    for queue in r.num_jobs_by_queue.keys() {
                        if let Some(h) = queues.get(queue) {
                            h.wake();
                        }
                    }
                }))
                .await;
            maintenance.push(service);
            if !self.poll_only() {
                let notifier = Notifier {
                    driver: self.inner.driver.clone(),
                    schema: cfg.schema.clone(),
                    router: NotificationRouter {
                        queues: self.inner.queues.clone(),
                        on_leadership: None,
                    },
                };
                let service = Service::new();
                service.start(notifier.run(service.token())).await;
                maintenance.push(service);
            }
        }
        *running = Some(Running {
            producers,
            maintenance,
            completer,
            kill,
        });
        info!(client_id = %self.inner.id, queues = ?cfg.queues.keys().collect::<Vec<_>>(), "client started");
        Ok(())
    }

    /// Soft stop: fetches nothing more, waits for running jobs to finish and their outcomes to be
    /// recorded. Safe to call twice or before start.
    pub async fn stop(&self) {
        self.shutdown(false).await;
    }

    /// Hard stop: interrupts running jobs (they go back to `available` with their attempt given
    /// back), then waits as [`Client::stop`] does.
    pub async fn stop_and_cancel(&self) {
        self.shutdown(true).await;
    }

    async fn shutdown(&self, hard: bool) {
        let Some(running) = self.inner.running.lock().await.take() else {
            return;
        };
        if hard {
            running.kill.cancel();
        }
        for s in running.maintenance.iter().chain(&running.producers) {
            s.stop().await;
        }
        // Every sender is gone once the producers' jobs ended: the completer drains and ends.
        running.completer.token().cancel();
        running.completer.join().await;
        info!(client_id = %self.inner.id, hard, "client stopped");
    }

    /// True when this client only polls: configured so, or the driver has no listener.
    pub fn poll_only(&self) -> bool {
        self.inner.config.poll_only || !self.inner.driver.supports_listener()
    }

    fn wake(&self, queue: &str) {
        if let Some(h) = self.inner.queues.get(queue) {
            h.wake();
        }
    }

    /// Inserts one job (committed at once) with its kind's default options.
    ///
    /// # Errors
    ///
    /// A validation error or the database error.
    pub async fn insert<A: JobArgs>(&self, args: A) -> Result<JobRow> {
        self.insert_with(args, None).await
    }

    /// Inserts one job (committed at once) with options.
    ///
    /// # Errors
    ///
    /// A validation error or the database error.
    pub async fn insert_with<A: JobArgs>(
        &self,
        args: A,
        opts: impl Into<Option<InsertOpts>>,
    ) -> Result<JobRow> {
        let mut conn = self.inner.driver.acquire().await?;
        let job = self
            .inner
            .inserter
            .insert_with(&mut conn, args, opts)
            .await?;
        self.wake(&job.queue);
        Ok(job)
    }

    /// Inserts many jobs in one round trip (committed at once), returned in input order.
    ///
    /// # Errors
    ///
    /// A validation error or the database error; nothing is inserted then.
    pub async fn insert_many(&self, params: &[InsertParams]) -> Result<Vec<JobRow>> {
        let mut conn = self.inner.driver.acquire().await?;
        let jobs = self.inner.inserter.insert_many(&mut conn, params).await?;
        self.wake_queues(params);
        Ok(jobs)
    }

    /// Inserts a very large batch (COPY where the driver has it) in one transaction; returns how
    /// many.
    ///
    /// # Errors
    ///
    /// A validation error or the database error; nothing is inserted then.
    pub async fn insert_bulk(&self, params: &[InsertParams]) -> Result<u64> {
        let mut conn = self.inner.driver.acquire().await?;
        let mut tx = conn.begin().await?;
        let n = self.inner.inserter.insert_bulk(&mut tx, params).await?;
        tx.commit().await?;
        self.wake_queues(params);
        Ok(n)
    }

    fn wake_queues(&self, params: &[InsertParams]) {
        let queues: BTreeSet<&str> = params.iter().map(InsertParams::queue).collect();
        for q in queues {
            self.wake(q);
        }
    }

    /// A job by id.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_get(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = self.inner.driver.acquire().await?;
        conn.query_opt(&job_get_by_id(self.schema(), id)).await
    }

    /// A page of jobs, filtered; pass the page's `next_cursor` to [`JobListParams::after`] for the
    /// next one.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_list(&self, params: &JobListParams) -> Result<JobListPage> {
        let mut conn = self.inner.driver.acquire().await?;
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
        let mut conn = self.inner.driver.acquire().await?;
        let mut tx = conn.begin().await?;
        let error = json!({"attempt": 0, "error": "cancelled by an operator", "panic": false});
        let job: Option<JobRow> = tx.query_opt(&job_cancel(self.schema(), id, error)).await?;
        if let Some(j) = job.as_ref().filter(|j| j.state == JobState::Running) {
            let msg = ControlMessage::Cancel {
                job_id: j.id,
                queue: j.queue.clone(),
            };
            tx.execute(&queue_control_notify(self.schema(), &json!(msg)))
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
        let mut conn = self.inner.driver.acquire().await?;
        let job: Option<JobRow> = conn
            .query_opt(&job_release_pending(self.schema(), id, at))
            .await?;
        if let Some(j) = job.as_ref().filter(|j| j.state == JobState::Available) {
            let queues = vec![j.queue.clone()];
            conn.execute(&job_notify_insert(self.schema(), queues))
                .await?;
            self.wake(&j.queue);
        }
        Ok(job)
    }

    /// Every queue registered in the schema, by name, with job counts by state.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_list(&self) -> Result<Vec<QueueRow>> {
        let mut conn = self.inner.driver.acquire().await?;
        conn.query_as(&queue_list(self.schema(), None, 10_000))
            .await
    }

    /// One queue with its job counts by state, `None` if no producer registered it yet.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_get(&self, name: &str) -> Result<Option<QueueRow>> {
        let mut conn = self.inner.driver.acquire().await?;
        conn.query_opt(&queue_list(self.schema(), Some(name), 1))
            .await
    }

    /// Pauses a queue in every process (`*`: every queue): it fetches nothing more while its
    /// running jobs finish. Persisted, so producers starting later start paused. Returns the
    /// queues paused.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`](crate::Error::InvalidName) for a bad name; the database error.
    pub async fn queue_pause(&self, queue: &str) -> Result<Vec<String>> {
        self.queue_control(queue, true).await
    }

    /// Resumes a paused queue in every process (`*`: every queue). Returns the queues resumed.
    ///
    /// # Errors
    ///
    /// As [`Client::queue_pause`].
    pub async fn queue_resume(&self, queue: &str) -> Result<Vec<String>> {
        self.queue_control(queue, false).await
    }

    async fn queue_control(&self, queue: &str, pause: bool) -> Result<Vec<String>> {
        if queue != "*" {
            validate_name("queue", queue)?;
        }
        let mut conn = self.inner.driver.acquire().await?;
        let mut tx = conn.begin().await?;
        let (stmt, msg) = if pause {
            (
                queue_pause(self.schema(), queue),
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
        tx.execute(&queue_control_notify(self.schema(), &json!(msg)))
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
    /// The database error.
    pub async fn job_retry(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = self.inner.driver.acquire().await?;
        let job: Option<JobRow> = conn.query_opt(&job_retry(self.schema(), id)).await?;
        if let Some(j) = &job {
            self.wake(&j.queue);
        }
        Ok(job)
    }

    /// Deletes a job that is not running; returns it if it was deleted.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_delete(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = self.inner.driver.acquire().await?;
        conn.query_opt(&job_delete(self.schema(), id)).await
    }
}
