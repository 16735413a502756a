//! Queue control end to end: the queue table, pause and resume from any process (with or without
//! a listener), cancelling running jobs from any process, and releasing pending jobs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::TimeDelta;
use pgmill::{InsertOpts, JobError, JobState};

use crate::scripted::{DropFlag, ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, migrated as ctx};

/// Gives a paused producer time in which it would have fetched, were it not paused.
async fn grace() {
    tokio::time::sleep(Duration::from_millis(400)).await;
}

/// Producers register their queue; listing shows it with job counts by state.
pub async fn queues_are_registered_and_listed_with_counts<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("alpha", 1)
        .queue("beta", 1)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    client
        .insert_with(Task { n: 1 }, InsertOpts::new().queue("beta").pending())
        .await
        .unwrap();
    client.start().await.unwrap();
    client
        .insert_with(Task { n: 2 }, InsertOpts::new().queue("beta"))
        .await
        .unwrap();
    wait_for("completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let queues = client.queue_list().await.unwrap();
    let names: Vec<&str> = queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["alpha", "beta"]);
    let beta = client.queue_get("beta").await.unwrap().unwrap();
    assert_eq!(beta.counts[&JobState::Pending], 1);
    assert_eq!(beta.counts[&JobState::Available], 0);
    assert!(beta.paused_at.is_none());
    assert!(client.queue_get("gamma").await.unwrap().is_none());
}

/// A queue's counts give every live state, exactly, and leave finished jobs out, whatever the
/// table holds for other queues.
pub async fn queue_counts_cover_live_states_and_leave_finished_jobs_out<H: Harness>() {
    let ctx = ctx::<H>().await;
    let operator = test_client(&ctx).build().unwrap();
    // Registers both queues (a pause upserts the queue's row), then runs them again.
    operator.queue_pause_or_create("mail").await.unwrap();
    operator.queue_pause_or_create("other").await.unwrap();
    operator.queue_resume("*").await.unwrap();
    let mut rows = Vec::new();
    for (state, n) in [
        ("available", 3),
        ("scheduled", 2),
        ("pending", 4),
        ("running", 1),
        ("retryable", 5),
        ("completed", 7),
        ("cancelled", 1),
        ("discarded", 2),
    ] {
        let finalized = if ["completed", "cancelled", "discarded"].contains(&state) {
            "now()"
        } else {
            "NULL"
        };
        for _ in 0..n {
            rows.push(format!(
                "('mail', 'task', '{state}', {finalized}), ('other', 'task', 'available', NULL)"
            ));
        }
    }
    ctx.script(&ctx.schema.render(&format!(
        "INSERT INTO {{schema}}.pgmill_job (queue, kind, state, finalized_at) VALUES {}",
        rows.join(", ")
    )))
    .await;
    let mail = operator.queue_get("mail").await.unwrap().unwrap();
    let counts: Vec<(JobState, i64)> = mail.counts.into_iter().collect();
    assert_eq!(
        counts,
        [
            (JobState::Available, 3),
            (JobState::Scheduled, 2),
            (JobState::Pending, 4),
            (JobState::Running, 1),
            (JobState::Retryable, 5),
        ]
    );
    let listed = operator.queue_list().await.unwrap();
    let other = listed.iter().find(|q| q.name == "other").unwrap();
    assert_eq!(other.counts[&JobState::Available], 25);
    assert_eq!(other.counts[&JobState::Running], 0);
}

/// A paused queue fetches nothing while running jobs finish; resume starts it again.
pub async fn pause_stops_fetching_and_resume_restarts<H: Harness>() {
    for poll_only in [false, true] {
        let ctx = ctx::<H>().await;
        let worker = ScriptedWorker::ok();
        let client = test_client(&ctx)
            .queue("default", 2)
            .poll_only(poll_only)
            .worker(worker.clone())
            .build()
            .unwrap();
        client.start().await.unwrap();
        // Another process pauses and resumes: only the database and notifications connect them.
        let operator = test_client(&ctx).build().unwrap();
        // The producer registers its queue in the background after start.
        wait_for("queue registered", async || {
            operator.queue_get("default").await.unwrap().is_some()
        })
        .await;
        assert_eq!(operator.queue_pause("default").await.unwrap(), ["default"]);
        wait_for("client saw the pause", async || {
            client
                .queue_get("default")
                .await
                .unwrap()
                .is_some_and(|q| q.paused_at.is_some())
        })
        .await;
        grace().await;
        operator.insert(Task { n: 1 }).await.unwrap();
        grace().await;
        assert_eq!(
            count_in(&ctx, JobState::Available).await,
            1,
            "poll_only={poll_only}"
        );
        operator.queue_resume("default").await.unwrap();
        wait_for("resumed queue ran the job", async || {
            count_in(&ctx, JobState::Completed).await == 1
        })
        .await;
        client.stop().await;
    }
}

