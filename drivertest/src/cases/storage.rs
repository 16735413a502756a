//! Where jobs are kept: finished jobs leave the job table for the history or the dead-letter
//! queue in the statement that finishes them; the history's slots are emptied by TRUNCATE past
//! their retention; the dead-letter queue is redriven and purged; what holds vacuum back is named.

use std::collections::BTreeMap;
use std::time::Duration;

use pgmill::admin::{DeadFilter, DeadListParams, DeadReason, HolderKind, JobListParams};
use pgmill::driver::{Driver, Executor, Statement, Transaction};
use pgmill::maintenance::{JobCleaner, JobCleanerConfig};
use pgmill::{Client, Error, InsertOpts, InsertParams, JobError, JobId, JobState, UniqueOpts};

use crate::scripted::{ScriptedWorker, Task, test_client, wait_for};
use crate::{Harness, TestContext, migrated as ctx};

/// Every state before a job finishes: unique states that leave the key free once it finishes.
const LIVE: [JobState; 5] = [
    JobState::Available,
    JobState::Scheduled,
    JobState::Pending,
    JobState::Running,
    JobState::Retryable,
];

/// Where each job of `ids` is: `job`, `done` or `dead` (absent when nowhere).
async fn stored_in<D: Driver>(ctx: &TestContext<D>, ids: &[JobId]) -> BTreeMap<i64, String> {
    let rows = ctx
        .conn()
        .await
        .query(
            &ctx.stmt(
                "SELECT id, stored_in FROM {schema}.pgmill_job_all WHERE id = ANY($1::bigint[])",
            )
            .bind(ids.iter().map(|i| i.0).collect::<Vec<_>>()),
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get::<i64>("id").unwrap(), r.get("stored_in").unwrap()))
        .collect()
}

/// A worker that completes job 0, cancels job 1, discards job 2, fails job 3 until its attempts
/// run out, and completes the rest.
fn finishing_worker() -> ScriptedWorker {
    ScriptedWorker::new(|run| async move {
        match run.n {
            1 => Err(JobError::cancel("not wanted")),
            2 => Err(JobError::discard("bad input")),
            3 => Err(JobError::retry("down")),
            _ => Ok(()),
        }
    })
}

/// Completed and cancelled jobs go to the history and discarded ones (by their worker, or out of
/// attempts) to the dead-letter queue, with the reason, in the statement that finishes them: none
/// is left in the job table, each is in one place only, and `job_get` and `job_list` find each
/// with its final state and errors wherever it is.
pub async fn finished_jobs_leave_the_job_table<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = finishing_worker();
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let mut ids = Vec::new();
    for n in 0..4 {
        let opts = InsertOpts::new().max_attempts(2);
        let job = client.insert_with(Task { n }, opts).await.unwrap();
        ids.push(job.id);
    }
    wait_for("every job finished", async || {
        stored_in(&ctx, &ids).await.values().all(|s| s != "job")
    })
    .await;
    client.stop().await;
    let places = stored_in(&ctx, &ids).await;
    let expected: BTreeMap<i64, String> = [
        (ids[0].0, "done"),
        (ids[1].0, "done"),
        (ids[2].0, "dead"),
        (ids[3].0, "dead"),
    ]
    .into_iter()
    .map(|(i, s)| (i, s.to_owned()))
    .collect();
    assert_eq!(places, expected);
    assert_eq!(ctx.count("pgmill_job").await, 0);
    assert_eq!(ctx.count("pgmill_job_all").await, 4);
    let states: Vec<JobState> = futures_states(&client, &ids).await;
    assert_eq!(
        states,
        [
            JobState::Completed,
            JobState::Cancelled,
            JobState::Discarded,
            JobState::Discarded
        ]
    );
    let out_of_attempts = client.job_get(ids[3]).await.unwrap().unwrap();
    assert_eq!(out_of_attempts.attempt, 2);
    assert_eq!(
        out_of_attempts.errors.len(),
        2,
        "every attempt's error is kept"
    );
    assert!(out_of_attempts.finalized_at.is_some());
    let dead = client.dead_list(&DeadListParams::new()).await.unwrap();
    let reasons: BTreeMap<JobId, DeadReason> =
        dead.jobs.iter().map(|d| (d.job.id, d.reason)).collect();
    assert_eq!(
        reasons,
        [
            (ids[2], DeadReason::Discarded),
            (ids[3], DeadReason::MaxAttempts)
        ]
        .into_iter()
        .collect()
    );
    let listed = client
        .job_list(&JobListParams::new().states([JobState::Completed, JobState::Discarded]))
        .await
        .unwrap();
    let listed: Vec<JobId> = listed.jobs.iter().map(|j| j.id).collect();
    assert_eq!(listed, [ids[0], ids[2], ids[3]]);
    // The history row sits in the ring slot of when it finished.
    let slot_ok: bool = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt(
            "SELECT bool_and(d.slot = {schema}.pgmill_job_done_slot(d.finalized_at, \
             s.done_slot_seconds)) AS ok \
             FROM {schema}.pgmill_job_done AS d, {schema}.pgmill_storage AS s",
        ))
        .await
        .unwrap();
    assert!(slot_ok);
}

