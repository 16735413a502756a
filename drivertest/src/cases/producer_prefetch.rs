//! What a producer's buffer of claimed jobs means (`Config::prefetch`): buffered jobs are claimed
//! (running, attempted, owned, rescued if the client dies), but their timeout starts when they
//! start, and a soft stop, a pause or an operator's cancel reaches them without running them or
//! using up their attempt.

use std::sync::Arc;
use std::time::Duration;

use pgmill::driver::Executor;
use pgmill::maintenance::JobRescuerConfig;
use pgmill::middleware::MetricsConfig;
use pgmill::{Client, InsertParams, JobState};
use tokio::sync::Semaphore;

use crate::doomed::DoomedProcess;
use crate::log_capture::{engine_events, watch_engine_spans};
use crate::metrics_probe::MetricsProbe;
use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext, migrated as ctx};

/// A worker whose job number 0 waits for the gate to open; every other job completes at once.
fn gated_worker(gate: &Arc<Semaphore>) -> ScriptedWorker {
    let gate = Arc::clone(gate);
    ScriptedWorker::new(move |run| {
        let gate = Arc::clone(&gate);
        async move {
            if run.n == 0 {
                let _open = gate.acquire().await.expect("gate stays open");
            }
            Ok(())
        }
    })
}

/// Inserts jobs numbered `0..n`, in that order, in one call.
async fn insert_numbered<D: pgmill::driver::Driver>(client: &Client<D>, n: i64) {
    let params: Vec<_> = (0..n)
        .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
        .collect();
    client.insert_bulk(&params).await.unwrap();
}

/// `(n, state, attempt)` of every job, by number.
async fn jobs<D: pgmill::driver::Driver>(ctx: &TestContext<D>) -> Vec<(i64, String, i64)> {
    let rows = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT (args->>'n')::int8 AS n, state::text AS state, attempt::int8 AS attempt \
             FROM {schema}.pgmill_job_all ORDER BY 1",
        ))
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get::<i64>("n").unwrap(),
                r.get::<String>("state").unwrap(),
                r.get::<i64>("attempt").unwrap(),
            )
        })
        .collect()
}

/// A started client with one slot and a prefetch of 5 whose job 0 waits for `gate`, after
/// `jobs` jobs numbered from 0 were inserted and claimed: one running, the rest buffered.
async fn one_slot_with_buffer<D: pgmill::driver::Driver>(
    ctx: &TestContext<D>,
    gate: &Arc<Semaphore>,
    jobs: i64,
) -> (Client<D>, ScriptedWorker) {
    let worker = gated_worker(gate);
    let client = test_client(ctx)
        .queue("default", 1)
        .prefetch(5)
        .worker(worker.clone())
        .build()
        .unwrap();
    insert_numbered(&client, jobs).await;
    client.start().await.unwrap();
    let claimed = jobs.min(6);
    // The claim commits before the first job's work starts: wait for both.
    wait_for("one running and the rest buffered", async || {
        count_in(ctx, JobState::Running).await == claimed && worker.total_runs() == 1
    })
    .await;
    (client, worker)
}

/// With one worker busy, one fetch claims the prefetch too: the buffered jobs are running in the
/// table, with their attempt counted; a soft stop gives them back to available, attempt
/// returned, at once (while the busy job still runs), and never runs them.
pub async fn soft_stop_gives_buffered_jobs_back_without_using_an_attempt<H: Harness>() {
    let ctx = ctx::<H>().await;
    let gate = Arc::new(Semaphore::new(0));
    let (client, worker) = one_slot_with_buffer(&ctx, &gate, 8).await;
    let claimed = jobs(&ctx).await;
    assert!(
        claimed[..6]
            .iter()
            .all(|(_, s, a)| s == "running" && *a == 1),
        "{claimed:?}"
    );
    assert_eq!(worker.total_runs(), 1, "only the first job started");
    soft_stop_while_running(&ctx, &client, &gate, 1, 8).await;
    assert_eq!(worker.total_runs(), 1);
}

/// Soft-stops `client` while its first `running` jobs (numbers 0, 1, ...) wait for `gate`: every
/// other of the `total` jobs is given back to available, attempt returned, while those still run;
/// then the gate opens and the running ones complete before the stop returns.
async fn soft_stop_while_running<D: pgmill::driver::Driver>(
    ctx: &TestContext<D>,
    client: &Client<D>,
    gate: &Semaphore,
    running: usize,
    total: i64,
) {
    let stopping = tokio::spawn({
        let client = client.clone();
        async move { client.stop().await }
    });
    let given_back = total - i64::try_from(running).unwrap();
    wait_for(
        "buffered jobs given back while the first still run",
        async || count_in(ctx, JobState::Available).await == given_back,
    )
    .await;
    gate.add_permits(running);
    stopping.await.unwrap();
    let after = jobs(ctx).await;
    for (n, job) in after[..running].iter().enumerate() {
        assert_eq!(*job, (i64::try_from(n).unwrap(), "completed".to_owned(), 1));
    }
    assert!(
        after[running..]
            .iter()
            .all(|(_, s, a)| s == "available" && *a == 0),
        "{after:?}"
    );
}

