//! Throughput without double execution, stopping soft and hard with jobs in flight, several
//! clients on one schema, and fencing of superseded attempts.

use std::sync::Arc;
use std::time::Duration;

use pgmill::driver::Executor;
use pgmill::{InsertOpts, InsertParams, JobError, JobState};
use tokio::sync::Notify;

use crate::scripted::{ScriptedWorker, Task, count_in, state_counts, test_client, wait_for};
use crate::{Harness, migrated as ctx};

/// 10,000 jobs over three queues with 50 workers each: every job completes exactly once.
pub async fn ten_thousand_jobs_over_three_queues_run_exactly_once<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("q1", 50)
        .queue("q2", 50)
        .queue("q3", 50)
        .worker(worker.clone())
        .build()
        .unwrap();
    let params: Vec<_> = (0..10_000)
        .map(|n| {
            let queue = ["q1", "q2", "q3"][(n % 3) as usize];
            InsertParams::from_args(&Task { n }, Some(InsertOpts::new().queue(queue))).unwrap()
        })
        .collect();
    client.insert_bulk(&params).await.unwrap();
    client.start().await.unwrap();
    wait_for("all completed", async || {
        count_in(&ctx, JobState::Completed).await == 10_000
    })
    .await;
    client.stop().await;
    let runs = worker.runs();
    assert_eq!(runs.len(), 10_000);
    assert!(runs.values().all(|&n| n == 1), "a job ran twice");
    assert_eq!(client.stats().superseded_results, 0);
}

/// A soft stop fetches nothing more but lets running jobs finish and records them.
pub async fn soft_stop_waits_for_running_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|_| async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(())
    });
    let client = test_client(&ctx)
        .queue("default", 5)
        .worker(worker.clone())
        .build()
        .unwrap();
    for n in 0..5 {
        client.insert(Task { n }).await.unwrap();
    }
    client.start().await.unwrap();
    wait_for("jobs started", async || worker.total_runs() == 5).await;
    client.insert(Task { n: 99 }).await.unwrap();
    client.stop().await;
    assert_eq!(count_in(&ctx, JobState::Completed).await, 5);
    assert_eq!(count_in(&ctx, JobState::Running).await, 0);
    assert_eq!(
        count_in(&ctx, JobState::Available).await,
        1,
        "nothing fetched after stop"
    );
}

/// A hard stop interrupts running jobs: they go back to available with their attempt given back
/// and no error, and a later client runs them.
pub async fn hard_stop_interrupts_and_gives_back_the_attempt<H: Harness>() {
    let ctx = ctx::<H>().await;
    let forever = ScriptedWorker::new(|_| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(())
    });
    let client = test_client(&ctx)
        .queue("default", 3)
        .worker(forever.clone())
        .build()
        .unwrap();
    for n in 0..3 {
        client.insert(Task { n }).await.unwrap();
    }
    client.start().await.unwrap();
    wait_for("jobs started", async || forever.total_runs() == 3).await;
    client.stop_and_cancel().await;
    assert_eq!(count_in(&ctx, JobState::Available).await, 3);
    let page = client
        .job_list(&pgmill::admin::JobListParams::new())
        .await
        .unwrap();
    assert!(
        page.jobs
            .iter()
            .all(|j| j.attempt == 0 && j.errors.is_empty())
    );

    let worker = ScriptedWorker::ok();
    let next = test_client(&ctx)
        .queue("default", 3)
        .worker(worker.clone())
        .build()
        .unwrap();
    next.start().await.unwrap();
    wait_for("rerun", async || {
        count_in(&ctx, JobState::Completed).await == 3
    })
    .await;
    next.stop().await;
    let page = next
        .job_list(&pgmill::admin::JobListParams::new())
        .await
        .unwrap();
    assert!(page.jobs.iter().all(|j| j.attempt == 1));
}

/// Two clients on one schema share the work, and no job runs twice.
pub async fn two_clients_share_work_without_running_a_job_twice<H: Harness>() {
    let ctx = ctx::<H>().await;
    let (wa, wb) = (ScriptedWorker::ok(), ScriptedWorker::ok());
    let a = test_client(&ctx)
        .queue("default", 20)
        .fetch_limit(10)
        .worker(wa.clone())
        .build()
        .unwrap();
    let b = test_client(&ctx)
        .queue("default", 20)
        .fetch_limit(10)
        .worker(wb.clone())
        .build()
        .unwrap();
    let params: Vec<_> = (0..3_000)
        .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
        .collect();
    a.insert_bulk(&params).await.unwrap();
    a.start().await.unwrap();
    b.start().await.unwrap();
    wait_for("all completed", async || {
        count_in(&ctx, JobState::Completed).await == 3_000
    })
    .await;
    a.stop().await;
    b.stop().await;
    let (ra, rb) = (wa.runs(), wb.runs());
    assert_eq!(ra.len() + rb.len(), 3_000);
    assert!(
        ra.keys().all(|id| !rb.contains_key(id)),
        "a job ran in both clients"
    );
    assert!(ra.values().chain(rb.values()).all(|&n| n == 1));
    assert!(!ra.is_empty() && !rb.is_empty(), "both clients worked");
}

