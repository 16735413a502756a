//! A Postgres crash restart under running clients, on a private cluster.

use std::time::Duration;

use pgmill::{InsertParams, JobRescuerConfig, JobState};

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
    let done = crate::testdb::eventually(Duration::from_secs(60), async || {
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