async fn futures_states<D: Driver>(client: &Client<D>, ids: &[JobId]) -> Vec<JobState> {
    let mut states = Vec::new();
    for id in ids {
        states.push(client.job_get(*id).await.unwrap().unwrap().state);
    }
    states
}

/// A unique job whose key its final state keeps taken (completed is among the default unique
/// states) stays in the job table, so the unique index goes on refusing duplicates; one whose
/// unique states leave the key free when completed leaves for the history like any job. A batch
/// mixing both completes every job (the lean completion leaves the unique one to the general
/// statement).
pub async fn a_unique_job_keeping_its_key_stays_in_the_job_table<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    let keeps = InsertOpts::new().unique(UniqueOpts::new().by_args());
    let frees = InsertOpts::new().unique(UniqueOpts::new().by_args().by_state(LIVE));
    let params = vec![
        InsertParams::from_args(&Task { n: 1 }, Some(keeps.clone())).unwrap(),
        InsertParams::from_args(&Task { n: 2 }, Some(frees.clone())).unwrap(),
        InsertParams::from_args(&Task { n: 3 }, None).unwrap(),
    ];
    let jobs = client.insert_many(&params).await.unwrap();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    client.start().await.unwrap();
    wait_for("all three completed", async || {
        let c = crate::scripted::count_in(&ctx, JobState::Completed).await;
        c == 3
    })
    .await;
    client.stop().await;
    let places = stored_in(&ctx, &ids).await;
    assert_eq!(places[&ids[0].0], "job", "the key keeper stays");
    assert_eq!(places[&ids[1].0], "done");
    assert_eq!(places[&ids[2].0], "done");
    let dup = client.insert_with(Task { n: 1 }, keeps).await.unwrap();
    assert!(dup.skipped_as_duplicate && dup.id == ids[0]);
    let again = client.insert_with(Task { n: 2 }, frees).await.unwrap();
    assert!(!again.skipped_as_duplicate, "the history holds no key");
}

/// Retrying a finished job brings it back under its own id, wherever it is: from the history and
/// from the dead-letter queue into the job table, available, its errors kept and one more attempt
/// when it used them up; it is then in the job table only.
pub async fn retry_brings_a_finished_job_back_under_its_id<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = finishing_worker();
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let done = client.insert(Task { n: 0 }).await.unwrap().id;
    let dead = client
        .insert_with(Task { n: 3 }, InsertOpts::new().max_attempts(1))
        .await
        .unwrap()
        .id;
    wait_for("both finished", async || {
        stored_in(&ctx, &[done, dead])
            .await
            .values()
            .all(|s| s != "job")
    })
    .await;
    client.stop().await;
    for id in [done, dead] {
        let before = client.job_get(id).await.unwrap().unwrap();
        let retried = client.job_retry(id).await.unwrap().unwrap();
        assert_eq!(retried.id, id);
        assert_eq!(retried.state, JobState::Available);
        assert_eq!(retried.errors, before.errors);
        assert_eq!(retried.args, before.args);
        assert!(retried.max_attempts > retried.attempt);
        assert_eq!(stored_in(&ctx, &[id]).await[&id.0], "job");
    }
    assert_eq!(ctx.count("pgmill_job_done").await, 0);
    assert_eq!(ctx.count("pgmill_job_dead").await, 0);
}

