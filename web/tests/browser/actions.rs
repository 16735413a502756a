//! Actions from the browser reach other processes: pausing a queue stops another client's
//! fetching, retrying a discarded job runs it again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use pgmill::{InsertOpts, Job, JobArgs, JobError, JobState, Worker};
use pgmill_testdb::eventually;
use serde::{Deserialize, Serialize};

use crate::harness::{Browser, Env, PATIENCE};

/// A job that fails while told to.
#[derive(Serialize, Deserialize)]
struct Charge {
    cents: i64,
}

impl JobArgs for Charge {
    const KIND: &'static str = "charge";
}

/// Discards every job until `healthy` is set.
#[derive(Default)]
struct ChargeWorker {
    runs: AtomicU32,
    healthy: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Worker<Charge> for ChargeWorker {
    async fn work(&self, _job: &Job<Charge>) -> Result<(), JobError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if self.healthy.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(JobError::discard("card processor unreachable"))
        }
    }
}

/// Pausing a queue on the overview stops a second client fetching from it; resuming restarts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_a_queue_stops_another_client_fetching() {
    let env = Env::start().await;
    let other = env
        .worker_client()
        .queue("billing", 2)
        .worker(ChargeWorker {
            healthy: std::sync::Arc::new(true.into()),
            ..ChargeWorker::default()
        })
        .build()
        .unwrap();
    other.start().await.unwrap();
    let first = other
        .insert_with(Charge { cents: 1 }, InsertOpts::new().queue("billing"))
        .await
        .unwrap();
    assert!(
        eventually(PATIENCE, async || env
            .client
            .job_get(first.id)
            .await
            .unwrap()
            .unwrap()
            .state
            == JobState::Completed)
        .await
    );

    let b = Browser::start().await;
    b.goto(&env.url("")).await;
    b.click("tr[data-queue=\"billing\"] button").await;
    b.until("(document.querySelector('tr[data-queue=\"billing\"]') || {textContent: ''}).textContent.includes('paused')").await;
    assert!(
        env.client
            .queue_get("billing")
            .await
            .unwrap()
            .unwrap()
            .paused_at
            .is_some()
    );
    b.screenshot("overview-paused").await;

    // The other client must leave a new job alone: give it many poll intervals to misbehave.
    let waiting = env
        .client
        .insert_with(Charge { cents: 2 }, InsertOpts::new().queue("billing"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        env.client.job_get(waiting.id).await.unwrap().unwrap().state,
        JobState::Available
    );

    b.click("tr[data-queue=\"billing\"] button").await;
    assert!(
        eventually(PATIENCE, async || env
            .client
            .job_get(waiting.id)
            .await
            .unwrap()
            .unwrap()
            .state
            == JobState::Completed)
        .await,
        "resumed queue never ran its job"
    );
    b.until("document.querySelector('tr[data-queue=\"billing\"]').textContent.includes('active')")
        .await;
    b.close().await;
    other.stop().await;
    env.finish().await;
}

/// Retrying a discarded job from its page makes it run again, and the page shows it completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrying_a_discarded_job_runs_it_again() {
    let env = Env::start().await;
    let healthy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = env
        .worker_client()
        .queue("billing", 2)
        .worker(ChargeWorker {
            healthy: healthy.clone(),
            ..ChargeWorker::default()
        })
        .build()
        .unwrap();
    other.start().await.unwrap();
    let job = other
        .insert_with(Charge { cents: 500 }, InsertOpts::new().queue("billing"))
        .await
        .unwrap();
    assert!(
        eventually(PATIENCE, async || env
            .client
            .job_get(job.id)
            .await
            .unwrap()
            .unwrap()
            .state
            == JobState::Discarded)
        .await
    );
    healthy.store(true, Ordering::SeqCst);

    let b = Browser::start().await;
    b.goto(&env.url(&format!("/jobs/{}", job.id))).await;
    assert_eq!(b.text("#job-state").await, "discarded");
    b.click("form[action$=\"/retry\"] button").await;
    assert!(
        eventually(PATIENCE, async || env
            .client
            .job_get(job.id)
            .await
            .unwrap()
            .unwrap()
            .state
            == JobState::Completed)
        .await,
        "the retried job never completed"
    );
    // The page follows by its live refresh.
    b.until("document.getElementById('job-state').textContent === 'completed'")
        .await;
    let done = env.client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(done.attempt, 2);
    assert_eq!(done.errors.len(), 1);
    b.close().await;
    other.stop().await;
    env.finish().await;
}

