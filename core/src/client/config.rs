//! Client configuration, validated once by [`ClientBuilder::build`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::elector::ElectorConfig;
use crate::cluster::heartbeat::DEFAULT_HEARTBEAT_INTERVAL;
use crate::driver::Driver;
use crate::error::{Error, Result};
use crate::ident::validate_name;
use crate::job_args::JobArgs;
use crate::maintenance::{
    DEFAULT_PERIODIC_INTERVAL, JobAnalyzer, JobAnalyzerConfig, JobCleanerConfig, JobRescuerConfig,
    JobSchedulerConfig, QueueCleanerConfig, QueueStatConfig,
};
use crate::middleware::{MetricsConfig, Middleware, MiddlewareStack, TracePropagator};
use crate::periodic::PeriodicJob;
use crate::retry_policy::{DefaultRetryPolicy, RetryPolicy};
use crate::schema::Schema;
use crate::service::DEFAULT_SUPERVISOR_BACKOFF;
use crate::work::completer::CompleterConfig;
use crate::worker::{Worker, Workers};

use super::Client;

/// Default [`Config::fetch_limit`].
pub(crate) const DEFAULT_FETCH_LIMIT: usize = 100;
/// Default [`Config::prefetch`].
pub(crate) const DEFAULT_PREFETCH: usize = 200;
/// Default [`Config::poll_interval`].
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Default [`Config::job_timeout`].
pub(crate) const DEFAULT_JOB_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`Config::event_buffer`].
pub(crate) const DEFAULT_EVENT_BUFFER: usize = 1_024;
/// Default [`Config::queue_refresh_interval`].
pub(crate) const DEFAULT_QUEUE_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// Most workers one queue may run at once.
pub(crate) const MAX_WORKERS_PER_QUEUE: usize = 10_000;

/// One queue a client works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueConfig {
    /// How many jobs of this queue run at once in this client.
    pub max_workers: usize,
}

