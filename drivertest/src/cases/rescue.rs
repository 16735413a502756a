//! Rescue within its bound whoever dies, the leader included, and rescued or released jobs keeping
//! their place in their queue.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pgmill::driver::{Executor, Transaction};
use pgmill::maintenance::{JobRescuer, JobRescuerConfig};
use pgmill::{Client, ElectorConfig, InsertParams, JobState};

use crate::doomed::DoomedProcess;
use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext};

fn fast_rescuer() -> JobRescuerConfig {
    let mut r = JobRescuerConfig::default();
    r.interval = Duration::from_millis(200);
    r.client_timeout = Duration::from_secs(1);
    r
}

/// A lease far longer than the test waits for anything: only the leader's stale heartbeat can end
/// its term in time.
fn long_lease() -> ElectorConfig {
    let mut e = ElectorConfig::default();
    e.interval = Duration::from_millis(200);
    e.lease = Duration::from_secs(600);
    e
}

/// A client in `doomed` whose attempts hang until it dies, with the given settings.
async fn hanging_client_in<H: Harness>(
    doomed: &DoomedProcess,
    ctx: &TestContext<H::Driver>,
    slots: usize,
    settings: Option<(Duration, ElectorConfig, JobRescuerConfig)>,
) -> Client<H::Driver> {
    let (url, schema) = (ctx.url.clone(), ctx.schema.clone());
    doomed
        .run(async move {
            let driver = H::connect(&url, 4).await.unwrap();
            let hang = ScriptedWorker::new(|_| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            });
            let mut b = Client::builder(driver)
                .schema(schema)
                .queue("default", slots)
                .prefetch(0)
                .job_timeout(None)
                .worker(hang);
            if let Some((heartbeat, elector, rescuer)) = settings {
                b = b
                    .heartbeat_interval(heartbeat)
                    .elector(elector)
                    .rescuer(rescuer);
            }
            let c = b.build().unwrap();
            c.start().await.unwrap();
            c
        })
        .await
}

/// The leader's process dies while running a job. A follower does not wait for the leader's lease
/// (ten minutes here) to end: it takes the lease over once the leader's client row stopped
/// heartbeating for the client timeout, and its rescuer gives the job back, so it runs again.
pub async fn a_killed_leaders_jobs_are_rescued_before_its_lease_ends<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let doomed = DoomedProcess::new();
    let fast = (Duration::from_millis(200), long_lease(), fast_rescuer());
    let leader = hanging_client_in::<H>(&doomed, &ctx, 2, Some(fast)).await;
    wait_for("the doomed client leads", async || leader.is_leader()).await;
    let inserter = pgmill::Inserter::new(ctx.schema.clone());
    let job = inserter
        .insert(&mut ctx.conn().await, Task { n: 1 })
        .await
        .unwrap();
    wait_for("the job runs in the leader", async || {
        count_in(&ctx, JobState::Running).await == 1
    })
    .await;

    let worker = ScriptedWorker::ok();
    let follower = test_client(&ctx)
        .queue("default", 2)
        .heartbeat_interval(Duration::from_millis(200))
        .elector(long_lease())
        .rescuer(fast_rescuer())
        .worker(worker.clone())
        .build()
        .unwrap();
    follower.start().await.unwrap();
    let leader_id = leader.id().to_owned();
    doomed.kill();

    wait_for("rescued and completed by the follower", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    assert!(follower.is_leader(), "the follower took the lease over");
    let term = follower.leader().await.unwrap().expect("a term");
    assert_eq!(term.leader_id, follower.id());
    follower.stop().await;
    let done = follower.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(done.attempt, 2, "{done:?}");
    assert!(
        done.errors[0].error.contains("stopped heartbeating"),
        "{:?}",
        done.errors
    );
    assert_eq!(
        done.attempted_by,
        vec![leader_id, follower.id().to_owned()],
        "{done:?}"
    );
    assert_eq!(worker.total_runs(), 1);
}