/// Redriving the dead-letter queue puts jobs back under their own ids, available, with their
/// args, metadata, tags and every attempt's error, and one more attempt; a unique job whose key
/// another job holds now stays and is reported as a conflict; a redrive or purge without a filter
/// that does not ask for every job is refused and changes nothing.
pub async fn dead_letter_redrive_keeps_the_job_and_reports_conflicts<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        if run.n < 10 {
            Err(JobError::discard("bad input"))
        } else {
            Ok(())
        }
    });
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let unique = InsertOpts::new().unique(UniqueOpts::new().by_args().by_state(LIVE));
    let tagged = InsertOpts::new().tags(["a", "b"]);
    let plain = client.insert_with(Task { n: 1 }, tagged).await.unwrap().id;
    let keyed = client
        .insert_with(Task { n: 2 }, unique.clone())
        .await
        .unwrap()
        .id;
    wait_for("both dead", async || {
        ctx.count("pgmill_job_dead").await == 2
    })
    .await;
    client.stop().await;
    // Another job takes the unique key meanwhile.
    let holder = client.insert_with(Task { n: 2 }, unique).await.unwrap();
    assert!(!holder.skipped_as_duplicate);

    for refused in [DeadFilter::new(), DeadFilter::default()] {
        let err = client.dead_redrive(&refused).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        let err = client.dead_purge(&refused).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    assert_eq!(ctx.count("pgmill_job_dead").await, 2, "nothing changed");

    let before = client.dead_list(&DeadListParams::new()).await.unwrap();
    let report = client.dead_redrive(&DeadFilter::all()).await.unwrap();
    assert_eq!(report.redriven, [plain]);
    assert_eq!(report.conflicts, [keyed]);
    let back = client.job_get(plain).await.unwrap().unwrap();
    let was = before.jobs.iter().find(|d| d.job.id == plain).unwrap();
    assert_eq!(back.state, JobState::Available);
    assert_eq!(
        (&back.args, &back.tags, &back.errors),
        (&was.job.args, &was.job.tags, &was.job.errors)
    );
    assert_eq!(back.max_attempts, was.job.attempt + 1);
    assert_eq!(back.metadata["redrive_count"], 1);
    assert_eq!(stored_in(&ctx, &[plain, keyed]).await[&keyed.0], "dead");
    assert_eq!(
        client
            .dead_purge(&DeadFilter::new().ids([keyed]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(ctx.count("pgmill_job_dead").await, 0);
}

/// Writes `n` history rows that finished `age` ago, as completed, into the slot of that time.
async fn finished_long_ago<D: Driver>(ctx: &TestContext<D>, n: i64, age: &str, state: &str) {
    ctx.conn()
        .await
        .execute(&ctx.stmt(&format!(
            "INSERT INTO {{schema}}.pgmill_job_done (id, state, queue, kind, args, metadata, \
             priority, attempt, max_attempts, attempted_by, created_at, scheduled_at, \
             finalized_at, errors, tags, slot) \
             SELECT 1000000 + g + (extract(epoch FROM now() - interval '{age}'))::bigint * 10, \
                 '{state}', 'default', 'task', '{{}}', '{{}}', 1, 1, 25, '{{}}', \
                 now() - interval '{age}', now() - interval '{age}', now() - interval '{age}', \
                 '{{}}', '{{}}', {{schema}}.pgmill_job_done_slot(now() - interval '{age}', \
                 (SELECT done_slot_seconds FROM {{schema}}.pgmill_storage)) \
             FROM generate_series(1, {n}) AS g"
        )))
        .await
        .unwrap();
}

/// How many history rows each slot holds.
async fn slot_counts<D: Driver>(ctx: &TestContext<D>) -> BTreeMap<i16, i64> {
    let rows =
        ctx.conn()
            .await
            .query(&ctx.stmt(
                "SELECT slot, count(*) AS n FROM {schema}.pgmill_job_done GROUP BY 1 ORDER BY 1",
            ))
            .await
            .unwrap();
    rows.iter()
        .map(|r| (r.get("slot").unwrap(), r.get("n").unwrap()))
        .collect()
}

/// The cleaner empties, with TRUNCATE, every history slot whose rows are all past their
/// retention, keeps a slot that still holds one younger row, and never touches the slot being
/// written. A slot a reader holds is left after the short lock wait (the pass does not queue
/// behind the reader) and emptied by the pass after the reader is gone. No DELETE runs.
pub async fn expired_history_slots_are_truncated_and_younger_ones_kept<H: Harness>() {
    let ctx = ctx::<H>().await;
    // Two-hour slots (the default for a day's retention): 30 and 26 hours ago are two slots past
    // a day's retention; 2 hours ago is inside it.
    finished_long_ago(&ctx, 50, "30 hours", "completed").await;
    finished_long_ago(&ctx, 40, "26 hours", "completed").await;
    finished_long_ago(&ctx, 5, "2 hours", "completed").await;
    let before = slot_counts(&ctx).await;
    assert_eq!(before.len(), 3, "{before:?}");
    let mut config = JobCleanerConfig::default();
    config.completed_retention = Some(Duration::from_secs(24 * 3600));
    let cleaner = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), config.clone()).unwrap();

    // A reader holds the 26-hours slot for the whole first pass.
    let slot_26: i16 = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt(
            "SELECT {schema}.pgmill_job_done_slot(now() - interval '26 hours', \
             (SELECT done_slot_seconds FROM {schema}.pgmill_storage)) AS s",
        ))
        .await
        .unwrap();
    let reader = Statement::new(ctx.schema.render(&format!(
        "SELECT count(*) AS n FROM {{schema}}.pgmill_job_done_{slot_26:02}"
    )));
    let pass = async {
        let started = std::time::Instant::now();
        let r = cleaner.run_once().await.unwrap();
        (r, started.elapsed())
    };
    let mut held = ctx.conn().await;
    let mut tx = held.begin().await.unwrap();
    let seen: i64 = tx.query_scalar(&reader).await.unwrap();
    assert_eq!(seen, 40);
    let (first, took) = pass.await;
    tx.rollback().await.unwrap();
    assert_eq!(first.num_slots_truncated, 1, "the unheld expired slot");
    assert!(took < Duration::from_secs(10), "the pass waited {took:?}");
    let after_first = slot_counts(&ctx).await;
    let mut left: Vec<i64> = after_first.values().copied().collect();
    left.sort_unstable();
    assert_eq!(left, [5, 40], "the held slot stays for now");
    let second = cleaner.run_once().await.unwrap();
    assert_eq!(second.num_slots_truncated, 1, "the reader is gone");
    assert_eq!(slot_counts(&ctx).await.values().sum::<i64>(), 5);

    // One young row in an old slot keeps the whole slot.
    finished_long_ago(&ctx, 30, "30 hours", "completed").await;
    let old_slot = *slot_counts(&ctx)
        .await
        .iter()
        .find(|(_, n)| **n == 30)
        .unwrap()
        .0;
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(
                "UPDATE {schema}.pgmill_job_done SET finalized_at = now() \
                 WHERE slot = $1::smallint AND id = (SELECT min(id) FROM {schema}.pgmill_job_done \
                 WHERE slot = $1::smallint)",
            )
            .bind(old_slot),
        )
        .await
        .unwrap();
    assert_eq!(cleaner.run_once().await.unwrap().num_slots_truncated, 0);
    assert_eq!(slot_counts(&ctx).await.get(&old_slot), Some(&30));
    // Kept forever, nothing goes.
    config.completed_retention = None;
    config.cancelled_retention = None;
    let keeper = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), config).unwrap();
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(
                "UPDATE {schema}.pgmill_job_done SET finalized_at = now() - interval '30 hours'",
            ),
        )
        .await
        .unwrap();
    assert_eq!(keeper.run_once().await.unwrap().num_slots_truncated, 0);
}