/// A superseded attempt that reports late changes nothing, and is counted.
pub async fn superseded_attempt_reporting_late_changes_nothing<H: Harness>() {
    superseded_attempt_reports_late::<H>(
        || Err(JobError::retry("late failure from a presumed-dead worker")),
        false,
    )
    .await;
}

/// A superseded attempt's late success changes nothing either, and is counted: through the lean
/// completion a client without event subscribers runs for a count of rows only, and through the
/// one returning the completed rows for a client with a subscriber.
pub async fn superseded_attempt_reporting_late_success_changes_nothing<H: Harness>() {
    superseded_attempt_reports_late::<H>(|| Ok(()), false).await;
    superseded_attempt_reports_late::<H>(|| Ok(()), true).await;
}

/// Client A's attempt reports `late` after the job was made available again and client B ran it
/// to completion; `subscribed` keeps an event subscription on A open meanwhile.
async fn superseded_attempt_reports_late<H: Harness>(
    late: fn() -> Result<(), JobError>,
    subscribed: bool,
) {
    let ctx = ctx::<H>().await;
    let release = Arc::new(Notify::new());
    let gate = Arc::clone(&release);
    let stale = ScriptedWorker::new(move |_| {
        let gate = Arc::clone(&gate);
        async move {
            gate.notified().await;
            late()
        }
    });
    // No prefetch: A's only slot is taken, so only B claims the job once it is available again.
    let a = test_client(&ctx)
        .queue("default", 1)
        .prefetch(0)
        .worker(stale)
        .job_timeout(None)
        .build()
        .unwrap();
    let _events = subscribed.then(|| a.subscribe());
    let job = a.insert(Task { n: 1 }).await.unwrap();
    a.start().await.unwrap();
    wait_for("attempt 1 running", async || {
        count_in(&ctx, JobState::Running).await == 1
    })
    .await;

    // What a rescuer does when it presumes A dead: the job becomes available again.
    ctx.conn()
        .await
        .execute(
            &ctx.stmt("UPDATE {schema}.pgmill_job SET state = 'available' WHERE id = $1::bigint")
                .bind(job.id.0),
        )
        .await
        .unwrap();
    let fresh = ScriptedWorker::ok();
    let b = test_client(&ctx)
        .queue("default", 1)
        .worker(fresh.clone())
        .build()
        .unwrap();
    b.start().await.unwrap();
    wait_for("attempt 2 completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    b.stop().await;
    let completed = a.job_get(job.id).await.unwrap().unwrap();

    release.notify_one();
    a.stop().await;
    let after = a.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(after.state, JobState::Completed);
    assert_eq!(after.attempt, 2);
    assert!(after.errors.is_empty(), "the late error was not recorded");
    assert_eq!(
        after.finalized_at, completed.finalized_at,
        "B's completion stands"
    );
    assert_eq!(a.stats().superseded_results, 1);
    assert_eq!(a.stats().recorded_outcomes, 0);
}

/// Stop before start, stop twice and start after stop are all safe.
pub async fn stop_start_cycles_are_safe<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.stop().await;
    client.start().await.unwrap();
    client.start().await.unwrap();
    client.insert(Task { n: 1 }).await.unwrap();
    wait_for("first", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    client.stop().await;
    client.start().await.unwrap();
    client.insert(Task { n: 2 }).await.unwrap();
    wait_for("second", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    client.stop_and_cancel().await;
    assert_eq!(worker.total_runs(), 2);
}

/// A worker whose jobs with `n < 100` wait for a permit of `gate`; the others complete at once.
fn gated(gate: &Arc<tokio::sync::Semaphore>) -> ScriptedWorker {
    let gate = Arc::clone(gate);
    ScriptedWorker::new(move |run| {
        let gate = Arc::clone(&gate);
        async move {
            if run.n < 100 {
                gate.acquire().await.expect("gate open").forget();
            }
            Ok(())
        }
    })
}

/// A soft stop stops fetching on every queue at once, not queue after queue: with a job running
/// in each of two queues, a job inserted into the second queue after `stop()` was called never
/// runs, even once the second queue's slot is free while the first queue's job still runs.
pub async fn soft_stop_stops_fetching_on_every_queue_at_once<H: Harness>() {
    let ctx = ctx::<H>().await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let worker = gated(&gate);
    let client = test_client(&ctx)
        .queue("qa", 1)
        .queue("qb", 1)
        .worker(worker.clone())
        .build()
        .unwrap();
    for (n, queue) in [(1, "qa"), (2, "qb")] {
        client
            .insert_with(Task { n }, InsertOpts::new().queue(queue))
            .await
            .unwrap();
    }
    client.start().await.unwrap();
    // Started by the worker, not only claimed: a claimed job a slot has not taken yet is given
    // back by the stop.
    wait_for("a job running in each queue", async || {
        worker.total_runs() == 2
    })
    .await;
    let stopping = tokio::spawn({
        let client = client.clone();
        async move { client.stop().await }
    });
    wait_for("every producer stopped fetching", async || {
        client.health().await.producers_running == 0
    })
    .await;
    let late = client
        .insert_with(Task { n: 100 }, InsertOpts::new().queue("qb"))
        .await
        .unwrap();
    // qb's job ends first, freeing its slot while qa's job still runs.
    gate.add_permits(1);
    wait_for("one job completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    gate.add_permits(1);
    stopping.await.unwrap();
    let late = client.job_get(late.id).await.unwrap().expect("late job");
    assert_eq!(late.state, JobState::Available);
    assert_eq!(late.attempt, 0);
    assert!(!worker.runs().contains_key(&late.id));
    let mut jobs = Vec::new();
    for id in worker.runs().keys() {
        jobs.push(client.job_get(*id).await.unwrap());
    }
    assert_eq!(
        count_in(&ctx, JobState::Completed).await,
        2,
        "{:?}; runs {:?}; jobs {jobs:#?}",
        state_counts(&ctx).await,
        worker.runs(),
    );
}

/// A hard stop works at any point of a soft stop: `timeout(grace, client.stop())`, then
/// `client.stop_and_cancel()` interrupts the job still running, which goes back to `available`
/// with its attempt given back, and the client ends stopped.
pub async fn hard_stop_works_during_a_soft_stop<H: Harness>() {
    let ctx = ctx::<H>().await;
    let forever = ScriptedWorker::new(|_| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(())
    });
    let client = test_client(&ctx)
        .queue("default", 1)
        .worker(forever.clone())
        .build()
        .unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    client.start().await.unwrap();
    wait_for("job started", async || forever.total_runs() == 1).await;
    let soft = tokio::time::timeout(Duration::from_millis(300), client.stop()).await;
    assert!(
        soft.is_err(),
        "the soft stop waits for the job, which never ends"
    );
    client.stop_and_cancel().await;
    let job = client.job_get(job.id).await.unwrap().expect("job");
    assert_eq!(job.state, JobState::Available);
    assert_eq!(job.attempt, 0);
    assert!(job.errors.is_empty());
    let health = client.health().await;
    assert!(
        !health.started && health.producers_running == 0,
        "{health:?}"
    );
    // Stopping again, soft or hard, returns at once.
    client.stop().await;
    client.stop_and_cancel().await;
}

/// `stop_with_grace` stops softly when jobs end within the grace period, and interrupts the jobs
/// still running after it (their attempt given back).
pub async fn stop_with_grace_interrupts_only_after_the_grace<H: Harness>() {
    let ctx = ctx::<H>().await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let worker = gated(&gate);
    let client = test_client(&ctx)
        .queue("default", 1)
        .worker(worker.clone())
        .build()
        .unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    client.start().await.unwrap();
    wait_for("job started", async || worker.total_runs() == 1).await;
    assert!(!client.stop_with_grace(Duration::from_millis(200)).await);
    let row = client.job_get(job.id).await.unwrap().expect("job");
    assert_eq!((row.state, row.attempt), (JobState::Available, 0));

    client.start().await.unwrap();
    wait_for("job started again", async || worker.total_runs() == 2).await;
    gate.add_permits(1);
    assert!(client.stop_with_grace(Duration::from_secs(60)).await);
    let row = client.job_get(job.id).await.unwrap().expect("job");
    assert_eq!(row.state, JobState::Completed, "{row:#?}");
}
