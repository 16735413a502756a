//! Metrics: every metric of `pgmill::middleware::METRICS` is emitted with its labels by a client
//! at work, the leader's queue gauges follow the queue's depth and whether a live client works
//! it, and the listener gauge follows a cut-off listener.

use std::sync::Arc;
use std::time::Duration;

use pgmill::admin::DeadFilter;
use pgmill::driver::{Driver, Executor, Statement};
use pgmill::maintenance::JobRescuerConfig;
use pgmill::middleware::{METRICS, MetricsConfig};
use pgmill::{Job, JobArgs, JobError, JobState, Worker};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::metrics_probe::MetricsProbe;
use crate::scripted::{
    ScriptedWorker, Task, count_in, tagged_driver, terminate_tagged, test_client, wait_for,
};
use crate::{Harness, migrated as ctx};

fn metrics(probe: &MetricsProbe) -> MetricsConfig {
    MetricsConfig::new()
        .sample_interval(Duration::from_millis(100))
        .recorder(probe.recorder())
}

/// Args of a job whose worker blocks its thread past its timeout.
#[derive(Debug, Serialize, Deserialize)]
struct Blocking {}

impl JobArgs for Blocking {
    const KIND: &'static str = "blocking";
}

/// Blocks its thread for 600 ms under a 200 ms timeout, which cannot stop it.
#[derive(Debug)]
struct BlockingWorker;

impl Worker<Blocking> for BlockingWorker {
    async fn work(&self, _job: &Job<Blocking>) -> Result<(), JobError> {
        std::thread::sleep(Duration::from_millis(600));
        Ok(())
    }

    fn timeout(&self, _job: &Job<Blocking>) -> Option<Duration> {
        Some(Duration::from_millis(200))
    }
}

const TASK: [(&str, &str); 2] = [("kind", "task"), ("queue", "default")];

fn outcome(result: &'static str) -> [(&'static str, &'static str); 3] {
    [("kind", "task"), ("queue", "default"), ("outcome", result)]
}

