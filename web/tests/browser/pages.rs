//! Every page loads with seeded jobs, refreshes live, and shows hostile args as text.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pgmill::{InsertOpts, Job, JobArgs, JobError, JobState, PeriodicJob, Schedule, Worker};
use pgmill_testdb::eventually;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::harness::{Browser, Env, PATIENCE};

/// Args of the seeded jobs.
#[derive(Serialize, Deserialize)]
struct Thumbnail {
    upload: i64,
    sizes: Vec<u32>,
}

impl JobArgs for Thumbnail {
    const KIND: &'static str = "thumbnail";
}

/// Discards uploads divisible by 5 on their second attempt (the first fails with a retry).
#[derive(Default)]
struct ThumbnailWorker {
    first_failure_done: AtomicBool,
}

impl Worker<Thumbnail> for ThumbnailWorker {
    async fn work(&self, job: &Job<Thumbnail>) -> Result<(), JobError> {
        if job.args.upload % 5 == 0 {
            if !self.first_failure_done.swap(true, Ordering::SeqCst) && job.attempt() == 1 {
                return Err(JobError::retry("decoder: truncated PNG stream"));
            }
            return Err(JobError::discard("image is corrupt beyond repair"));
        }
        Ok(())
    }
}

/// A periodic report.
#[derive(Serialize, Deserialize)]
struct Report {}

impl JobArgs for Report {
    const KIND: &'static str = "report";
}

struct ReportWorker;

impl Worker<Report> for ReportWorker {
    async fn work(&self, _job: &Job<Report>) -> Result<(), JobError> {
        Ok(())
    }
}

/// Every page loads with seeded jobs (screenshots of each); the job page shows each attempt's
/// error and the args; the list pages through with its cursor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_loads_with_seeded_jobs() {
    let env = Env::start().await;
    let worker = env
        .worker_client()
        .queue("media", 4)
        .queue("default", 2)
        .worker(ThumbnailWorker::default())
        .worker(ReportWorker)
        .periodic_interval(Duration::from_millis(100))
        .periodic(
            PeriodicJob::new(
                "nightly_report",
                Schedule::cron("0 3 * * *").unwrap(),
                || Report {},
            )
            .unwrap()
            .run_on_start(true),
        )
        .periodic(
            PeriodicJob::new(
                "berlin_digest",
                Schedule::cron_in("0 7 * * *", "Europe/Berlin").unwrap(),
                || Report {},
            )
            .unwrap(),
        )
        .build()
        .unwrap();
    worker.start().await.unwrap();
    let mut discarded = None;
    for upload in 1..=12 {
        let opts = InsertOpts::new().queue("media").max_attempts(2);
        let job = worker
            .insert_with(
                Thumbnail {
                    upload,
                    sizes: vec![64, 256, 1024],
                },
                opts,
            )
            .await
            .unwrap();
        if upload == 5 {
            discarded = Some(job.id);
        }
    }
    let discarded = discarded.unwrap();
    // Waiting work: jobs in a queue nobody works, and jobs for later.
    for upload in 100..103 {
        env.client
            .insert_with(
                Thumbnail {
                    upload,
                    sizes: vec![64],
                },
                InsertOpts::new().queue("backfill"),
            )
            .await
            .unwrap();
    }
    env.client
        .insert_with(
            Thumbnail {
                upload: 200,
                sizes: vec![],
            },
            InsertOpts::new()
                .queue("media")
                .schedule_in(chrono::TimeDelta::hours(1)),
        )
        .await
        .unwrap();
    assert!(
        eventually(PATIENCE, async || {
            env.client.job_get(discarded).await.unwrap().unwrap().state == JobState::Discarded
                && worker
                    .periodic_get("nightly_report")
                    .await
                    .unwrap()
                    .is_some_and(|p| p.success_count == 1)
        })
        .await,
        "seeded jobs never finished: {:?} {:?}",
        env.client
            .job_get(discarded)
            .await
            .unwrap()
            .map(|j| (j.state, j.errors)),
        env.client.periodic_list().await.unwrap()
    );

    let b = Browser::start().await;
    b.goto(&env.url("")).await;
    assert_eq!(b.text("h1").await, "Overview");
    b.until("document.querySelector('tr[data-queue=\"media\"]') !== null")
        .await;
    let media = b.text("tr[data-queue=\"media\"]").await;
    assert!(media.contains("active"), "{media}");
    assert!(!media.contains("unserved"), "{media}");
    // Nobody works the backfill queue, nor registered it: its jobs wait, flagged.
    let backfill = b.text("tr[data-queue=\"backfill\"]").await;
    assert!(
        backfill.contains("unserved") && backfill.contains("unregistered"),
        "{backfill}"
    );
    assert_eq!(b.text("#unserved-count").await, "1");
    b.screenshot("overview").await;

    b.click("nav a[href$=\"/jobs\"]").await;
    b.until("document.querySelectorAll('#jobs tbody tr').length === 17")
        .await;
    // Newest first.
    let first = b
        .js("return document.querySelector('#jobs tbody tr').dataset.job")
        .await;
    let newest = env
        .client
        .job_list_newest(&pgmill::admin::JobSummaryParams::new().limit(1))
        .await
        .unwrap();
    assert_eq!(first, json!(newest.jobs[0].id.to_string()));
    b.screenshot("jobs").await;

    // Filtered by state, through the state tabs.
    b.click(".states a[href*=\"state=discarded\"]").await;
    // Uploads 5 and 10 were discarded.
    b.until("document.querySelectorAll('#jobs tbody tr').length === 2")
        .await;
    let row = b.text(&format!("tr[data-job=\"{discarded}\"]")).await;
    assert!(row.contains("image is corrupt"), "{row}");
    b.click(&format!("#jobs a[href$=\"/jobs/{discarded}\"]"))
        .await;
    assert_eq!(b.text("#job-state").await, "discarded");
    let errors = b.text("#errors").await;
    assert!(errors.contains("decoder: truncated PNG stream"), "{errors}");
    assert!(
        errors.contains("image is corrupt beyond repair"),
        "{errors}"
    );
    assert!(b.text("#args").await.contains("\"upload\": 5"));
    b.screenshot("job").await;

    b.click("nav a[href$=\"/periodic\"]").await;
    let row = b.text("tr[data-periodic=\"nightly_report\"]").await;
    assert!(row.contains("0 3 * * *") && row.contains("active"), "{row}");
    // A schedule in a time zone: its next run on Berlin's wall clock, whatever the season.
    let row = b.text("tr[data-periodic=\"berlin_digest\"]").await;
    assert!(
        row.contains("0 7 * * * in Europe/Berlin")
            && (row.contains("07:00:00 CET") || row.contains("07:00:00 CEST")),
        "{row}"
    );
    b.screenshot("periodic").await;

    b.click("nav a[href$=\"/clients\"]").await;
    assert!(b.text("#leader").await.contains(worker.id()));
    // Every client, with its host, pid, queues and heartbeat: the worker and the dashboard's own
    // (which works no queue and is never started, so has no row).
    let row = b
        .text(&format!("tr[data-client=\"{}\"]", worker.id()))
        .await;
    let host = hostname_of(&env, worker.id()).await;
    for part in [
        "leader",
        "live",
        host.as_str(),
        &std::process::id().to_string(),
        "media",
        "default",
    ] {
        assert!(row.contains(part), "{part} in {row}");
    }
    assert_eq!(b.count("#clients tbody tr").await, 1);
    b.screenshot("clients").await;

    // Pages of three, following the cursor to the end.
    b.goto(&env.url("/jobs?queue=media")).await;
    let mut seen = b.count("#jobs tbody tr").await;
    assert_eq!(seen, 13);
    let env2 = Env::with(|d| d.page_size(5)).await;
    for upload in 0..12 {
        env2.client
            .insert(Thumbnail {
                upload,
                sizes: vec![],
            })
            .await
            .unwrap();
    }
    b.goto(&env2.url("/jobs")).await;
    seen = 0;
    loop {
        seen += b.count("#jobs tbody tr").await;
        if b.count("#older").await == 0 {
            break;
        }
        b.click("#older").await;
        b.until("document.readyState === 'complete'").await;
    }
    assert_eq!(seen, 12);

    b.close().await;
    worker.stop().await;
    env2.finish().await;
    env.finish().await;
}

