//! The charts draw the leader's queue statistics: after a burst of failures, the failure series
//! and the hover titles of its points add up to the jobs that failed, per queue and overall, on
//! the overview and over the last hour and day; depth and wait draw their samples.

use std::time::Duration;

use pgmill::maintenance::QueueStatConfig;
use pgmill::{InsertOpts, Job, JobArgs, JobError, Worker};
use pgmill_testdb::eventually;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::harness::{Browser, Env, PATIENCE};

/// Args of the burst.
#[derive(Serialize, Deserialize)]
struct Charge {
    /// 0: succeeds; 1: fails once, then succeeds; 2: fails and is discarded.
    fate: u8,
}

impl JobArgs for Charge {
    const KIND: &'static str = "charge";
}

struct ChargeWorker;

impl Worker<Charge> for ChargeWorker {
    async fn work(&self, job: &Job<Charge>) -> Result<(), JobError> {
        match job.args.fate {
            1 if job.attempt() == 1 => Err(JobError::retry("card network timed out")),
            2 => Err(JobError::discard("card declined")),
            _ => Ok(()),
        }
    }

    fn next_retry(&self, _job: &Job<Charge>) -> Option<chrono::TimeDelta> {
        Some(chrono::TimeDelta::zero())
    }
}

/// The numbers behind a series of a chart on the page: its values, gaps as `None`.
async fn series(b: &Browser, chart: &str, series: &str) -> Vec<Option<f64>> {
    let script = format!(
        "var g = document.querySelector('#chart-{chart} [data-series=\"{series}\"]'); \
         return g ? g.getAttribute('data-values') : null"
    );
    match b.js(&script).await {
        Value::String(values) => values
            .split(',')
            .map(|v| (!v.is_empty()).then(|| v.parse().unwrap()))
            .collect(),
        other => panic!("no series {series} in chart {chart}: {other}"),
    }
}

/// The sum of a series' values.
async fn total(b: &Browser, chart: &str, name: &str) -> f64 {
    series(b, chart, name).await.into_iter().flatten().sum()
}

/// Waits until the sum of a series is `want`.
async fn until_total(b: &Browser, chart: &str, name: &str, want: f64) {
    let ok = eventually(PATIENCE, async || total(b, chart, name).await == want).await;
    assert!(
        ok,
        "{chart}/{name} never added up to {want}: {:?}",
        series(b, chart, name).await
    );
}

/// The hover titles of a chart's columns.
async fn titles(b: &Browser, chart: &str) -> Vec<String> {
    let got = b
        .js(&format!(
            "return Array.from(document.querySelectorAll('#chart-{chart} rect.hit title'))\
             .map(function (t) {{ return t.textContent; }})"
        ))
        .await;
    serde_json::from_value(got).unwrap()
}