/// A job rescued from a dead client and one released as orphaned keep their scheduled time and
/// priority, so they run before the jobs queued behind them instead of after the whole backlog.
pub async fn rescued_and_released_jobs_keep_their_place_in_the_queue<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let inserter = pgmill::Inserter::new(ctx.schema.clone());
    let mut conn = ctx.conn().await;
    let rescued = inserter.insert(&mut conn, Task { n: 1000 }).await.unwrap();
    let released = inserter.insert(&mut conn, Task { n: 1001 }).await.unwrap();
    for n in 0..20 {
        inserter.insert(&mut conn, Task { n }).await.unwrap();
    }
    // Both claimed ten minutes ago (within the hard deadline): one by a client whose heartbeat stopped, one by a client that will
    // release it as an orphan (it holds no claim on it).
    ctx.script(&ctx.schema.render(&format!(
        "INSERT INTO {{schema}}.pgmill_client (id, hostname, pid, heartbeat_at) \
         VALUES ('dead', 'h', 1, now() - interval '1 hour');\
         UPDATE {{schema}}.pgmill_job SET state = 'running', attempt = 1, \
         attempted_at = now() - interval '10 minutes', claim_token = 7, \
         attempted_by = CASE id WHEN {r} THEN '{{dead}}' ELSE '{{releasing}}' END::text[] \
         WHERE id IN ({r}, {l});",
        r = rescued.id.0,
        l = released.id.0,
    )))
    .await;
    let rescuer = JobRescuer::new(ctx.driver.clone(), ctx.schema.clone(), fast_rescuer()).unwrap();
    assert_eq!(rescuer.run_once().await.unwrap().num_jobs_rescued, 1);
    let num_released = conn
        .execute(
            &ctx.stmt(include_str!(
                "../../../core/sql/job/job_release_orphaned.sql"
            ))
            .bind("releasing")
            .bind(Vec::<i64>::new())
            .bind(Vec::<i64>::new())
            .bind(1_000_000_i64)
            .bind(None::<String>),
        )
        .await
        .unwrap();
    assert_eq!(num_released, 1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let worker = {
        let order = Arc::clone(&order);
        ScriptedWorker::new(move |run| {
            order.lock().unwrap().push(run.n);
            async { Ok(()) }
        })
    };
    let client = test_client(&ctx)
        .queue("default", 1)
        .prefetch(0)
        .worker(worker)
        .build()
        .unwrap();
    for before in [&rescued, &released] {
        let after = client.job_get(before.id).await.unwrap().unwrap();
        assert_eq!(
            (after.state, after.scheduled_at, after.priority),
            (JobState::Available, before.scheduled_at, before.priority),
            "{after:?}"
        );
    }

    client.start().await.unwrap();
    wait_for("all completed", async || {
        count_in(&ctx, JobState::Completed).await == 22
    })
    .await;
    client.stop().await;
    let order = order.lock().unwrap().clone();
    assert_eq!(order[..2], [1000, 1001], "{order:?}");
}