/// An operator's cancel of a buffered job cancels it without running it; the jobs around it run.
pub async fn cancel_reaches_a_buffered_job<H: Harness>() {
    let ctx = ctx::<H>().await;
    let gate = Arc::new(Semaphore::new(0));
    let (client, worker) = one_slot_with_buffer(&ctx, &gate, 3).await;
    let operator = test_client(&ctx).build().unwrap();
    let page = operator
        .job_list(&pgmill::admin::JobListParams::new())
        .await
        .unwrap();
    let buffered = page.jobs.iter().find(|j| j.args["n"] == 1).unwrap().id;
    let schema = ctx.schema.name();
    watch_engine_spans(schema);
    let cancelled = operator.job_cancel(buffered).await.unwrap().unwrap();
    assert_eq!(
        cancelled.state,
        JobState::Running,
        "marked, its client told"
    );
    // The control notification reaches the client's listener, which cancels the buffered job,
    // before the job's turn comes.
    wait_for("the client told to cancel the buffered job", async || {
        engine_events("cancelling a running job on request", "schema", schema)
            .iter()
            .any(|e| e.get("job_id") == Some(&buffered.0.to_string()))
    })
    .await;
    gate.add_permits(1);
    wait_for("the other two completed", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    wait_for("the buffered one cancelled", async || {
        count_in(&ctx, JobState::Cancelled).await == 1
    })
    .await;
    client.stop().await;
    assert_eq!(
        worker.runs().get(&buffered),
        None,
        "the cancelled job never ran"
    );
    assert_eq!(worker.total_runs(), 2);
}

/// Pausing the queue gives its buffered jobs back at once; resuming runs them.
pub async fn pause_gives_buffered_jobs_back<H: Harness>() {
    let ctx = ctx::<H>().await;
    let gate = Arc::new(Semaphore::new(0));
    let (client, worker) = one_slot_with_buffer(&ctx, &gate, 4).await;
    client.queue_pause("default").await.unwrap();
    wait_for(
        "buffered jobs given back while the first still runs",
        async || count_in(&ctx, JobState::Available).await == 3,
    )
    .await;
    assert!(
        jobs(&ctx).await[1..].iter().all(|(_, _, a)| *a == 0),
        "attempts given back"
    );
    gate.add_permits(1);
    wait_for("the running one completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    assert_eq!(count_in(&ctx, JobState::Available).await, 3, "paused");
    client.queue_resume("default").await.unwrap();
    wait_for("the rest completed after resume", async || {
        count_in(&ctx, JobState::Completed).await == 4
    })
    .await;
    client.stop().await;
    assert!(worker.runs().values().all(|&n| n == 1));
}

/// A buffered job's timeout starts when it starts, not when it was claimed.
pub async fn buffered_jobs_time_out_from_their_start<H: Harness>() {
    let ctx = ctx::<H>().await;
    // Job 0 keeps the only slot for longer than the timeout's margin over job 1's own run.
    let worker = ScriptedWorker::new(|run| async move {
        let d = if run.n == 0 { 1_500 } else { 1_000 };
        tokio::time::sleep(Duration::from_millis(d)).await;
        Ok(())
    })
    .with_timeout(Duration::from_secs(2));
    let client = test_client(&ctx)
        .queue("default", 1)
        .prefetch(5)
        .worker(worker.clone())
        .build()
        .unwrap();
    insert_numbered(&client, 2).await;
    client.start().await.unwrap();
    wait_for("both completed", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    client.stop().await;
    assert!(
        jobs(&ctx)
            .await
            .iter()
            .all(|(_, s, a)| s == "completed" && *a == 1),
        "no attempt timed out"
    );
}

/// A client that dies holding buffered jobs leaves only rescuable jobs: the rescuer gives every
/// one back and another client runs them.
pub async fn a_dead_client_leaves_its_buffered_jobs_rescuable<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let mut rescuer = JobRescuerConfig::default();
    rescuer.interval = Duration::from_millis(200);
    rescuer.client_timeout = Duration::from_secs(1);
    let doomed = DoomedProcess::new();
    let (url, schema, doomed_rescuer) = (ctx.url.clone(), ctx.schema.clone(), rescuer.clone());
    doomed
        .run(async move {
            let driver = H::connect(&url, 4).await.unwrap();
            let hang = ScriptedWorker::new(|_| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            });
            let c = Client::builder(driver)
                .schema(schema)
                .queue("default", 1)
                .prefetch(5)
                .heartbeat_interval(Duration::from_millis(200))
                .rescuer(doomed_rescuer)
                .job_timeout(None)
                .worker(hang)
                .build()
                .unwrap();
            c.start().await.unwrap();
            c
        })
        .await;
    let inserter = test_client(&ctx).build().unwrap();
    insert_numbered(&inserter, 4).await;
    wait_for(
        "one running and three buffered in the doomed client",
        async || count_in(&ctx, JobState::Running).await == 4,
    )
    .await;
    doomed.kill();
    let worker = ScriptedWorker::ok();
    let survivor = test_client(&ctx)
        .queue("default", 4)
        .heartbeat_interval(Duration::from_millis(200))
        .rescuer(rescuer)
        .worker(worker.clone())
        .build()
        .unwrap();
    survivor.start().await.unwrap();
    wait_for("every job rescued and completed", async || {
        count_in(&ctx, JobState::Completed).await == 4
    })
    .await;
    survivor.stop().await;
    assert_eq!(worker.total_runs(), 4);
}

/// A client of two slots, a prefetch of 2 and a fetch limit of 2: each full claim's jobs fill
/// the slots, so the next claim is a full one whatever they do, and is sent before they are
/// handed out.
fn overlapping_client<D: pgmill::driver::Driver>(
    ctx: &TestContext<D>,
    worker: &ScriptedWorker,
    probe: &MetricsProbe,
) -> Client<D> {
    test_client(ctx)
        .queue("default", 2)
        .prefetch(2)
        .fetch_limit(2)
        .worker(worker.clone())
        .metrics(MetricsConfig::new().recorder(probe.recorder()))
        .build()
        .unwrap()
}

/// Claims sent before the claim before them was decoded, by one client.
fn overlapped(probe: &MetricsProbe) -> u64 {
    probe
        .counter("pgmill_claims_overlapped_total", &[("queue", "default")])
        .unwrap_or(0)
}

/// With as many slots as the fetch limit and a prefetch as large, a producer sends its next claim
/// before handing out the last one's jobs (whatever those do, the next claim is a full one): two
/// busy jobs and two buffered ones are claimed, each once; a soft stop gives the buffered ones
/// (the overlapped claim's) back without using their attempt; and a queue of short jobs worked
/// through this way runs every job exactly once.
pub async fn overlapped_claims_hand_out_each_job_once<H: Harness>() {
    let ctx = ctx::<H>().await;
    let gate = Arc::new(Semaphore::new(0));
    let worker = {
        let gate = Arc::clone(&gate);
        ScriptedWorker::new(move |_| {
            let gate = Arc::clone(&gate);
            async move {
                let _open = gate.acquire().await.expect("gate stays open");
                Ok(())
            }
        })
    };
    let probe = MetricsProbe::new();
    let client = overlapping_client(&ctx, &worker, &probe);
    insert_numbered(&client, 8).await;
    client.start().await.unwrap();
    wait_for("two running and two buffered", async || {
        count_in(&ctx, JobState::Running).await == 4 && worker.total_runs() == 2
    })
    .await;
    assert_eq!(
        overlapped(&probe),
        1,
        "the second claim went out before the first's jobs were handed out"
    );
    let claimed = jobs(&ctx).await;
    assert!(
        claimed[..4]
            .iter()
            .all(|(_, s, a)| s == "running" && *a == 1),
        "claimed in fetch order, once each: {claimed:?}"
    );
    assert!(
        claimed[4..]
            .iter()
            .all(|(_, s, a)| s == "available" && *a == 0),
        "{claimed:?}"
    );
    soft_stop_while_running(&ctx, &client, &gate, 2, 8).await;
    assert_eq!(worker.total_runs(), 2);

    // Short jobs, worked through with claims overlapping: each runs once.
    gate.add_permits(1_000);
    let probe = MetricsProbe::new();
    let client = overlapping_client(&ctx, &worker, &probe);
    insert_numbered(&client, 100).await;
    client.start().await.unwrap();
    wait_for("every job completed", async || {
        count_in(&ctx, JobState::Completed).await == 108
    })
    .await;
    client.stop().await;
    let runs = worker.runs();
    assert_eq!(runs.len(), 108);
    assert!(
        runs.values().all(|&n| n == 1),
        "each job ran once: {runs:?}"
    );
    let after = jobs(&ctx).await;
    assert!(
        after.iter().all(|(_, s, a)| s == "completed" && *a == 1),
        "{after:?}"
    );
    assert!(
        overlapped(&probe) >= 1,
        "claims overlapped in the work-through"
    );
}