/// The number after `word ` in `text`, summed over every occurrence.
fn figures(texts: &[String], word: &str) -> i64 {
    texts
        .iter()
        .flat_map(|t| t.split([',', ':', '\n']))
        .filter_map(|part| part.trim().strip_prefix(word)?.trim().parse::<i64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_failures_shows_on_the_failure_series() {
    let env = Env::start().await;
    let mut stats = QueueStatConfig::default();
    stats.bucket = Duration::from_secs(1);
    stats.settle = Duration::from_millis(500);
    stats.interval = Duration::from_millis(100);
    let worker = env
        .worker_client()
        .queue("payments", 4)
        .queue("receipts", 2)
        .worker(ChargeWorker)
        .queue_stats(Some(stats))
        .build()
        .unwrap();
    worker.start().await.unwrap();
    // The burst: in payments 9 declined (discarded) and 3 that fail once (retried), then
    // succeed; in receipts 6 that succeed; and 5 jobs in a queue nobody works.
    for (queue, fate, n) in [
        ("payments", 2, 9),
        ("payments", 1, 3),
        ("receipts", 0, 6),
        ("backlog", 0, 5),
    ] {
        for _ in 0..n {
            worker
                .insert_with(Charge { fate }, InsertOpts::new().queue(queue))
                .await
                .unwrap();
        }
    }
    let finished = eventually(PATIENCE, async || {
        let counts = env
            .client
            .queue_activity(chrono::TimeDelta::hours(1))
            .await
            .unwrap();
        counts
            .iter()
            .map(|a| a.completed + a.discarded)
            .sum::<i64>()
            == 18
    })
    .await;
    assert!(finished, "the burst never finished");

    let b = Browser::start().await;
    b.goto(&env.url("/charts?queue=payments")).await;
    assert_eq!(b.text("h1").await, "Charts · payments");
    // The live refresh brings the buckets in as the leader writes them.
    until_total(&b, "throughput", "failed", 12.0).await;
    until_total(&b, "throughput", "completed", 3.0).await;
    let hover = titles(&b, "throughput").await;
    assert_eq!(figures(&hover, "discarded"), 9, "{hover:?}");
    assert_eq!(figures(&hover, "retried"), 3, "{hover:?}");
    assert!(
        hover
            .iter()
            .any(|t| t.contains("failed") && !t.contains("failed 0")),
        "{hover:?}"
    );
    assert_eq!(b.text("#sum-failed").await, "12");

    // All queues: the failures, every completion, and the unworked backlog waiting.
    b.click("#chart-queues a[href*=\"range=hour\"]:not([href*=\"queue=\"])")
        .await;
    until_total(&b, "throughput", "failed", 12.0).await;
    until_total(&b, "throughput", "completed", 9.0).await;
    // Loaded again, it offers every queue with statistics.
    b.goto(&env.url("/charts")).await;
    let queues = b.text("#chart-queues").await;
    for q in ["payments", "receipts", "backlog"] {
        assert!(queues.contains(q), "{q} in {queues}");
    }
    let ok = eventually(PATIENCE, async || {
        series(&b, "depth", "available").await.contains(&Some(5.0))
    })
    .await;
    assert!(
        ok,
        "the backlog never showed: {:?}",
        series(&b, "depth", "available").await
    );
    let oldest = series(&b, "wait", "oldest").await;
    assert!(
        oldest.iter().flatten().any(|s| *s > 0.0),
        "the backlog's wait: {oldest:?}"
    );
    assert!(
        series(&b, "wait", "p95").await.iter().flatten().count() > 0,
        "pickups measured"
    );
    b.screenshot("charts").await;

    // The last day, in quarter hours: the same failures.
    b.click(".toolbar a[href*=\"range=day\"]").await;
    b.until("document.querySelector('#chart-throughput figcaption').textContent.indexOf('15 minutes') >= 0")
        .await;
    until_total(&b, "throughput", "failed", 12.0).await;
    assert_eq!(series(&b, "throughput", "failed").await.len(), 97);

    // The overview's chart of the last hour.
    b.goto(&env.url("")).await;
    until_total(&b, "throughput", "failed", 12.0).await;
    b.click("tr[data-queue=\"receipts\"] a.chart-link").await;
    assert_eq!(b.text("h1").await, "Charts · receipts");
    until_total(&b, "throughput", "completed", 6.0).await;
    assert_eq!(total(&b, "throughput", "failed").await, 0.0);

    // A bad range or queue is a clear 400.
    b.goto(&env.url("/charts?range=week")).await;
    assert!(b.text("#error").await.contains("unknown range"));
    b.goto(&env.url("/charts?queue=no%20spaces")).await;
    assert!(b.text("#error").await.contains("invalid queue name"));

    // A schema without the statistics table (not migrated yet): the overview works without its
    // chart, and the charts page says what to do.
    worker.stop().await;
    env.sql("DROP TABLE {schema}.pgmill_queue_stat").await;
    b.goto(&env.url("")).await;
    assert!(b.text("#no-stats").await.contains("Run the migrations"));
    assert!(b.count("tr[data-queue=\"payments\"]").await == 1);
    b.goto(&env.url("/charts")).await;
    assert!(b.text("#no-stats").await.contains("Run the migrations"));

    b.close().await;
    env.finish().await;
}
