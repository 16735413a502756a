//! The queue statistics rollup: each bucket's outcomes, retries and pickups counted once from the
//! jobs as they ended, across leader changes and concurrent writers, backfilled after a gap,
//! trimmed after the retention; and the series charts read, from the rollup's table alone.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use pgmill::admin::QueueStatParams;
use pgmill::driver::{Driver, Executor};
use pgmill::maintenance::{QueueStatConfig, QueueStatRollup};
use pgmill::{Client, ElectorConfig, InsertOpts, InsertParams, JobError, JobState};

use crate::scripted::{ScriptedWorker, Task, test_client, wait_for};
use crate::{Harness, TestContext, migrated as ctx};

/// Settings for tests: buckets of a second, written half a second after they end, looked for
/// every 100 ms.
fn fast_stats() -> QueueStatConfig {
    let mut c = QueueStatConfig::default();
    c.bucket = Duration::from_secs(1);
    c.settle = Duration::from_millis(500);
    c.interval = Duration::from_millis(100);
    c
}

/// One row of `pgmill_queue_stat`.
#[derive(Debug, Clone, PartialEq)]
struct StatRow {
    queue: String,
    bucket: DateTime<Utc>,
    bucket_end: DateTime<Utc>,
    counts: Counts,
    pickup_count: i64,
    pickup_p95_us: Option<i64>,
    sampled_at: Option<DateTime<Utc>>,
    depth: Option<serde_json::Value>,
}

/// What a bucket counts of one queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    completed: i64,
    discarded: i64,
    cancelled: i64,
    retried: i64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.completed += o.completed;
        self.discarded += o.discarded;
        self.cancelled += o.cancelled;
        self.retried += o.retried;
    }
}

async fn stat_rows<D: Driver>(ctx: &TestContext<D>) -> Vec<StatRow> {
    let rows = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT queue, bucket, bucket_end, completed, discarded, cancelled, retried, \
             pickup_count, pickup_p95_us, sampled_at, depth \
             FROM {schema}.pgmill_queue_stat ORDER BY bucket, queue",
        ))
        .await
        .unwrap();
    rows.iter()
        .map(|r| StatRow {
            queue: r.get("queue").unwrap(),
            bucket: r.get("bucket").unwrap(),
            bucket_end: r.get("bucket_end").unwrap(),
            counts: Counts {
                completed: r.get("completed").unwrap(),
                discarded: r.get("discarded").unwrap(),
                cancelled: r.get("cancelled").unwrap(),
                retried: r.get("retried").unwrap(),
            },
            pickup_count: r.get("pickup_count").unwrap(),
            pickup_p95_us: r.get("pickup_p95_us").unwrap(),
            sampled_at: r.get("sampled_at").unwrap(),
            depth: r.get("depth").unwrap(),
        })
        .collect()
}

/// What happened to the jobs, read wherever they are (the job table, the history, the dead-letter
/// queue): (queue, kind of event, when).
async fn job_events<D: Driver>(ctx: &TestContext<D>) -> Vec<(String, &'static str, DateTime<Utc>)> {
    let rows = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT queue, state::text AS state, finalized_at, errors FROM {schema}.pgmill_job_all",
        ))
        .await
        .unwrap();
    let mut events = Vec::new();
    for r in &rows {
        let queue: String = r.get("queue").unwrap();
        let finalized_at: Option<DateTime<Utc>> = r.get("finalized_at").unwrap();
        match (r.get::<String>("state").unwrap().as_str(), finalized_at) {
            ("completed", Some(at)) => events.push((queue.clone(), "completed", at)),
            ("discarded", Some(at)) => events.push((queue.clone(), "discarded", at)),
            ("cancelled", Some(at)) => events.push((queue.clone(), "cancelled", at)),
            _ => {}
        }
        for e in r.get::<Vec<serde_json::Value>>("errors").unwrap() {
            let at: DateTime<Utc> = serde_json::from_value(e["at"].clone()).unwrap();
            // The error of the attempt that ended the job is its discard or cancel, not a retry.
            if Some(at) != finalized_at {
                events.push((queue.clone(), "retried", at));
            }
        }
    }
    events
}

