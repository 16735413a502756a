//! Rescue of dead workers' jobs, the hard deadline, cleaners, and supervision of failing services.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use pgmill::driver::Statement;
use pgmill::driver::{Executor, Transaction};
use pgmill::maintenance::{
    JobAnalyzer, JobAnalyzerConfig, JobAnalyzerRunOnceResult, JobCleaner, JobCleanerConfig,
    JobRescuer, JobRescuerConfig, QueueCleaner, QueueCleanerConfig,
};
use pgmill::{Client, InsertOpts, InsertParams, JobState, Migrator};

use crate::doomed::DoomedProcess;
use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext};

fn fast_rescuer() -> JobRescuerConfig {
    let mut r = JobRescuerConfig::default();
    r.interval = Duration::from_millis(200);
    r.client_timeout = Duration::from_secs(1);
    r
}

/// Jobs running in a worker process that dies are rescued once its heartbeat expires, and run to
/// completion elsewhere, with the rescue recorded; a job out of attempts is discarded.
pub async fn jobs_of_a_killed_worker_are_rescued<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let doomed = DoomedProcess::new();
    let (url, schema) = (ctx.url.clone(), ctx.schema.clone());
    doomed
        .run(async move {
            let driver = H::connect(&url, 4).await.unwrap();
            let hang = ScriptedWorker::new(|_| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            });
            let c = Client::builder(driver)
                .schema(schema)
                .queue("default", 5)
                .heartbeat_interval(Duration::from_millis(200))
                .rescuer(fast_rescuer())
                .job_timeout(None)
                .worker(hang)
                .build()
                .unwrap();
            c.start().await.unwrap();
            c
        })
        .await;
    let inserter = pgmill::Inserter::new(ctx.schema.clone());
    let mut conn = ctx.conn().await;
    for n in 0..4 {
        inserter.insert(&mut conn, Task { n }).await.unwrap();
    }
    let last = inserter
        .insert_with(&mut conn, Task { n: 4 }, InsertOpts::new().max_attempts(1))
        .await
        .unwrap();
    wait_for("all running in the doomed worker", async || {
        count_in(&ctx, JobState::Running).await == 5
    })
    .await;
    doomed.kill();

    let worker = ScriptedWorker::ok();
    let survivor = test_client(&ctx)
        .queue("default", 5)
        .heartbeat_interval(Duration::from_millis(200))
        .rescuer(fast_rescuer())
        .worker(worker.clone())
        .build()
        .unwrap();
    survivor.start().await.unwrap();
    wait_for("rescued and completed", async || {
        count_in(&ctx, JobState::Completed).await == 4
            && count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    survivor.stop().await;
    let page = survivor
        .job_list(&pgmill::admin::JobListParams::new())
        .await
        .unwrap();
    for job in &page.jobs {
        assert!(job.errors[0].error.contains("rescued"), "{:?}", job.errors);
    }
    assert_eq!(
        survivor.job_get(last.id).await.unwrap().unwrap().state,
        JobState::Discarded
    );
    assert_eq!(worker.total_runs(), 4);
}

/// A job of a live client is rescued only past the hard deadline; the late outcome of the slow
/// attempt is then superseded.
pub async fn live_jobs_are_rescued_only_past_the_hard_deadline<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        if run.n == 1 && run.attempt == 1 {
            tokio::time::sleep(Duration::from_millis(2_500)).await;
        }
        Ok(())
    });
    let mut r = fast_rescuer();
    r.rescue_after = Duration::from_millis(1_000);
    let client = test_client(&ctx)
        .queue("default", 4)
        .heartbeat_interval(Duration::from_millis(200))
        .rescuer(r)
        .job_timeout(None)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let slow = client.insert(Task { n: 1 }).await.unwrap();
    let quick = client.insert(Task { n: 2 }).await.unwrap();
    wait_for("both completed", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    wait_for("the slow attempt reported", async || {
        client.stats().superseded_results == 1
    })
    .await;
    client.stop().await;
    let slow = client.job_get(slow.id).await.unwrap().unwrap();
    assert_eq!(slow.attempt, 2);
    assert!(
        slow.errors[0].error.contains("hard deadline"),
        "{:?}",
        slow.errors
    );
    let quick = client.job_get(quick.id).await.unwrap().unwrap();
    assert_eq!((quick.attempt, quick.errors.len()), (1, 0));
}