/// A client at work emits every metric in the table with exactly its labels: attempts of every
/// outcome, inserts, a rescue, a superseded outcome, a listener reconnect, an election, claims,
/// flushes, the leader's queue gauges, the running gauge and an attempt past its timeout.
pub async fn every_metric_is_emitted_with_its_labels<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("{}_metrics", ctx.schema.name());
    let probe = MetricsProbe::new();
    let (driver, schema) = (ctx.driver.clone(), ctx.schema.clone());
    let worker = ScriptedWorker::new(move |run| {
        let (driver, schema) = (driver.clone(), schema.clone());
        async move {
            match run.n {
                1 if run.attempt == 1 => Err(JobError::retry("once")),
                2 => Err(JobError::discard("bad input")),
                3 => {
                    // A newer claim of another, live client took the job over (its attempt, its
                    // own fencing token, its name last in attempted_by): this attempt's outcome
                    // is superseded. Attributed to this client, the row would be this client's
                    // orphan, released and run again whenever a lost reply makes it reconcile;
                    // held by a client without a live row, the rescuer would give it back and it
                    // would run again. The claimant's heartbeat stays ahead for the whole test.
                    let bump = Statement::new(schema.render(
                        "WITH claimant AS (\
                             INSERT INTO {schema}.pgmill_client (id, hostname, pid, heartbeat_at) \
                             VALUES ('newer-claimant', 'h', 1, now() + interval '1 hour') \
                             ON CONFLICT (id) DO NOTHING) \
                         UPDATE {schema}.pgmill_job SET attempt = attempt + 1, \
                         claim_token = claim_token + 1, attempted_at = now(), \
                         attempted_by = attempted_by || 'newer-claimant'::text \
                         WHERE id = $1::bigint",
                    ))
                    .bind(run.id.0);
                    let mut conn = driver.acquire().await.expect("a connection");
                    conn.execute(&bump).await.expect("bumps the attempt");
                    Ok(())
                }
                _ => Ok(()),
            }
        }
    });
    let mut rescuer = JobRescuerConfig::default();
    rescuer.interval = Duration::from_millis(200);
    let client = pgmill::Client::builder(tagged_driver::<H>(&ctx, &tag).await)
        .schema(ctx.schema.clone())
        .poll_interval(Duration::from_millis(50))
        .queue("default", 4)
        .worker(worker)
        .worker(BlockingWorker)
        .rescuer(rescuer)
        .metrics(metrics(&probe))
        .build()
        .unwrap();
    // A job a dead client ran for two hours: past the hard deadline, the rescuer gives it back.
    let orphan = client.insert(Task { n: 0 }).await.unwrap();
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(
                "UPDATE {schema}.pgmill_job SET state = 'running', attempt = 1, \
                 attempted_at = now() - interval '2 hours', attempted_by = ARRAY['ghost'] \
                 WHERE id = $1::bigint",
            )
            .bind(orphan.id.0),
        )
        .await
        .unwrap();
    client.start().await.unwrap();
    for n in 1..=4 {
        client.insert(Task { n }).await.unwrap();
    }
    client.insert(Blocking {}).await.unwrap();
    wait_for("every job finished", async || {
        count_in(&ctx, JobState::Completed).await == 4
            && count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    wait_for("the superseded outcome and the leader", async || {
        probe.counter("pgmill_completer_superseded_total", &[]) == Some(1)
            && probe.gauge("pgmill_is_leader", &[]) == Some(1.0)
    })
    .await;
    assert!(
        terminate_tagged(&ctx, &tag).await >= 1,
        "the client's backends were found"
    );
    wait_for("the listener reconnected", async || {
        probe
            .counter("pgmill_notifier_reconnects_total", &[])
            .is_some_and(|n| n >= 1)
    })
    .await;
    wait_for("the leader sampled the final counts", async || {
        probe.gauge(
            "pgmill_queue_jobs",
            &[("queue", "default"), ("state", "available")],
        ) == Some(0.0)
            && probe.gauge(
                "pgmill_queue_jobs",
                &[("queue", "default"), ("state", "running")],
            ) == Some(1.0)
    })
    .await;

    // A job of a kind this client has no worker for: never claimed, reported by the leader.
    pgmill::Inserter::new(ctx.schema.clone())
        .insert_many(
            &mut ctx.conn().await,
            &[pgmill::InsertParams::new(
                "stranger",
                serde_json::json!({}),
                pgmill::InsertOpts::new(),
            )
            .unwrap()],
        )
        .await
        .unwrap();
    wait_for("the leader sampled the unknown kind", async || {
        probe.gauge(
            "pgmill_queue_unknown_kind_jobs",
            &[("queue", "default"), ("kind", "stranger")],
        ) == Some(1.0)
    })
    .await;
    wait_for("the leader sampled the dead-letter queue", async || {
        probe.gauge("pgmill_dead_jobs", &[("queue", "default")]) == Some(1.0)
    })
    .await;
    // Redriving and purging nothing still reports on the counters (from a client whose
    // connections were not terminated).
    let operator = pgmill::Client::builder(ctx.driver.clone())
        .schema(ctx.schema.clone())
        .metrics(metrics(&probe))
        .build()
        .unwrap();
    let nothing = DeadFilter::new().kinds(["no_such_kind"]);
    let report = operator.dead_redrive(&nothing).await.unwrap();
    assert!(report.redriven.is_empty());
    assert_eq!(operator.dead_purge(&nothing).await.unwrap(), 0);

    for m in METRICS {
        let sets = probe.label_sets(m.kind, m.name);
        assert!(!sets.is_empty(), "{} was emitted", m.name);
        for mut labels in sets {
            labels.sort();
            let mut expected: Vec<String> = m.labels.iter().map(|l| (*l).to_owned()).collect();
            expected.sort();
            assert_eq!(labels, expected, "labels of {}", m.name);
        }
    }
    let count = |result| probe.counter("pgmill_job_attempts_total", &outcome(result));
    // The rescued job, the retried one's second attempt, the superseded one and the plain one.
    assert_eq!(count("completed"), Some(4));
    assert_eq!(count("retryable"), Some(1));
    assert_eq!(count("discarded"), Some(1));
    assert_eq!(
        count("cancelled"),
        Some(0),
        "every outcome's series starts at zero"
    );
    assert_eq!(probe.counter("pgmill_jobs_inserted_total", &TASK), Some(5));
    assert_eq!(
        probe.counter(
            "pgmill_job_ran_past_timeout_total",
            &[("kind", "blocking"), ("queue", "default")]
        ),
        Some(1)
    );
    assert_eq!(
        probe.counter(
            "pgmill_jobs_rescued_total",
            &[("queue", "default"), ("state", "available")]
        ),
        Some(1)
    );
    assert_eq!(probe.counter("pgmill_leader_elections_total", &[]), Some(1));
    assert_eq!(probe.observations("pgmill_job_run_seconds", &TASK), Some(6));
    assert_eq!(
        probe.observations("pgmill_job_queue_wait_seconds", &TASK),
        Some(6)
    );
    assert_eq!(
        probe.gauge("pgmill_client_running_jobs", &[("queue", "default")]),
        Some(0.0)
    );
    let claimed = probe
        .observations("pgmill_claim_jobs", &[("queue", "default")])
        .unwrap();
    assert!(claimed >= 1);
    assert!(
        probe
            .observations("pgmill_completer_flush_outcomes", &[])
            .unwrap()
            >= 1
    );

    client.stop().await;
    assert_eq!(
        probe.gauge("pgmill_is_leader", &[]),
        Some(0.0),
        "a resigned leader reports 0"
    );
}

/// The leader's gauges follow a queue's depth (available, running) and the age of its oldest
/// available job, and go back to 0 when the client stops leading.
pub async fn queue_gauges_follow_depth_and_reset_when_leadership_ends<H: Harness>() {
    let ctx = ctx::<H>().await;
    let probe = MetricsProbe::new();
    let release = Arc::new(Notify::new());
    let gate = Arc::clone(&release);
    let worker = ScriptedWorker::new(move |run| {
        let gate = Arc::clone(&gate);
        async move {
            if run.n == 0 {
                gate.notified().await;
            }
            Ok(())
        }
    });
    // No prefetch: the jobs inserted behind the busy one stay available instead of buffered.
    let client = test_client(&ctx)
        .queue("default", 1)
        .prefetch(0)
        .worker(worker)
        .job_timeout(None)
        .metrics(metrics(&probe))
        .build()
        .unwrap();
    client.start().await.unwrap();
    client.insert(Task { n: 0 }).await.unwrap();
    wait_for("the blocking job runs", async || {
        count_in(&ctx, JobState::Running).await == 1
    })
    .await;
    for n in 1..=3 {
        client.insert(Task { n }).await.unwrap();
    }
    let gauge = |state: &str| {
        probe.gauge(
            "pgmill_queue_jobs",
            &[("queue", "default"), ("state", state)],
        )
    };
    let oldest = || {
        probe.gauge(
            "pgmill_queue_oldest_available_seconds",
            &[("queue", "default")],
        )
    };
    wait_for(
        "three waiting behind one running, the oldest aging",
        async || {
            gauge("available") == Some(3.0)
                && gauge("running") == Some(1.0)
                && oldest().is_some_and(|s| s > 0.0)
        },
    )
    .await;
    assert_eq!(
        probe.gauge("pgmill_client_running_jobs", &[("queue", "default")]),
        Some(1.0)
    );
    assert_eq!(gauge("pending"), Some(0.0), "every live state is reported");
    assert_eq!(gauge("completed"), None, "finished jobs are not gauged");
    release.notify_one();
    wait_for("the queue drained", async || {
        count_in(&ctx, JobState::Completed).await == 4
            && gauge("available") == Some(0.0)
            && gauge("running") == Some(0.0)
            && oldest() == Some(0.0)
    })
    .await;
    // A job that is running or available whenever the leader samples, until it stops leading.
    client.insert(Task { n: 0 }).await.unwrap();
    wait_for("the blocking job runs again", async || {
        gauge("running") == Some(1.0)
    })
    .await;
    client.stop_and_cancel().await;
    assert_eq!(
        (gauge("running"), gauge("available")),
        (Some(0.0), Some(0.0)),
        "a former leader reports 0"
    );
}

/// The gauges the shipped alerts read: the leader reports whether a live client works each queue
/// (`pgmill_queue_served`: 1 for a worked queue, 0 for one holding jobs no client works), and a
/// client whose listener is cut off counts in `pgmill_listener_down` until it listens again.
pub async fn served_and_listener_gauges_follow_the_cluster<H: Harness>() {
    let cluster = crate::testdb::Cluster::start().expect("private cluster");
    let ctx = crate::TestContext::<H::Driver>::on::<H>(cluster.url()).await;
    pgmill::Migrator::new(ctx.schema.clone())
        .up(&mut ctx.conn().await, None)
        .await
        .unwrap();
    ctx.script("CREATE ROLE cut_off LOGIN SUPERUSER").await;
    let driver = H::connect(&cluster.url().replace("postgres@", "cut_off@"), 4)
        .await
        .unwrap();
    let probe = MetricsProbe::new();
    let client = pgmill::Client::builder(driver)
        .schema(ctx.schema.clone())
        .poll_interval(Duration::from_millis(50))
        .queue("default", 2)
        .worker(ScriptedWorker::ok())
        .metrics(metrics(&probe))
        .build()
        .unwrap();
    client.start().await.unwrap();
    client
        .insert_with(Task { n: 1 }, pgmill::InsertOpts::new().queue("orphan"))
        .await
        .unwrap();
    let served = |queue: &str| probe.gauge("pgmill_queue_served", &[("queue", queue)]);
    let down = || probe.gauge("pgmill_listener_down", &[]);
    wait_for(
        "the leader sampled both queues, the listener up",
        async || {
            served("default") == Some(1.0) && served("orphan") == Some(0.0) && down() == Some(0.0)
        },
    )
    .await;

    ctx.script("ALTER ROLE cut_off NOLOGIN").await;
    // Terminated until the listener is down: a connection whose login began before NOLOGIN may
    // only show up after one sweep of terminations.
    wait_for("the listener is down", async || {
        ctx.script(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'cut_off'",
        )
        .await;
        down() == Some(1.0)
    })
    .await;
    ctx.script("ALTER ROLE cut_off LOGIN").await;
    wait_for("the listener is back", async || down() == Some(0.0)).await;
    client.stop().await;
    assert_eq!(down(), Some(0.0), "a stopped client's listener is not down");
    assert_eq!(served("default"), Some(0.0), "a former leader reports 0");
}
