//! The scheduler moves due scheduled and retryable jobs to available, looking ahead to its next
//! pass, in bounded batches.

use std::time::Duration;

use chrono::TimeDelta;
use pgmill::driver::Executor;
use pgmill::maintenance::{JobScheduler, JobSchedulerConfig};
use pgmill::{InsertOpts, InsertParams, JobState};

use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext};

fn scheduler<D: pgmill::driver::Driver>(
    ctx: &TestContext<D>,
    interval: Duration,
    limit: usize,
) -> JobScheduler<D> {
    let mut config = JobSchedulerConfig::default();
    config.interval = interval;
    config.limit = limit;
    JobScheduler::new(ctx.driver.clone(), ctx.schema.clone(), config).unwrap()
}

fn in_secs(secs: i64) -> InsertParams {
    InsertParams::from_args(
        &Task { n: secs },
        Some(InsertOpts::new().schedule_in(TimeDelta::seconds(secs))),
    )
    .unwrap()
}

/// Due jobs (and those due within the look-ahead) become available; later ones stay scheduled,
/// and early ones keep their `scheduled_at`.
pub async fn due_jobs_become_available_and_keep_their_time<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let rows = client
        .insert_many(&[in_secs(2), in_secs(3_600)])
        .await
        .unwrap();
    ctx.conn()
        .await
        .execute(&ctx.stmt("UPDATE {schema}.pgmill_job SET scheduled_at = now() - interval '1 second', state = 'retryable' WHERE id = $1::bigint").bind(rows[1].id.0))
        .await
        .unwrap();
    let soon = client
        .insert_with(
            Task { n: 0 },
            InsertOpts::new().schedule_in(TimeDelta::seconds(30)),
        )
        .await
        .unwrap();
    let r = scheduler(&ctx, Duration::from_secs(10), 100)
        .run_once()
        .await
        .unwrap();
    assert_eq!(r.num_jobs_scheduled(), 2, "{r:?}");
    assert_eq!(r.num_jobs_by_queue["default"], 2);
    let early = client.job_get(rows[0].id).await.unwrap().unwrap();
    assert_eq!(early.state, JobState::Available);
    assert_eq!(early.scheduled_at, rows[0].scheduled_at, "kept its time");
    assert_eq!(
        client.job_get(rows[1].id).await.unwrap().unwrap().state,
        JobState::Available
    );
    assert_eq!(
        client.job_get(soon.id).await.unwrap().unwrap().state,
        JobState::Scheduled
    );
    assert_eq!(
        scheduler(&ctx, Duration::from_secs(10), 100)
            .run_once()
            .await
            .unwrap()
            .num_jobs_scheduled(),
        0
    );
}

/// More due jobs than the batch limit are all moved in one pass, batch by batch.
pub async fn batches_are_bounded_and_repeated<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let params: Vec<_> = (0..25).map(|_| in_secs(1)).collect();
    client.insert_many(&params).await.unwrap();
    let r = scheduler(&ctx, Duration::from_secs(5), 10)
        .run_once()
        .await
        .unwrap();
    assert_eq!(r.num_jobs_scheduled(), 25);
    assert_eq!(count_in(&ctx, JobState::Available).await, 25);
}

/// A running client runs a job scheduled a moment ahead once it is due.
pub async fn client_runs_a_job_scheduled_ahead<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let mut config = JobSchedulerConfig::default();
    config.interval = Duration::from_millis(100);
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .scheduler(config)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client
        .insert_with(
            Task { n: 1 },
            InsertOpts::new().schedule_in(TimeDelta::milliseconds(500)),
        )
        .await
        .unwrap();
    assert_eq!(job.state, JobState::Scheduled);
    wait_for("scheduled job ran", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let done = client.job_get(job.id).await.unwrap().unwrap();
    assert!(
        done.attempted_at.unwrap() >= done.scheduled_at,
        "did not run early"
    );
}
