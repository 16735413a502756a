//! A Postgres crash restart under running clients, on a private cluster.

use std::time::Duration;

use pgmill::maintenance::JobRescuerConfig;
use pgmill::{InsertParams, JobState};

use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::testdb::Cluster;
use crate::{Harness, TestContext};

/// Restarting Postgres in immediate mode (a crash: UNLOGGED tables come back empty, every
/// connection drops) while jobs run: every job still completes, the clients keep running without
/// being restarted, and they re-register and re-elect a leader.
pub async fn crash_restart_while_jobs_run_loses_nothing<H: Harness>() {
    let cluster = Cluster::start().expect("private cluster");
    let ctx = TestContext::<H::Driver>::on::<H>(cluster.url()).await;
    pgmill::Migrator::new(ctx.schema.clone())
        .up(&mut ctx.conn().await, None)
        .await
        .unwrap();
    let worker = ScriptedWorker::new(|_| async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(())
    });
    let mut rescuer = JobRescuerConfig::default();
    rescuer.interval = Duration::from_millis(200);
    rescuer.client_timeout = Duration::from_secs(3);
    let clients: Vec<_> = (0..2)
        .map(|_| {
            test_client(&ctx)
                .queue("default", 8)
                .heartbeat_interval(Duration::from_millis(200))
                .rescuer(rescuer.clone())
                .worker(worker.clone())
                .build()
                .unwrap()
        })
        .collect();
    let params: Vec<_> = (0..400)
        .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
        .collect();
    clients[0].insert_bulk(&params).await.unwrap();
    for c in &clients {
        c.start().await.unwrap();
    }
    wait_for("work under way", async || {
        count_in(&ctx, JobState::Completed).await >= 50
    })
    .await;
    cluster.restart_immediate().expect("crash restart");
    let done = crate::eventually(Duration::from_secs(60), async || {
        count_in(&ctx, JobState::Completed).await == 400
    })
    .await;
    assert!(
        done,
        "not every job completed: {:?}",
        crate::scripted::state_counts(&ctx).await
    );
    wait_for("a leader again", async || {
        clients.iter().any(|c| c.is_leader())
    })
    .await;
    let registered: i64 = {
        use pgmill::driver::Executor;
        ctx.conn()
            .await
            .query_scalar(&ctx.stmt("SELECT count(*) AS n FROM {schema}.pgmill_client"))
            .await
            .unwrap()
    };
    assert_eq!(registered, 2, "both clients re-registered");
    for c in &clients {
        c.stop().await;
    }
    let runs = worker.runs();
    assert_eq!(runs.len(), 400, "every job ran");
    assert_eq!(count_in(&ctx, JobState::Discarded).await, 0);
}

/// A server that turns read-only (as a demoted primary does) makes the client close the pooled
/// connections that hit SQLSTATE 25006 and open new ones; once writes succeed again, work goes on.
pub async fn read_only_server_makes_the_client_reopen_connections<H: Harness>() {
    use crate::scripted::tagged_driver;
    use pgmill::driver::{Executor, Statement};

    let cluster = Cluster::start().expect("private cluster");
    let ctx = TestContext::<H::Driver>::on::<H>(cluster.url()).await;
    pgmill::Migrator::new(ctx.schema.clone())
        .up(&mut ctx.conn().await, None)
        .await
        .unwrap();
    let tag = format!("{}_ro", ctx.schema.name());
    let driver = tagged_driver::<H>(&ctx, &tag).await;
    let worker = ScriptedWorker::ok();
    let client = pgmill::Client::builder(driver)
        .schema(ctx.schema.clone())
        .queue("default", 2)
        .poll_interval(Duration::from_millis(50))
        .heartbeat_interval(Duration::from_millis(100))
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    client.insert(Task { n: 1 }).await.unwrap();
    wait_for("first job", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    let backends = async || -> Vec<i32> {
        let rows = ctx
            .conn()
            .await
            .query(
                &Statement::new(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = $1::text",
                )
                .bind(tag.as_str()),
            )
            .await
            .unwrap();
        rows.iter().map(|r| r.get("pid").unwrap()).collect()
    };
    let before = backends().await;
    ctx.script("ALTER SYSTEM SET default_transaction_read_only = on")
        .await;
    ctx.script("SELECT pg_reload_conf()").await;
    // Producers, heartbeat and elector keep writing and keep failing with 25006 for a while.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    ctx.script("ALTER SYSTEM RESET default_transaction_read_only")
        .await;
    ctx.script("SELECT pg_reload_conf()").await;
    client.insert(Task { n: 2 }).await.unwrap();
    wait_for("work resumed", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    let after = backends().await;
    let survivors: Vec<_> = before.iter().filter(|p| after.contains(p)).collect();
    // Only the listener (which never writes) may keep its backend.
    assert!(
        survivors.len() <= 1,
        "pooled connections were reused: {survivors:?} of {before:?}"
    );
    client.stop().await;
}
