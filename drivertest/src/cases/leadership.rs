//! Leader election end to end: one leader, resignation hand-over, replacement of a dead leader,
//! never two leaders at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pgmill::{Client, ElectorConfig};

use crate::doomed::DoomedProcess;
use crate::scripted::{ScriptedWorker, test_client, wait_for};
use crate::{Harness, TestContext};

fn elector(interval_ms: u64, lease_ms: u64) -> ElectorConfig {
    let mut e = ElectorConfig::default();
    e.interval = Duration::from_millis(interval_ms);
    e.lease = Duration::from_millis(lease_ms);
    e
}

fn worker_client<D: pgmill::driver::Driver>(ctx: &TestContext<D>, e: ElectorConfig) -> Client<D> {
    test_client(ctx)
        .queue("default", 1)
        .worker(ScriptedWorker::ok())
        .elector(e)
        .build()
        .unwrap()
}

/// A lone client is elected; stopping it resigns (the lease row is gone).
pub async fn a_lone_client_leads_and_resigns_on_stop<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let client = worker_client(&ctx, ElectorConfig::default());
    client.start().await.unwrap();
    wait_for("elected", async || client.is_leader()).await;
    let term = client.leader().await.unwrap().expect("a lease");
    assert_eq!(term.leader_id, client.id());
    assert!(term.expires_at > term.elected_at);
    client.stop().await;
    assert!(!client.is_leader());
    assert_eq!(client.leader().await.unwrap(), None);
}

/// When the leader stops, a follower takes over at once (told by notification, long before its
/// next election attempt).
pub async fn resignation_hands_over_at_once<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let slow = elector(120_000, 240_000);
    let a = worker_client(&ctx, slow.clone());
    a.start().await.unwrap();
    wait_for("a elected", async || a.is_leader()).await;
    let b = worker_client(&ctx, slow);
    b.start().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!b.is_leader());
    a.stop().await;
    let took_over =
        crate::testdb::eventually(Duration::from_secs(30), async || b.is_leader()).await;
    assert!(took_over, "the follower took over after the resignation");
    assert_eq!(b.leader().await.unwrap().unwrap().leader_id, b.id());
    b.stop().await;
}

/// Five clients: never two leaders at once; when the leader's process dies without resigning, a
/// new leader is elected once its lease runs out.
pub async fn five_clients_never_overlap_and_a_dead_leader_is_replaced<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let e = elector(100, 800);
    // The first leader lives in a process of its own, so it can die without cleaning up.
    let doomed = DoomedProcess::new();
    let (url, schema) = (ctx.url.clone(), ctx.schema.clone());
    let first: Client<H::Driver> = doomed
        .run({
            let e = e.clone();
            async move {
                let driver = H::connect(&url, 4).await.unwrap();
                let c = Client::builder(driver)
                    .schema(schema)
                    .queue("default", 1)
                    .worker(ScriptedWorker::ok())
                    .elector(e)
                    .build()
                    .unwrap();
                c.start().await.unwrap();
                c
            }
        })
        .await;
    wait_for("first elected", async || first.is_leader()).await;
    let others: Vec<_> = (0..4).map(|_| worker_client(&ctx, e.clone())).collect();
    for c in &others {
        c.start().await.unwrap();
    }
    let first_term = ctx_leader(&others[0]).await;
    assert_eq!(first_term.leader_id, first.id());

    // Watch every live client's view continuously: at most one leader at any instant.
    let watching = Arc::new(AtomicBool::new(true));
    let first_killed = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (others, first, watching) = (others.clone(), first.clone(), Arc::clone(&watching));
        let first_killed = Arc::clone(&first_killed);
        tokio::spawn(async move {
            let mut first_alive = true;
            let mut samples = 0_u64;
            while watching.load(Ordering::SeqCst) {
                first_alive &= !first_killed.load(Ordering::SeqCst);
                let leaders = others.iter().filter(|c| c.is_leader()).count()
                    + usize::from(first_alive && first.is_leader());
                assert!(leaders <= 1, "{leaders} leaders at once");
                samples += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            samples
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    first_killed.store(true, Ordering::SeqCst);
    doomed.kill();
    wait_for("a new leader", async || {
        others.iter().any(Client::is_leader)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    watching.store(false, Ordering::SeqCst);
    assert!(sampler.await.expect("no overlap seen") > 50);
    let new_term = ctx_leader(&others[0]).await;
    assert_ne!(new_term.leader_id, first_term.leader_id);
    assert!(
        new_term.elected_at >= first_term.expires_at,
        "terms do not overlap"
    );
    for c in &others {
        c.stop().await;
    }
}

async fn ctx_leader<D: pgmill::driver::Driver>(c: &Client<D>) -> pgmill::admin::LeaderRow {
    let mut row = None;
    wait_for("a lease row", async || {
        row = c.leader().await.unwrap();
        row.is_some()
    })
    .await;
    row.unwrap()
}

/// A leader cut off from the database (its role may no longer log in and its backends are gone)
/// steps down on its own before its lease runs out, so the follower elected afterwards never
/// overlaps with it.
pub async fn a_cut_off_leader_steps_down_before_its_lease_ends<H: Harness>() {
    let cluster = crate::testdb::Cluster::start().expect("private cluster");
    let ctx = TestContext::<H::Driver>::on::<H>(cluster.url()).await;
    pgmill::Migrator::new(ctx.schema.clone())
        .up(&mut ctx.conn().await, None)
        .await
        .unwrap();
    ctx.script("CREATE ROLE cut_off LOGIN SUPERUSER").await;
    let cut_off_url = cluster.url().replace("postgres@", "cut_off@");
    let e = elector(100, 1_000);
    let build = |driver: H::Driver| {
        Client::builder(driver)
            .schema(ctx.schema.clone())
            .queue("default", 1)
            .worker(ScriptedWorker::ok())
            .elector(e.clone())
            .build()
            .unwrap()
    };
    let a = build(H::connect(&cut_off_url, 4).await.unwrap());
    a.start().await.unwrap();
    wait_for("a elected", async || a.is_leader()).await;
    let b = build(ctx.driver.clone());
    b.start().await.unwrap();

    let watching = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (a, b, watching) = (a.clone(), b.clone(), Arc::clone(&watching));
        tokio::spawn(async move {
            let mut samples = 0_u64;
            while watching.load(Ordering::SeqCst) {
                assert!(!(a.is_leader() && b.is_leader()), "two leaders at once");
                samples += 1;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            samples
        })
    };
    ctx.script("ALTER ROLE cut_off NOLOGIN").await;
    // Terminated until it steps down: a connection whose login began before NOLOGIN may only
    // show up after one sweep of terminations.
    wait_for("a stepped down", async || {
        ctx.script(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'cut_off'",
        )
        .await;
        !a.is_leader()
    })
    .await;
    wait_for("b took over", async || b.is_leader()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    watching.store(false, Ordering::SeqCst);
    assert!(sampler.await.expect("never two leaders") > 100);
    ctx.script("ALTER ROLE cut_off LOGIN").await;
    b.stop().await;
    a.stop().await;
}
