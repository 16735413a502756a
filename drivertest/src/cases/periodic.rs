//! Durable periodic jobs: each tick enqueued once (also with several clients), missed-tick
//! policies, run on start, pausing, and statistics updated by concurrent completions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pgmill::driver::Executor;
use pgmill::{
    Client, ElectorConfig, InsertOpts, InsertParams, JobError, JobState, MissedTicks, PeriodicJob,
    Schedule,
};
use serde_json::json;

use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext};

fn every(ms: u64) -> Schedule {
    Schedule::every(Duration::from_millis(ms)).unwrap()
}

fn quick_elector() -> ElectorConfig {
    let mut e = ElectorConfig::default();
    e.interval = Duration::from_millis(100);
    e.lease = Duration::from_millis(2_000);
    e
}

fn periodic_client<D: pgmill::driver::Driver>(
    ctx: &TestContext<D>,
    worker: ScriptedWorker,
    jobs: Vec<PeriodicJob>,
) -> Client<D> {
    let mut b = test_client(ctx)
        .queue("default", 4)
        .worker(worker)
        .elector(quick_elector())
        .periodic_interval(Duration::from_millis(50));
    for j in jobs {
        b = b.periodic(j);
    }
    b.build().unwrap()
}

/// Ticks of an interval schedule are enqueued one job each, counted in the schedule's row.
///
/// The row's count is bumped in the transaction that inserts the job, so a tick enqueued twice
/// would count twice too: the jobs themselves are checked. Ticks follow one another every
/// 300 ms from the first (`next_run_at` stays on that grid), and a tick's job is inserted (its
/// `created_at`, the transaction's `now()`) once the tick is due and before the next tick after
/// that moment is taken: so no two jobs of distinct ticks are created within one 300 ms step of
/// the grid, and two jobs in one step are one tick enqueued twice.
pub async fn each_tick_is_enqueued_once_with_several_clients<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let job = || PeriodicJob::new("tick", every(300), || Task { n: 0 }).unwrap();
    let worker = ScriptedWorker::ok();
    let clients: Vec<_> = (0..3)
        .map(|_| periodic_client(&ctx, worker.clone(), vec![job()]))
        .collect();
    for c in &clients {
        c.start().await.unwrap();
    }
    wait_for("four ticks completed", async || {
        count_in(&ctx, JobState::Completed).await >= 4
    })
    .await;
    for c in &clients {
        c.stop().await;
    }
    let row = clients[0].periodic_get("tick").await.unwrap().unwrap();
    let jobs = ctx.count("pgmill_job_all").await;
    assert_eq!(row.run_count, jobs, "one job per tick, never two");
    let created: Vec<chrono::DateTime<chrono::Utc>> = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT created_at FROM {schema}.pgmill_job_all \
             WHERE metadata->>'periodic' = 'tick' ORDER BY created_at",
        ))
        .await
        .unwrap()
        .iter()
        .map(|r| r.get("created_at").unwrap())
        .collect();
    assert_eq!(created.len() as i64, jobs, "every job is the schedule's");
    let step_us = 300_000;
    let steps: Vec<i64> = created
        .iter()
        .map(|at| {
            (*at - row.next_run_at)
                .num_microseconds()
                .unwrap()
                .div_euclid(step_us)
        })
        .collect();
    assert!(
        steps.windows(2).all(|w| w[0] < w[1]),
        "two jobs within one 300 ms step of the schedule (steps {steps:?} before the next run \
         at {}): a tick was enqueued twice",
        row.next_run_at
    );
    assert_eq!(row.success_count, count_in(&ctx, JobState::Completed).await);
    assert_eq!(row.schedule, "every 300ms");
    assert!(row.last_job_id.is_some() && row.last_success_at.is_some());
}

/// After an outage, `CatchUpOnce` enqueues one job for all missed ticks and `Skip` none; both move
/// on to the next tick.
pub async fn missed_ticks_are_caught_up_once_or_skipped<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let hourly = || every(3_600_000);
    let jobs = vec![
        PeriodicJob::new("catch_up", hourly(), || Task { n: 1 }).unwrap(),
        PeriodicJob::new("skip", hourly(), || Task { n: 2 })
            .unwrap()
            .missed_ticks(MissedTicks::Skip),
    ];
    let worker = ScriptedWorker::ok();
    let client = periodic_client(&ctx, worker.clone(), jobs.clone());
    // Register, then pretend the schedules were last due 5 hours ago.
    client.start().await.unwrap();
    wait_for("registered", async || {
        client.periodic_list().await.unwrap().len() == 2
    })
    .await;
    client.stop().await;
    ctx.script(
        &ctx.schema
            .render("UPDATE {schema}.pgmill_periodic SET next_run_at = now() - interval '5 hours'"),
    )
    .await;
    let client = periodic_client(&ctx, worker.clone(), jobs);
    client.start().await.unwrap();
    wait_for("caught up", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    wait_for("both advanced", async || {
        client
            .periodic_list()
            .await
            .unwrap()
            .iter()
            .all(|p| p.next_run_at > chrono::Utc::now())
    })
    .await;
    client.stop().await;
    let catch_up = client.periodic_get("catch_up").await.unwrap().unwrap();
    let skip = client.periodic_get("skip").await.unwrap().unwrap();
    assert_eq!((catch_up.run_count, skip.run_count), (1, 0));
    assert_eq!(ctx.count("pgmill_job_all").await, 1);
}