/// `*` pauses every queue; a producer starting on a paused queue starts paused.
pub async fn pause_all_and_start_paused<H: Harness>() {
    let ctx = ctx::<H>().await;
    let operator = test_client(&ctx).build().unwrap();
    operator.queue_pause_or_create("one").await.unwrap();
    operator.queue_pause_or_create("two").await.unwrap();
    operator.queue_resume("*").await.unwrap();
    operator.queue_pause("*").await.unwrap();
    assert!(
        operator
            .queue_list()
            .await
            .unwrap()
            .iter()
            .all(|q| q.paused_at.is_some())
    );
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("one", 1)
        .queue("two", 1)
        .worker(worker.clone())
        .build()
        .unwrap();
    client
        .insert_with(Task { n: 1 }, InsertOpts::new().queue("one"))
        .await
        .unwrap();
    client
        .insert_with(Task { n: 2 }, InsertOpts::new().queue("two"))
        .await
        .unwrap();
    client.start().await.unwrap();
    grace().await;
    assert_eq!(worker.total_runs(), 0);
    operator.queue_resume("two").await.unwrap();
    wait_for("queue two ran", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    assert_eq!(count_in(&ctx, JobState::Available).await, 1);
    client.queue_resume("*").await.unwrap();
    wait_for("queue one ran", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    client.stop().await;
}

/// Jobs already running when their queue is paused run to completion.
pub async fn running_jobs_finish_while_paused<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|_| async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(())
    });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    client.insert(Task { n: 1 }).await.unwrap();
    wait_for("running", async || {
        count_in(&ctx, JobState::Running).await == 1
    })
    .await;
    client.queue_pause("default").await.unwrap();
    wait_for("completed while paused", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
}

/// A job running in one client is cancelled from another: its work stops and it ends cancelled.
pub async fn cancel_a_running_job_from_another_process<H: Harness>() {
    for poll_only in [false, true] {
        let ctx = ctx::<H>().await;
        let stopped = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let (flag, start_flag) = (Arc::clone(&stopped), Arc::clone(&started));
        let worker = ScriptedWorker::new(move |_| {
            let guard = DropFlag(Arc::clone(&flag));
            start_flag.store(true, Ordering::SeqCst);
            async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                drop(guard);
                Ok(())
            }
        });
        let client = test_client(&ctx)
            .queue("default", 2)
            .poll_only(poll_only)
            .job_timeout(None)
            .worker(worker)
            .build()
            .unwrap();
        client.start().await.unwrap();
        let job = client.insert(Task { n: 1 }).await.unwrap();
        // Started, not only claimed: a job is `running` from its claim, and a cancel that reaches
        // it while it is still buffered ends it without ever starting the work.
        wait_for("started", async || started.load(Ordering::SeqCst)).await;
        let operator = test_client(&ctx).build().unwrap();
        let marked = operator.job_cancel(job.id).await.unwrap().unwrap();
        assert_eq!(marked.state, JobState::Running);
        assert!(marked.metadata.get("cancel_attempted_at").is_some());
        wait_for("cancelled", async || {
            count_in(&ctx, JobState::Cancelled).await == 1
        })
        .await;
        client.stop().await;
        assert!(
            stopped.load(Ordering::SeqCst),
            "the work was dropped (poll_only={poll_only})"
        );
        let job = client.job_get(job.id).await.unwrap().unwrap();
        assert!(job.finalized_at.is_some());
    }
}

/// A cancelled running job whose worker then returns an error ends cancelled, not retried.
pub async fn cancelled_job_that_errors_ends_cancelled<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client_slot: Arc<tokio::sync::OnceCell<pgmill::Client<H::Driver>>> = Arc::default();
    let slot = Arc::clone(&client_slot);
    let worker = ScriptedWorker::new(move |run| {
        let slot = Arc::clone(&slot);
        async move {
            // The worker itself asks for the cancel, then fails: the failure must not retry.
            let client = slot.get().expect("client set");
            client.job_cancel(run.id).await.map_err(JobError::retry)?;
            Err(JobError::retry("failed after the cancel request"))
        }
    });
    let client = test_client(&ctx)
        .queue("default", 1)
        .worker(worker)
        .build()
        .unwrap();
    client_slot.set(client.clone()).unwrap();
    client.start().await.unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    wait_for("cancelled", async || {
        count_in(&ctx, JobState::Cancelled).await == 1
    })
    .await;
    client.stop().await;
    assert_eq!(client.job_get(job.id).await.unwrap().unwrap().attempt, 1);
}

/// A pending job runs only once released; released with a future time it is scheduled.
pub async fn pending_jobs_run_only_when_released<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    let now = client
        .insert_with(Task { n: 1 }, InsertOpts::new().pending())
        .await
        .unwrap();
    let later = client
        .insert_with(Task { n: 2 }, InsertOpts::new().pending())
        .await
        .unwrap();
    client.start().await.unwrap();
    grace().await;
    assert_eq!(worker.total_runs(), 0);
    let released = client.job_release(now.id, None).await.unwrap().unwrap();
    assert_eq!(released.state, JobState::Available);
    let at = chrono::Utc::now() + TimeDelta::hours(1);
    let scheduled = client
        .job_release(later.id, Some(at))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(scheduled.state, JobState::Scheduled);
    wait_for("released job ran", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    // Releasing a job that is not pending changes nothing.
    let again = client.job_release(now.id, None).await.unwrap().unwrap();
    assert_eq!(again.state, JobState::Completed);
}