/// The counts of `events` in [from, to) for `queue` (`*`: every queue).
fn counted(
    events: &[(String, &'static str, DateTime<Utc>)],
    queue: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Counts {
    let mut c = Counts::default();
    for (q, kind, at) in events {
        if (queue == "*" || q == queue) && from <= *at && *at < to {
            match *kind {
                "completed" => c.completed += 1,
                "discarded" => c.discarded += 1,
                "cancelled" => c.cancelled += 1,
                _ => c.retried += 1,
            }
        }
    }
    c
}

/// Checks that the buckets of all queues run without gap or overlap from the first to the last,
/// that each row of each bucket counts exactly what the job table says happened in it, and that
/// every event from the first bucket's start to the last one's end is in one; returns the totals
/// per queue.
fn check_against_the_jobs(
    rows: &[StatRow],
    events: &[(String, &'static str, DateTime<Utc>)],
) -> BTreeMap<String, Counts> {
    let all: Vec<&StatRow> = rows.iter().filter(|r| r.queue == "*").collect();
    assert!(!all.is_empty(), "no bucket written");
    for pair in all.windows(2) {
        assert_eq!(
            pair[0].bucket_end, pair[1].bucket,
            "buckets follow each other without gap or overlap"
        );
    }
    let mut totals: BTreeMap<String, Counts> = BTreeMap::new();
    for r in rows {
        assert_eq!(
            r.counts,
            counted(events, &r.queue, r.bucket, r.bucket_end),
            "row {r:?}"
        );
        assert!(
            all.iter().any(|a| a.bucket == r.bucket),
            "a queue row without its bucket's row: {r:?}"
        );
        *totals.entry(r.queue.clone()).or_default() += r.counts;
    }
    // Every queue with an event in a bucket has a row there.
    let (first, last) = (all[0].bucket, all[all.len() - 1].bucket_end);
    let mut queues: Vec<&String> = events.iter().map(|e| &e.0).collect();
    queues.sort();
    queues.dedup();
    for q in queues {
        assert_eq!(
            totals.get(q).copied().unwrap_or_default(),
            counted(events, q, first, last),
            "queue {q}"
        );
    }
    totals
}

/// The newest time in `events`.
fn last_event(events: &[(String, &'static str, DateTime<Utc>)]) -> DateTime<Utc> {
    events.iter().map(|e| e.2).max().unwrap()
}

/// The end of the newest bucket written.
async fn written_until<D: Driver>(ctx: &TestContext<D>) -> Option<DateTime<Utc>> {
    ctx.conn()
        .await
        .query_scalar(
            &ctx.stmt(
                "SELECT max(bucket_end) AS t FROM {schema}.pgmill_queue_stat WHERE queue = '*'",
            ),
        )
        .await
        .unwrap()
}

/// Waits until the database's clock has passed `t`.
async fn wait_for_db_clock<D: Driver>(ctx: &TestContext<D>, t: DateTime<Utc>) {
    wait_for("the database clock", async || {
        ctx.conn()
            .await
            .query_scalar::<bool>(&ctx.stmt("SELECT now() > $1::timestamptz AS passed").bind(t))
            .await
            .unwrap()
    })
    .await;
}

/// The database's clock.
async fn db_now<D: Driver>(ctx: &TestContext<D>) -> DateTime<Utc> {
    ctx.conn()
        .await
        .query_scalar(&ctx.stmt("SELECT now() AS now"))
        .await
        .unwrap()
}

/// A burst of outcomes in two queues (completions, retries, discards by the worker and by
/// exhausted attempts, cancels) is counted once, in the buckets its events happened in: each
/// bucket's rows match the job table, the totals match the burst, the row for all queues is the
/// sum of the queues', and writing again writes nothing.
pub async fn a_burst_of_outcomes_is_counted_once_in_its_buckets<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        match run.n {
            100..200 if run.attempt == 1 => Err(JobError::retry("flaky")),
            200..300 => Err(JobError::discard("corrupt")),
            300..400 => Err(JobError::retry("down")),
            400..500 => Err(JobError::cancel("not needed")),
            _ => Ok(()),
        }
    });
    let client = test_client(&ctx)
        .queue("alpha", 4)
        .queue("beta", 4)
        .worker(worker)
        .queue_stats(None)
        .build()
        .unwrap();
    let mut params = Vec::new();
    let mut job = |n: i64, queue: &str| {
        let opts = InsertOpts::new().queue(queue).max_attempts(2);
        params.push(InsertParams::from_args(&Task { n }, Some(opts)).unwrap());
    };
    (0..12).for_each(|n| job(n, "alpha")); // completed
    (100..104).for_each(|n| job(n, "alpha")); // retried once, then completed
    (200..205).for_each(|n| job(n, "beta")); // discarded by the worker
    (300..303).for_each(|n| job(n, "beta")); // retried once, then discarded: attempts used up
    (400..402).for_each(|n| job(n, "beta")); // cancelled by the worker
    client.insert_many(&params).await.unwrap();
    client.start().await.unwrap();
    wait_for("every job finished", async || {
        crate::scripted::count_in(&ctx, JobState::Completed).await == 16
            && crate::scripted::count_in(&ctx, JobState::Discarded).await == 8
            && crate::scripted::count_in(&ctx, JobState::Cancelled).await == 2
    })
    .await;
    client.stop().await;

    let events = job_events(&ctx).await;
    let until = last_event(&events);
    let rollup =
        QueueStatRollup::new(ctx.driver.clone(), ctx.schema.clone(), fast_stats()).unwrap();
    let mut written = pgmill::maintenance::QueueStatRunOnceResult::default();
    wait_for("the burst's buckets written", async || {
        let r = rollup.run_once().await.unwrap();
        written.num_buckets += r.num_buckets;
        written_until(&ctx).await.is_some_and(|t| t > until)
    })
    .await;
    let rows = stat_rows(&ctx).await;
    assert_eq!(
        written.num_buckets,
        i64::try_from(rows.iter().filter(|r| r.queue == "*").count()).unwrap()
    );
    let totals = check_against_the_jobs(&rows, &events);
    let expect = |completed, discarded, cancelled, retried| Counts {
        completed,
        discarded,
        cancelled,
        retried,
    };
    assert_eq!(totals["alpha"], expect(16, 0, 0, 4));
    assert_eq!(totals["beta"], expect(0, 8, 2, 3));
    assert_eq!(totals["*"], expect(16, 8, 2, 7));
    // Pickups: every attempt that ended its job, but those whose failure moved their schedule
    // (the three discarded for attempts used up).
    let pickups = |q: &str| -> i64 {
        rows.iter()
            .filter(|r| r.queue == q)
            .map(|r| r.pickup_count)
            .sum()
    };
    assert_eq!(
        (pickups("alpha"), pickups("beta"), pickups("*")),
        (16, 7, 23)
    );
    for r in &rows {
        assert_eq!(r.pickup_p95_us.is_some(), r.pickup_count > 0, "{r:?}");
        assert!(r.pickup_p95_us.is_none_or(|us| us >= 0));
    }
    // The newest bucket carries the sample: nothing is left alive.
    let newest = rows.iter().rfind(|r| r.queue == "*").unwrap();
    assert_eq!(newest.depth, Some(serde_json::json!({})));
    assert!(newest.sampled_at.is_some());

    // Again, and by another writer: nothing more.
    let other = QueueStatRollup::new(ctx.driver.clone(), ctx.schema.clone(), fast_stats()).unwrap();
    let (a, b) = tokio::join!(rollup.run_once(), other.run_once());
    let again = stat_rows(&ctx).await;
    assert_eq!(again[..rows.len()], rows[..]);
    check_against_the_jobs(&again, &events);
    let _ = (a.unwrap(), b.unwrap());

    // A pass that computes written buckets again, and sees more than the pass that wrote them (an
    // outcome that committed late, in a queue of its own), writes nothing: the bucket's row for
    // all queues is taken, so none of its queue rows goes in either.
    let (first, last) = (again[0].bucket, written_until(&ctx).await.unwrap());
    ctx.script(&ctx.schema.render(&format!(
        "INSERT INTO {{schema}}.pgmill_job (kind, queue, state, finalized_at) \
         VALUES ('task', 'late', 'completed', '{}'::timestamptz)",
        first.to_rfc3339()
    )))
    .await;
    let rewrite = ctx
        .conn()
        .await
        .query(
            &ctx.stmt(include_str!("../../../core/sql/stat/queue_stat_rollup.sql"))
                .bind(first)
                .bind(last)
                .bind(1_000_000_i64)
                .bind(false),
        )
        .await
        .unwrap();
    assert_eq!(rewrite[0].get::<i64>("num_buckets").unwrap(), 0);
    assert_eq!(rewrite[0].get::<i64>("num_queue_rows").unwrap(), 0);
    assert_eq!(stat_rows(&ctx).await, again);
}

/// Jobs worked while the leadership goes from a client that rolls up, to one that does not (a
/// gap of several buckets), to a third that does, beside a fourth writer with buckets of another
/// width: the buckets run without gap or overlap, the gap is filled in (counts without samples),
/// and every job is counted exactly once.
pub async fn leader_changes_leave_no_bucket_missed_or_counted_twice<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut elector = ElectorConfig::default();
    elector.interval = Duration::from_millis(100);
    elector.lease = Duration::from_secs(2);
    let client = |stats: Option<QueueStatConfig>| -> Client<H::Driver> {
        test_client(&ctx)
            .queue("flow", 4)
            .worker(ScriptedWorker::ok())
            .elector(elector.clone())
            .queue_stats(stats)
            .build()
            .unwrap()
    };
    let mut inserted = 0_i64;
    let inserter = test_client(&ctx).build().unwrap();
    // A batch of jobs, worked to the end, then the database clock moved to its next second: the
    // batches fall into different buckets.
    let batch = async |inserted: &mut i64| {
        let params: Vec<_> = (0..5)
            .map(|n| {
                InsertParams::from_args(&Task { n }, Some(InsertOpts::new().queue("flow"))).unwrap()
            })
            .collect();
        inserter.insert_many(&params).await.unwrap();
        *inserted += 5;
        let want = *inserted;
        wait_for("the batch completed", async || {
            crate::scripted::count_in(&ctx, JobState::Completed).await == want
        })
        .await;
        let now = db_now(&ctx).await;
        wait_for_db_clock(&ctx, now + chrono::TimeDelta::seconds(1)).await;
    };

    let a = client(Some(fast_stats()));
    a.start().await.unwrap();
    wait_for("a leads", async || a.is_leader()).await;
    let b = client(None);
    b.start().await.unwrap();
    for _ in 0..3 {
        batch(&mut inserted).await;
    }
    wait_for("a wrote buckets", async || {
        written_until(&ctx).await.is_some()
    })
    .await;
    a.stop().await;
    wait_for("b leads", async || b.is_leader()).await;
    let gap_from = written_until(&ctx).await.unwrap();
    for _ in 0..3 {
        batch(&mut inserted).await;
    }
    // Three seconds without a rollup after the last of b's batches.
    let now = db_now(&ctx).await;
    wait_for_db_clock(&ctx, now + chrono::TimeDelta::seconds(3)).await;
    assert_eq!(
        written_until(&ctx).await.unwrap(),
        gap_from,
        "b wrote nothing"
    );

    let c = client(Some(fast_stats()));
    c.start().await.unwrap();
    b.stop().await;
    wait_for("c leads", async || c.is_leader()).await;
    // Another writer at the same time, with buckets of two seconds.
    let mut wide = fast_stats();
    wide.bucket = Duration::from_secs(2);
    let other = QueueStatRollup::new(ctx.driver.clone(), ctx.schema.clone(), wide).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = {
        let done = std::sync::Arc::clone(&done);
        async move {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                other.run_once().await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let work = async {
        for _ in 0..3 {
            batch(&mut inserted).await;
        }
        let events = job_events(&ctx).await;
        let until = last_event(&events);
        wait_for("every bucket written", async || {
            written_until(&ctx).await.is_some_and(|t| t > until)
        })
        .await;
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    tokio::join!(racer, work);
    c.stop().await;

    let events = job_events(&ctx).await;
    let rows = stat_rows(&ctx).await;
    let totals = check_against_the_jobs(&rows, &events);
    assert_eq!(totals["flow"].completed, inserted);
    assert_eq!(totals["*"].completed, inserted);
    // The gap was filled in: its buckets have counts but no sample.
    let filled: Vec<&StatRow> = rows
        .iter()
        .filter(|r| r.queue == "flow" && r.bucket >= gap_from && r.sampled_at.is_none())
        .collect();
    assert!(
        filled.iter().map(|r| r.counts.completed).sum::<i64>() >= 15,
        "b's batches counted in filled-in buckets: {filled:?}"
    );
    // No two buckets of all queues may overlap, whoever writes them.
    let last = rows.iter().rfind(|r| r.queue == "*").unwrap();
    let overlap = ctx
        .conn()
        .await
        .execute(
            &ctx.stmt(
                "INSERT INTO {schema}.pgmill_queue_stat (queue, bucket, bucket_end) \
                 VALUES ('*', $1::timestamptz - interval '500 ms', $1::timestamptz + interval '1 s')",
            )
            .bind(last.bucket_end),
        )
        .await
        .unwrap_err();
    assert_eq!(
        overlap.sqlstate(),
        Some(pgmill::driver::sqlstate::EXCLUSION_VIOLATION),
        "{overlap}"
    );
}

/// Rows past the retention are deleted, oldest first in batches, and newer ones kept.
pub async fn rows_past_the_retention_are_trimmed_in_batches<H: Harness>() {
    let ctx = ctx::<H>().await;
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_queue_stat (queue, bucket, bucket_end, completed) \
         SELECT q, date_trunc('minute', now()) - age::interval, \
             date_trunc('minute', now()) - age::interval + interval '1 minute', 1 \
         FROM unnest(ARRAY['*', 'a', 'b']) AS q, \
             unnest(ARRAY['3 days', '25 hours', '24 hours 2 minutes', '23 hours', '1 hour']) AS age",
    ))
    .await;
    let mut config = QueueStatConfig::default();
    config.batch_size = 2;
    let rollup = QueueStatRollup::new(ctx.driver.clone(), ctx.schema.clone(), config).unwrap();
    let r = rollup.run_once().await.unwrap();
    assert_eq!(r.num_rows_trimmed, 9);
    let kept = ctx
        .conn()
        .await
        .query_scalar::<i64>(&ctx.stmt(
            "SELECT count(*) AS n FROM {schema}.pgmill_queue_stat \
             WHERE bucket < now() - interval '24 hours'",
        ))
        .await
        .unwrap();
    assert_eq!(kept, 0);
    // The two younger buckets of each queue are kept (and the pass wrote the last hour's).
    let young = ctx
        .conn()
        .await
        .query_scalar::<i64>(
            &ctx.stmt("SELECT count(*) AS n FROM {schema}.pgmill_queue_stat WHERE completed = 1"),
        )
        .await
        .unwrap();
    assert_eq!(young, 6);
    assert_eq!(rollup.run_once().await.unwrap().num_rows_trimmed, 0);
}

/// The chart's read bins the rows: sums of counts, the worst percentile, depth by when it was
/// sampled (the largest per state), coverage; queues without a row count zero where their
/// bucket was written. It reads only the statistics table. Bad parameters are typed errors.
pub async fn the_series_bins_the_rollup_and_reads_nothing_else<H: Harness>() {
    let ctx = ctx::<H>().await;
    // Two written minutes, five and four minutes ago, and one 20 minutes ago.
    let anchor: DateTime<Utc> = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt("SELECT date_trunc('minute', now()) AS t"))
        .await
        .unwrap();
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_queue_stat (queue, bucket, bucket_end, completed, discarded, \
             retried, pickup_count, pickup_p95_us, sampled_at, depth, oldest_available_us) \
         SELECT q, {anchor} - m * interval '1 minute', \
             {anchor} - (m - 1) * interval '1 minute', c, d, r, p, p95, \
             CASE WHEN s THEN {anchor} - (m - 2) * interval '1 minute' \
                 - interval '50 seconds' END, \
             CASE WHEN s THEN dp::jsonb END, old \
         FROM (VALUES \
             ('*', 5, 10, 1, 2, 12, 4000, true, '{\"available\": 7, \"running\": 2}', 9000000), \
             ('a', 5, 10, 1, 2, 12, 4000, true, '{\"available\": 7, \"running\": 2}', 9000000), \
             ('*', 4, 3, 0, 0, 3, 1000, true, '{\"available\": 1, \"retryable\": 4}', 100), \
             ('b', 4, 3, 0, 0, 3, 1000, true, '{\"available\": 1, \"retryable\": 4}', 100), \
             ('*', 20, 1, 0, 0, 0, NULL, false, NULL, NULL) \
         ) AS v(q, m, c, d, r, p, p95, s, dp, old)",
    ).replace("{anchor}", &format!("'{}'::timestamptz", anchor.to_rfc3339())))
    .await;
    let client = test_client(&ctx).build().unwrap();
    let hour = client
        .queue_stats(&QueueStatParams::last_hour())
        .await
        .unwrap();
    assert_eq!(hour.points.len(), 61);
    assert_eq!(hour.queue, None);
    let point = |stats: &pgmill::admin::QueueStats, m: i64| {
        let at = anchor - chrono::TimeDelta::minutes(m);
        stats.points.iter().find(|p| p.at == at).unwrap().clone()
    };
    let at = |m: i64| point(&hour, m);
    let five = at(5);
    assert!(five.covered);
    assert_eq!(
        (five.completed, five.failed(), five.pickup_count),
        (10, 3, 12)
    );
    assert_eq!(five.pickup_p95, Some(Duration::from_millis(4)));
    // Its sample was taken in the next minute.
    assert_eq!(five.samples, 0);
    let four = at(4);
    assert_eq!(four.samples, 1);
    assert_eq!(four.depth_of(JobState::Available), 7);
    assert_eq!(four.depth_of(JobState::Running), 2);
    assert_eq!(four.oldest_available, Some(Duration::from_secs(9)));
    assert_eq!(at(3).depth_of(JobState::Retryable), 4);
    assert!(at(20).covered && !at(19).covered && !at(3).covered);
    assert_eq!(at(20).depth, None);

    // Queue b: no row five minutes ago, where the bucket was written: zero, and no live job then.
    let b = client
        .queue_stats(&QueueStatParams::last_hour().queue("b").unwrap())
        .await
        .unwrap();
    let b_at = |m: i64| point(&b, m);
    assert!(b_at(5).covered);
    assert_eq!((b_at(5).completed, b_at(4).completed), (0, 3));
    assert_eq!(b_at(4).depth, Some(BTreeMap::new()));
    assert_eq!(b_at(4).oldest_available, Some(Duration::ZERO));
    assert_eq!(b_at(3).depth_of(JobState::Retryable), 4);

    // A day in quarter hours: the written minutes fall into one or two bins.
    let day = client
        .queue_stats(&QueueStatParams::last_day())
        .await
        .unwrap();
    assert_eq!(day.points.len(), 97);
    let total: i64 = day.points.iter().map(|p| p.completed).sum();
    assert_eq!(total, 14);
    let worst = day.points.iter().filter_map(|p| p.pickup_p95).max();
    assert_eq!(worst, Some(Duration::from_millis(4)));
    assert_eq!(
        day.points
            .iter()
            .map(|p| p.depth_of(JobState::Available))
            .max(),
        Some(7)
    );

    // Only the statistics table is read.
    let sql = ctx
        .schema
        .render(include_str!("../../../core/sql/stat/queue_stat_series.sql"));
    let plan = explain_json(&ctx, &sql, &["'*'", "3600000000", "60000000"]).await;
    let mut relations = Vec::new();
    relations_in(&plan, &mut relations);
    relations.sort();
    relations.dedup();
    assert_eq!(relations, ["pgmill_queue_stat"]);

    let bad = QueueStatParams::new(Duration::from_secs(3600), Duration::from_millis(500));
    assert!(matches!(bad, Err(pgmill::Error::InvalidConfig(_))));
    let too_many = QueueStatParams::new(Duration::from_secs(86_400), Duration::from_secs(1));
    assert!(matches!(too_many, Err(pgmill::Error::InvalidConfig(_))));
    assert!(matches!(
        QueueStatParams::last_hour().queue("no spaces"),
        Err(pgmill::Error::InvalidName { .. })
    ));
}

/// `EXPLAIN (FORMAT JSON)` of `sql` with `args` (SQL literals) in place of `$1`, `$2`, ...
async fn explain_json<D: Driver>(
    ctx: &TestContext<D>,
    sql: &str,
    args: &[&str],
) -> serde_json::Value {
    let mut sql = sql.to_owned();
    for (i, arg) in args.iter().enumerate().rev() {
        sql = sql.replace(&format!("${}", i + 1), arg);
    }
    ctx.conn()
        .await
        .query_scalar(&pgmill::driver::Statement::new(format!(
            "EXPLAIN (FORMAT JSON) {sql}"
        )))
        .await
        .unwrap()
}

/// Every relation a plan names.
fn relations_in(plan: &serde_json::Value, into: &mut Vec<String>) {
    match plan {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k == "Relation Name" {
                    into.push(v.as_str().unwrap().to_owned());
                } else {
                    relations_in(v, into);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| relations_in(v, into)),
        _ => {}
    }
}

/// The rollup reads no finished job from before its buckets: with a long history of finished
/// jobs in the job table, the history ring and the dead-letter queue, and an old backlog, its
/// scans of the job table filter out no row, and its scans of the history and the dead-letter
/// queue read only the jobs that finished within its buckets, which it counts.
pub async fn the_rollup_reads_none_of_the_history<H: Harness>() {
    let ctx = ctx::<H>().await;
    // Old: finished two hours ago and more, in all three places. Recent: finished five minutes
    // ago, in the history (20 completed and 10 cancelled in q1) and the dead-letter queue (6
    // discarded in q2). And one discarded two hours ago that entered the dead-letter queue five
    // minutes ago (finished in the job table by a client of an earlier version, moved out later):
    // a bucket of its time counted it, no bucket of now does.
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_job (kind, queue, state, finalized_at, attempted_at, \
             scheduled_at, attempt) \
         SELECT 'k', 'q' || (i % 3), s::{schema}.pgmill_job_state, \
             CASE WHEN s <> 'available' THEN now() - interval '2 hours' END, \
             now() - interval '3 hours', now() - interval '3 hours', 1 \
         FROM unnest(ARRAY['completed', 'discarded', 'cancelled', 'available']) AS s, \
             generate_series(1, 1000) AS i;\
         INSERT INTO {schema}.pgmill_job_done (id, state, queue, kind, args, metadata, priority, \
             attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, \
             finalized_at, errors, tags, slot) \
         SELECT 1000000 + i, s::{schema}.pgmill_job_state, \
             CASE WHEN i >= 100000 THEN 'q1' ELSE 'q' || (i % 3) END, 'k', '{}', '{}', 1, \
             1, 25, f - interval '1 second', '{}', f - interval '3 seconds', \
             f - interval '3 seconds', f, '{}', '{}', {schema}.pgmill_job_done_slot(f, 7200) \
         FROM (SELECT i, s, now() - interval '3 hours' - i * interval '1 millisecond' AS f \
               FROM unnest(ARRAY['completed', 'cancelled']) AS s, \
                   generate_series(1, 20000) AS i \
               UNION ALL \
               SELECT 100000 + i, 'completed', now() - interval '5 minutes' \
               FROM generate_series(1, 20) AS i \
               UNION ALL \
               SELECT 200000 + i, 'cancelled', now() - interval '5 minutes' \
               FROM generate_series(1, 10) AS i) AS d(i, s, f) \
         WHERE i % 3 = 1 OR i >= 100000;\
         INSERT INTO {schema}.pgmill_job_dead (id, queue, kind, args, metadata, priority, \
             attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, \
             finalized_at, errors, tags, dead_at, dead_reason) \
         SELECT 3000000 + i, CASE WHEN i > 5000 THEN 'q2' ELSE 'q0' END, 'k', '{}', '{}', 1, 1, \
             1, f - interval '1 second', '{}', f - interval '3 seconds', \
             f - interval '3 seconds', f, '{}', '{}', coalesce(dead, f), 'discarded' \
         FROM (SELECT i, now() - interval '2 hours' - i * interval '1 millisecond', NULL::timestamptz \
               FROM generate_series(1, 5000) AS i \
               UNION ALL \
               SELECT 5000 + i, now() - interval '5 minutes', NULL \
               FROM generate_series(1, 6) AS i \
               UNION ALL \
               SELECT 6000, now() - interval '2 hours', now() - interval '5 minutes') \
             AS d(i, f, dead);\
         ANALYZE {schema}.pgmill_job;\
         ANALYZE {schema}.pgmill_job_done;\
         ANALYZE {schema}.pgmill_job_dead;",
    ))
    .await;
    // What autovacuum does for each slot's index with autosummarize on: summarize the block
    // ranges that filled.
    ctx.script(&ctx.schema.render(
        "SELECT brin_summarize_new_values(i.inhrelid::regclass) \
         FROM pg_inherits AS i \
         WHERE i.inhparent = '{schema}.pgmill_job_done_finalized_idx'::regclass",
    ))
    .await;
    let sql = include_str!("../../../core/sql/stat/queue_stat_rollup.sql");
    let args = [
        "(date_bin('1 minute', now(), '2000-01-01') - interval '10 minutes')",
        "(date_bin('1 minute', now(), '2000-01-01'))",
        "60000000",
        "true",
    ];
    let plan = explain_analyze_json(&ctx, sql, &args).await;
    assert_eq!(rows_read(&plan, |t| t == "pgmill_job").1, 0, "{plan}");
    assert_eq!(
        rows_read(&plan, |t| t.starts_with("pgmill_job_done")),
        (30, 0),
        "{plan}"
    );
    assert_eq!(
        rows_read(&plan, |t| t == "pgmill_job_dead"),
        (6, 1),
        "{plan}"
    );
    let rows = stat_rows(&ctx).await;
    assert_eq!(rows.iter().filter(|r| r.queue == "*").count(), 10);
    let total = |q: &str| {
        let mut c = Counts::default();
        rows.iter()
            .filter(|r| r.queue == q)
            .for_each(|r| c += r.counts);
        c
    };
    let expect = |completed, discarded, cancelled| Counts {
        completed,
        discarded,
        cancelled,
        retried: 0,
    };
    assert_eq!(total("*"), expect(20, 6, 10));
    assert_eq!(total("q2"), expect(0, 6, 0));
    let sampled = rows.iter().rfind(|r| r.queue == "*").unwrap();
    assert_eq!(sampled.depth, Some(serde_json::json!({"available": 1000})));

    // Each slot of the history has its index summarized as it fills.
    let summarized: i64 = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt(
            "SELECT count(*) AS n FROM pg_inherits AS i \
             JOIN pg_class AS c ON c.oid = i.inhrelid \
             WHERE i.inhparent = '{schema}.pgmill_job_done_finalized_idx'::regclass \
                 AND 'autosummarize=on' = ANY (c.reloptions)",
        ))
        .await
        .unwrap();
    assert_eq!(summarized, 16);
}