/// What holds vacuum back is named: a session holding a REPEATABLE READ snapshot shows as the
/// oldest holder, visible to the role that runs it, with how long it has held it; health reports
/// it too. On a private cluster, a role without `pg_read_all_stats` sees another role's holding
/// session without its start or state, and says so.
pub async fn the_vacuum_horizon_names_who_holds_it<H: Harness>() {
    let cluster = crate::testdb::Cluster::start().expect("private cluster");
    let admin = TestContext::<H::Driver>::on::<H>(cluster.url()).await;
    admin
        .script("CREATE ROLE app LOGIN; CREATE ROLE other LOGIN")
        .await;
    let url_as = |role: &str| cluster.url().replace("postgres@", &format!("{role}@"));
    let ctx = TestContext::<H::Driver>::on::<H>(url_as("postgres")).await;
    pgmill::Migrator::new(ctx.schema.clone())
        .up(&mut ctx.conn().await, None)
        .await
        .unwrap();
    ctx.script(&ctx.schema.render(
        "GRANT USAGE ON SCHEMA {schema} TO app; \
         GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO app",
    ))
    .await;
    let client_as = async |role: &str| {
        let driver = H::connect(&url_as(role), 2).await.unwrap();
        Client::builder(driver)
            .schema(ctx.schema.clone())
            .build()
            .unwrap()
    };
    let superuser = client_as("postgres").await;
    let app = client_as("app").await;
    let quiet = superuser.vacuum_horizon().await.unwrap();
    assert!(
        quiet.holders.iter().all(|h| h.kind != HolderKind::Session),
        "{quiet:?}"
    );

    // `other` holds a snapshot (a transaction id, so it stays in every snapshot).
    let other = H::connect(&url_as("other"), 1).await.unwrap();
    let mut conn = other.acquire().await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    tx.execute(&Statement::new(
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
    ))
    .await
    .unwrap();
    let _: i64 = tx
        .query_scalar(&Statement::new("SELECT txid_current() AS v"))
        .await
        .unwrap();
    wait_for("the snapshot is held a moment", async || {
        superuser
            .vacuum_horizon()
            .await
            .unwrap()
            .held_for()
            .is_some_and(|d| d >= Duration::from_millis(50))
    })
    .await;
    let seen = superuser.vacuum_horizon().await.unwrap();
    let oldest = seen.oldest().unwrap();
    assert_eq!(oldest.kind, HolderKind::Session);
    assert_eq!(oldest.role.as_deref(), Some("other"));
    assert_eq!(oldest.state.as_deref(), Some("idle in transaction"));
    assert!(oldest.visible && oldest.xmin_age >= 0);
    assert!(!seen.has_hidden_holders());
    let health = superuser.health().await;
    assert_eq!(
        health
            .vacuum_horizon
            .as_ref()
            .and_then(|h| h.oldest())
            .map(|h| &h.holder),
        Some(&oldest.holder)
    );

    let hidden = app.vacuum_horizon().await.unwrap();
    let from_app = hidden
        .holders
        .iter()
        .find(|h| h.holder == oldest.holder)
        .expect("the holding session, by process id");
    assert_eq!(from_app.role.as_deref(), Some("other"));
    assert!(!from_app.visible && from_app.state.is_none() && from_app.held_for.is_none());
    assert!(hidden.has_hidden_holders());
    tx.rollback().await.unwrap();
}