/// With the default settings (3 s heartbeat, 15 s client timeout and lease), the leader and a
/// worker die at the same instant, each running two jobs, with a backlog queued behind them: a
/// survivor takes the lease over and runs the four jobs again within the promised 30 s (12 to 15 s
/// expected), ahead of the backlog (2,000 jobs of 100 ms on four slots: 50 s of work, longer than
/// the bound, so a rescue within it always finds some still queued): no more than one claim of
/// backlog jobs is claimed between a job's rescue and its new claim. Prints the figures.
pub async fn rescue_meets_its_bound_with_defaults_when_the_leader_dies<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let inserter = pgmill::Inserter::new(ctx.schema.clone());
    let (leader_process, worker_process) = (DoomedProcess::new(), DoomedProcess::new());
    let leader = hanging_client_in::<H>(&leader_process, &ctx, 2, None).await;
    wait_for("the first client leads", async || leader.is_leader()).await;
    let mut doomed_jobs = Vec::new();
    for n in 0..2 {
        let job = inserter.insert(&mut ctx.conn().await, Task { n }).await;
        doomed_jobs.push(job.unwrap().id);
    }
    wait_for("two running in the leader", async || {
        count_in(&ctx, JobState::Running).await == 2
    })
    .await;
    let _worker = hanging_client_in::<H>(&worker_process, &ctx, 2, None).await;
    for n in 2..4 {
        let job = inserter.insert(&mut ctx.conn().await, Task { n }).await;
        doomed_jobs.push(job.unwrap().id);
    }
    wait_for("two more running in the worker", async || {
        count_in(&ctx, JobState::Running).await == 4
    })
    .await;
    // The survivor's slots are busy with a backlog queued after the doomed jobs.
    let started = Arc::new(Mutex::new(std::collections::HashMap::new()));
    let worker = {
        let started = Arc::clone(&started);
        ScriptedWorker::new(move |run| {
            started
                .lock()
                .unwrap()
                .entry(run.id)
                .or_insert_with(tokio::time::Instant::now);
            async move {
                if run.n >= 100 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(())
            }
        })
    };
    let survivor = test_client(&ctx)
        .queue("default", 4)
        .worker(worker)
        .build()
        .unwrap();
    survivor.start().await.unwrap();
    let killed_at = tokio::time::Instant::now();
    leader_process.kill();
    worker_process.kill();
    let killed_db: chrono::DateTime<chrono::Utc> = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt("SELECT now() AS now"))
        .await
        .unwrap();
    let backlog: Vec<_> = (100..2_100)
        .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
        .collect();
    inserter
        .insert_many(&mut ctx.conn().await, &backlog)
        .await
        .unwrap();

    wait_for("the four doomed jobs ran again", async || {
        let started = started.lock().unwrap();
        doomed_jobs.iter().all(|id| started.contains_key(id))
    })
    .await;
    let rerun: Vec<Duration> = {
        let started = started.lock().unwrap();
        doomed_jobs
            .iter()
            .map(|id| started[id] - killed_at)
            .collect()
    };
    let backlog_left = count_in(&ctx, JobState::Available).await;
    let mut rescued = Vec::new();
    // For each doomed job, the backlog jobs claimed between its rescue and its new claim (both
    // by the database clock): kept in its place, it is claimed by the survivor's next claim, so
    // at most the one claim already under way when it was rescued (100 jobs, the default fetch
    // limit) goes before it; sent behind the backlog, every job still queued would.
    let mut overtaken = Vec::new();
    for id in &doomed_jobs {
        let job = survivor.job_get(*id).await.unwrap().unwrap();
        let rescued_at = job.errors[0].at;
        rescued.push((rescued_at - killed_db).to_std().unwrap_or_default());
        let claimed_again = job.attempted_at.expect("claimed again");
        let n: i64 = ctx
            .conn()
            .await
            .query_scalar(
                &ctx.stmt(
                    "SELECT count(*) AS n FROM {schema}.pgmill_job_all \
                     WHERE (args->>'n')::int >= 100 \
                       AND attempted_at > $1::timestamptz AND attempted_at < $2::timestamptz",
                )
                .bind(rescued_at)
                .bind(claimed_again),
            )
            .await
            .unwrap();
        overtaken.push(n);
    }
    // The case's figures, for docs/reliability.md (shown with --nocapture).
    #[allow(clippy::print_stdout)]
    {
        println!(
            "rescue with defaults, leader and a worker killed: rescued {rescued:.1?} and ran again \
         {rerun:.1?} after the kill; {backlog_left} of 2000 backlog jobs still queued then; \
         backlog jobs claimed between each rescue and its new claim: {overtaken:?}",
        );
    }
    assert!(survivor.is_leader(), "the survivor took the lease over");
    assert!(
        overtaken.iter().all(|n| *n <= 100),
        "the rescued jobs waited behind the backlog: {overtaken:?} backlog jobs were claimed \
         between their rescue and their new claim"
    );
    let slowest = rerun.iter().max().copied().unwrap_or_default();
    assert!(
        slowest < Duration::from_secs(30),
        "rescue took {slowest:?}, over the 30 s bound"
    );
    survivor.stop_and_cancel().await;
}

/// A fetch whose claim commits only after the client gave up on it (the engine's 30 s call
/// timeout; the claim is slowed down by a trigger here, as a frozen process or a stalled server
/// would) leaves a running row under a claim the client does not hold. The client reconciles: its
/// heartbeat releases the row (attempt given back), and the job runs once, under a later claim.
pub async fn a_fetch_that_timed_out_after_its_claim_committed_is_reconciled<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    ctx.script(&ctx.schema.render(
        "CREATE TABLE {schema}.slow_once (id int);
         INSERT INTO {schema}.slow_once VALUES (1);
         CREATE FUNCTION {schema}.slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF OLD.state = 'available' AND NEW.state = 'running' THEN
             DELETE FROM {schema}.slow_once;
             IF FOUND THEN PERFORM pg_sleep(36); END IF;
           END IF;
           RETURN NEW;
         END $$;
         CREATE TRIGGER slow_claim BEFORE UPDATE ON {schema}.pgmill_job
           FOR EACH ROW EXECUTE FUNCTION {schema}.slow_claim();",
    ))
    .await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 1)
        .heartbeat_interval(Duration::from_millis(200))
        .worker(worker.clone())
        .build()
        .unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    client.start().await.unwrap();
    wait_for("completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    assert_eq!(ctx.count("slow_once").await, 0, "the slow claim committed");
    let done = client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(worker.total_runs(), 1, "{done:?}");
    assert_eq!(
        done.attempt, 1,
        "the orphaned claim gave its attempt back: {done:?}"
    );
    assert_eq!(done.errors.len(), 1, "{done:?}");
    assert!(
        done.errors[0].error.contains("orphaned"),
        "{:?}",
        done.errors
    );
}