/// `EXPLAIN (ANALYZE, FORMAT JSON)` of the engine statement `sql` (a `core/sql/` template, which
/// takes effect) with `args` (SQL literals) in place of `$1`, `$2`, ...
async fn explain_analyze_json<D: Driver>(
    ctx: &TestContext<D>,
    sql: &str,
    args: &[&str],
) -> serde_json::Value {
    let mut sql = ctx.schema.render(sql);
    for (i, arg) in args.iter().enumerate().rev() {
        sql = sql.replace(&format!("${}", i + 1), arg);
    }
    ctx.script(&ctx.schema.render(
        "CREATE OR REPLACE FUNCTION {schema}.pgmill_test_explain_analyze(q text) \
         RETURNS jsonb LANGUAGE plpgsql AS $f$ \
         DECLARE plan json; \
         BEGIN \
             EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan; \
             RETURN plan::jsonb; \
         END $f$",
    ))
    .await;
    ctx.conn()
        .await
        .query_scalar(
            &ctx.stmt("SELECT {schema}.pgmill_test_explain_analyze($1) AS plan")
                .bind(sql),
        )
        .await
        .unwrap()
}

/// The rows a plan's scans of the tables `table` accepts returned, and the rows they read and
/// dropped (removed by a filter or by an index recheck).
fn rows_read(plan: &serde_json::Value, table: impl Fn(&str) -> bool + Copy) -> (i64, i64) {
    let mut sum = (0, 0);
    match plan {
        serde_json::Value::Object(map) => {
            if map
                .get("Relation Name")
                .and_then(|v| v.as_str())
                .is_some_and(table)
            {
                let n = |k: &str| map.get(k).and_then(serde_json::Value::as_i64).unwrap_or(0);
                sum.0 += n("Actual Rows") * n("Actual Loops");
                sum.1 += n("Rows Removed by Filter") + n("Rows Removed by Index Recheck");
            }
            for v in map.values() {
                let (a, b) = rows_read(v, table);
                sum = (sum.0 + a, sum.1 + b);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                let (a, b) = rows_read(v, table);
                sum = (sum.0 + a, sum.1 + b);
            }
        }
        _ => {}
    }
    sum
}
