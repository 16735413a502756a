//! Durable periodic jobs: each tick enqueued once (also with several clients), missed-tick
//! policies, run on start, pausing, statistics updated by concurrent completions, schedules in a
//! time zone, and leaders of the previous schema version leaving zoned schedules alone.

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

/// Reads one value with a statement of the test's schema.
async fn scalar<D: pgmill::driver::Driver, T: pgmill::driver::FromValue + Send>(
    ctx: &TestContext<D>,
    stmt: pgmill::driver::Statement,
) -> T {
    ctx.conn()
        .await
        .query_scalar(&stmt)
        .await
        .expect("scalar query")
}

/// A cron schedule in a time zone ticks at the instant its zone's wall clock gives, by the
/// database clock, and its tick is enqueued once. Asia/Kathmandu is UTC+05:45 all year, so the
/// schedule evaluated in UTC would be hours and minutes off.
pub async fn a_zoned_schedule_ticks_once_at_its_zone_s_instant<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let zone = "Asia/Kathmandu";
    // A tick a few seconds ahead, written as Kathmandu's wall clock, converted by Postgres.
    let due: chrono::DateTime<chrono::Utc> = scalar(
        &ctx,
        ctx.stmt("SELECT date_trunc('second', now()) + interval '6 seconds' AS t"),
    )
    .await;
    let wall: String = scalar(
        &ctx,
        ctx.stmt("SELECT to_char($1::timestamptz AT TIME ZONE $2::text, 'SS MI HH24') AS t")
            .bind(due)
            .bind(zone),
    )
    .await;
    let schedule = Schedule::cron_in(&format!("{wall} * * *"), zone).unwrap();
    let job = PeriodicJob::new("zoned", schedule, || Task { n: 0 }).unwrap();
    let client = periodic_client(&ctx, ScriptedWorker::ok(), vec![job]);
    client.start().await.unwrap();
    wait_for("registered", async || {
        client.periodic_get("zoned").await.unwrap().is_some()
    })
    .await;
    let row = client.periodic_get("zoned").await.unwrap().unwrap();
    assert_eq!(row.next_run_at, due, "{row:?}");
    assert_eq!(row.time_zone.as_deref(), Some(zone));
    assert_eq!(row.schedule, format!("cron {wall} * * * in {zone}"));
    let stored: chrono::DateTime<chrono::Utc> = scalar(
        &ctx,
        ctx.stmt("SELECT next_run_at FROM {schema}.pgmill_periodic WHERE name = 'zoned'"),
    )
    .await;
    assert_eq!(
        stored.to_rfc3339(),
        "9999-12-31T00:00:00+00:00",
        "the column older clients read never comes due"
    );
    wait_for("the tick ran", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    let row = client.periodic_get("zoned").await.unwrap().unwrap();
    client.stop().await;
    assert_eq!(row.run_count, 1);
    assert_eq!(ctx.count("pgmill_job_all").await, 1, "enqueued once");
    assert!(
        row.last_run_at.is_some_and(|t| t >= due),
        "enqueued at or after its instant: {row:?}"
    );
    assert_eq!(row.next_run_at, due + chrono::TimeDelta::days(1));
    let tick: String = scalar(
        &ctx,
        ctx.stmt("SELECT metadata->>'periodic_tick' AS t FROM {schema}.pgmill_job_all"),
    )
    .await;
    assert_eq!(
        tick,
        due.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    );
}

