//! A worker whose behaviour each scenario scripts, counting every execution, and the client
//! settings scenarios use (short intervals so the suite stays fast).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::TimeDelta;
use pgmill::driver::{Driver, Executor, Statement};
use pgmill::{ClientBuilder, CompleterConfig, Job, JobArgs, JobError, JobId, JobState, Worker};
use serde::{Deserialize, Serialize};

use crate::TestContext;

/// The args every scenario job carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Task {
    /// A number the script may look at.
    pub n: i64,
}

impl JobArgs for Task {
    const KIND: &'static str = "task";
}

/// What the script sees of a job.
#[derive(Debug, Clone)]
pub struct Run {
    /// The job id.
    pub id: JobId,
    /// The attempt being run.
    pub attempt: i16,
    /// The job's `n`.
    pub n: i64,
    /// The fencing token of the claim being run.
    pub claim_token: Option<i64>,
}

type Script =
    Arc<dyn Fn(Run) -> Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>> + Send + Sync>;

/// Runs a script per job and counts executions per job id.
#[derive(Clone)]
pub struct ScriptedWorker {
    script: Script,
    runs: Arc<Mutex<HashMap<JobId, u32>>>,
    timeout: Option<Duration>,
    next_retry: Option<TimeDelta>,
}

impl std::fmt::Debug for ScriptedWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedWorker").finish_non_exhaustive()
    }
}

impl ScriptedWorker {
    /// A worker running `script` for every job; retries are immediate unless changed.
    pub fn new<F, Fut>(script: F) -> Self
    where
        F: Fn(Run) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        ScriptedWorker {
            script: Arc::new(move |run| Box::pin(script(run))),
            runs: Arc::default(),
            timeout: None,
            next_retry: Some(TimeDelta::zero()),
        }
    }

    /// A worker that completes every job at once.
    pub fn ok() -> Self {
        Self::new(|_| async { Ok(()) })
    }

    /// Sets the per-job timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Executions per job so far.
    pub fn runs(&self) -> HashMap<JobId, u32> {
        self.runs.lock().unwrap().clone()
    }

    /// Total executions so far.
    pub fn total_runs(&self) -> u32 {
        self.runs.lock().unwrap().values().sum()
    }
}

impl Worker<Task> for ScriptedWorker {
    async fn work(&self, job: &Job<Task>) -> Result<(), JobError> {
        *self.runs.lock().unwrap().entry(job.id()).or_default() += 1;
        (self.script)(Run {
            id: job.id(),
            attempt: job.attempt(),
            n: job.args.n,
            claim_token: job.row().claim_token,
        })
        .await
    }

    fn timeout(&self, _job: &Job<Task>) -> Option<Duration> {
        self.timeout
    }

    fn next_retry(&self, _job: &Job<Task>) -> Option<TimeDelta> {
        self.next_retry
    }
}

/// A client builder on the test's schema with intervals short enough for tests.
pub fn test_client<D: Driver>(ctx: &TestContext<D>) -> ClientBuilder<D> {
    let mut completer = CompleterConfig::default();
    completer.linger = Duration::from_millis(1);
    pgmill::Client::builder(ctx.driver.clone())
        .schema(ctx.schema.clone())
        .poll_interval(Duration::from_millis(50))
        .completer(completer)
}

/// How many jobs are in each state.
///
/// Counts every job wherever it is (the job table, the history, the dead-letter queue), or, in a
/// schema migrated to an older version that keeps every job in the job table, that table's.
pub async fn state_counts<D: Driver>(ctx: &TestContext<D>) -> HashMap<JobState, i64> {
    let mut conn = ctx.conn().await;
    let has_all: bool = conn
        .query_scalar(&Statement::new(ctx.schema.render(
            "SELECT to_regclass('{schema}.pgmill_job_all') IS NOT NULL AS v",
        )))
        .await
        .expect("look for pgmill_job_all");
    let table = if has_all {
        "pgmill_job_all"
    } else {
        "pgmill_job"
    };
    let rows = conn
        .query(&Statement::new(ctx.schema.render(&format!(
            "SELECT state::text AS state, count(*) AS n FROM {{schema}}.{table} GROUP BY 1"
        ))))
        .await
        .expect("count states");
    rows.iter()
        .map(|r| {
            (
                r.get::<String>("state").unwrap().parse().unwrap(),
                r.get::<i64>("n").unwrap(),
            )
        })
        .collect()
}

/// How many jobs are in `state`.
pub async fn count_in<D: Driver>(ctx: &TestContext<D>, state: JobState) -> i64 {
    state_counts(ctx).await.get(&state).copied().unwrap_or(0)
}

/// Waits up to 60 s for `check`, panicking with `what` if it never holds.
pub async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    if !crate::testdb::eventually(Duration::from_secs(60), async || check().await).await {
        panic!("timed out waiting for: {what}");
    }
}

/// A second driver on the test database whose connections carry `application_name = tag`, so a
/// test can find and terminate exactly its backends.
pub async fn tagged_driver<H: crate::Harness>(
    ctx: &TestContext<H::Driver>,
    tag: &str,
) -> H::Driver {
    let sep = if ctx.url.contains('?') { '&' } else { '?' };
    H::connect(&format!("{}{sep}application_name={tag}", ctx.url), 8)
        .await
        .expect("tagged driver connects")
}

/// Terminates every backend whose `application_name` is `tag`; returns how many.
pub async fn terminate_tagged<D: Driver>(ctx: &TestContext<D>, tag: &str) -> i64 {
    ctx.conn()
        .await
        .query_scalar(
            &Statement::new(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) AS killed \
                 FROM pg_stat_activity WHERE application_name = $1::text",
            )
            .bind(tag),
        )
        .await
        .expect("terminate tagged backends")
}

/// Sets its flag when dropped: proves a job's work future was dropped (cancelled).
#[derive(Debug)]
pub struct DropFlag(pub Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Sets the state of the jobs `ids` by hand (final states get `finalized_at`) with their
/// attempts used up.
pub async fn set_state<D: Driver>(ctx: &TestContext<D>, ids: &[JobId], state: &str) {
    let finalized = if ["completed", "cancelled", "discarded"].contains(&state) {
        "now()"
    } else {
        "NULL"
    };
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(&format!(
                "UPDATE {{schema}}.pgmill_job SET state = '{state}', finalized_at = {finalized}, \
                 attempt = max_attempts WHERE id = ANY($1::bigint[])"
            ))
            .bind(ids.iter().map(|i| i.0).collect::<Vec<_>>()),
        )
        .await
        .unwrap();
}

/// Fills the test's job table with a busy history and a few rare jobs, then analyzes it: ids 1 to
/// 10 available in queue `busy`, 11 to 3010 completed in `busy`, 3011 discarded in `busy`, 3012
/// and 3013 discarded in `rare`, 3014 and 3015 available in `rare`; all of kind `k`.
pub async fn busy_and_rare_jobs<D: Driver>(ctx: &TestContext<D>) {
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_job (kind, queue) SELECT 'k', 'busy' FROM generate_series(1, 10);\
         INSERT INTO {schema}.pgmill_job (kind, queue, state, finalized_at) \
         SELECT 'k', 'busy', 'completed', now() FROM generate_series(1, 3000);\
         INSERT INTO {schema}.pgmill_job (kind, queue, state, finalized_at) \
         SELECT 'k', q, 'discarded', now() FROM unnest(ARRAY['busy', 'rare', 'rare']) AS q;\
         INSERT INTO {schema}.pgmill_job (kind, queue) VALUES ('k', 'rare'), ('k', 'rare');\
         ANALYZE {schema}.pgmill_job;",
    ))
    .await;
}