/// Jobs of a client whose row is missing (as after a database restart) are rescued only after the
/// grace period, giving live clients time to re-register.
pub async fn missing_client_rows_get_a_grace_period<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    ctx.conn()
        .await
        .execute(&ctx.stmt(
            "UPDATE {schema}.pgmill_job SET state = 'running', attempt = 1, attempted_at = now(), \
             attempted_by = '{ghost}' WHERE id = $1::bigint",
        ).bind(job.id.0))
        .await
        .unwrap();
    let mut config = JobRescuerConfig::default();
    config.client_timeout = Duration::from_millis(500);
    let rescuer = JobRescuer::new(ctx.driver.clone(), ctx.schema.clone(), config).unwrap();
    assert_eq!(
        rescuer.run_once().await.unwrap().num_jobs_rescued,
        0,
        "grace period"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(rescuer.run_once().await.unwrap().num_jobs_rescued, 1);
    assert_eq!(
        client.job_get(job.id).await.unwrap().unwrap().state,
        JobState::Available
    );
}

/// The cleaner deletes finished jobs past each state's retention, in bounded batches, and keeps
/// states whose retention is `None`.
pub async fn cleaner_deletes_finalized_jobs_past_retention<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_job (kind, state, finalized_at) \
         SELECT 'k', s::{schema}.pgmill_job_state, now() - age::interval \
         FROM (VALUES ('completed', '2 days'), ('cancelled', '2 days'), ('discarded', '2 days'), \
                      ('discarded', '8 days'), ('completed', '1 hour')) AS v(s, age), \
              generate_series(1, 25);\
         INSERT INTO {schema}.pgmill_job (kind) SELECT 'k' FROM generate_series(1, 5);",
    ))
    .await;
    let mut config = JobCleanerConfig::default();
    config.batch_size = 10;
    let cleaner = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), config.clone()).unwrap();
    assert_eq!(cleaner.run_once().await.unwrap().num_jobs_deleted, 75);
    assert_eq!(ctx.count("pgmill_job").await, 25 + 25 + 5);
    config.discarded_retention = None;
    config.completed_retention = Some(Duration::from_secs(60));
    let keep_discarded = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), config).unwrap();
    assert_eq!(
        keep_discarded.run_once().await.unwrap().num_jobs_deleted,
        25
    );
    assert_eq!(count_in(&ctx, JobState::Discarded).await, 25);
    assert_eq!(count_in(&ctx, JobState::Available).await, 5);
}

/// The cleaner's statement reads only the rows it deletes: no retained finished job is read and
/// filtered out, whether the statistics predate the finished rows or not (one scan of the three
/// states OR-ed together walked every retained row when they did).
pub async fn cleaner_reads_only_the_jobs_it_deletes<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    // Statistics taken while every job is available, then finished jobs: most still retained.
    // Autovacuum is off for the table, so no ANALYZE in between makes the statistics fresh.
    ctx.script(&ctx.schema.render(
        "ALTER TABLE {schema}.pgmill_job SET (autovacuum_enabled = false);\
         INSERT INTO {schema}.pgmill_job (kind) SELECT 'k' FROM generate_series(1, 3000);\
         ANALYZE {schema}.pgmill_job;\
         INSERT INTO {schema}.pgmill_job (kind, state, finalized_at) \
         SELECT 'k', s::{schema}.pgmill_job_state, now() - age::interval \
         FROM (VALUES ('completed', '1 hour', 1000), ('cancelled', '1 hour', 500), \
                      ('discarded', '3 days', 500), ('completed', '2 days', 30), \
                      ('cancelled', '2 days', 30), ('discarded', '8 days', 30)) AS v(s, age, n), \
              generate_series(1, n);",
    ))
    .await;
    let config = JobCleanerConfig::default();
    let micros = |d: Option<Duration>| d.map_or("NULL".to_owned(), |d| d.as_micros().to_string());
    let args = [
        micros(config.completed_retention),
        micros(config.cancelled_retention),
        micros(config.discarded_retention),
        "40".to_owned(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let sql = include_str!("../../../core/sql/job/job_delete_finalized.sql");
    // Each run deletes 40 (the explained statement runs), the first on the old statistics.
    assert_eq!(ctx.job_rows_filtered_out(sql, &args).await, 0);
    ctx.script(&ctx.schema.render("ANALYZE {schema}.pgmill_job"))
        .await;
    assert_eq!(ctx.job_rows_filtered_out(sql, &args).await, 0);
    assert_eq!(ctx.count("pgmill_job").await, 3000 + 2000 + 90 - 80);
    let cleaner = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), config).unwrap();
    assert_eq!(cleaner.run_once().await.unwrap().num_jobs_deleted, 10);
    assert_eq!(ctx.count("pgmill_job").await, 3000 + 2000);
}

