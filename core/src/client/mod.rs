//! The client: runs producers and the completer for its queues, inserts jobs, and administers them.

mod config;
mod inserter;

pub use config::{
    ClientBuilder, Config, DEFAULT_EVENT_BUFFER, DEFAULT_FETCH_LIMIT, DEFAULT_JOB_TIMEOUT,
    DEFAULT_POLL_INTERVAL, DEFAULT_QUEUE_REFRESH_INTERVAL, MAX_WORKERS_PER_QUEUE, QueueConfig,
};
pub use inserter::Inserter;
use inserter::due_queues;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use serde_json::json;
use std::future::Future;
use std::time::Duration;

use tokio::sync::{Mutex, Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::completer::{BatchCompleter, CompleterStats};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, Transaction};
use crate::elector::Elector;
use crate::error::Result;
use crate::event::{EventSender, Subscription};
use crate::heartbeat::Heartbeat;
use crate::ident::validate_name;
use crate::in_flight::InFlight;
use crate::job::JobState;
use crate::job::{JobId, JobRow};
use crate::job_args::{InsertOpts, InsertParams, JobArgs};
use crate::job_executor::JobExecutor;
use crate::maintenance::{
    JobCleaner, JobRescuer, JobScheduler, PeriodicEnqueuer, QueueCleaner, supervise,
};
use crate::migrator::{MigrateReport, Migrator};
use crate::notifier::{ControlMessage, NotificationRouter, Notifier};
use crate::post_commit_notifier::PostCommitNotifier;
use crate::producer::{Producer, QueueHandle};
use crate::query::{
    JobListPage, JobListParams, LeaderRow, PeriodicRow, QueueName, QueueRow, job_cancel,
    job_delete, job_get_by_id, job_list, job_list_page, job_release_pending, job_retry, leader_get,
    periodic_list, periodic_set_paused, queue_control_notify, queue_list, queue_pause,
    queue_resume,
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
    /// The inserter for inserts this client commits itself: no in-transaction notification, the
    /// post-commit notifier announces them instead.
    own_inserter: Inserter,
    post_commit: PostCommitNotifier<D>,
    is_leader: Arc<watch::Sender<bool>>,
    in_flight: Arc<InFlight>,
    running: Mutex<Option<Running>>,
}

/// The tasks of a started client.
struct Running {
    producers: Vec<Service>,
    completer: Service,
    background: Vec<Service>,
    kill: CancellationToken,
}