/// Every job of every state, with its id, state and errors, as `(id, state, errors)` rows of the
/// table (or view) `from`.
async fn jobs_in<D: Driver>(ctx: &TestContext<D>, from: &str) -> Vec<(i64, String, i64)> {
    let rows = ctx
        .conn()
        .await
        .query(&ctx.stmt(&format!(
            "SELECT id, state::text AS state, cardinality(errors)::int8 AS errors \
             FROM {{schema}}.{from} ORDER BY id"
        )))
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get("id").unwrap(),
                r.get("state").unwrap(),
                r.get("errors").unwrap(),
            )
        })
        .collect()
}

/// Version 9 applies while a client of version 8 inserts: the inserts go on without an error,
/// the jobs version 8 finished stay in the job table (findable, and cleaned up past their
/// retention as before), a client of version 9 then moves every job it finishes out; and
/// reverting to version 8 puts the history and the dead-letter queue back into the job table
/// under their ids, losing nothing, after which version 9 applies again.
///
/// The version 8 client is this crate's inserter on a version 8 schema: its insert statements
/// read nothing version 9 adds.
pub async fn version_9_applies_under_running_clients_and_reverts_losing_nothing<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let migrator = pgmill::Migrator::new(ctx.schema.clone());
    migrator.up(&mut ctx.conn().await, Some(8)).await.unwrap();
    let inserter = test_client(&ctx).build().unwrap();
    let legacy = inserter
        .insert_many(
            &(0..6)
                .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    // Version 8 finished three of them in place.
    for (job, state) in legacy.iter().zip(["completed", "cancelled", "discarded"]) {
        ctx.conn()
            .await
            .execute(
                &ctx.stmt(&format!(
                    "UPDATE {{schema}}.pgmill_job SET state = '{state}', finalized_at = now(), \
                     attempt = 1 WHERE id = $1::bigint"
                ))
                .bind(job.id.0),
            )
            .await
            .unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let inserting = {
        let (inserter, stop) = (inserter.clone(), std::sync::Arc::clone(&stop));
        tokio::spawn(async move {
            let mut n = 0_i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                inserter
                    .insert(Task { n: 100 })
                    .await
                    .expect("version 8 insert");
                n += 1;
                tokio::task::yield_now().await;
            }
            n
        })
    };
    let report = migrator.up(&mut ctx.conn().await, None).await.unwrap();
    assert_eq!(report.versions[0], 9);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let inserted = inserting.await.unwrap();
    assert!(inserted > 0);
    let total = 6 + inserted;
    // The rows version 8 finished stay in the job table, findable.
    assert_eq!(
        stored_in(&ctx, &legacy.iter().map(|j| j.id).collect::<Vec<_>>())
            .await
            .values()
            .filter(|s| *s == "job")
            .count(),
        6
    );
    let got = inserter.job_get(legacy[0].id).await.unwrap().unwrap();
    assert_eq!(got.state, JobState::Completed);

    // A version 9 client works the rest: each job it finishes leaves the job table.
    let worker = finishing_worker();
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    wait_for("every job finished", async || {
        ctx.count("pgmill_job_all").await == total
            && crate::scripted::state_counts(&ctx)
                .await
                .iter()
                .filter(|(s, _)| !s.is_final())
                .all(|(_, n)| *n == 0)
    })
    .await;
    client.stop().await;
    assert_eq!(
        ctx.count("pgmill_job").await,
        3,
        "only version 8's finished rows"
    );
    assert!(ctx.count("pgmill_job_done").await > 0);
    assert!(ctx.count("pgmill_job_dead").await > 0);
    let before = jobs_in(&ctx, "pgmill_job_all").await;
    assert_eq!(before.len() as i64, total);

    // Down to version 8: every job is back in the job table, as it was.
    migrator.down(&mut ctx.conn().await, 8).await.unwrap();
    assert_eq!(jobs_in(&ctx, "pgmill_job").await, before);
    migrator.up(&mut ctx.conn().await, None).await.unwrap();
    assert_eq!(jobs_in(&ctx, "pgmill_job_all").await, before);
}