/// The queue cleaner removes queues no producer refreshed within the retention.
pub async fn queue_cleaner_removes_stale_queues<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_queue (name, updated_at) VALUES \
         ('stale', now() - interval '25 hours'), ('fresh', now() - interval '1 hour')",
    ))
    .await;
    let cleaner = QueueCleaner::new(
        ctx.driver.clone(),
        ctx.schema.clone(),
        QueueCleanerConfig::default(),
    )
    .unwrap();
    assert_eq!(cleaner.run_once().await.unwrap().num_queues_deleted, 1);
    let client = test_client(&ctx).build().unwrap();
    let names: Vec<String> = client
        .queue_list()
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.name)
        .collect();
    assert_eq!(names, ["fresh"]);
}

/// The rescuer deletes the rows of clients dead for longer than the client retention, once no
/// running job names them as its attempter (a locked one it cannot rescue keeps its client's row
/// until the next pass), and keeps live clients, recently dead ones and those still running jobs.
/// A retention shorter than the client timeout is refused.
pub async fn rows_of_long_dead_clients_are_deleted_once_their_jobs_are_rescued<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_client (id, hostname, pid, heartbeat_at) VALUES \
         ('live', 'h', 1, now()), \
         ('recently-dead', 'h', 2, now() - interval '50 minutes'), \
         ('long-dead', 'h', 3, now() - interval '2 hours'), \
         ('long-dead-busy', 'h', 4, now() - interval '2 hours'), \
         ('long-dead-earlier-attempt', 'h', 5, now() - interval '2 hours'), \
         ('live-busy', 'h', 6, now())",
    ))
    .await;
    let client = test_client(&ctx).build().unwrap();
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(client.insert(Task { n }).await.unwrap().id.0);
    }
    // The dead client's running job; a running job whose current attempt is a live client's after
    // an earlier attempt by a dead one; a finished job of the long-dead client.
    ctx.script(&ctx.schema.render(&format!(
        "UPDATE {{schema}}.pgmill_job SET state = 'running', attempt = 1, attempted_at = now(), \
             attempted_by = ARRAY['long-dead-busy'], claim_token = 7 WHERE id = {}; \
         UPDATE {{schema}}.pgmill_job SET state = 'running', attempt = 2, attempted_at = now(), \
             attempted_by = ARRAY['long-dead-earlier-attempt', 'live-busy'], claim_token = 8 \
             WHERE id = {}; \
         UPDATE {{schema}}.pgmill_job SET state = 'completed', attempt = 1, finalized_at = now(), \
             attempted_at = now(), attempted_by = ARRAY['long-dead'] WHERE id = {}",
        ids[0], ids[1], ids[2]
    )))
    .await;
    let rows = async || -> String {
        ctx.conn()
            .await
            .query_scalar(&ctx.stmt(
                "SELECT coalesce(string_agg(id, ' ' ORDER BY id), '') FROM {schema}.pgmill_client",
            ))
            .await
            .unwrap()
    };
    let rescuer = JobRescuer::new(
        ctx.driver.clone(),
        ctx.schema.clone(),
        JobRescuerConfig::default(),
    )
    .unwrap();

    // The dead client's job is locked: the pass cannot rescue it, so its client's row stays.
    let mut conn = ctx.conn().await;
    let mut lock = conn.begin().await.unwrap();
    lock.execute(
        &ctx.stmt("SELECT id FROM {schema}.pgmill_job WHERE id = $1::bigint FOR UPDATE")
            .bind(ids[0]),
    )
    .await
    .unwrap();
    let pass = rescuer.run_once().await.unwrap();
    assert_eq!((pass.num_jobs_rescued, pass.num_clients_deleted), (0, 2));
    assert_eq!(rows().await, "live live-busy long-dead-busy recently-dead");
    lock.rollback().await.unwrap();
    drop(conn);

    let pass = rescuer.run_once().await.unwrap();
    assert_eq!((pass.num_jobs_rescued, pass.num_clients_deleted), (1, 1));
    assert_eq!(rows().await, "live live-busy recently-dead");
    let state_of = async |id: i64| {
        let job = client.job_get(pgmill::JobId(id)).await.unwrap();
        job.unwrap().state
    };
    assert_eq!(state_of(ids[0]).await, JobState::Available);
    assert_eq!(state_of(ids[1]).await, JobState::Running);
    let pass = rescuer.run_once().await.unwrap();
    assert_eq!((pass.num_jobs_rescued, pass.num_clients_deleted), (0, 0));

    let mut short = JobRescuerConfig::default();
    short.client_retention = short.client_timeout - Duration::from_millis(1);
    let refused = JobRescuer::new(ctx.driver.clone(), ctx.schema.clone(), short.clone());
    assert!(matches!(refused, Err(pgmill::Error::InvalidConfig(_))));
    let refused = test_client(&ctx).rescuer(short).build();
    assert!(matches!(refused, Err(pgmill::Error::InvalidConfig(_))));
}