/// Spawns `run(stop)` under a supervisor as a [`Service`].
async fn spawn_supervised<F, Fut>(name: &'static str, backoff: Duration, run: F) -> Service
where
    F: Fn(CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let service = Service::new();
    let stop = service.token();
    service
        .start(supervise(name, backoff, stop.clone(), move || {
            run(stop.clone())
        }))
        .await;
    service
}

/// The services that run only while this client leads.
struct LeaderServices<D: Driver> {
    scheduler: JobScheduler<D>,
    rescuer: JobRescuer<D>,
    cleaner: JobCleaner<D>,
    queue_cleaner: QueueCleaner<D>,
    periodic: PeriodicEnqueuer<D>,
    queues: HashMap<String, Arc<QueueHandle>>,
    backoff: Duration,
}

impl<D: Driver> LeaderServices<D> {
    /// Runs the services during each term this client leads, until `stop`.
    async fn run_while_leader(self, mut is_leader: watch::Receiver<bool>, stop: CancellationToken) {
        loop {
            while !*is_leader.borrow_and_update() {
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = is_leader.changed() => if changed.is_err() { return },
                }
            }
            let term = stop.child_token();
            let mut tasks = tokio::task::JoinSet::new();
            let b = self.backoff;
            let (scheduler, queues) = (self.scheduler.clone(), self.queues.clone());
            let t = term.clone();
            tasks.spawn(supervise("job_scheduler", b, t.clone(), move || {
                let queues = queues.clone();
                scheduler.clone().run(t.clone(), move |r| {
                    for queue in r.num_jobs_by_queue.keys() {
                        if let Some(h) = queues.get(queue) {
                            h.wake();
                        }
                    }
                })
            }));
            let (rescuer, t) = (self.rescuer.clone(), term.clone());
            tasks.spawn(supervise("job_rescuer", b, t.clone(), move || {
                rescuer.clone().run(t.clone())
            }));
            let (cleaner, t) = (self.cleaner.clone(), term.clone());
            tasks.spawn(supervise("job_cleaner", b, t.clone(), move || {
                cleaner.clone().run(t.clone())
            }));
            let (queue_cleaner, t) = (self.queue_cleaner.clone(), term.clone());
            tasks.spawn(supervise("queue_cleaner", b, t.clone(), move || {
                queue_cleaner.clone().run(t.clone())
            }));
            let (periodic, t) = (self.periodic.clone(), term.clone());
            tasks.spawn(supervise("periodic_enqueuer", b, t.clone(), move || {
                periodic.clone().run(t.clone())
            }));
            while *is_leader.borrow_and_update() {
                tokio::select! {
                    () = stop.cancelled() => break,
                    changed = is_leader.changed() => if changed.is_err() { break },
                }
            }
            term.cancel();
            while tasks.join_next().await.is_some() {}
            if stop.is_cancelled() {
                return;
            }
        }
    }
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
        let post_commit = PostCommitNotifier::new(driver.clone(), config.schema.clone());
        Client {
            inner: Arc::new(ClientInner {
                id: config.id.clone().unwrap_or_else(default_client_id),
                events: Arc::new(EventSender::new(config.event_buffer)),
                stats: Arc::new(CompleterStats::default()),
                driver,
                config,
                workers,
                own_inserter: inserter.clone().with_notify_cooldown(None),
                post_commit,
                inserter,
                queues,
                is_leader: Arc::new(watch::Sender::new(false)),
                in_flight: Arc::default(),
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
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
    /// A working client runs one producer per queue, the batched completer, the notifier (unless
    /// polling only), its heartbeat and the elector; while it leads it also runs the scheduler,
    /// rescuer, cleaners and periodic enqueuer. Every background loop but the completer runs under
    /// a supervisor that restarts it after a panic.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) for bad maintenance settings.
    pub async fn start(&self) -> Result<()> {
        let mut running = self.inner.running.lock().await;
        if running.is_some() {
            return Ok(());
        }
        let inner = &self.inner;
        let cfg = &inner.config;
        let backoff = cfg.supervisor_backoff;
        let (tx, rx) = mpsc::channel(cfg.completer.buffer);
        let completer = Service::new();
        let stopping = completer.token();
        completer
            .start(
                BatchCompleter {
                    in_flight: Arc::clone(&inner.in_flight),
                    driver: inner.driver.clone(),
                    schema: cfg.schema.clone(),
                    config: cfg.completer.clone(),
                    events: Arc::clone(&inner.events),
                    stats: Arc::clone(&inner.stats),
                }
                .run(rx, stopping),
            )
            .await;
        let executor = Arc::new(JobExecutor {
            workers: inner.workers.clone(),
            schema: cfg.schema.clone(),
            retry_policy: Arc::clone(&cfg.retry_policy),
            default_timeout: cfg.job_timeout,
            completer: tx,
        });
        let kill = CancellationToken::new();
        let mut producers = Vec::new();
        for (queue, q) in &cfg.queues {
            let producer = Producer {
                driver: inner.driver.clone(),
                queue: queue.clone(),
                client_id: inner.id.clone(),
                max_workers: q.max_workers,
                fetch_limit: cfg.fetch_limit,
                poll_interval: cfg.poll_interval,
                poll_only: self.poll_only(),
                refresh_interval: cfg.queue_refresh_interval,
                executor: Arc::clone(&executor),
                handle: Arc::clone(&inner.queues[queue]),
                in_flight: Arc::clone(&inner.in_flight),
            };
            let service = Service::new();
            let (stop, kill) = (service.token(), kill.clone());
            service
                .start(supervise("producer", backoff, stop.clone(), move || {
                    producer.clone().run(stop.clone(), kill.clone())
                }))
                .await;
            producers.push(service);
        }
        // The producers hold the only senders now: the completer ends after the last job.
        drop(executor);
        let mut background = Vec::new();
        if !cfg.queues.is_empty() {
            let kick = Arc::new(Notify::new());
            background.push(self.start_leadership(Arc::clone(&kick)).await?);
            if !self.poll_only() {
                let notifier = Notifier {
                    driver: inner.driver.clone(),
                    schema: cfg.schema.clone(),
                    router: NotificationRouter {
                        queues: inner.queues.clone(),
                        on_leadership: Some(Arc::new(move |_payload: &str| kick.notify_one())),
                    },
                };
                background.push(
                    spawn_supervised("notifier", backoff, move |stop| notifier.clone().run(stop))
                        .await,
                );
            }
            let heartbeat = Heartbeat {
                driver: inner.driver.clone(),
                schema: cfg.schema.clone(),
                client_id: inner.id.clone(),
                interval: cfg.heartbeat_interval,
                in_flight: Arc::clone(&inner.in_flight),
            };
            background.push(
                spawn_supervised("heartbeat", backoff, move |stop| {
                    heartbeat.clone().run(stop)
                })
                .await,
            );
        }
        *running = Some(Running {
            producers,
            completer,
            background,
            kill,
        });
        info!(client_id = %inner.id, queues = ?cfg.queues.keys().collect::<Vec<_>>(), "client started");
        Ok(())
    }

    /// Starts the elector and the services that run while this client leads.
    async fn start_leadership(&self, kick: Arc<Notify>) -> Result<Service> {
        let inner = &self.inner;
        let cfg = &inner.config;
        let (driver, schema) = (inner.driver.clone(), cfg.schema.clone());
        let elector = Elector {
            driver: driver.clone(),
            schema: schema.clone(),
            client_id: inner.id.clone(),
            config: cfg.elector.clone(),
            is_leader: Arc::clone(&inner.is_leader),
            kick,
        };
        let leader = LeaderServices {
            scheduler: JobScheduler::new(driver.clone(), schema.clone(), cfg.scheduler.clone())?,
            rescuer: JobRescuer::new(driver.clone(), schema.clone(), cfg.rescuer.clone())?,
            cleaner: JobCleaner::new(driver.clone(), schema.clone(), cfg.cleaner.clone())?,
            queue_cleaner: QueueCleaner::new(
                driver.clone(),
                schema.clone(),
                cfg.queue_cleaner.clone(),
            )?,
            periodic: PeriodicEnqueuer {
                driver,
                schema,
                inserter: inner.inserter.clone(),
                jobs: Arc::new(
                    cfg.periodic_jobs
                        .iter()
                        .map(|p| (p.name().to_owned(), p.clone()))
                        .collect(),
                ),
                interval: cfg.periodic_interval,
            },
            queues: inner.queues.clone(),
            backoff: cfg.supervisor_backoff,
        };
        let is_leader = inner.is_leader.subscribe();
        let backoff = cfg.supervisor_backoff;
        let service = Service::new();
        let stop = service.token();
        service
            .start(async move {
                let elector_task = tokio::spawn(supervise("elector", backoff, stop.clone(), {
                    let stop = stop.clone();
                    move || elector.clone().run(stop.clone())
                }));
                leader.run_while_leader(is_leader, stop).await;
                let _ = elector_task.await;
            })
            .await;
        Ok(service)
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
        for p in &running.producers {
            p.stop().await;
        }
        // Every sender is gone once the producers' jobs ended: the completer drains and ends.
        running.completer.token().cancel();
        running.completer.join().await;
        // Last: leadership (resigning), the notifier, and the heartbeat, which removes the
        // client's row only now that none of its jobs runs.
        for s in &running.background {
            s.stop().await;
        }
        info!(client_id = %self.inner.id, hard, "client stopped");
    }

    /// True while this client is the leader of its schema.
    pub fn is_leader(&self) -> bool {
        *self.inner.is_leader.borrow()
    }

    /// The current leadership term, if any (possibly expired).
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn leader(&self) -> Result<Option<LeaderRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        conn.query_opt(&leader_get(self.schema())).await
    }

    /// Every periodic job registered in the schema, with its statistics.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn periodic_list(&self) -> Result<Vec<PeriodicRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        conn.query_as(&periodic_list(self.schema(), None)).await
    }

    /// One periodic job with its statistics, `None` if not registered.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn periodic_get(&self, name: &str) -> Result<Option<PeriodicRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        let found: Option<QueueName> = conn
            .query_opt(&periodic_set_paused(self.schema(), name, paused))
            .await?;
        Ok(found.is_some())
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        let job = self
            .inner
            .own_inserter
            .insert_with(&mut conn, args, opts)
            .await?;
        drop(conn);
        if job.state == JobState::Available {
            self.announce([job.queue.clone()]);
        }
        Ok(job)
    }

    /// Inserts many jobs in one round trip (committed at once), returned in input order.
    ///
    /// # Errors
    ///
    /// A validation error or the database error; nothing is inserted then.
    pub async fn insert_many(&self, params: &[InsertParams]) -> Result<Vec<JobRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        let jobs = self
            .inner
            .own_inserter
            .insert_many(&mut conn, params)
            .await?;
        drop(conn);
        let due: BTreeSet<String> = jobs
            .iter()
            .filter(|j| j.state == JobState::Available)
            .map(|j| j.queue.clone())
            .collect();
        self.announce(due);
        Ok(jobs)
    }

    /// Inserts a very large batch (COPY where the driver has it) in one transaction; returns how
    /// many.
    ///
    /// # Errors
    ///
    /// A validation error or the database error; nothing is inserted then.
    pub async fn insert_bulk(&self, params: &[InsertParams]) -> Result<u64> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        let mut tx = conn.begin().await?;
        let n = self.inner.own_inserter.insert_bulk(&mut tx, params).await?;
        tx.commit().await?;
        drop(conn);
        self.announce(due_queues(params.iter()).into_iter().map(str::to_owned));
        Ok(n)
    }

    /// Tells every client working `queues` (this one directly, others by notification) that
    /// committed jobs are due there.
    fn announce(&self, queues: impl IntoIterator<Item = String>) {
        let queues: Vec<String> = queues.into_iter().collect();
        for q in &queues {
            self.wake(q);
        }
        if self.inner.inserter.notifies() {
            self.inner.post_commit.notify(queues);
        }
    }

    /// A job by id.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_get(&self, id: JobId) -> Result<Option<JobRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        conn.query_opt(&job_get_by_id(self.schema(), id)).await
    }

    /// A page of jobs, filtered; pass the page's `next_cursor` to [`JobListParams::after`] for the
    /// next one.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn job_list(&self, params: &JobListParams) -> Result<JobListPage> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        conn.query_as(&queue_list(self.schema(), None, 10_000))
            .await
    }

    /// One queue with its job counts by state, `None` if no producer registered it yet.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn queue_get(&self, name: &str) -> Result<Option<QueueRow>> {
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        let job: Option<JobRow> = conn.query_opt(&job_retry(self.schema(), id)).await?;
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
        let mut conn = ConnectionLease::acquire(&self.inner.driver).await?;
        conn.query_opt(&job_delete(self.schema(), id)).await
    }
}
