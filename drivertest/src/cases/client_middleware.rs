//! Middleware: around every attempt in registration order, per kind, short-circuiting, panicking;
//! and the insert hook on every insert path, with the trace context stored the same way.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use pgmill::driver::Executor;
use pgmill::middleware::{Middleware, Next, TRACE_METADATA_KEY, TraceHeaders, TracePropagator};
use pgmill::{
    InsertOpts, InsertParams, Inserter, Job, JobArgs, JobError, JobRow, JobState, Outcome, Worker,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, migrated as ctx};

/// Appends what it sees to a shared log.
struct Logging {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

impl Middleware for Logging {
    async fn work<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> Outcome {
        self.log
            .lock()
            .unwrap()
            .push(format!("{} before {}", self.name, job.attempt));
        let outcome = next.run().await;
        self.log
            .lock()
            .unwrap()
            .push(format!("{} after {}", self.name, outcome.name()));
        outcome
    }
}

/// Attempts run inside every middleware, the first registered outermost, and each sees the
/// worker's outcome.
pub async fn middleware_wraps_attempts_in_registration_order_and_sees_outcomes<H: Harness>() {
    let ctx = ctx::<H>().await;
    let log = Arc::new(Mutex::new(Vec::new()));
    let in_worker = Arc::clone(&log);
    let worker = ScriptedWorker::new(move |run| {
        in_worker.lock().unwrap().push("worker".to_owned());
        async move {
            if run.attempt == 1 {
                Err(JobError::retry("once"))
            } else {
                Ok(())
            }
        }
    });
    let client = test_client(&ctx)
        .queue("default", 1)
        .worker(worker)
        .middleware(Logging {
            name: "outer",
            log: Arc::clone(&log),
        })
        .middleware(Logging {
            name: "inner",
            log: Arc::clone(&log),
        })
        .build()
        .unwrap();
    client.start().await.unwrap();
    client.insert(Task { n: 1 }).await.unwrap();
    wait_for("completion", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let log = log.lock().unwrap().clone();
    let expected = [
        "outer before 1",
        "inner before 1",
        "worker",
        "inner after retry",
        "outer after retry",
        "outer before 2",
        "inner before 2",
        "worker",
        "inner after completed",
        "outer after completed",
    ];
    assert_eq!(log, expected);
}

/// Args of a second kind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Other {}

impl JobArgs for Other {
    const KIND: &'static str = "other";
}

struct OtherWorker;

impl Worker<Other> for OtherWorker {
    async fn work(&self, _job: &Job<Other>) -> Result<(), JobError> {
        Ok(())
    }
}

/// Counts the attempts and inserts it sees.
#[derive(Default, Clone)]
struct Counting {
    attempts: Arc<AtomicU32>,
    inserts: Arc<AtomicU32>,
}

impl Middleware for Counting {
    async fn work<'a>(&'a self, _job: &'a JobRow, next: Next<'a>) -> Outcome {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        next.run().await
    }

    fn insert(&self, _job: &mut InsertParams) {
        self.inserts.fetch_add(1, Ordering::SeqCst);
    }
}

/// Middleware registered for one kind wraps only that kind's attempts and inserts.
pub async fn kind_middleware_runs_only_for_its_kind<H: Harness>() {
    let ctx = ctx::<H>().await;
    let (every, tasks) = (Counting::default(), Counting::default());
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(ScriptedWorker::ok())
        .worker(OtherWorker)
        .middleware(every.clone())
        .middleware_for::<Task>(tasks.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    for n in 0..3 {
        client.insert(Task { n }).await.unwrap();
    }
    client.insert(Other {}).await.unwrap();
    client.insert(Other {}).await.unwrap();
    wait_for("completion", async || {
        count_in(&ctx, JobState::Completed).await == 5
    })
    .await;
    client.stop().await;
    assert_eq!(every.attempts.load(Ordering::SeqCst), 5);
    assert_eq!(every.inserts.load(Ordering::SeqCst), 5);
    assert_eq!(tasks.attempts.load(Ordering::SeqCst), 3);
    assert_eq!(tasks.inserts.load(Ordering::SeqCst), 3);
}

/// Discards odd jobs without running the worker.
struct Policy;

impl Middleware for Policy {
    async fn work<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> Outcome {
        if job.args["n"].as_i64().is_some_and(|n| n % 2 == 1) {
            return Outcome::discard("blocked by policy");
        }
        next.run().await
    }
}

/// A middleware's own outcome skips the worker and is recorded like the worker's would be.
pub async fn middleware_can_short_circuit_the_worker<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .middleware(Policy)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let blocked = client.insert(Task { n: 1 }).await.unwrap();
    let allowed = client.insert(Task { n: 2 }).await.unwrap();
    wait_for("both finished", async || {
        count_in(&ctx, JobState::Completed).await == 1
            && count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    client.stop().await;
    let runs = worker.runs();
    assert_eq!(runs.get(&blocked.id), None, "the worker never ran");
    assert_eq!(runs.get(&allowed.id), Some(&1));
    let blocked = client.job_get(blocked.id).await.unwrap().unwrap();
    assert_eq!(blocked.state, JobState::Discarded);
    assert_eq!(blocked.errors.len(), 1);
    assert_eq!(blocked.errors[0].error, "blocked by policy");
}

/// Panics on each job's first attempt.
struct Panicking;

impl Middleware for Panicking {
    async fn work<'a>(&'a self, job: &'a JobRow, next: Next<'a>) -> Outcome {
        assert!(job.attempt > 1, "middleware bug");
        next.run().await
    }
}

/// A middleware that panics fails the attempt like a worker's panic; the job is retried and the
/// client keeps working.
pub async fn a_panicking_middleware_fails_the_attempt_and_the_client_goes_on<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(ScriptedWorker::ok())
        .middleware(Panicking)
        .retry_policy(Immediate)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    wait_for("completion on the second attempt", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    let second = client.insert(Task { n: 2 }).await.unwrap();
    wait_for("the client goes on", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    client.stop().await;
    for id in [job.id, second.id] {
        let job = client.job_get(id).await.unwrap().unwrap();
        assert_eq!(job.attempt, 2);
        assert_eq!(job.errors.len(), 1);
        assert!(job.errors[0].panic);
        assert!(
            job.errors[0]
                .error
                .starts_with("middleware panicked: middleware bug"),
            "{}",
            job.errors[0].error
        );
    }
}

/// Retries at once.
#[derive(Debug)]
struct Immediate;

impl pgmill::RetryPolicy for Immediate {
    fn next_retry(&self, _attempt: i16) -> chrono::TimeDelta {
        chrono::TimeDelta::zero()
    }
}

/// Tags every job with a release.
struct Release;

impl Middleware for Release {
    fn insert(&self, job: &mut InsertParams) {
        job.metadata_mut().insert("release".into(), json!("r1"));
    }
}

/// Injects one fixed trace context.
#[derive(Debug)]
struct FixedTrace;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

impl TracePropagator for FixedTrace {
    fn inject(&self, headers: &mut TraceHeaders) {
        headers.insert("traceparent".into(), TRACEPARENT.into());
    }

    fn extract(&self, _headers: &TraceHeaders, _span: &tracing::Span) {}
}

fn params(n: i64, opts: InsertOpts) -> InsertParams {
    InsertParams::from_args(&Task { n }, Some(opts)).unwrap()
}

/// Every insert path runs the insert hooks and stores the trace context: the client's single,
/// many and bulk inserts (COPY where the driver has it), an inserter on a pooled connection and
/// blocking or async inserts inside the application's own transaction; a job carrying a trace
/// context of its own keeps it.
pub async fn insert_hooks_run_on_every_insert_path<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .middleware(Release)
        .trace_propagator(FixedTrace)
        .build()
        .unwrap();
    let plain = InsertOpts::new;
    client.insert(Task { n: 1 }).await.unwrap();
    client
        .insert_many(&[params(2, plain()), params(3, plain())])
        .await
        .unwrap();
    let bulk: Vec<InsertParams> = (4..8).map(|n| params(n, plain())).collect();
    assert_eq!(client.insert_bulk(&bulk).await.unwrap(), 4);
    client
        .inserter()
        .insert(&mut ctx.conn().await, Task { n: 8 })
        .await
        .unwrap();
    let in_tx = H::host_insert(
        &ctx.url,
        client.inserter(),
        vec![params(9, plain()), params(10, plain())],
        true,
    )
    .await
    .unwrap();
    assert_eq!(
        in_tx[0].metadata["release"], "r1",
        "rows returned are the adjusted ones"
    );
    let standalone = Inserter::new(ctx.schema.clone())
        .with_middleware(Release)
        .with_trace_propagator(FixedTrace);
    standalone
        .insert_bulk(&mut ctx.conn().await, &[params(11, plain())])
        .await
        .unwrap();
    let own = json!({TRACE_METADATA_KEY: {"traceparent": "00-own-own-01"}});
    client
        .insert_with(Task { n: 12 }, InsertOpts::new().metadata(own))
        .await
        .unwrap();

    let rows = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT (args->>'n')::bigint AS n, metadata FROM {schema}.pgmill_job_all ORDER BY 1",
        ))
        .await
        .unwrap();
    assert_eq!(rows.len(), 12, "every job inserted once");
    for row in &rows {
        let n: i64 = row.get("n").unwrap();
        let metadata: serde_json::Value = row.get("metadata").unwrap();
        assert_eq!(metadata["release"], "r1", "job {n}: {metadata}");
        let expected = if n == 12 {
            "00-own-own-01"
        } else {
            TRACEPARENT
        };
        assert_eq!(
            metadata[TRACE_METADATA_KEY]["traceparent"], expected,
            "job {n}: {metadata}"
        );
    }
}