/// A service that keeps failing (its table is gone for a while) logs and retries, a panicking one
/// is restarted by the supervisor, and the client keeps working jobs throughout.
pub async fn failing_services_recover_and_the_client_keeps_working<H: Harness>() {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    ctx.script(
        &ctx.schema
            .render("ALTER TABLE {schema}.pgmill_leader RENAME TO pgmill_leader_away"),
    )
    .await;
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let panicky = pgmill::PeriodicJob::new(
        "panicky",
        pgmill::Schedule::every(Duration::from_secs(3600)).unwrap(),
        move || {
            if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("injected failure in a periodic job's constructor");
            }
            Task { n: 99 }
        },
    )
    .unwrap()
    .run_on_start(true);
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .periodic(panicky)
        .periodic_interval(Duration::from_millis(50))
        .supervisor_backoff(Duration::from_millis(200))
        .elector({
            let mut e = pgmill::ElectorConfig::default();
            e.interval = Duration::from_millis(100);
            e.lease = Duration::from_millis(1_000);
            e
        })
        .build()
        .unwrap();
    client.start().await.unwrap();
    client.insert(Task { n: 1 }).await.unwrap();
    wait_for("work goes on while election fails", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    assert!(!client.is_leader());
    ctx.script(
        &ctx.schema
            .render("ALTER TABLE {schema}.pgmill_leader_away RENAME TO pgmill_leader"),
    )
    .await;
    wait_for("elected once the table is back", async || {
        client.is_leader()
    })
    .await;
    wait_for("the periodic job ran after the panic", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    client.stop().await;
    assert!(
        calls.load(Ordering::SeqCst) >= 2,
        "the constructor was called again after the panic"
    );
}

/// The plan of `stale_claim` (prepared on `conn`) for a claim of 100 jobs from the head.
async fn plan_of_stale_claim<C: Executor>(conn: &mut C) -> String {
    let rows = conn
        .query(&Statement::new(
            "EXPLAIN EXECUTE stale_claim('default', 100, 'plan-probe', 1, 1::smallint, \
             '-infinity', 0, ARRAY['task'])",
        ))
        .await
        .unwrap();
    let lines: Vec<String> = rows
        .iter()
        .map(|row| row.get::<String>("QUERY PLAN").unwrap())
        .collect();
    lines.join("\n")
}

/// The rows of the job table its statistics were last taken with (`reltuples`).
async fn stats_rows<H: Harness>(ctx: &TestContext<H::Driver>) -> i64 {
    ctx.conn()
        .await
        .query_scalar(&ctx.stmt(
            "SELECT reltuples::int8 AS n FROM pg_class WHERE oid = '{schema}.pgmill_job'::regclass",
        ))
        .await
        .unwrap()
}

/// The analyzer's passes until one analyzes (the live rows it goes by are counted once the
/// inserting transaction's statistics reach the server, within about a second).
async fn analyzed_pass<D: pgmill::driver::Driver>(
    analyzer: &JobAnalyzer<D>,
) -> JobAnalyzerRunOnceResult {
    let found = std::sync::Mutex::new(None);
    wait_for("an analyzer pass that analyzes", async || {
        let r = analyzer.run_once().await.unwrap();
        let analyzed = r.analyzed;
        *found.lock().unwrap() = Some(r);
        analyzed
    })
    .await;
    found.into_inner().unwrap().unwrap()
}

/// A migrated schema whose job table autovacuum leaves alone, so that no `ANALYZE` but the
/// case's own takes its statistics.
async fn without_autovacuum<H: Harness>() -> TestContext<H::Driver> {
    let ctx = TestContext::<H::Driver>::migrated::<H>().await;
    ctx.script(
        &ctx.schema
            .render("ALTER TABLE {schema}.pgmill_job SET (autovacuum_enabled = false)"),
    )
    .await;
    ctx
}

/// An `INSERT` of `n` task jobs generated by the server.
fn insert_generated<D: pgmill::driver::Driver>(ctx: &TestContext<D>, n: u32) -> String {
    ctx.schema.render(&format!(
        "INSERT INTO {{schema}}.pgmill_job (kind, args) \
         SELECT 'task', jsonb_build_object('n', g) FROM generate_series(1, {n}) AS g"
    ))
}

/// Asserts that a claim's plan finds the claimed ids by the primary key, scanning no table.
fn assert_finds_ids_by_primary_key(plan: &str) {
    assert!(
        plan.contains("Index Scan using pgmill_job_pkey on pgmill_job j")
            && !plan.contains("Seq Scan"),
        "{plan}"
    );
}

/// Prepares `stale_claim` (the claim from the position) on `conn` and runs it until the server
/// keeps its generic plan: five custom plans, then the generic one.
async fn prepare_stale_claim<H: Harness, C: Executor>(ctx: &TestContext<H::Driver>, conn: &mut C) {
    conn.execute_script(&format!(
        "PREPARE stale_claim(text, bigint, text, bigint, smallint, timestamptz, bigint, text[]) \
         AS {}",
        ctx.schema.render(include_str!(
            "../../../core/sql/job/job_get_available_after.sql"
        ))
    ))
    .await
    .unwrap();
    for _ in 0..8 {
        conn.execute_script(
            "EXECUTE stale_claim('default', 100, 'plan-probe', 1, 1::smallint, '-infinity', 0, \
             ARRAY['task'])",
        )
        .await
        .unwrap();
    }
}

/// `n` jobs for `insert_bulk` or `insert_many`.
fn tasks(n: i64) -> Vec<InsertParams> {
    (0..n)
        .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
        .collect()
}

/// A client's own large insert has the analyzer look before the call returns, with the jobs it
/// inserted as the table's rows: 20,000 jobs on statistics of an empty table are analyzed at
/// once, with no leader (no client is started), and a claim prepared on the empty table is
/// replanned by the time the call returns; the `ANALYZE` takes a small sample. Inserts
/// below `min_rows`, and small ones after the client saw large statistics a moment ago, do not
/// look (each would have analyzed); a large `insert_many` looks too; with the analyzer off
/// nothing is analyzed.
pub async fn a_large_insert_analyzes_the_table_it_outgrew<H: Harness>() {
    let ctx = without_autovacuum::<H>().await;
    let mut bad = JobAnalyzerConfig::default();
    bad.growth = 1;
    assert!(matches!(
        test_client(&ctx).analyzer(Some(bad)).build(),
        Err(pgmill::Error::InvalidConfig(_))
    ));
    let mut conn = ctx.conn().await;
    prepare_stale_claim::<H, _>(&ctx, &mut conn).await;

    let off = test_client(&ctx).analyzer(None).build().unwrap();
    assert_eq!(off.insert_bulk(&tasks(20_000)).await.unwrap(), 20_000);
    assert!(
        stats_rows::<H>(&ctx).await <= 0,
        "analyzed with the analyzer off"
    );
    let stale = plan_of_stale_claim(&mut conn).await;
    if !stale.contains("Seq Scan on pgmill_job j") {
        // As in analyzer_replans_statements_once_the_table_outgrew_its_statistics: the server
        // may have dropped this connection's cached plans under the full suite.
        eprintln!("the plan made on the empty table was dropped before the insert:\n{stale}");
    }
    // Once the statistics system counts the 20,000, any look would analyze.
    wait_for("the inserts counted", async || {
        let counted: i64 =
            ctx.conn()
                .await
                .query_scalar(&ctx.stmt(
                    "SELECT pg_stat_get_tuples_inserted('{schema}.pgmill_job'::regclass) AS n",
                ))
                .await
                .unwrap();
        counted >= 20_000
    })
    .await;

    let client = test_client(&ctx).build().unwrap();
    assert_eq!(client.insert_many(&tasks(500)).await.unwrap().len(), 500);
    assert!(stats_rows::<H>(&ctx).await <= 0, "analyzed for 500 rows");
    assert_eq!(client.insert_bulk(&tasks(20_000)).await.unwrap(), 20_000);
    // 40,500 rows on about 830 pages: at 3,000 sampled rows every page is read, and the count
    // is exact.
    assert_eq!(
        stats_rows::<H>(&ctx).await,
        40_500,
        "statistics taken before insert_bulk returned"
    );
    let replanned = plan_of_stale_claim(&mut conn).await;
    assert_finds_ids_by_primary_key(&replanned);
    conn.execute_script("DEALLOCATE stale_claim").await.unwrap();
    // On a small sample (a statistics target of 10): 11 histogram bounds, not the default's 101.
    let bounds: i32 = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt(
            "SELECT array_length(s.histogram_bounds::text::text[], 1) AS n FROM pg_stats s \
             JOIN pg_namespace n ON n.nspname = s.schemaname \
             JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = s.tablename \
             WHERE c.oid = '{schema}.pgmill_job'::regclass AND s.attname = 'id'",
        ))
        .await
        .unwrap();
    assert_eq!(bounds, 11);

    // Emptied and analyzed by someone else: statistics of no rows. The client saw 40,500 a
    // moment ago, so 1,000 more are not looked at (a look would have analyzed them).
    ctx.script(
        &ctx.schema
            .render("TRUNCATE {schema}.pgmill_job; ANALYZE {schema}.pgmill_job"),
    )
    .await;
    assert_eq!(stats_rows::<H>(&ctx).await, 0);
    assert_eq!(client.insert_bulk(&tasks(1_000)).await.unwrap(), 1_000);
    assert_eq!(stats_rows::<H>(&ctx).await, 0, "looked at 1,000 rows");
    // A client that has seen nothing looks at a large insert_many's 2,000.
    let fresh = test_client(&ctx).build().unwrap();
    assert_eq!(fresh.insert_many(&tasks(2_000)).await.unwrap().len(), 2_000);
    assert_eq!(stats_rows::<H>(&ctx).await, 3_000);
}