/// Everything a client needs, validated once by [`ClientBuilder::build`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The schema holding pgmill's tables. Default `public`.
    pub schema: Schema,
    /// This client's id, recorded in `attempted_by`; default `<hostname>-<pid>-<random>`.
    pub id: Option<String>,
    /// The queues worked, with their concurrency. Empty: the client only inserts.
    pub queues: BTreeMap<String, QueueConfig>,
    /// Most jobs claimed by one fetch. Default 100.
    pub fetch_limit: usize,
    /// Claimed jobs each queue's producer keeps ready beyond its free worker slots, so that a
    /// fetch claims many jobs even when few slots are free, and the next fetch is under way
    /// before the workers run out. The producer fetches again when the buffer is down to half.
    /// Default 200, twice the default fetch limit: with few workers a full claim's jobs, most of
    /// them buffered, still leave room for the next full claim, which then goes out as soon as
    /// the last one's rows arrive. 0 claims only as many jobs as there are free slots.
    ///
    /// A buffered job is claimed: it is `running` in the table with its attempt counted, owned by
    /// this client and rescued if the client dies, and the rescuer's hard deadline counts from
    /// the claim. Its timeout starts when it starts. Stopping, pausing the queue and an
    /// operator's cancel give buffered jobs back (or cancel them) without running them or using
    /// up an attempt. Jobs in one client's buffer wait for its workers while other clients may be
    /// idle, so for long jobs spread over several clients, a small value (or 0) shares them
    /// better; for many short jobs, keep it at least as large as the fetch limit.
    pub prefetch: usize,
    /// How often an idle producer polls for jobs (plus up to 10 % jitter). Default 1 s.
    pub poll_interval: Duration,
    /// How long an attempt may run before its work is dropped and the attempt fails, unless the
    /// worker says otherwise; `None` for no limit. Default 60 s.
    pub job_timeout: Option<Duration>,
    /// Delay before retrying a failed attempt, unless the worker says otherwise.
    /// Default [`DefaultRetryPolicy`].
    pub retry_policy: Arc<dyn RetryPolicy>,
    /// The batched completer's settings.
    pub completer: CompleterConfig,
    /// Events buffered per subscriber before the oldest are dropped. Default 1,024.
    pub event_buffer: usize,
    /// Refuse to insert kinds this client has no worker for (when it has workers). Default true.
    pub reject_unknown_kinds: bool,
    /// The scheduler's settings (it runs while the client works queues).
    pub scheduler: JobSchedulerConfig,
    /// Never listen for notifications; only poll. Jobs are picked up within the poll interval,
    /// pause, resume and cancel within the poll interval too. Automatic when the driver has no
    /// listener. Default false.
    pub poll_only: bool,
    /// Insert notifications sent inside the application's transaction (through
    /// [`Client::inserter`]) go out at most once per queue per this cooldown, because they
    /// serialise the commits of notifying transactions; a job inserted within the cooldown is
    /// announced from a pool connection once its own transaction has committed (see
    /// [Notifications](crate::Inserter#notifications)). Inserts this client commits itself
    /// ([`Client::insert`] and friends) are announced right after their commit instead, coalesced
    /// to one notification statement in flight. `None` sends no insert notifications at all.
    /// Default 100 ms.
    pub insert_notify_cooldown: Option<Duration>,
    /// How often a producer refreshes its queue's row (and re-reads its pause state) when
    /// notifications are on. Default 30 s.
    pub queue_refresh_interval: Duration,
    /// How often the client refreshes its liveness row. Default 3 s.
    pub heartbeat_interval: Duration,
    /// Leader election settings.
    pub elector: ElectorConfig,
    /// The rescuer's settings (leader only).
    pub rescuer: JobRescuerConfig,
    /// The cleaner's settings (leader only).
    pub cleaner: JobCleanerConfig,
    /// The queue cleaner's settings (leader only).
    pub queue_cleaner: QueueCleanerConfig,
    /// The analyzer's settings: the leader runs `ANALYZE` on the job table when the table has
    /// grown several times past the size its statistics were taken at, so that the prepared
    /// claims and completions, whose plans Postgres keeps until the statistics change, are
    /// replanned for the table's new size (see [`JobAnalyzer`](crate::maintenance::JobAnalyzer));
    /// and [`Client::insert_bulk`](crate::Client::insert_bulk) and
    /// [`Client::insert_many`](crate::Client::insert_many), on any client, do so themselves
    /// before they return when the jobs they inserted alone outgrew the statistics.
    /// `None` leaves statistics to autovacuum alone. Default on.
    pub analyzer: Option<JobAnalyzerConfig>,
    /// The queue statistics rollup's settings: the leader writes each queue's completed,
    /// failed and retried jobs, pickup wait and depth once a minute into a small table that the
    /// dashboard draws its charts from (see
    /// [`QueueStatRollup`](crate::maintenance::QueueStatRollup)). `None` writes none (the
    /// charts then show gaps). Default on.
    pub queue_stats: Option<QueueStatConfig>,
    /// Periodic jobs the leader enqueues.
    pub periodic_jobs: Vec<PeriodicJob>,
    /// Time between periodic enqueuer passes. Default 1 s.
    pub periodic_interval: Duration,
    /// Time before a panicked service is restarted. Default 10 s.
    pub supervisor_backoff: Duration,
    /// pgmill's metrics, through the `metrics` facade: per-attempt and insert metrics (the
    /// [`JobMetrics`](crate::middleware::JobMetrics) middleware), the engine's own (claims,
    /// completer flushes, rescues, reconnects, leadership) and the queue gauges the leader
    /// samples. `None` emits none. Default `None`.
    pub metrics: Option<MetricsConfig>,
    /// Carries the inserting span's trace context to the spans of the job's attempts, through the
    /// job's metadata. Default `None`.
    pub trace_propagator: Option<Arc<dyn TracePropagator>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            schema: Schema::public(),
            id: None,
            queues: BTreeMap::new(),
            fetch_limit: DEFAULT_FETCH_LIMIT,
            prefetch: DEFAULT_PREFETCH,
            poll_interval: DEFAULT_POLL_INTERVAL,
            job_timeout: Some(DEFAULT_JOB_TIMEOUT),
            retry_policy: Arc::new(DefaultRetryPolicy),
            completer: CompleterConfig::default(),
            event_buffer: DEFAULT_EVENT_BUFFER,
            reject_unknown_kinds: true,
            scheduler: JobSchedulerConfig::default(),
            poll_only: false,
            insert_notify_cooldown: Some(crate::insert::debouncer::DEFAULT_INSERT_NOTIFY_COOLDOWN),
            queue_refresh_interval: DEFAULT_QUEUE_REFRESH_INTERVAL,
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            elector: ElectorConfig::default(),
            rescuer: JobRescuerConfig::default(),
            cleaner: JobCleanerConfig::default(),
            queue_cleaner: QueueCleanerConfig::default(),
            analyzer: Some(JobAnalyzerConfig::default()),
            queue_stats: Some(QueueStatConfig::default()),
            periodic_jobs: Vec::new(),
            periodic_interval: DEFAULT_PERIODIC_INTERVAL,
            supervisor_backoff: DEFAULT_SUPERVISOR_BACKOFF,
            metrics: None,
            trace_propagator: None,
        }
    }
}