/// Bulk-cancelling by the jobs page's filter first shows how many jobs it would change, then
/// cancels exactly the matching jobs and leaves the others alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_cancel_by_filter_shows_the_count_then_cancels_the_matching_jobs() {
    let env = Env::start().await;
    // Nobody works these queues: every job stays available until acted on.
    let mut refunds = Vec::new();
    for cents in 0..5 {
        let job = env
            .client
            .insert_with(Charge { cents }, InsertOpts::new().queue("refunds"))
            .await
            .unwrap();
        refunds.push(job.id);
    }
    let mut others = Vec::new();
    for cents in 0..3 {
        let job = env
            .client
            .insert_with(Charge { cents }, InsertOpts::new().queue("payouts"))
            .await
            .unwrap();
        others.push(job.id);
    }
    let state = async |id| env.client.job_get(id).await.unwrap().unwrap().state;

    let b = Browser::start().await;
    b.goto(&env.url("/jobs?queue=refunds")).await;
    b.click("a[data-bulk=\"cancel\"]").await;
    assert_eq!(b.text("#bulk-count").await, "5 jobs");
    assert!(b.text("#confirm").await.contains("queue \"refunds\""));
    b.screenshot("bulk-cancel").await;
    for id in refunds.iter().chain(&others) {
        assert_eq!(
            state(*id).await,
            JobState::Available,
            "nothing changes before confirming"
        );
    }
    b.click("#confirm form button").await;
    b.until("window.location.pathname.endsWith('/jobs')").await;
    for id in &refunds {
        assert_eq!(state(*id).await, JobState::Cancelled);
    }
    for id in &others {
        assert_eq!(state(*id).await, JobState::Available, "another queue's job");
    }
    // The list shows the filter's jobs cancelled, and nothing is left to cancel.
    b.until("document.querySelectorAll('#jobs tbody tr .badge.cancelled').length === 5")
        .await;
    b.click("a[data-bulk=\"cancel\"]").await;
    assert_eq!(b.text("#bulk-count").await, "0 jobs");
    assert_eq!(
        b.count("#confirm form").await,
        0,
        "no button when nothing matches"
    );
    b.close().await;
    env.finish().await;
}

/// The dead-letter page lists discarded jobs with their reason and error; redriving one from its
/// row puts it back in its queue under its own id, and it runs; purging the rest by the page's
/// filter (after the browser's confirmation) empties the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dead_letter_page_redrives_and_purges() {
    let env = Env::start().await;
    let healthy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = env
        .worker_client()
        .queue("billing", 2)
        .worker(ChargeWorker {
            healthy: healthy.clone(),
            ..ChargeWorker::default()
        })
        .build()
        .unwrap();
    other.start().await.unwrap();
    let mut ids = Vec::new();
    for cents in [100, 200] {
        let job = other
            .insert_with(Charge { cents }, InsertOpts::new().queue("billing"))
            .await
            .unwrap();
        ids.push(job.id);
    }
    assert!(
        eventually(PATIENCE, async || {
            let dead = env
                .client
                .dead_list(&pgmill::admin::DeadListParams::new())
                .await
                .unwrap();
            dead.jobs.len() == 2
        })
        .await,
        "the jobs never reached the dead-letter queue"
    );
    healthy.store(true, Ordering::SeqCst);

    let b = Browser::start().await;
    b.goto(&env.url("/dead")).await;
    assert_eq!(b.text("h1").await, "Dead letters");
    let row = b.text(&format!("tr[data-job=\"{}\"]", ids[0])).await;
    assert!(
        row.contains("discarded") && row.contains("card processor unreachable"),
        "{row}"
    );
    b.screenshot("dead").await;
    b.click(&format!(
        "tr[data-job=\"{}\"] form[action$=\"/dead/redrive\"] button",
        ids[0]
    ))
    .await;
    assert!(
        eventually(PATIENCE, async || env
            .client
            .job_get(ids[0])
            .await
            .unwrap()
            .unwrap()
            .state
            == JobState::Completed)
        .await,
        "the redriven job never completed"
    );
    b.until(&format!(
        "document.querySelector('tr[data-job=\"{}\"]') === null",
        ids[0]
    ))
    .await;
    // Purge what the filter matches, accepting the browser's confirmation.
    b.goto(&env.url("/dead?queue=billing")).await;
    b.js("window.confirm = () => true; return true").await;
    b.click("#dead-actions form[action$=\"/dead/purge\"] button")
        .await;
    b.until("document.querySelectorAll('#dead tbody tr').length === 0")
        .await;
    assert!(env.client.job_get(ids[1]).await.unwrap().is_none());
    b.close().await;
    other.stop().await;
    env.finish().await;
}
