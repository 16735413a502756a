//! The advisory-lock claim mode (`ClaimMode::AdvisoryLock`): clients that take jobs by
//! session-level advisory lock on a locker connection of their own, writing nothing at claim.
//!
//! Each client runs on a driver whose connections carry an `application_name` of its own, so a
//! case can find its locker (the only backend of that name holding advisory locks) and count or
//! terminate it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pgmill::admin::{BulkAction, JobListParams};
use pgmill::driver::{Driver, Executor, Statement};
use pgmill::{ClaimMode, Client, InsertOpts, InsertParams, JobError, JobId, JobRow, JobState};
use tokio::sync::Notify;

use crate::doomed::DoomedProcess;
use crate::scripted::{
    DropFlag, ScriptedWorker, Task, count_in, tagged_driver, test_client, test_client_on, wait_for,
};
use crate::{Harness, TestContext, migrated as ctx};

/// A builder for an advisory-mode client on `driver` and the test's schema.
fn advisory_client<D: Driver>(ctx: &TestContext<D>, driver: D) -> pgmill::ClientBuilder<D> {
    test_client_on(ctx, driver).claim_mode(ClaimMode::AdvisoryLock)
}

/// Advisory locks held by the backends named `tag`.
async fn locks_held<D: Driver>(ctx: &TestContext<D>, tag: &str) -> i64 {
    ctx.conn()
        .await
        .query_scalar(
            &Statement::new(
                "SELECT count(*) AS n FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid) \
                 WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1::text",
            )
            .bind(tag),
        )
        .await
        .expect("count advisory locks")
}

/// Terminates the locker of the client named `tag`; returns how many backends it terminated.
async fn terminate_locker<D: Driver>(ctx: &TestContext<D>, tag: &str) -> i64 {
    ctx.conn()
        .await
        .query_scalar(
            &Statement::new(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) AS killed \
                 FROM pg_stat_activity WHERE application_name = $1::text AND pid IN \
                     (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)",
            )
            .bind(tag),
        )
        .await
        .expect("terminate the locker")
}

async fn job<D: Driver>(client: &Client<D>, id: JobId) -> JobRow {
    client.job_get(id).await.unwrap().expect("job exists")
}

fn tasks(n: i64) -> Vec<InsertParams> {
    (0..n)
        .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
        .collect()
}

/// Two advisory-mode clients on one queue complete 2,000 jobs, each exactly once, with the attempt
/// and its client recorded at completion; nothing stays locked after they stop.
pub async fn two_clients_complete_every_job_exactly_once<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("adv_share_{}", ctx.schema.name());
    let driver = tagged_driver::<H>(&ctx, &tag).await;
    let (wa, wb) = (ScriptedWorker::ok(), ScriptedWorker::ok());
    let a = advisory_client(&ctx, driver.clone())
        .queue("default", 20)
        .fetch_limit(10)
        .worker(wa.clone())
        .build()
        .unwrap();
    let b = advisory_client(&ctx, driver)
        .queue("default", 20)
        .fetch_limit(10)
        .worker(wb.clone())
        .build()
        .unwrap();
    a.insert_bulk(&tasks(2_000)).await.unwrap();
    a.start().await.unwrap();
    b.start().await.unwrap();
    wait_for("all completed", async || {
        count_in(&ctx, JobState::Completed).await == 2_000
    })
    .await;
    a.stop().await;
    b.stop().await;
    let (ra, rb) = (wa.runs(), wb.runs());
    assert_eq!(ra.len() + rb.len(), 2_000);
    assert!(
        ra.keys().all(|id| !rb.contains_key(id)),
        "a job ran in both clients"
    );
    assert!(ra.values().chain(rb.values()).all(|&n| n == 1));
    assert!(!ra.is_empty() && !rb.is_empty(), "both clients worked");
    let some = job(&a, *ra.keys().next().unwrap()).await;
    assert_eq!(some.attempt, 1);
    assert!(some.attempted_at.is_some() && some.finalized_at.is_some());
    assert_eq!(some.attempted_by, vec![a.id().to_owned()]);
    assert_eq!(locks_held(&ctx, &tag).await, 0);
    assert_eq!(a.stats().lost_results + b.stats().lost_results, 0);
}