/// Whether a role may analyze the job table is the server's rule, not only ownership: a large
/// insert by the owner of the database, who does not own the job table, analyzes the table
/// before it returns, as the table's owner's would. A role that may insert jobs but owns neither
/// the table nor the database inserts them all and analyzes nothing (its `ANALYZE` would only be
/// skipped with a warning). A look that fails leaves the insert and its announcement whole. On a
/// private cluster: the case creates roles, a database, and takes a catalog view from roles.
pub async fn the_database_owner_analyzes_a_table_it_does_not_own<H: Harness>() {
    let cluster = crate::testdb::Cluster::start().expect("private cluster");
    let admin = TestContext::<H::Driver>::on::<H>(cluster.url()).await;
    admin
        .script("CREATE ROLE app_owner LOGIN; CREATE ROLE app_user LOGIN")
        .await;
    admin.script("CREATE DATABASE app OWNER app_owner").await;
    let url_as = |role: &str| {
        cluster
            .url()
            .replace("postgres@", &format!("{role}@"))
            .replace("/postgres?", "/app?")
    };
    // The superuser migrates, so the tables are its own.
    let ctx = TestContext::<H::Driver>::on::<H>(url_as("postgres")).await;
    Migrator::new(ctx.schema.clone())
        .up(&mut ctx.conn().await, None)
        .await
        .unwrap();
    ctx.script(&ctx.schema.render(
        "ALTER TABLE {schema}.pgmill_job SET (autovacuum_enabled = false); \
         GRANT USAGE ON SCHEMA {schema} TO app_owner, app_user; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} \
             TO app_owner, app_user; \
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO app_owner, app_user",
    ))
    .await;
    let client_as = async |role: &str| {
        let driver = H::connect(&url_as(role), 4).await.unwrap();
        Client::builder(driver)
            .schema(ctx.schema.clone())
            .build()
            .unwrap()
    };

    let user = client_as("app_user").await;
    assert_eq!(user.insert_bulk(&tasks(20_000)).await.unwrap(), 20_000);
    assert!(
        stats_rows::<H>(&ctx).await <= 0,
        "analyzed by a role that may not"
    );
    let owner = client_as("app_owner").await;
    assert_eq!(owner.insert_bulk(&tasks(20_000)).await.unwrap(), 20_000);
    assert_eq!(
        stats_rows::<H>(&ctx).await,
        40_000,
        "statistics taken by the database's owner before insert_bulk returned"
    );
    assert_eq!(ctx.count("pgmill_job").await, 40_000);

    // A look that fails (here: the role may no longer read pg_locks) is only logged: the insert
    // succeeds, and its jobs are announced after it, which is how the worker, whose poll
    // interval is an hour, finds them.
    ctx.script(&ctx.schema.render(
        "TRUNCATE {schema}.pgmill_job; ANALYZE {schema}.pgmill_job; \
         REVOKE SELECT ON pg_catalog.pg_locks FROM PUBLIC",
    ))
    .await;
    let worker = test_client(&ctx)
        .queue("default", 4)
        .worker(ScriptedWorker::ok())
        .poll_interval(Duration::from_secs(3600))
        .analyzer(None)
        .build()
        .unwrap();
    worker.start().await.unwrap();
    let failing = client_as("app_owner").await;
    assert_eq!(
        failing.insert_many(&tasks(2_000)).await.unwrap().len(),
        2_000
    );
    assert_eq!(stats_rows::<H>(&ctx).await, 0, "analyzed without its look");
    wait_for("the jobs announced and worked", async || {
        count_in(&ctx, JobState::Completed).await == 2_000
    })
    .await;
    worker.stop().await;
}

