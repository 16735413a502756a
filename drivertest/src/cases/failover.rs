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
    // The listener and at least one pooled connection: else nothing below could fail.
    assert!(
        before.len() >= 2,
        "the client's backends were not found: {before:?}"
    );
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

/// A failover to an asynchronous replica that stopped receiving WAL for a known stretch: the
/// replica is caught up, then cut off from the primary (its WAL receiver stopped); the primary
/// acknowledges 100 more inserts and completes more work; then it is killed, the replica
/// promoted, and the clients' one address (a [`Forwarder`](crate::testdb::Forwarder), as a
/// virtual IP) switched to it.
///
/// The 100 inserts acknowledged after the cut are gone: they are the application's to enqueue
/// again. Everything the new primary still has ends completed: jobs whose claim or outcome was
/// lost run again, and jobs running across the failover whose claim survived complete once, under
/// that claim. The new primary hands the ids of lost jobs out again to jobs inserted after the
/// failover; a client still running a lost job does not take the later job with its id over
/// (it would complete it without running it). The clients recover without a restart and work
/// jobs inserted after the failover, and nothing they report late changes an outcome the new
/// primary recorded. Prints the figures.
pub async fn promoted_replica_that_missed_acknowledged_commits_loses_only_those<H: Harness>() {
    use std::collections::{BTreeMap, BTreeSet, HashMap};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use pgmill::driver::{Executor, Statement};

    use crate::testdb::Forwarder;

    const KEPT: i64 = 400; // inserted before the cut: n in 0..400
    const LOST: i64 = 100; // acknowledged after the cut: n in 1000..1100
    // Inserted after the failover: n in 2000..2050 on the new primary before the clients
    // reconnect, then n in 3000..3050 by a client.
    const AFTER: i64 = 50;
    // Held until after the failover: two jobs the replica saw claimed, and two it never saw,
    // from the middle of those lost (the new primary hands their ids out again).
    let held_n = [0, 1, 1040, 1041];

    let primary = Cluster::start().expect("primary");
    let replica = primary.start_replica().expect("replica");
    let forwarder = Forwarder::start(primary.port()).expect("forwarder");
    let url = forwarder.url_for(&primary.url());
    // The test's own connections go straight to each server.
    let ctx = TestContext::<H::Driver>::on::<H>(primary.url()).await;
    pgmill::Migrator::new(ctx.schema.clone())
        .up(&mut ctx.conn().await, None)
        .await
        .unwrap();
    let rctx = TestContext::<H::Driver> {
        driver: H::connect(&replica.url(), 4)
            .await
            .expect("replica connects"),
        schema: ctx.schema.clone(),
        url: replica.url(),
    };

    let gate = Arc::new(AtomicBool::new(false));
    // Runs per job, by `n` (ids of lost jobs are handed out again by the new primary).
    let runs: Arc<Mutex<HashMap<i64, usize>>> = Arc::default();
    let worker = {
        let (gate, runs) = (gate.clone(), runs.clone());
        ScriptedWorker::new(move |run| {
            let (gate, runs) = (gate.clone(), runs.clone());
            async move {
                *runs.lock().unwrap().entry(run.n).or_default() += 1;
                if held_n.contains(&run.n) {
                    while !gate.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                } else {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                }
                Ok(())
            }
        })
    };
    let mut rescuer = JobRescuerConfig::default();
    rescuer.interval = Duration::from_millis(500);
    // Longer than any reconnect here: no client dies, so the rescuer must not be what recovers.
    rescuer.client_timeout = Duration::from_secs(20);
    let mut clients = Vec::new();
    for _ in 0..2 {
        let driver = H::connect(&url, 8)
            .await
            .expect("connects through the forwarder");
        let mut completer = pgmill::CompleterConfig::default();
        completer.linger = Duration::from_millis(1);
        clients.push(
            pgmill::Client::builder(driver)
                .schema(ctx.schema.clone())
                .poll_interval(Duration::from_millis(50))
                .completer(completer)
                // More slots than held jobs: a client holding all four still works its buffer.
                .queue("default", 6)
                .job_timeout(None)
                .heartbeat_interval(Duration::from_millis(200))
                .rescuer(rescuer.clone())
                .worker(worker.clone())
                .build()
                .unwrap(),
        );
    }
    let task = |n: i64| InsertParams::from_args(&Task { n }, None).unwrap();
    let by_n = async |c: &TestContext<H::Driver>, sql: &str| -> BTreeMap<i64, String> {
        let rows = c
            .conn()
            .await
            .query(&c.stmt(&format!(
                "SELECT (args->>'n')::bigint AS n, {sql} AS v FROM {{schema}}.pgmill_job_all"
            )))
            .await
            .expect("jobs by n");
        rows.iter()
            .map(|r| (r.get::<i64>("n").unwrap(), r.get::<String>("v").unwrap()))
            .collect()
    };
    let completed_except_held = async |c: &TestContext<H::Driver>, expected: usize| {
        let states = by_n(c, "state::text").await;
        let done = states.values().filter(|s| *s == "completed").count();
        let held_running = held_n
            .iter()
            .filter(|n| states.get(n).is_some_and(|s| s == "running"))
            .count();
        done == expected && held_running == held_n.len()
    };

    // Before the cut: 400 jobs inserted and being worked.
    clients[0]
        .insert_bulk(&(0..KEPT).map(task).collect::<Vec<_>>())
        .await
        .unwrap();
    for c in &clients {
        c.start().await.unwrap();
    }
    wait_for("work under way", async || {
        count_in(&ctx, JobState::Completed).await >= 100
    })
    .await;
    // The replica catches up with everything committed so far, then stops receiving WAL.
    let lsn: String = ctx
        .conn()
        .await
        .query_scalar(&Statement::new("SELECT pg_current_wal_lsn()::text AS lsn"))
        .await
        .unwrap();
    wait_for("the replica caught up", async || {
        rctx.conn()
            .await
            .query_scalar::<bool>(
                &Statement::new("SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn AS ok")
                    .bind(lsn.as_str()),
            )
            .await
            .unwrap()
    })
    .await;
    replica.stop_streaming().expect("replica stops streaming");
    wait_for("the primary has no replica", async || {
        ctx.conn()
            .await
            .query_scalar::<i64>(&Statement::new(
                "SELECT count(*) AS n FROM pg_stat_replication",
            ))
            .await
            .unwrap()
            == 0
    })
    .await;

    // After the cut: 100 inserts, each acknowledged, and the work goes on.
    let mut lost_ids = BTreeMap::new();
    for n in 1000..1000 + LOST {
        let inserted = clients[(n % 2) as usize].insert(Task { n }).await.unwrap();
        lost_ids.insert(n, inserted.job.id.0);
    }
    let drained = crate::testdb::eventually(Duration::from_secs(60), async || {
        completed_except_held(&ctx, (KEPT + LOST) as usize - held_n.len()).await
    })
    .await;
    assert!(
        drained,
        "everything but the held jobs completed on the primary: {:?}",
        by_n(&ctx, "state::text")
            .await
            .into_iter()
            .filter(|(_, s)| s != "completed")
            .collect::<Vec<_>>()
    );
    let behind: i64 = {
        let received: String = rctx
            .conn()
            .await
            .query_scalar(&Statement::new(
                "SELECT pg_last_wal_receive_lsn()::text AS lsn",
            ))
            .await
            .unwrap();
        ctx.conn()
            .await
            .query_scalar(
                &Statement::new(
                    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::text::pg_lsn)::bigint AS d",
                )
                .bind(received.as_str()),
            )
            .await
            .unwrap()
    };

    // The failover: the primary dies, the replica is promoted, and the application inserts on
    // it at once, before the address moves to it and the clients reconnect. The new primary hands
    // out again the ids of jobs lost with the old one, among them ids of the lost jobs the
    // clients are still running.
    primary.stop().expect("primary killed");
    replica.promote().expect("replica promoted");
    let at_promotion = by_n(&rctx, "state::text").await;
    let early: BTreeMap<i64, i64> = pgmill::Inserter::new(ctx.schema.clone())
        .insert_many(
            &mut rctx.conn().await,
            &(2000..2000 + AFTER).map(task).collect::<Vec<_>>(),
        )
        .await
        .expect("inserts on the new primary")
        .iter()
        .map(|r| (r.job.id.0, r.job.args["n"].as_i64().unwrap()))
        .collect();
    let switched = std::time::Instant::now();
    forwarder.switch_to(replica.port());

    let present: BTreeSet<i64> = at_promotion.keys().copied().collect();
    let kept: BTreeSet<i64> = (0..KEPT).collect();
    assert_eq!(
        present, kept,
        "the new primary has exactly the jobs inserted before the cut"
    );
    assert!(
        held_n[2..].iter().any(|n| early.contains_key(&lost_ids[n])),
        "the new primary handed out none of the held lost jobs' ids again ({:?} of {:?}): the \
         case no longer covers a reused id",
        held_n[2..].iter().map(|n| lost_ids[n]).collect::<Vec<_>>(),
        early.keys().collect::<Vec<_>>()
    );
    let count_state = |s: &str| at_promotion.values().filter(|v| *v == s).count();
    // Jobs 0 and 1 are running under claims the replica has; every other job was completed on
    // the old primary, so a job running here lost its outcome, and one available lost its claim.
    let (lost_outcomes, lost_claims) = (
        count_state("running").saturating_sub(2),
        count_state("available"),
    );

    // The clients recover by themselves: jobs they insert now are worked.
    let mut insert_ok = None;
    let inserted = crate::testdb::eventually(Duration::from_secs(60), async || {
        let ok = clients[1]
            .insert_many(&(3000..3000 + AFTER).map(task).collect::<Vec<_>>())
            .await
            .is_ok();
        if ok {
            insert_ok = Some(switched.elapsed());
        }
        ok
    })
    .await;
    assert!(
        inserted,
        "no insert succeeded through the forwarder after the failover"
    );
    let mut first_done = None;
    let worked = crate::testdb::eventually(Duration::from_secs(60), async || {
        let states = by_n(&rctx, "state::text").await;
        let done = (3000..3000 + AFTER)
            .filter(|n| states.get(n).is_some_and(|s| s == "completed"))
            .count();
        if done > 0 && first_done.is_none() {
            first_done = Some(switched.elapsed());
        }
        done == AFTER as usize
    })
    .await;
    assert!(
        worked,
        "the clients did not work the jobs they inserted after the failover: {:?}",
        crate::scripted::state_counts(&rctx).await
    );
    gate.store(true, Ordering::SeqCst);
    let all = (KEPT + 2 * AFTER) as usize;
    let settled = crate::testdb::eventually(Duration::from_secs(60), async || {
        let states = by_n(&rctx, "state::text").await;
        states.len() == all && states.values().all(|s| s == "completed")
    })
    .await;
    let recovered = switched.elapsed();
    assert!(
        settled,
        "not every job on the new primary completed: {:?}",
        crate::scripted::state_counts(&rctx).await
    );

    // What the new primary recorded stays: nothing reported late (the clients flush every
    // outcome they still hold when they stop) changes it.
    let outcome = "state::text || ' ' || attempt || ' ' || finalized_at::text || ' ' || \
                   cardinality(errors)";
    let recorded = by_n(&rctx, outcome).await;
    for c in &clients {
        c.stop().await;
    }
    assert_eq!(
        by_n(&rctx, outcome).await,
        recorded,
        "a late outcome changed a job the new primary had recorded"
    );
    let runs = runs.lock().unwrap().clone();
    for n in [0, 1] {
        assert_eq!(
            runs[&n], 1,
            "job {n} ran across the failover under a claim the replica had: it runs once"
        );
    }
    for (n, state) in &at_promotion {
        if state != "completed" && !held_n.contains(n) {
            assert!(
                runs[n] >= 2,
                "job {n} was {state} at promotion (its outcome or claim lost) but did not run again"
            );
        }
    }
    for n in (2000..2000 + AFTER).chain(3000..3000 + AFTER) {
        assert!(
            runs.get(&n).is_some_and(|r| *r > 0),
            "job {n}, inserted after the failover, completed without ever running"
        );
    }
    let reran: usize = (0..KEPT).map(|n| runs[&n] - 1).sum();
    let reused = lost_ids
        .values()
        .filter(|id| early.contains_key(id))
        .count();
    let superseded: u64 = clients.iter().map(|c| c.stats().superseded_results).sum();
    eprintln!(
        "failover figures: replica {behind} bytes of WAL behind at the kill; {LOST} acknowledged \
         inserts lost ({reused} of their ids handed out again after the failover); at promotion \
         {lost_outcomes} jobs running under a lost outcome and {lost_claims} available under a \
         lost claim; {reran} jobs re-run; {superseded} late outcomes dropped; first insert after \
         the switch {:.1} s, first job completed {:.1} s, everything completed {:.1} s",
        insert_ok.unwrap_or_default().as_secs_f64(),
        first_done.unwrap_or_default().as_secs_f64(),
        recovered.as_secs_f64(),
    );
}