/// The statements a leader of schema version 9 runs for periodic jobs, as it sends them: it
/// knows no time zones and reads and writes only `schedule` and `next_run_at`.
mod version_9 {
    pub(super) const GET_DUE: &str = "SELECT p.name AS name, p.next_run_at AS next_run_at, \
        now() AS db_now FROM {schema}.pgmill_periodic AS p \
        WHERE p.name = ANY($1::text[]) AND NOT p.paused AND p.next_run_at <= now() \
        ORDER BY p.next_run_at FOR UPDATE SKIP LOCKED";
    pub(super) const UPSERT: &str = "INSERT INTO {schema}.pgmill_periodic AS p \
        (name, schedule, next_run_at) VALUES ($1::text, $2::text, $3::timestamptz) \
        ON CONFLICT (name) DO UPDATE SET schedule = EXCLUDED.schedule, \
        next_run_at = CASE WHEN p.schedule <> EXCLUDED.schedule THEN EXCLUDED.next_run_at \
        WHEN $4::boolean THEN least(p.next_run_at, now()) ELSE p.next_run_at END, \
        updated_at = now() RETURNING p.name AS name, p.next_run_at AS next_run_at";
    pub(super) const ADVANCE: &str = "UPDATE {schema}.pgmill_periodic AS p \
        SET next_run_at = $3::timestamptz, \
        last_run_at = CASE WHEN $4::bigint IS NULL THEN p.last_run_at ELSE now() END, \
        last_job_id = coalesce($4::bigint, p.last_job_id), \
        run_count = p.run_count + CASE WHEN $4::bigint IS NULL THEN 0 ELSE 1 END, \
        updated_at = now() WHERE p.name = $1::text AND p.next_run_at = $2::timestamptz";
}

/// During an upgrade, a leader of schema version 9, whose own definition of a schedule has no time
/// zone, neither enqueues a zoned schedule nor turns it back into a UTC one by registering its
/// definition; it still runs the schedules without a zone. A leader of this version then enqueues
/// the zoned tick it left, once. Reverting the schema to version 9 leaves the zoned schedule due at
/// its next run.
pub async fn leaders_of_version_9_leave_zoned_schedules_alone<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let jobs = vec![
        PeriodicJob::new(
            "zoned",
            Schedule::cron_in("0 3 * * *", "Europe/Berlin").unwrap(),
            || Task { n: 1 },
        )
        .unwrap(),
        PeriodicJob::new("plain", Schedule::cron("0 3 * * *").unwrap(), || Task {
            n: 2,
        })
        .unwrap(),
    ];
    let client = periodic_client(&ctx, ScriptedWorker::ok(), jobs.clone());
    client.start().await.unwrap();
    wait_for("registered", async || {
        client.periodic_list().await.unwrap().len() == 2
    })
    .await;
    client.stop().await;
    // Both due a minute ago, written as this version's statements write a next run (to both
    // columns; the schema keeps a zoned row's `next_run_at` out of version 9's reach).
    ctx.script(&ctx.schema.render(
        "UPDATE {schema}.pgmill_periodic SET zoned_next_run_at = now() - interval '1 minute', \
         next_run_at = now() - interval '1 minute' WHERE name = 'zoned'; \
         UPDATE {schema}.pgmill_periodic SET next_run_at = now() - interval '1 minute' \
         WHERE name = 'plain'",
    ))
    .await;
    let zoned_before = client.periodic_get("zoned").await.unwrap().unwrap();
    let names = vec!["zoned".to_owned(), "plain".to_owned()];
    let due_for_version_9 = async || -> String {
        scalar(
            &ctx,
            ctx.stmt(&format!(
                "WITH d AS ({}) SELECT coalesce(string_agg(name, ','), '') AS n FROM d",
                version_9::GET_DUE
            ))
            .bind(names.clone()),
        )
        .await
    };
    assert_eq!(due_for_version_9().await, "plain");
    // Its term starts with registering its own definitions, without a zone, to run now.
    for (name, schedule) in [("zoned", "cron 0 3 * * *"), ("plain", "cron 0 3 * * *")] {
        ctx.conn()
            .await
            .execute(
                &ctx.stmt(version_9::UPSERT)
                    .bind(name)
                    .bind(schedule)
                    .bind(chrono::Utc::now() + chrono::TimeDelta::hours(1))
                    .bind(true),
            )
            .await
            .unwrap();
    }
    let zoned_after = client.periodic_get("zoned").await.unwrap().unwrap();
    assert_eq!(
        (
            &zoned_after.schedule,
            &zoned_after.time_zone,
            zoned_after.next_run_at
        ),
        (
            &zoned_before.schedule,
            &zoned_before.time_zone,
            zoned_before.next_run_at
        ),
        "the registration left the zoned schedule as it was"
    );
    assert_eq!(zoned_after.schedule, "cron 0 3 * * * in Europe/Berlin");
    assert_eq!(due_for_version_9().await, "plain");
    // It runs the plain schedule as before: enqueue (here: skip) and advance.
    let plain = client.periodic_get("plain").await.unwrap().unwrap();
    let advanced = ctx
        .conn()
        .await
        .execute(
            &ctx.stmt(version_9::ADVANCE)
                .bind("plain")
                .bind(plain.next_run_at)
                .bind(chrono::Utc::now() + chrono::TimeDelta::hours(2))
                .bind(None::<i64>),
        )
        .await
        .unwrap();
    assert_eq!(advanced, 1);
    assert_eq!(due_for_version_9().await, "");
    // A leader of this version enqueues the zoned tick, once, and nothing for the plain one.
    let client = periodic_client(&ctx, ScriptedWorker::ok(), jobs);
    client.start().await.unwrap();
    wait_for("the zoned tick ran", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    let row = client.periodic_get("zoned").await.unwrap().unwrap();
    client.stop().await;
    assert_eq!(row.run_count, 1);
    assert!(row.next_run_at > chrono::Utc::now(), "{row:?}");
    let enqueued: String = scalar(
        &ctx,
        ctx.stmt("SELECT string_agg(metadata->>'periodic', ',') AS p FROM {schema}.pgmill_job_all"),
    )
    .await;
    assert_eq!(enqueued, "zoned");
    // Back to version 9: the zoned schedule becomes a plain row due at its next run.
    pgmill::Migrator::new(ctx.schema.clone())
        .down(&mut ctx.conn().await, 9)
        .await
        .unwrap();
    let next: chrono::DateTime<chrono::Utc> = scalar(
        &ctx,
        ctx.stmt("SELECT next_run_at FROM {schema}.pgmill_periodic WHERE name = 'zoned'"),
    )
    .await;
    assert_eq!(next, row.next_run_at);
}

