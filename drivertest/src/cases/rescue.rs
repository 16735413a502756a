//! Rescue within its bound whoever dies, the leader included, and rescued or released jobs keeping
//! their place in their queue.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pgmill::driver::Executor;
use pgmill::maintenance::{JobRescuer, JobRescuerConfig};
use pgmill::{Client, ElectorConfig, JobState};

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

/// The leader's process dies while running a job. A follower does not wait for the leader's lease
/// (ten minutes here) to end: it takes the lease over once the leader's client row stopped
/// heartbeating for the client timeout, and its rescuer gives the job back, so it runs again.
pub async fn a_killed_leaders_jobs_are_rescued_before_its_lease_ends<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let doomed = DoomedProcess::new();
    let (url, schema) = (ctx.url.clone(), ctx.schema.clone());
    let leader: Client<H::Driver> = doomed
        .run(async move {
            let driver = H::connect(&url, 4).await.unwrap();
            let hang = ScriptedWorker::new(|_| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            });
            let c = Client::builder(driver)
                .schema(schema)
                .queue("default", 2)
                .heartbeat_interval(Duration::from_millis(200))
                .elector(long_lease())
                .rescuer(fast_rescuer())
                .job_timeout(None)
                .worker(hang)
                .build()
                .unwrap();
            c.start().await.unwrap();
            c
        })
        .await;
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
            .bind(Vec::<i64>::new()),
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