/// An error retries the job with the error recorded under the attempt that failed; attempts used
/// up discard it, every error kept.
pub async fn errors_retry_and_exhausted_attempts_discard<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("adv_retry_{}", ctx.schema.name());
    let driver = tagged_driver::<H>(&ctx, &tag).await;
    let worker = ScriptedWorker::new(|run| async move {
        match (run.n, run.attempt) {
            (0, 1) => Err(JobError::retry("first attempt fails")),
            (0, _) => Ok(()),
            _ => Err(JobError::retry(format!("attempt {} fails", run.attempt))),
        }
    });
    let client = advisory_client(&ctx, driver)
        .queue("default", 4)
        .worker(worker.clone())
        .build()
        .unwrap();
    let retried = client.insert(Task { n: 0 }).await.unwrap();
    let doomed = client
        .insert_with(Task { n: 1 }, InsertOpts::new().max_attempts(3))
        .await
        .unwrap();
    client.start().await.unwrap();
    wait_for("one completed, one discarded", async || {
        count_in(&ctx, JobState::Completed).await == 1
            && count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    client.stop().await;
    let ok = job(&client, retried.id).await;
    assert_eq!(ok.attempt, 2);
    assert_eq!(ok.errors.len(), 1);
    assert_eq!(ok.errors[0].attempt, 1);
    assert_eq!(ok.errors[0].error, "first attempt fails");
    let gone = job(&client, doomed.id).await;
    assert_eq!(gone.attempt, 3);
    let attempts: Vec<i16> = gone.errors.iter().map(|e| e.attempt).collect();
    assert_eq!(attempts, vec![1, 2, 3]);
    assert_eq!(worker.runs()[&doomed.id], 3);
    assert_eq!(locks_held(&ctx, &tag).await, 0);
}

/// A soft stop gives the buffered jobs back by unlocking them: their rows were never touched,
/// and another client takes them at once.
pub async fn stop_unlocks_buffered_jobs_untouched<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("adv_stop_{}", ctx.schema.name());
    let driver = tagged_driver::<H>(&ctx, &tag).await;
    let gate = Arc::new(Notify::new());
    let release = Arc::clone(&gate);
    let slow = ScriptedWorker::new(move |_| {
        let gate = Arc::clone(&gate);
        async move {
            gate.notified().await;
            Ok(())
        }
    });
    let a = advisory_client(&ctx, driver)
        .queue("default", 1)
        .prefetch(10)
        .job_timeout(None)
        .worker(slow.clone())
        .build()
        .unwrap();
    a.insert_bulk(&tasks(11)).await.unwrap();
    a.start().await.unwrap();
    wait_for("one running and ten buffered, all locked", async || {
        slow.total_runs() == 1 && locks_held(&ctx, &tag).await == 11
    })
    .await;
    assert_eq!(count_in(&ctx, JobState::Available).await, 11);
    let stopping = {
        let a = a.clone();
        tokio::spawn(async move { a.stop().await })
    };
    wait_for("the buffered jobs unlocked", async || {
        locks_held(&ctx, &tag).await == 1
    })
    .await;
    release.notify_one();
    stopping.await.unwrap();
    assert_eq!(locks_held(&ctx, &tag).await, 0);
    assert_eq!(count_in(&ctx, JobState::Completed).await, 1);
    let rows = a
        .job_list(&pgmill::admin::JobListParams::new().states([JobState::Available]))
        .await
        .unwrap();
    assert_eq!(rows.jobs.len(), 10);
    assert!(
        rows.jobs
            .iter()
            .all(|j| j.attempt == 0 && j.attempted_by.is_empty())
    );
    let worker = ScriptedWorker::ok();
    let b = advisory_client(&ctx, ctx.driver.clone())
        .queue("default", 5)
        .worker(worker.clone())
        .build()
        .unwrap();
    b.start().await.unwrap();
    wait_for("the rest completed", async || {
        count_in(&ctx, JobState::Completed).await == 11
    })
    .await;
    b.stop().await;
    assert_eq!(worker.total_runs(), 10);
}