/// `CatchUpEach` enqueues one job per missed tick, the latest `max` of them, each marked with its
/// tick, all in the transaction that advances the schedule: two clients racing to lead enqueue
/// each tick once.
pub async fn missed_ticks_are_caught_up_each_up_to_the_bound<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let policy = MissedTicks::CatchUpEach {
        max: std::num::NonZeroU32::new(4).unwrap(),
    };
    let jobs = vec![
        PeriodicJob::new("hourly", every(3_600_000), || Task { n: 1 })
            .unwrap()
            .missed_ticks(policy),
    ];
    let client = periodic_client(&ctx, ScriptedWorker::ok(), jobs.clone());
    client.start().await.unwrap();
    wait_for("registered", async || {
        client.periodic_get("hourly").await.unwrap().is_some()
    })
    .await;
    client.stop().await;
    // Due five and a half hours ago: that tick and the five after it are missed.
    let due: chrono::DateTime<chrono::Utc> = scalar(
        &ctx,
        ctx.stmt(
            "UPDATE {schema}.pgmill_periodic \
             SET next_run_at = date_trunc('second', now()) - interval '5 hours 30 minutes' \
             WHERE name = 'hourly' RETURNING next_run_at",
        ),
    )
    .await;
    let clients: Vec<_> = (0..2)
        .map(|_| periodic_client(&ctx, ScriptedWorker::ok(), jobs.clone()))
        .collect();
    for c in &clients {
        c.start().await.unwrap();
    }
    wait_for("caught up", async || {
        count_in(&ctx, JobState::Completed).await == 4
    })
    .await;
    wait_for("advanced", async || {
        clients[0]
            .periodic_get("hourly")
            .await
            .unwrap()
            .is_some_and(|p| p.next_run_at > chrono::Utc::now())
    })
    .await;
    for c in &clients {
        c.stop().await;
    }
    let row = clients[0].periodic_get("hourly").await.unwrap().unwrap();
    assert_eq!(row.run_count, 4);
    assert_eq!(ctx.count("pgmill_job_all").await, 4, "each tick once");
    assert_eq!(row.next_run_at, due + chrono::TimeDelta::hours(6));
    let ticks: String = scalar(
        &ctx,
        ctx.stmt(
            "SELECT string_agg(metadata->>'periodic_tick', ',' ORDER BY id) AS t \
             FROM {schema}.pgmill_job_all",
        ),
    )
    .await;
    let expected: Vec<String> = (2..6)
        .map(|h| {
            (due + chrono::TimeDelta::hours(h)).to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        })
        .collect();
    assert_eq!(ticks, expected.join(","), "the latest four, oldest first");
}
