//! The client: wires a client's components together, starts and stops them, and inserts jobs.
//!
//! The operator API (jobs, queues, periodic schedules, leadership) is in `admin.rs`; the
//! configuration and builder in `config.rs`.

mod admin;
mod browse;
mod bulk;
mod config;
mod dead;
mod health;
mod retention;
mod shutdown;

pub use config::{ClientBuilder, Config, QueueConfig};

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{Mutex, Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::cluster::elector::Elector;
use crate::cluster::heartbeat::{Heartbeat, LastBeat};
use crate::cluster::notifier::{NotificationRouter, Notifier};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor, Transaction};
use crate::engine_metrics::MetricsSink;
use crate::error::Result;
use crate::event::{EventSender, Subscription};
use crate::insert::commit_watcher::CommitWatcher;
use crate::insert::inserter::{Inserter, count_inserted, due_queues};
use crate::insert::post_commit_notifier::PostCommitNotifier;
use crate::job::InsertResult;
use crate::job::{JobRow, JobState};
use crate::job_args::{InsertOpts, InsertParams, JobArgs};
use crate::maintenance::{
    JobAnalyzer, PeriodicEnqueuerConfig, QueueMaintainer, QueueMaintainerConfig,
};
use crate::middleware::{JobMetrics, JobTracing, MetricsConfig, MiddlewareStack};
use crate::migrator::{MigrateReport, Migrator};
use crate::schema::Schema;
use crate::service::{Service, spawn_supervised, supervise};
use crate::shared_parts::SharedParts;
use crate::work::claim_tokens::ClaimTokens;
use crate::work::completer::{BatchCompleter, CompleterStats, Completion};
use crate::work::job_executor::{JobExecutor, JobExecutorConfig};
use crate::work::producer::{Producer, ProducerConfig};
use crate::work::queue_handle::QueueHandle;
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
    /// Insert notifications this client sent as statements of their own, after the commit of its
    /// own inserts ([`Client::insert`] and friends). An insert after a quiet moment carries its
    /// notifications in its own statement instead, which is not counted here.
    pub notification_statements: u64,
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
    /// What every component shares: the driver, schema, client id, metrics, health and the
    /// claims held.
    parts: SharedParts<D>,
    config: Config,
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
    /// Fencing tokens for this client's claims, unique over its whole life.
    claim_tokens: Arc<ClaimTokens>,
    running: Mutex<Option<Running>>,
    /// The shutdown under way or last done, which a later call joins (and hardens).
    stopping: std::sync::Mutex<Option<Stopping>>,
    /// Every middleware attempts and inserts run through (the metrics middleware first).
    middleware: MiddlewareStack,
    /// The job table's analyzer (unless turned off): run by the leader, and after this client's
    /// own large inserts.
    analyzer: Option<JobAnalyzer<D>>,
}

/// How long a client's own insert waits for the analyzer's look and `ANALYZE` after it
/// committed (they take milliseconds; this bounds a pass of the leader's under way, a slow
/// server, a lock).
const INSERT_ANALYZE_TIMEOUT: Duration = Duration::from_secs(10);

/// Announces a client's own committed jobs when dropped: after the analyzer's look that follows
/// the insert, and also when the call is dropped during that look (a caller's timeout), since
/// the jobs are committed either way.
struct AnnounceOnDrop<'a, D: Driver> {
    client: &'a Client<D>,
    queues: Vec<String>,
    carried: bool,
}

impl<D: Driver> Drop for AnnounceOnDrop<'_, D> {
    fn drop(&mut self) {
        self.client
            .announce_own(std::mem::take(&mut self.queues), self.carried);
    }
}

/// A shutdown under way: its hard-stop token, and whether it is done.
#[derive(Clone)]
struct Stopping {
    kill: CancellationToken,
    done: watch::Receiver<bool>,
}

/// The tasks of a started client.
struct Running {
    producers: Vec<Service>,
    completer: Service,
    background: Vec<Service>,
    kill: CancellationToken,
}