impl Config {
    pub(crate) fn validate(&self, workers: &Workers) -> Result<()> {
        let invalid = |m: String| Err(Error::InvalidConfig(m));
        for (name, q) in &self.queues {
            validate_name("queue", name)?;
            if q.max_workers == 0 || q.max_workers > MAX_WORKERS_PER_QUEUE {
                return invalid(format!(
                    "queue {name:?}: max_workers {} is outside 1..={MAX_WORKERS_PER_QUEUE}",
                    q.max_workers
                ));
            }
        }
        if !self.queues.is_empty() && workers.is_empty() {
            return invalid("queues are configured but no worker is registered".into());
        }
        if let Some(id) = &self.id
            && (id.is_empty() || id.len() > 100)
        {
            return invalid(format!("client id {id:?} must be 1 to 100 bytes"));
        }
        if self.fetch_limit == 0 {
            return invalid("fetch_limit must be at least 1".into());
        }
        if self.prefetch > MAX_WORKERS_PER_QUEUE {
            return invalid(format!(
                "prefetch {} is above {MAX_WORKERS_PER_QUEUE}",
                self.prefetch
            ));
        }
        if self.poll_interval.is_zero() {
            return invalid("poll_interval must be positive".into());
        }
        if self.job_timeout.is_some_and(|t| t.is_zero()) {
            return invalid("job_timeout must be positive (or None for no limit)".into());
        }
        if self.scheduler.interval.is_zero() || self.scheduler.limit == 0 {
            return invalid("scheduler interval and limit must be positive".into());
        }
        if self.heartbeat_interval.is_zero()
            || self.periodic_interval.is_zero()
            || self.supervisor_backoff.is_zero()
        {
            return invalid(
                "heartbeat_interval, periodic_interval and supervisor_backoff must be positive"
                    .into(),
            );
        }
        if self.heartbeat_interval >= self.rescuer.client_timeout {
            return invalid(
                "heartbeat_interval must be shorter than the rescuer's client_timeout".into(),
            );
        }
        self.rescuer.check_client_retention()?;
        if let Some(stats) = &self.queue_stats {
            stats.validate()?;
        }
        let mut names = BTreeSet::new();
        for p in &self.periodic_jobs {
            if !names.insert(p.name()) {
                return invalid(format!("periodic job {:?} is defined twice", p.name()));
            }
        }
        if !self.periodic_jobs.is_empty() && self.queues.is_empty() {
            return invalid("periodic jobs need a client that works queues (it may lead)".into());
        }
        self.elector.validate()?;
        if self.queue_refresh_interval.is_zero() {
            return invalid("queue_refresh_interval must be positive".into());
        }
        if self
            .metrics
            .as_ref()
            .is_some_and(|m| m.sample_interval.is_zero())
        {
            return invalid("metrics sample_interval must be positive".into());
        }
        if self.event_buffer == 0 {
            return invalid("event_buffer must be at least 1".into());
        }
        self.completer.validate()
    }
}