/// The hostname a client registered with.
async fn hostname_of(env: &Env, id: &str) -> String {
    let clients = env.client.client_list().await.unwrap();
    clients
        .into_iter()
        .find(|c| c.id == id)
        .expect("the client is registered")
        .hostname
}

/// The live part of a page refreshes without reloading it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_refresh_live_without_reloading() {
    let env = Env::start().await;
    env.sql("INSERT INTO {schema}.pgmill_queue (name) VALUES ('fresh')")
        .await;
    let b = Browser::start().await;
    b.goto(&env.url("")).await;
    assert_eq!(b.text("#total-available").await, "0");
    b.js("window.__stayed = 42; return true").await;
    for upload in 0..3 {
        env.client
            .insert_with(
                Thumbnail {
                    upload,
                    sizes: vec![],
                },
                InsertOpts::new().queue("fresh"),
            )
            .await
            .unwrap();
    }
    b.until("document.getElementById('total-available').textContent === '3'")
        .await;
    assert_eq!(
        b.js("return window.__stayed").await,
        json!(42),
        "the page reloaded"
    );
    b.close().await;
    env.finish().await;
}

/// Args holding markup render as text on the list and the job page, and never run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_in_args_renders_as_text() {
    let env = Env::start().await;
    let evil = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">";
    let p = pgmill::InsertParams::from_args(
        &Thumbnail {
            upload: 1,
            sizes: vec![],
        },
        None,
    )
    .unwrap();
    let job = env.client.insert_many(&[p]).await.unwrap().remove(0);
    env.sql(&format!(
        "UPDATE {{schema}}.pgmill_job SET args = jsonb_build_object('c', '{}'::text, 'large', repeat('x', 200000)) WHERE id = {}",
        evil.replace('\'', "''"),
        job.id
    ))
    .await;
    let b = Browser::start().await;
    b.goto(&env.url("/jobs")).await;
    let cell = b
        .text(&format!("tr[data-job=\"{}\"] td.args", job.id))
        .await;
    assert!(cell.contains("<script>"), "{cell}");
    assert!(b.count("#jobs script, #jobs img").await == 0);
    // The list carries only a preview of the 200 kB args.
    let html_len = b
        .js("return document.documentElement.outerHTML.length")
        .await;
    assert!(html_len.as_u64().unwrap() < 50_000, "{html_len}");
    b.goto(&env.url(&format!("/jobs/{}", job.id))).await;
    let args = b.text("#args").await;
    assert!(
        args.contains("<script>window.__pwned = 1</script>"),
        "{args}"
    );
    assert!(b.text("main").await.contains("Cut at"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        b.js("return window.__pwned === undefined").await,
        json!(true)
    );
    assert_eq!(b.count("main script, main img").await, 0);
    b.close().await;
    env.finish().await;
}