/// A client killed mid-job leaves its jobs takeable by another client at once (its locks vanish
/// with its session): no rescuer, no client timeout. Their attempts were never counted.
pub async fn a_killed_clients_jobs_are_taken_at_once<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("adv_kill_{}", ctx.schema.name());
    let doomed = DoomedProcess::new();
    let (url, schema, doomed_tag) = (ctx.url.clone(), ctx.schema.clone(), tag.clone());
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&started);
    doomed
        .run(async move {
            let sep = if url.contains('?') { '&' } else { '?' };
            let driver = H::connect(&format!("{url}{sep}application_name={doomed_tag}"), 4)
                .await
                .unwrap();
            let hang = ScriptedWorker::new(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(())
                }
            });
            let c = Client::builder(driver)
                .schema(schema)
                .claim_mode(ClaimMode::AdvisoryLock)
                .poll_interval(Duration::from_millis(50))
                .queue("default", 5)
                .prefetch(0)
                .job_timeout(None)
                .worker(hang)
                .build()
                .unwrap();
            c.start().await.unwrap();
            c
        })
        .await;
    let inserter = pgmill::Inserter::new(ctx.schema.clone());
    let mut conn = ctx.conn().await;
    for n in 0..5 {
        inserter.insert(&mut conn, Task { n }).await.unwrap();
    }
    drop(conn);
    wait_for("all five running in the doomed client", async || {
        started.load(Ordering::SeqCst) == 5 && locks_held(&ctx, &tag).await == 5
    })
    .await;
    doomed.kill();
    let worker = ScriptedWorker::ok();
    let survivor = advisory_client(&ctx, ctx.driver.clone())
        .queue("default", 5)
        .worker(worker.clone())
        .build()
        .unwrap();
    survivor.start().await.unwrap();
    // Well within the default 15 s client timeout the rescuer would need for row-state claims.
    let taken = crate::eventually(Duration::from_secs(10), async || {
        count_in(&ctx, JobState::Completed).await == 5
    })
    .await;
    survivor.stop().await;
    assert!(taken, "the killed client's jobs were not taken at once");
    assert_eq!(worker.total_runs(), 5);
    let page = survivor
        .job_list(&pgmill::admin::JobListParams::new())
        .await
        .unwrap();
    assert!(
        page.jobs
            .iter()
            .all(|j| j.attempt == 1 && j.attempted_by == vec![survivor.id().to_owned()])
    );
}

/// The locker's connection terminated mid-run: the jobs it held are lost (their workers are
/// cancelled and their results dropped), they run again, and the client keeps working on a new
/// session.
pub async fn a_terminated_locker_drops_in_flight_results_and_recovers<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("adv_term_{}", ctx.schema.name());
    let driver = tagged_driver::<H>(&ctx, &tag).await;
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    let worker = ScriptedWorker::new(move |run| {
        let flag = Arc::clone(&flag);
        async move {
            if run.n < 3 && !flag.load(Ordering::SeqCst) {
                // First runs hang until the session is lost; the drop proves they were cancelled.
                let _guard = DropFlag(flag);
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            Ok(())
        }
    });
    let client = advisory_client(&ctx, driver)
        .queue("default", 3)
        .prefetch(2)
        .job_timeout(None)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.insert_bulk(&tasks(5)).await.unwrap();
    client.start().await.unwrap();
    wait_for("three running, two buffered, all locked", async || {
        worker.total_runs() == 3 && locks_held(&ctx, &tag).await == 5
    })
    .await;
    assert_eq!(terminate_locker(&ctx, &tag).await, 1);
    wait_for("all five completed after the loss", async || {
        count_in(&ctx, JobState::Completed).await == 5
    })
    .await;
    assert!(
        dropped.load(Ordering::SeqCst),
        "the hung workers were not cancelled"
    );
    let stats = client.stats();
    assert_eq!(stats.lost_claims, 5);
    assert!(
        stats.lost_results >= 3,
        "the cancelled attempts' results were recorded: {stats:?}"
    );
    let runs = worker.runs();
    assert_eq!(runs.values().filter(|&&n| n == 2).count(), 3, "{runs:?}");
    // Recorded once, by the claims of the new session.
    let page = client
        .job_list(&pgmill::admin::JobListParams::new())
        .await
        .unwrap();
    assert!(
        page.jobs
            .iter()
            .all(|j| j.attempt == 1 && j.errors.is_empty())
    );
    // And it keeps working.
    client.insert_bulk(&tasks(20)).await.unwrap();
    wait_for("the next jobs completed", async || {
        count_in(&ctx, JobState::Completed).await == 25
    })
    .await;
    client.stop().await;
    assert_eq!(locks_held(&ctx, &tag).await, 0);
}