/// Builds a [`Client`]: set what differs from [`Config::default`], register workers, then
/// [`ClientBuilder::build`].
///
/// # Examples
///
/// ```
/// # use pgmill::{Job, JobArgs, JobError, Worker};
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Ping;
/// # impl JobArgs for Ping { const KIND: &'static str = "ping"; }
/// # struct PingWorker;
/// # impl Worker<Ping> for PingWorker {
/// #     async fn work(&self, _job: &Job<Ping>) -> Result<(), JobError> { Ok(()) }
/// # }
/// # fn build<D: pgmill::driver::Driver>(driver: D) -> pgmill::Result<pgmill::Client<D>> {
/// pgmill::Client::builder(driver)
///     .queue("default", 50)
///     .worker(PingWorker)
///     .poll_interval(std::time::Duration::from_millis(500))
///     .build()
/// # }
/// ```
#[derive(Debug)]
#[must_use]
pub struct ClientBuilder<D: Driver> {
    driver: D,
    config: Config,
    workers: Workers,
    middleware: MiddlewareStack,
    error: Option<Error>,
}

impl<D: Driver> ClientBuilder<D> {
    pub(crate) fn new(driver: D) -> Self {
        ClientBuilder {
            driver,
            config: Config::default(),
            workers: Workers::new(),
            middleware: MiddlewareStack::default(),
            error: None,
        }
    }

    /// Replaces the whole configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Sets the schema.
    pub fn schema(mut self, schema: Schema) -> Self {
        self.config.schema = schema;
        self
    }