impl<D: Driver> fmt::Debug for Client<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.inner.parts.client_id)
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
        registered: MiddlewareStack,
        known_kinds: Option<BTreeSet<String>>,
        analyzer: Option<JobAnalyzer<D>>,
    ) -> Self {
        let metrics = config
            .metrics
            .as_ref()
            .map_or_else(MetricsSink::off, MetricsConfig::sink);
        let mut middleware = MiddlewareStack::default();
        if metrics.is_on() {
            metrics.describe();
            middleware.push(None, Arc::new(JobMetrics::with_sink(metrics.clone())));
        }
        middleware.append(registered);
        let mut inserter = Inserter::new(config.schema.clone())
            .with_notify_cooldown(config.insert_notify_cooldown)
            .with_follower(CommitWatcher::new(driver.clone(), config.schema.clone()))
            .with_hooks(middleware.clone(), config.trace_propagator.clone());
        if let Some(kinds) = known_kinds {
            inserter = inserter.with_known_kinds(kinds);
        }
        let queues = config
            .queues
            .keys()
            .map(|q| (q.clone(), Arc::new(QueueHandle::default())))
            .collect();
        let post_commit = PostCommitNotifier::new(driver.clone(), config.schema.clone());
        let parts = SharedParts {
            client_id: config.id.clone().unwrap_or_else(default_client_id),
            schema: config.schema.clone(),
            driver,
            metrics,
            health: Arc::default(),
            in_flight: Arc::default(),
        };
        Client {
            inner: Arc::new(ClientInner {
                events: Arc::new(EventSender::new(config.event_buffer)),
                stats: Arc::new(CompleterStats::default()),
                parts,
                config,
                workers,
                own_inserter: inserter.clone().with_notify_cooldown(None),
                post_commit,
                inserter,
                queues,
                is_leader: Arc::new(watch::Sender::new(false)),
                claim_tokens: Arc::new(ClaimTokens::new()),
                running: Mutex::new(None),
                stopping: std::sync::Mutex::new(None),
                middleware,
                analyzer,
            }),
        }
    }

    /// This client's id.
    pub fn id(&self) -> &str {
        &self.inner.parts.client_id
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
        &self.inner.parts.driver
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
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
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
            notification_statements: self.inner.post_commit.statements(),
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
        // A shutdown still under way ends first.
        if let Some(mut stopping) = self.stopping() {
            let _ = stopping.done.wait_for(|done| *done).await;
        }
        let (outcomes, completions) = mpsc::channel(self.inner.config.completer.buffer);
        let completer = self.start_completer(completions).await;
        let parts = &self.inner.parts;
        let executor = Arc::new(JobExecutor::new(
            parts.schema.clone(),
            parts.metrics.clone(),
            self.executor_config(),
            outcomes,
        ));
        // Opened by the heartbeat once this start's client row exists; producers wait for it.
        let registered = Arc::new(watch::channel(false).0);
        let kill = CancellationToken::new();
        let producers = self
            .start_producers(executor, registered.subscribe(), &kill)
            .await;
        // The producers hold the only senders now: the completer ends after the last job.
        let background = if self.inner.config.queues.is_empty() {
            Vec::new()
        } else {
            self.start_cluster(registered).await?
        };
        *running = Some(Running {
            producers,
            completer,
            background,
            kill,
        });
        info!(
            client_id = %self.inner.parts.client_id,
            queues = ?self.inner.config.queues.keys().collect::<Vec<_>>(),
            "client started"
        );
        Ok(())
    }

    /// Starts the completer, recording the outcomes that arrive on `completions`.
    async fn start_completer(&self, completions: mpsc::Receiver<Completion>) -> Service {
        let inner = &self.inner;
        let completer = BatchCompleter::new(
            &inner.parts,
            inner.config.completer.clone(),
            Arc::clone(&inner.events),
            Arc::clone(&inner.stats),
        );
        let service = Service::new();
        let stopping = service.token();
        service.start(completer.run(completions, stopping)).await;
        service
    }

    /// How this client runs attempts.
    fn executor_config(&self) -> JobExecutorConfig {
        let cfg = &self.inner.config;
        JobExecutorConfig {
            workers: self.inner.workers.clone(),
            retry_policy: Arc::clone(&cfg.retry_policy),
            default_timeout: cfg.job_timeout,
            tracing: JobTracing::new(cfg.trace_propagator.clone()),
            middleware: self.inner.middleware.clone(),
        }
    }

    /// Starts one producer per queue, each under a supervisor, claiming once `registered` opens
    /// and running its jobs through `executor`; `kill` interrupts their jobs (a hard stop).
    async fn start_producers(
        &self,
        executor: Arc<JobExecutor>,
        registered: watch::Receiver<bool>,
        kill: &CancellationToken,
    ) -> Vec<Service> {
        let (inner, cfg) = (&self.inner, &self.inner.config);
        let config = ProducerConfig {
            fetch_limit: cfg.fetch_limit,
            prefetch: cfg.prefetch,
            poll_interval: cfg.poll_interval,
            poll_only: self.poll_only(),
            refresh_interval: cfg.queue_refresh_interval,
            claim_tokens: Arc::clone(&inner.claim_tokens),
            registered,
        };
        let mut producers = Vec::new();
        for (queue, q) in &cfg.queues {
            let producer = Producer::new(
                &inner.parts,
                config.clone(),
                queue,
                q.max_workers,
                Arc::clone(&inner.queues[queue]),
                Arc::clone(&executor),
            );
            let service = Service::new();
            let (stop, kill) = (service.token(), kill.clone());
            service
                .start(supervise(
                    "producer",
                    cfg.supervisor_backoff,
                    stop.clone(),
                    move || producer.clone().run(stop.clone(), kill.clone()),
                ))
                .await;
            producers.push(service);
        }
        producers
    }

    /// Starts what a working client runs among the others: the elector with the maintainer it
    /// drives, the notifier (unless polling only), and the heartbeat, which opens `registered`.
    async fn start_cluster(&self, registered: Arc<watch::Sender<bool>>) -> Result<Vec<Service>> {
        let (inner, cfg) = (&self.inner, &self.inner.config);
        let backoff = cfg.supervisor_backoff;
        // Woken by leadership notifications: the elector tries to take over at once.
        let kick = Arc::new(Notify::new());
        let last_beat = Arc::new(LastBeat::new());
        let elector = Elector::new(
            &inner.parts,
            cfg.elector.clone(),
            Arc::clone(&inner.is_leader),
            Arc::clone(&kick),
        )
        .with_heartbeat(Arc::clone(&last_beat), cfg.rescuer.client_timeout);
        let maintainer = QueueMaintainer::new(
            &inner.parts,
            self.maintainer_config(),
            inner.inserter.clone(),
            inner.queues.clone(),
            inner.analyzer.clone(),
        )?;
        let mut services = vec![maintainer.start_with(elector).await];
        if !self.poll_only() {
            let on_leadership = move |_payload: &str| kick.notify_one();
            let router =
                NotificationRouter::new(inner.queues.clone(), Some(Arc::new(on_leadership)));
            let notifier = Notifier::new(&inner.parts, router);
            services.push(
                spawn_supervised("notifier", backoff, move |stop| notifier.clone().run(stop)).await,
            );
        }
        let queues = cfg.queues.keys().cloned().collect();
        let kinds = inner.workers.kinds().map(str::to_owned).collect();
        let heartbeat = Heartbeat::new(
            &inner.parts,
            queues,
            kinds,
            cfg.heartbeat_interval,
            last_beat,
            registered,
        );
        services.push(
            spawn_supervised("heartbeat", backoff, move |stop| {
                heartbeat.clone().run(stop)
            })
            .await,
        );
        Ok(services)
    }

    /// The settings of the leader-only services.
    fn maintainer_config(&self) -> QueueMaintainerConfig {
        let cfg = &self.inner.config;
        QueueMaintainerConfig {
            scheduler: cfg.scheduler.clone(),
            rescuer: cfg.rescuer.clone(),
            cleaner: cfg.cleaner.clone(),
            queue_cleaner: cfg.queue_cleaner.clone(),
            periodic: PeriodicEnqueuerConfig {
                interval: cfg.periodic_interval,
                jobs: cfg.periodic_jobs.clone(),
            },
            supervisor_backoff: cfg.supervisor_backoff,
            sample_interval: cfg.metrics.as_ref().map(|m| m.sample_interval),
            queue_stats: cfg.queue_stats.clone(),
        }
    }

    /// Soft stop: every queue stops fetching at once (claimed jobs not started yet go back to
    /// `available`, attempt given back), then waits for running jobs to finish and their outcomes
    /// to be recorded. Safe to call twice or before start.
    ///
    /// The stop runs on its own task: dropping this future (a timeout around it) leaves it
    /// going, and a later [`Client::stop_and_cancel`] turns it into a hard stop. See also
    /// [`Client::stop_with_grace`].
    pub async fn stop(&self) {
        self.shutdown(false).await;
    }

    /// Hard stop: interrupts running jobs (they go back to `available` with their attempt given
    /// back), then waits as [`Client::stop`] does. Works at any point of a soft stop too, as in
    /// `timeout(grace, client.stop())` followed by `client.stop_and_cancel()`.
    pub async fn stop_and_cancel(&self) {
        self.shutdown(true).await;
    }

    fn stopping(&self) -> Option<Stopping> {
        self.inner
            .stopping
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn shutdown(&self, hard: bool) {
        let stopping = {
            let mut running = self.inner.running.lock().await;
            match running.take() {
                Some(running) => Some(self.begin_shutdown(running)),
                None => self.stopping(),
            }
        };
        let Some(mut stopping) = stopping else {
            return;
        };
        if hard {
            stopping.kill.cancel();
        }
        let _ = stopping.done.wait_for(|done| *done).await;
    }

    /// Starts stopping `running` on a task of its own, so that no caller giving up on the wait
    /// leaves the client half stopped.
    fn begin_shutdown(&self, running: Running) -> Stopping {
        let (done_tx, done) = watch::channel(false);
        let stopping = Stopping {
            kill: running.kill.clone(),
            done,
        };
        *self
            .inner
            .stopping
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(stopping.clone());
        let id = self.inner.parts.client_id.clone();
        tokio::spawn(async move {
            // Every queue stops fetching at once; then each producer waits for its jobs.
            for p in &running.producers {
                p.token().cancel();
            }
            for p in &running.producers {
                p.join().await;
            }
            // Every sender is gone once the producers' jobs ended: the completer drains and ends.
            running.completer.token().cancel();
            running.completer.join().await;
            // Last: leadership (resigning), the notifier, and the heartbeat, which removes the
            // client's row only now that none of its jobs runs.
            for s in &running.background {
                s.stop().await;
            }
            let hard = running.kill.is_cancelled();
            info!(client_id = %id, hard, "client stopped");
            let _ = done_tx.send(true);
        });
        stopping
    }

    /// True while this client is the leader of its schema.
    pub fn is_leader(&self) -> bool {
        *self.inner.is_leader.borrow()
    }

    /// True when this client only polls: configured so, or the driver has no listener.
    pub fn poll_only(&self) -> bool {
        self.inner.config.poll_only || !self.inner.parts.driver.supports_listener()
    }

    /// This client's own producers of the jobs' queues start their next claims at the jobs at
    /// the latest: a job of a higher priority, inserted behind where a producer claims from, is
    /// claimed next instead of at the next claim from the head.
    fn rewind_own<'a>(&self, jobs: impl IntoIterator<Item = &'a JobRow>) {
        for job in jobs {
            if let Some(h) = self.inner.queues.get(&job.queue) {
                h.rewind((job.priority, job.scheduled_at, job.id));
            }
        }
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
    pub async fn insert<A: JobArgs>(&self, args: A) -> Result<InsertResult> {
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
    ) -> Result<InsertResult> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let (job, carried) = self
            .inner
            .own_inserter
            .insert_carrying(&mut conn, args, opts.into(), || self.quiet_carry())
            .await?;
        drop(conn);
        if job.state == JobState::Available && !job.skipped_as_duplicate {
            self.rewind_own([&job.job]);
            self.announce_own([job.queue.clone()], carried);
        }
        Ok(job)
    }

    /// Inserts many jobs in one round trip (committed at once); returns what happened to each, in
    /// input order.
    ///
    /// When the jobs alone have outgrown the job table's statistics (see [`Config::analyzer`]),
    /// the call also takes them again before it returns (milliseconds), so that workers claim
    /// the jobs with plans made for the table's new size.
    ///
    /// # Errors
    ///
    /// A validation error or the database error; nothing is inserted then.
    pub async fn insert_many(&self, params: &[InsertParams]) -> Result<Vec<InsertResult>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        // Jobs the analyzer may look at once committed are announced after its look, so their
        // insert does not carry its notifications (they would leave with the commit).
        let looks = self
            .inner
            .analyzer
            .as_ref()
            .is_some_and(|a| a.would_look(params.len() as u64));
        let (jobs, carried) = self
            .inner
            .own_inserter
            .insert_many_carrying(&mut conn, params, || !looks && self.quiet_carry())
            .await?;
        let due_jobs = jobs
            .iter()
            .filter(|j| j.state == JobState::Available && !j.skipped_as_duplicate);
        self.rewind_own(due_jobs.clone().map(|j| &j.job));
        let due: BTreeSet<String> = due_jobs.map(|j| j.queue.clone()).collect();
        let _announce = AnnounceOnDrop {
            client: self,
            queues: due.into_iter().collect(),
            carried,
        };
        self.analyze_after_insert(&mut conn, count_inserted(&jobs))
            .await;
        Ok(jobs)
    }

    /// Inserts a very large batch (COPY where the driver has it) in one transaction; returns how
    /// many were inserted (unique jobs skipped as duplicates are not counted).
    ///
    /// When the jobs alone have outgrown the job table's statistics (see [`Config::analyzer`]),
    /// the call also takes them again before it returns (milliseconds), so that workers claim
    /// the jobs with plans made for the table's new size.
    ///
    /// # Errors
    ///
    /// A validation error or the database error; nothing is inserted then.
    pub async fn insert_bulk(&self, params: &[InsertParams]) -> Result<u64> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        let inserter = &self.inner.own_inserter;
        // One statement is all-or-nothing on its own: no BEGIN and COMMIT round trips.
        let n = if inserter.bulk_is_one_statement(&conn, params) {
            inserter.insert_bulk(&mut conn, params).await?
        } else {
            let mut tx = conn.begin().await?;
            let n = inserter.insert_bulk(&mut tx, params).await?;
            tx.commit().await?;
            n
        };
        let _announce = AnnounceOnDrop {
            client: self,
            queues: due_queues(params.iter())
                .into_iter()
                .map(str::to_owned)
                .collect(),
            carried: false,
        };
        self.analyze_after_insert(&mut conn, n).await;
        Ok(n)
    }

    /// After this client's own insert of `inserted` jobs committed, before they are announced:
    /// the analyzer's look with them as the table's rows (see
    /// [`JobAnalyzer`](crate::maintenance::JobAnalyzer)), when they may have outgrown its
    /// statistics. The jobs are in either way: a failed look or `ANALYZE`, or one that takes
    /// more than [`INSERT_ANALYZE_TIMEOUT`], is only logged, and the leader's analyzer looks
    /// again.
    async fn analyze_after_insert(&self, conn: &mut ConnectionLease<D>, inserted: u64) {
        let Some(analyzer) = &self.inner.analyzer else {
            return;
        };
        let look = tokio::time::timeout(
            INSERT_ANALYZE_TIMEOUT,
            analyzer.after_insert(conn, inserted),
        );
        match look.await {
            Ok(Ok(Some(r))) if r.analyzed => info!(
                stats_rows = r.stats_rows,
                inserted, "analyzed the job table: this client's insert outgrew its statistics"
            ),
            Ok(Ok(_)) => {}
            Ok(Err(e)) if e.is_lock_not_available() => {
                debug!(error = %e, inserted, "job analyzer look after an insert met a lock");
            }
            Ok(Err(e)) => warn!(error = %e, inserted, "job analyzer look after an insert failed"),
            Err(_) => warn!(
                inserted,
                "job analyzer look after an insert took too long; left to the leader's analyzer"
            ),
        }
    }

    /// Whether an insert this client commits itself carries its notifications in its own
    /// statement: after a quiet moment (none of its notifications started within the post-commit
    /// notifier's interval), so they leave with the commit, a round trip sooner than a statement
    /// sent after it. Taking it counts as this client's latest notification.
    fn quiet_carry(&self) -> bool {
        self.inner.inserter.notifies() && self.inner.post_commit.take_quiet()
    }

    /// Announces `queues`, due after this client's own insert committed: when the insert's
    /// statement `carried` their notifications, only this client's producers are still to wake.
    fn announce_own(&self, queues: impl IntoIterator<Item = String>, carried: bool) {
        if carried {
            for q in queues {
                self.wake(&q);
            }
        } else {
            self.announce(queues);
        }
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
}