/// A claim prepared while the job table was empty keeps its generic plan, which scans the whole
/// table for the claimed ids, after a burst of inserts grew the table (autovacuum is off for the
/// table, as if its next look were still to come). The analyzer sees the table's live rows have
/// outgrown its statistics and takes them again, and the claim is replanned to look its ids up
/// in the primary key; with the statistics taken, its next pass does nothing. A started client's
/// leader runs it: statistics taken while a large insert was uncommitted (which count none of
/// its rows) are taken again once it has committed, without a call.
pub async fn analyzer_replans_statements_once_the_table_outgrew_its_statistics<H: Harness>() {
    let ctx = without_autovacuum::<H>().await;
    for (growth, min_rows) in [(1, 1_000), (1_001, 1_000), (4, 0)] {
        let mut bad = JobAnalyzerConfig::default();
        (bad.growth, bad.min_rows) = (growth, min_rows);
        assert!(matches!(
            JobAnalyzer::new(ctx.driver.clone(), ctx.schema.clone(), bad),
            Err(pgmill::Error::InvalidConfig(_))
        ));
    }
    let analyzer = JobAnalyzer::new(
        ctx.driver.clone(),
        ctx.schema.clone(),
        JobAnalyzerConfig::default(),
    )
    .unwrap();
    let empty = analyzer.run_once().await.unwrap();
    assert!(!empty.analyzed, "{empty:?}");

    let mut conn = ctx.conn().await;
    prepare_stale_claim::<H, _>(&ctx, &mut conn).await;
    ctx.script(&insert_generated(&ctx, 20_000)).await;
    // The plan made on the empty table is kept: it scans the table for the ids. Unless the
    // server reset this connection's caches meanwhile, as it does to a backend that falls behind
    // on invalidation messages (other tests' migrations and dropped schemas, in parallel), which
    // drops every cached plan: then there is no stale plan to see, and only the analyzer's part
    // of the case is checked.
    let stale = plan_of_stale_claim(&mut conn).await;
    let kept = stale.contains("Seq Scan on pgmill_job j");
    if !kept {
        eprintln!(
            "the plan made on the empty table was dropped before the analyzer's pass:\n{stale}"
        );
    }

    let grown = analyzed_pass(&analyzer).await;
    assert!(
        grown.stats_rows == 0 && grown.live_rows == 20_000,
        "{grown:?}"
    );
    let replanned = plan_of_stale_claim(&mut conn).await;
    assert_finds_ids_by_primary_key(&replanned);
    let again = analyzer.run_once().await.unwrap();
    assert!(
        !again.analyzed && again.stats_rows == 20_000,
        "{again:?} after {grown:?}"
    );
    conn.execute_script("DEALLOCATE stale_claim").await.unwrap();

    // After a TRUNCATE the counters still hold the 20,000 inserts: one ANALYZE (of the empty
    // table), then none, the analyzer knowing by how much they overstate the rows.
    ctx.script(&ctx.schema.render("TRUNCATE {schema}.pgmill_job"))
        .await;
    let first = analyzer.run_once().await.unwrap();
    let second = analyzer.run_once().await.unwrap();
    assert!(
        first.analyzed == (first.live_rows >= 1_000) && !second.analyzed,
        "{first:?}, then {second:?}"
    );
    // A burst after it counts again: 5,000 rows on the empty table's statistics.
    ctx.script(&insert_generated(&ctx, 5_000)).await;
    // Not while someone holds a lock ANALYZE would wait for.
    conn.execute_script(
        &ctx.schema
            .render("BEGIN; LOCK TABLE {schema}.pgmill_job IN SHARE UPDATE EXCLUSIVE MODE"),
    )
    .await
    .unwrap();
    wait_for("the burst counted while the table is locked", async || {
        let r = analyzer.run_once().await.unwrap();
        assert!(!r.analyzed, "analyzed through a lock: {r:?}");
        r.live_rows >= 5_000
    })
    .await;
    conn.execute_script("COMMIT").await.unwrap();
    let burst = analyzed_pass(&analyzer).await;
    assert!(burst.live_rows >= 5_000, "{burst:?}");
    assert_eq!(stats_rows::<H>(&ctx).await, 5_000);

    // The leader's analyzer. Statistics taken while 100,000 rows are uncommitted count none of
    // them, only the 5,000 committed.
    let client = test_client(&ctx)
        .queue("idle", 1)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    client.start().await.unwrap();
    conn.execute_script(&format!("BEGIN; {}", insert_generated(&ctx, 100_000)))
        .await
        .unwrap();
    ctx.script(&ctx.schema.render("ANALYZE {schema}.pgmill_job"))
        .await;
    let during = stats_rows::<H>(&ctx).await;
    assert_eq!(during, 5_000, "rows counted before the commit");
    conn.execute_script("COMMIT").await.unwrap();
    drop(conn);
    wait_for("the leader analyzed the committed rows", async || {
        stats_rows::<H>(&ctx).await >= 100_000
    })
    .await;
    client.stop().await;
}