    /// Sets the client id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.config.id = Some(id.into());
        self
    }

    /// Works `queue` with up to `max_workers` jobs at once.
    pub fn queue(mut self, queue: impl Into<String>, max_workers: usize) -> Self {
        self.config
            .queues
            .insert(queue.into(), QueueConfig { max_workers });
        self
    }

    /// Registers a worker; a second worker for the same kind makes [`ClientBuilder::build`] fail.
    pub fn worker<A: JobArgs, W: Worker<A>>(mut self, worker: W) -> Self {
        if let Err(e) = self.workers.add(worker) {
            self.error.get_or_insert(e);
        }
        self
    }

    /// Uses a prepared registry (replacing workers added so far).
    pub fn workers(mut self, workers: Workers) -> Self {
        self.workers = workers;
        self
    }

    /// Sets the fetch limit.
    pub fn fetch_limit(mut self, limit: usize) -> Self {
        self.config.fetch_limit = limit;
        self
    }

    /// Sets how many claimed jobs each producer keeps ready beyond its free slots
    /// ([`Config::prefetch`]; 0: none).
    pub fn prefetch(mut self, prefetch: usize) -> Self {
        self.config.prefetch = prefetch;
        self
    }

    /// Sets the poll interval.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.config.poll_interval = interval;
        self
    }

    /// Sets the default job timeout (`None`: no limit).
    pub fn job_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.job_timeout = timeout;
        self
    }

    /// Sets the retry policy.
    pub fn retry_policy(mut self, policy: impl RetryPolicy) -> Self {
        self.config.retry_policy = Arc::new(policy);
        self
    }

    /// Sets the completer's settings.
    pub fn completer(mut self, completer: CompleterConfig) -> Self {
        self.config.completer = completer;
        self
    }

    /// Only polls, never listens.
    pub fn poll_only(mut self, poll_only: bool) -> Self {
        self.config.poll_only = poll_only;
        self
    }

    /// Sets the insert notification cooldown (`None`: send none).
    pub fn insert_notify_cooldown(mut self, cooldown: Option<Duration>) -> Self {
        self.config.insert_notify_cooldown = cooldown;
        self
    }

    /// Adds a periodic job.
    pub fn periodic(mut self, job: PeriodicJob) -> Self {
        self.config.periodic_jobs.push(job);
        self
    }

    /// Sets leader election.
    pub fn elector(mut self, elector: ElectorConfig) -> Self {
        self.config.elector = elector;
        self
    }

    /// Sets the rescuer's settings.
    pub fn rescuer(mut self, rescuer: JobRescuerConfig) -> Self {
        self.config.rescuer = rescuer;
        self
    }

    /// Sets the cleaner's settings.
    pub fn cleaner(mut self, cleaner: JobCleanerConfig) -> Self {
        self.config.cleaner = cleaner;
        self
    }

    /// Sets the analyzer's settings; `None` runs no analyzer (see [`Config::analyzer`]).
    pub fn analyzer(mut self, analyzer: Option<JobAnalyzerConfig>) -> Self {
        self.config.analyzer = analyzer;
        self
    }

    /// Sets the queue statistics rollup's settings; `None` runs no rollup (see
    /// [`Config::queue_stats`]).
    pub fn queue_stats(mut self, queue_stats: Option<QueueStatConfig>) -> Self {
        self.config.queue_stats = queue_stats;
        self
    }

    /// Sets the heartbeat interval.
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.config.heartbeat_interval = interval;
        self
    }

    /// Sets the time between periodic enqueuer passes.
    pub fn periodic_interval(mut self, interval: Duration) -> Self {
        self.config.periodic_interval = interval;
        self
    }

    /// Sets how long a panicked service waits before restarting.
    pub fn supervisor_backoff(mut self, backoff: Duration) -> Self {
        self.config.supervisor_backoff = backoff;
        self
    }

    /// Sets the scheduler's settings.
    pub fn scheduler(mut self, scheduler: JobSchedulerConfig) -> Self {
        self.config.scheduler = scheduler;
        self
    }

    /// Registers `middleware` around every attempt and every insert, inside those registered
    /// before (see [`middleware`](crate::middleware)).
    pub fn middleware(mut self, middleware: impl Middleware) -> Self {
        self.middleware.push(None, Arc::new(middleware));
        self
    }

    /// Registers `middleware` around the attempts and inserts of kind `A::KIND` only, in
    /// registration order with the middleware for every kind.
    pub fn middleware_for<A: JobArgs>(mut self, middleware: impl Middleware) -> Self {
        self.middleware
            .push(Some(A::KIND.to_owned()), Arc::new(middleware));
        self
    }

    /// Turns pgmill's metrics on (see [`Config::metrics`] and
    /// [`METRICS`](crate::middleware::METRICS)).
    pub fn metrics(mut self, metrics: MetricsConfig) -> Self {
        self.config.metrics = Some(metrics);
        self
    }

    /// Sets the trace propagator (see [`TracePropagator`]).
    pub fn trace_propagator(mut self, propagator: impl TracePropagator) -> Self {
        self.config.trace_propagator = Some(Arc::new(propagator));
        self
    }

    /// Allows or refuses inserting kinds without a worker in this client.
    pub fn reject_unknown_kinds(mut self, reject: bool) -> Self {
        self.config.reject_unknown_kinds = reject;
        self
    }

    /// Validates everything and builds the client (not started).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] or [`Error::InvalidName`] saying what is wrong.
    pub fn build(self) -> Result<Client<D>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.config.validate(&self.workers)?;
        let analyzer = self
            .config
            .analyzer
            .clone()
            .map(|a| JobAnalyzer::new(self.driver.clone(), self.config.schema.clone(), a))
            .transpose()?;
        let known: Option<BTreeSet<String>> = (self.config.reject_unknown_kinds
            && !self.workers.is_empty())
        .then(|| self.workers.kinds().map(str::to_owned).collect());
        Ok(Client::from_parts(
            self.driver,
            self.config,
            self.workers,
            self.middleware,
            known,
            analyzer,
        ))
    }
}