/// `run_on_start` enqueues at once; a paused schedule enqueues nothing until resumed.
pub async fn run_on_start_and_pause_resume<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let worker = ScriptedWorker::ok();
    let hourly = PeriodicJob::new("hourly", every(3_600_000), || Task { n: 1 })
        .unwrap()
        .run_on_start(true);
    let fast = PeriodicJob::new("fast", every(100), || Task { n: 2 }).unwrap();
    let client = periodic_client(&ctx, worker.clone(), vec![hourly, fast]);
    client.start().await.unwrap();
    wait_for("run on start", async || {
        client
            .periodic_get("hourly")
            .await
            .unwrap()
            .is_some_and(|p| p.run_count == 1)
    })
    .await;
    assert!(client.periodic_pause("fast").await.unwrap());
    assert!(!client.periodic_pause("nope").await.unwrap());
    let paused_at = client
        .periodic_get("fast")
        .await
        .unwrap()
        .unwrap()
        .run_count;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        client
            .periodic_get("fast")
            .await
            .unwrap()
            .unwrap()
            .run_count,
        paused_at
    );
    assert!(client.periodic_resume("fast").await.unwrap());
    wait_for("resumed", async || {
        client
            .periodic_get("fast")
            .await
            .unwrap()
            .unwrap()
            .run_count
            > paused_at
    })
    .await;
    client.stop().await;
}

/// Failures and consecutive failures are counted; a success resets the streak.
pub async fn statistics_count_failures_and_reset_the_streak<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let failing = Arc::new(AtomicBool::new(true));
    let flag = Arc::clone(&failing);
    let worker = ScriptedWorker::new(move |_| {
        let fail = flag.load(Ordering::SeqCst);
        async move {
            if fail {
                Err(JobError::discard("nope"))
            } else {
                Ok(())
            }
        }
    });
    let client = periodic_client(
        &ctx,
        worker,
        vec![PeriodicJob::new("p", every(150), || Task { n: 0 }).unwrap()],
    );
    client.start().await.unwrap();
    wait_for("three failures", async || {
        client
            .periodic_get("p")
            .await
            .unwrap()
            .is_some_and(|p| p.consecutive_failures >= 3)
    })
    .await;
    failing.store(false, Ordering::SeqCst);
    wait_for("a success resets the streak", async || {
        client
            .periodic_get("p")
            .await
            .unwrap()
            .is_some_and(|p| p.consecutive_failures == 0)
    })
    .await;
    client.stop().await;
    let p = client.periodic_get("p").await.unwrap().unwrap();
    assert!(p.failure_count >= 3 && p.success_count >= 1, "{p:?}");
    assert!(p.last_failure_at.is_some() && p.last_success_at.is_some());
    assert_eq!(
        p.success_count + p.failure_count,
        count_in(&ctx, JobState::Completed).await + count_in(&ctx, JobState::Discarded).await
    );
}

/// Many clients completing one schedule's jobs at once update its statistics exactly, without
/// errors or duplicate rows.
pub async fn concurrent_completions_update_statistics_exactly<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let registrar = periodic_client(
        &ctx,
        ScriptedWorker::ok(),
        vec![PeriodicJob::new("shared", every(3_600_000), || Task { n: 0 }).unwrap()],
    );
    registrar.start().await.unwrap();
    wait_for("registered", async || {
        registrar.periodic_get("shared").await.unwrap().is_some()
    })
    .await;
    registrar.stop().await;
    let params: Vec<_> = (0..600)
        .map(|n| {
            InsertParams::from_args(
                &Task { n },
                Some(InsertOpts::new().metadata(json!({"periodic": "shared"}))),
            )
            .unwrap()
        })
        .collect();
    registrar.insert_bulk(&params).await.unwrap();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            test_client(&ctx)
                .queue("default", 10)
                .fetch_limit(5)
                .worker(ScriptedWorker::ok())
                .build()
                .unwrap()
        })
        .collect();
    for c in &clients {
        c.start().await.unwrap();
    }
    wait_for("all completed", async || {
        count_in(&ctx, JobState::Completed).await == 600
    })
    .await;
    for c in &clients {
        c.stop().await;
    }
    let p = registrar.periodic_get("shared").await.unwrap().unwrap();
    assert_eq!(p.success_count, 600);
    let rows: i64 = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt("SELECT count(*) AS n FROM {schema}.pgmill_periodic"))
        .await
        .unwrap();
    assert_eq!(rows, 1);
}