/// A dead client whose jobs a rescuer pass could not take (here the job's row is locked by
/// another transaction during the pass; in a run, its heartbeat expiring just after the pass read
/// the clock) is rescued as soon as it can be, not a whole wait later: the rescuer's next pass
/// comes at once while an expired client still has running jobs. (It used to wait for the next
/// live client's timeout, 20 s here, having lost sight of the expired one.)
pub async fn an_expired_client_missed_by_a_pass_is_rescued_at_the_next<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let job = pgmill::Inserter::new(ctx.schema.clone())
        .insert(&mut ctx.conn().await, Task { n: 1 })
        .await
        .unwrap();
    // A client dead for a minute, the job running under its name; and one dead for two hours,
    // running nothing, whose row a rescuer pass deletes.
    ctx.conn()
        .await
        .execute(&ctx.stmt(
            "INSERT INTO {schema}.pgmill_client (id, hostname, pid, heartbeat_at) \
             VALUES ('dead-client', 'gone', 1, now() - interval '60 seconds'), \
                    ('pass-probe', 'gone', 2, now() - interval '2 hours')",
        ))
        .await
        .unwrap();
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(
                "UPDATE {schema}.pgmill_job SET state = 'running', attempt = 1, \
                 attempted_at = now(), attempted_by = ARRAY['dead-client'], claim_token = 7 \
                 WHERE id = $1::bigint",
            )
            .bind(job.id.0),
        )
        .await
        .unwrap();
    let mut conn = ctx.conn().await;
    let mut lock = conn.begin().await.unwrap();
    lock.execute(
        &ctx.stmt("SELECT id FROM {schema}.pgmill_job WHERE id = $1::bigint FOR UPDATE")
            .bind(job.id.0),
    )
    .await
    .unwrap();

    let mut rescuer = JobRescuerConfig::default();
    rescuer.interval = Duration::from_secs(600);
    rescuer.client_timeout = Duration::from_secs(20);
    let leader = test_client(&ctx)
        .queue("other", 1)
        .worker(ScriptedWorker::ok())
        .rescuer(rescuer)
        .elector(long_lease())
        .build()
        .unwrap();
    leader.start().await.unwrap();
    wait_for("the client leads", async || leader.is_leader()).await;
    // The rescuer's first pass runs when leadership starts, and skips the locked row. The pass
    // ends by deleting the rows of clients dead past the retention (an hour) that run no job:
    // the probe's row going is the sign that a whole pass ran while the row was locked.
    wait_for("a rescuer pass deleted the probe's row", async || {
        let left: i64 =
            ctx.conn()
                .await
                .query_scalar(&ctx.stmt(
                    "SELECT count(*) AS n FROM {schema}.pgmill_client WHERE id = 'pass-probe'",
                ))
                .await
                .unwrap();
        left == 0
    })
    .await;
    assert_eq!(
        count_in(&ctx, JobState::Running).await,
        1,
        "the pass skipped the locked row"
    );
    lock.rollback().await.unwrap();

    let rescued = crate::testdb::eventually(Duration::from_secs(10), async || {
        count_in(&ctx, JobState::Available).await == 1
    })
    .await;
    assert!(
        rescued,
        "the job of the expired client was not rescued within 10 s of its row being free"
    );
    let row = leader.job_get(job.id).await.unwrap().unwrap();
    assert!(
        row.errors[0].error.contains("stopped heartbeating"),
        "{:?}",
        row.errors
    );
    leader.stop().await;
}

/// A client claims nothing before its heartbeat has registered its row. The rescuer takes a job
/// whose client has no row for one of a client that vanished, and rescues it only after seeing
/// the row missing for a whole client timeout: a client that died between its first claim and its
/// first heartbeat left its jobs stuck for up to twice the timeout (a kill under load right after
/// a start broke the 30 s bound above). Here the client table is locked, so the first heartbeat
/// waits: the queued job stays available until the lock goes, then runs.
pub async fn a_client_claims_nothing_before_its_row_exists<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let inserter = pgmill::Inserter::new(ctx.schema.clone());
    inserter
        .insert(&mut ctx.conn().await, Task { n: 1 })
        .await
        .unwrap();
    let mut locker = ctx.conn().await;
    let mut tx = locker.begin().await.unwrap();
    tx.execute(&ctx.stmt("LOCK TABLE {schema}.pgmill_client IN ACCESS EXCLUSIVE MODE"))
        .await
        .unwrap();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(ScriptedWorker::new(|_| async { Ok(()) }))
        .build()
        .unwrap();
    // Started from a task of its own: nothing says `start` itself does not touch the table.
    let starting = tokio::spawn({
        let client = client.clone();
        async move { client.start().await }
    });
    // Several of the client's 50 ms polls.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        count_in(&ctx, JobState::Available).await,
        1,
        "a job was claimed before the client's row existed"
    );
    tx.rollback().await.unwrap();
    starting.await.unwrap().unwrap();
    wait_for("the job ran once the row existed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    assert_eq!(ctx.count("pgmill_client").await, 1);
    client.stop().await;
}