/// An operator's cancel of a job running in advisory mode cancels its row at once, stops its
/// worker, and releases its lock; the worker's late outcome changes nothing.
pub async fn cancel_stops_a_running_job<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("adv_cancel_{}", ctx.schema.name());
    let (client, worker, dropped, id) = a_sleeping_job_running::<H>(&ctx, &tag).await;
    let cancelled = client.job_cancel(id).await.unwrap().unwrap();
    assert_eq!(cancelled.state, JobState::Cancelled);
    stopped_released_and_cancelled(&ctx, &tag, client, &worker, &dropped, id).await;
}

/// A started advisory client of one worker (its locker's backend named `tag`), once the job it
/// was given (one that sleeps for an hour) runs under its lock: the client, its worker, the flag
/// set when the job's work is dropped, and the job's id.
async fn a_sleeping_job_running<H: Harness>(
    ctx: &TestContext<H::Driver>,
    tag: &str,
) -> (Client<H::Driver>, ScriptedWorker, Arc<AtomicBool>, JobId) {
    let driver = tagged_driver::<H>(ctx, tag).await;
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    let worker = ScriptedWorker::new(move |_| {
        let guard = DropFlag(Arc::clone(&flag));
        async move {
            let _guard = guard;
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
    });
    let client = advisory_client(ctx, driver)
        .queue("default", 1)
        .job_timeout(None)
        .worker(worker.clone())
        .build()
        .unwrap();
    let inserted = client.insert(Task { n: 0 }).await.unwrap();
    client.start().await.unwrap();
    wait_for("running and locked", async || {
        worker.total_runs() == 1 && locks_held(ctx, tag).await == 1
    })
    .await;
    (client, worker, dropped, inserted.id)
}

/// Waits until the cancelled job's work is dropped and its lock released, stops `client`, and
/// checks the job ended cancelled after one run, its worker's late outcome changing nothing.
async fn stopped_released_and_cancelled<D: Driver>(
    ctx: &TestContext<D>,
    tag: &str,
    client: Client<D>,
    worker: &ScriptedWorker,
    dropped: &AtomicBool,
    id: JobId,
) {
    wait_for("worker stopped and lock released", async || {
        dropped.load(Ordering::SeqCst) && locks_held(ctx, tag).await == 0
    })
    .await;
    client.stop().await;
    let row = job(&client, id).await;
    assert_eq!(row.state, JobState::Cancelled);
    assert_eq!(worker.total_runs(), 1);
    assert_eq!(client.stats().superseded_results, 1);
}

/// A lock budget (twice workers plus prefetch) above half the server's lock table is refused at start,
/// with a clear error, before anything is claimed.
pub async fn a_lock_budget_above_half_the_lock_table_is_refused<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = advisory_client(&ctx, ctx.driver.clone())
        .queue("default", 10_000)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    assert_eq!(client.config().lock_budget(), 20_200);
    client.insert(Task { n: 0 }).await.unwrap();
    let err = client.start().await.unwrap_err();
    assert!(matches!(err, pgmill::Error::InvalidConfig(_)), "{err}");
    assert!(
        err.to_string().contains("max_locks_per_transaction"),
        "{err}"
    );
    client.stop().await;
    assert_eq!(count_in(&ctx, JobState::Available).await, 1);
}

/// An operator's bulk cancel (`Client::job_bulk` with `BulkAction::Cancel`), from a process of its
/// own, stops a job running in an advisory-mode client as a single cancel does: the row is
/// available while the job runs, so its client must be told of available jobs cancelled too.
pub async fn bulk_cancel_stops_a_running_job<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("adv_bulk_cancel_{}", ctx.schema.name());
    let (client, worker, dropped, id) = a_sleeping_job_running::<H>(&ctx, &tag).await;
    // The operator works from another process: a client that works no queue.
    let operator = test_client(&ctx).build().unwrap();
    let params = JobListParams::new().ids([id]);
    let batch = operator
        .job_bulk(BulkAction::Cancel, &params)
        .await
        .unwrap();
    assert_eq!(batch.changed, 1);
    stopped_released_and_cancelled(&ctx, &tag, client, &worker, &dropped, id).await;
}
