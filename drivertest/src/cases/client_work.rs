//! Outcomes of work run end to end by a real client: success, retry, discard, cancel, snooze,
//! timeouts, panics, bad args, unknown kinds, ordering, events, completion in the worker's own
//! transaction.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pgmill::driver::{Driver, Executor, Statement, Transaction};
use pgmill::{EventKind, InsertOpts, InsertParams, Inserter, Job, JobError, JobState, Worker};
use serde_json::json;

use crate::log_capture::{capture_queue, events as log_events};
use crate::metrics_probe::MetricsProbe;
use crate::scripted::{DropFlag, ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, migrated as ctx};

/// A job failing its first attempt succeeds on the second; its first error is recorded.
pub async fn retry_then_success<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        if run.attempt == 1 {
            Err(JobError::retry("first attempt fails"))
        } else {
            Ok(())
        }
    });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    wait_for("completion", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(job.attempt, 2);
    assert_eq!(job.errors.len(), 1);
    assert_eq!(job.errors[0].attempt, 1);
    assert_eq!(job.errors[0].error, "first attempt fails");
    assert_eq!(worker.total_runs(), 2);
}

/// `?` on an `anyhow::Error` or an `eyre::Report` in a worker fails the attempt, to be retried,
/// and the recorded error keeps the whole chain of causes.
pub async fn anyhow_and_eyre_errors_are_recorded_with_their_chain<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        let root = anyhow::anyhow!("connection refused");
        if run.attempt == 1 {
            Err(root.context("loading invoice 7"))?;
        } else if run.attempt == 2 {
            Err(eyre::eyre!("disk full").wrap_err("writing the receipt"))?;
        }
        Ok(())
    });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    wait_for("completion", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    let errors: Vec<(i16, &str)> = job
        .errors
        .iter()
        .map(|e| (e.attempt, e.error.as_str()))
        .collect();
    assert_eq!(
        errors,
        [
            (1, "loading invoice 7: connection refused"),
            (2, "writing the receipt: disk full")
        ]
    );
}

/// A job failing every attempt is discarded after `max_attempts`, with one error per attempt.
pub async fn attempts_exhausted_are_discarded_with_every_error<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker =
        ScriptedWorker::new(
            |run| async move { Err(JobError::retry(format!("fail {}", run.attempt))) },
        );
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client
        .insert_with(Task { n: 1 }, InsertOpts::new().max_attempts(3))
        .await
        .unwrap();
    wait_for("discarded", async || {
        count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(job.attempt, 3);
    assert!(job.finalized_at.is_some());
    let errors: Vec<(i16, &str)> = job
        .errors
        .iter()
        .map(|e| (e.attempt, e.error.as_str()))
        .collect();
    assert_eq!(errors, [(1, "fail 1"), (2, "fail 2"), (3, "fail 3")]);
    assert_eq!(worker.total_runs(), 3);
}

/// A snooze runs the job again without using up an attempt or recording an error.
pub async fn snooze_runs_again_without_using_an_attempt<H: Harness>() {
    let ctx = ctx::<H>().await;
    let snoozed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&snoozed);
    let worker = ScriptedWorker::new(move |_| {
        let first = !flag.swap(true, Ordering::SeqCst);
        async move {
            if first {
                Err(JobError::snooze(Duration::from_millis(10)))
            } else {
                Ok(())
            }
        }
    });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client
        .insert_with(Task { n: 1 }, InsertOpts::new().max_attempts(1))
        .await
        .unwrap();
    wait_for("completion", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(job.attempt, 1, "the snooze gave its attempt back");
    assert!(job.errors.is_empty());
    assert_eq!(worker.total_runs(), 2);
}

/// A long snooze leaves the job scheduled in the future.
pub async fn long_snooze_schedules_the_job<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker =
        ScriptedWorker::new(|_| async { Err(JobError::snooze(Duration::from_secs(3600))) });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    wait_for("scheduled", async || {
        count_in(&ctx, JobState::Scheduled).await == 1
    })
    .await;
    client.stop().await;
    let after = client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(after.attempt, 0);
    assert!(after.scheduled_at - job.scheduled_at > chrono::TimeDelta::minutes(59));
}

/// `JobError::cancel` ends the job cancelled, with the error recorded, never retried.
pub async fn cancel_from_the_worker_cancels_the_job<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|_| async { Err(JobError::cancel("no longer wanted")) });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    wait_for("cancelled", async || {
        count_in(&ctx, JobState::Cancelled).await == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert!(job.finalized_at.is_some());
    assert_eq!(job.errors[0].error, "no longer wanted");
    assert_eq!(worker.total_runs(), 1);
}

/// `JobError::discard` ends the job discarded at once, whatever attempts are left.
pub async fn discard_from_the_worker_discards_the_job<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|_| async { Err(JobError::discard("bad input")) });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client.insert(Task { n: 1 }).await.unwrap();
    wait_for("discarded", async || {
        count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!((job.attempt, job.max_attempts), (1, 25));
    assert_eq!(worker.total_runs(), 1);
}

/// A timeout drops the job's work (its future is dropped) and records the timeout.
pub async fn timeout_drops_the_work_and_is_recorded<H: Harness>() {
    let ctx = ctx::<H>().await;
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&dropped);
    let worker = ScriptedWorker::new(move |_| {
        let guard = DropFlag(Arc::clone(&flag));
        async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(guard);
            Ok(())
        }
    })
    .with_timeout(Duration::from_millis(100));
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let job = client
        .insert_with(Task { n: 1 }, InsertOpts::new().max_attempts(1))
        .await
        .unwrap();
    wait_for("discarded", async || {
        count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    client.stop().await;
    assert!(
        dropped.load(Ordering::SeqCst),
        "the work future was dropped"
    );
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert!(
        job.errors[0].error.contains("timed out"),
        "{:?}",
        job.errors
    );
}

/// A worker that blocks its thread runs past its timeout, which cannot stop it: its result
/// stands, and the overrun is warned about once per kind in the log and recorded every time (the
/// event, the metric, and a note in the error of an attempt that failed).
pub async fn blocking_worker_past_its_timeout_is_warned_once_and_recorded<H: Harness>() {
    let ctx = ctx::<H>().await;
    let queue = capture_queue(&ctx.schema);
    let probe = MetricsProbe::new();
    let worker = ScriptedWorker::new(|run| async move {
        if run.attempt == 1 {
            // Blocks the thread: the timeout's timer cannot fire inside this poll.
            std::thread::sleep(Duration::from_millis(600));
            if run.n == 2 {
                return Err(JobError::retry("gave up after blocking"));
            }
        }
        Ok(())
    })
    .with_timeout(Duration::from_millis(200));
    let client = test_client(&ctx)
        .queue(&queue, 1)
        .worker(worker.clone())
        .metrics(pgmill::middleware::MetricsConfig::new().recorder(probe.recorder()))
        .build()
        .unwrap();
    let mut events = client.subscribe();
    client.start().await.unwrap();
    let on_queue = InsertOpts::new().queue(&queue);
    let completed = client
        .insert_with(Task { n: 1 }, on_queue.clone())
        .await
        .unwrap();
    let failed = client.insert_with(Task { n: 2 }, on_queue).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let e = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("event in time")
            .expect("client alive");
        seen.push((e.job.id, e.job.attempt, e.kind, e.ran_past_timeout));
    }
    client.stop().await;
    seen.sort_by_key(|&(id, attempt, ..)| (id, attempt));
    let past = Some(Duration::from_millis(200));
    assert_eq!(
        seen,
        [
            (completed.id, 1, EventKind::JobCompleted, past),
            (failed.id, 1, EventKind::JobFailed, past),
            (failed.id, 2, EventKind::JobCompleted, None),
        ]
    );
    let job = client.job_get(failed.id).await.unwrap().unwrap();
    assert_eq!(job.errors.len(), 1);
    let error = &job.errors[0].error;
    assert!(
        error.starts_with("gave up after blocking (the attempt ran ")
            && error.ends_with("past its timeout of 200ms: the worker blocked its thread)"),
        "{error}"
    );
    let warnings: Vec<_> = log_events(&queue)
        .into_iter()
        .filter(|e| {
            e.level == tracing::Level::WARN
                && e.fields
                    .get("message")
                    .is_some_and(|m| m.contains("ran past its timeout"))
        })
        .collect();
    assert_eq!(warnings.len(), 1, "warned once for the kind: {warnings:?}");
    assert_eq!(warnings[0].fields["kind"], "task");
    assert_eq!(warnings[0].fields["timeout_ms"], "200");
    assert!(warnings[0].fields["message"].contains("spawn_blocking"));
    let labels = [("kind", "task"), ("queue", queue.as_str())];
    assert_eq!(
        probe.counter("pgmill_job_ran_past_timeout_total", &labels),
        Some(2)
    );
}

/// A panic in `work` is caught, recorded with its message, and the client keeps working.
pub async fn panic_is_caught_and_recorded<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        if run.n == 0 {
            panic!("boom in worker");
        }
        Ok(())
    });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let bad = client
        .insert_with(Task { n: 0 }, InsertOpts::new().max_attempts(1))
        .await
        .unwrap();
    client.insert(Task { n: 1 }).await.unwrap();
    wait_for("both finished", async || {
        count_in(&ctx, JobState::Discarded).await == 1
            && count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let bad = client.job_get(bad.id).await.unwrap().unwrap();
    assert!(bad.errors[0].panic);
    assert!(
        bad.errors[0].error.contains("boom in worker"),
        "{:?}",
        bad.errors
    );
}

/// Args that do not deserialize into the worker's type are discarded at the first attempt (not
/// retried with backoff 25 times): the error says why, the raw args stay in the row, and the
/// worker never sees the job.
pub async fn undecodable_args_are_discarded_at_once_keeping_the_args<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let raw = json!({"n": "not a number"});
    let bad = InsertParams::new("task", raw.clone(), InsertOpts::new()).unwrap();
    let job = client.insert_many(&[bad]).await.unwrap().remove(0);
    assert_eq!(
        job.max_attempts, 25,
        "the default attempts, none of them used for decoding"
    );
    client.insert(Task { n: 1 }).await.unwrap();
    wait_for("good job completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    wait_for("bad job discarded", async || {
        count_in(&ctx, JobState::Discarded).await == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Discarded);
    assert_eq!(job.attempt, 1);
    assert_eq!(job.args, raw, "the raw args are kept");
    assert_eq!(job.errors.len(), 1, "{:?}", job.errors);
    let error = &job.errors[0].error;
    assert!(
        error.contains("cannot decode args of task") && error.contains("invalid type"),
        "{error}"
    );
    assert_eq!(worker.total_runs(), 1, "the worker never saw the bad job");
}

/// A job of a kind this client has no worker for gets an error recorded and waits to be retried
/// (by a client that knows the kind).
pub async fn unknown_kind_is_recorded_and_retried_later<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    let stranger = InsertParams::new("stranger", json!({}), InsertOpts::new()).unwrap();
    let mut conn = ctx.conn().await;
    let job = Inserter::new(ctx.schema.clone())
        .insert_many(&mut conn, &[stranger])
        .await
        .unwrap()
        .remove(0);
    client.start().await.unwrap();
    wait_for("error recorded", async || {
        client.job_get(job.id).await.unwrap().unwrap().errors.len() == 1
    })
    .await;
    client.stop().await;
    let job = client.job_get(job.id).await.unwrap().unwrap();
    assert!(!job.state.is_final(), "{:?}", job.state);
    assert!(
        job.errors[0].error.contains("no worker"),
        "{:?}",
        job.errors
    );
}

/// Jobs run in priority order, then by schedule, then by id.
pub async fn jobs_run_by_priority_then_schedule_then_id<H: Harness>() {
    let ctx = ctx::<H>().await;
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&order);
    let worker = ScriptedWorker::new(move |run| {
        seen.lock().unwrap().push(run.n);
        async { Ok(()) }
    });
    let client = test_client(&ctx)
        .queue("default", 1)
        .fetch_limit(1)
        .worker(worker)
        .build()
        .unwrap();
    let past = chrono::Utc::now() - chrono::TimeDelta::hours(1);
    let jobs = [
        (1, InsertOpts::new().priority(3)),
        (2, InsertOpts::new().priority(1)),
        (3, InsertOpts::new().priority(2)),
        (4, InsertOpts::new().priority(1).scheduled_at(past)),
        (5, InsertOpts::new().priority(1)),
    ];
    let params: Vec<_> = jobs
        .into_iter()
        .map(|(n, o)| InsertParams::from_args(&Task { n }, Some(o)).unwrap())
        .collect();
    client.insert_many(&params).await.unwrap();
    client.start().await.unwrap();
    wait_for("all done", async || {
        count_in(&ctx, JobState::Completed).await == 5
    })
    .await;
    client.stop().await;
    assert_eq!(*order.lock().unwrap(), [4, 2, 5, 3, 1]);
}

/// Subscribers get an event per finished attempt, with its kind and timings.
pub async fn events_report_outcomes_with_timings<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if run.n == 1 {
            Ok(())
        } else {
            Err(JobError::discard("no"))
        }
    });
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker)
        .build()
        .unwrap();
    let mut events = client.subscribe();
    client.start().await.unwrap();
    client.insert(Task { n: 1 }).await.unwrap();
    client.insert(Task { n: 2 }).await.unwrap();
    let mut kinds = Vec::new();
    for _ in 0..2 {
        let e = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("event in time")
            .expect("client alive");
        assert!(e.run_time >= Duration::from_millis(20), "{:?}", e.run_time);
        kinds.push((e.kind, e.job.state, e.error.clone()));
    }
    client.stop().await;
    kinds.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(
        kinds,
        [
            (EventKind::JobCompleted, JobState::Completed, None),
            (EventKind::JobFailed, JobState::Discarded, Some("no".into())),
        ]
    );
    assert_eq!(events.dropped(), 0);
}

/// A worker writing to a table completes its job inside the same transaction.
struct TransactionalWorker<D: Driver> {
    driver: D,
    table: String,
}

impl<D: Driver> Worker<Task> for TransactionalWorker<D> {
    async fn work(&self, job: &Job<Task>) -> Result<(), JobError> {
        let mut conn = self.driver.acquire().await.map_err(JobError::retry)?;
        let mut tx = conn.begin().await.map_err(JobError::retry)?;
        tx.execute(
            &Statement::new(format!("INSERT INTO {} VALUES ($1::bigint)", self.table))
                .bind(job.id().0),
        )
        .await
        .map_err(JobError::retry)?;
        if !job.complete_in(&mut tx).await.map_err(JobError::retry)? {
            return Err(JobError::retry("attempt superseded"));
        }
        tx.commit().await.map_err(JobError::retry)?;
        Ok(())
    }
}

/// A job completed inside the worker's own transaction is completed exactly when the worker's
/// writes commit, and is not counted as superseded.
pub async fn completion_inside_the_worker_transaction<H: Harness>() {
    let ctx = ctx::<H>().await;
    ctx.script(
        &ctx.schema
            .render("CREATE TABLE {schema}.side (job_id bigint PRIMARY KEY)"),
    )
    .await;
    let worker = TransactionalWorker {
        driver: ctx.driver.clone(),
        table: ctx.schema.render("{schema}.side"),
    };
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(worker)
        .build()
        .unwrap();
    client.start().await.unwrap();
    for n in 0..10 {
        client.insert(Task { n }).await.unwrap();
    }
    wait_for("completed", async || {
        count_in(&ctx, JobState::Completed).await == 10
    })
    .await;
    client.stop().await;
    assert_eq!(ctx.count("side").await, 10);
    assert_eq!(client.stats().superseded_results, 0);
}

/// A job that becomes available behind the point a producer has claimed up to (here, a higher
/// priority inserted while a backlog is worked through) is claimed soon, not after the backlog:
/// claims start from the head of the queue every few claims.
pub async fn job_inserted_behind_the_claim_position_is_not_left_for_last<H: Harness>() {
    let ctx = ctx::<H>().await;
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&order);
    let worker = ScriptedWorker::new(move |run| {
        seen.lock().unwrap().push(run.n);
        async {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            Ok(())
        }
    });
    let client = test_client(&ctx)
        .queue("default", 1)
        .fetch_limit(1)
        .prefetch(0)
        .worker(worker)
        .build()
        .unwrap();
    let params: Vec<_> = (0..60)
        .map(|n| InsertParams::from_args(&Task { n }, Some(InsertOpts::new().priority(2))).unwrap())
        .collect();
    client.insert_bulk(&params).await.unwrap();
    client.start().await.unwrap();
    wait_for("the backlog under way", async || {
        order.lock().unwrap().len() >= 5
    })
    .await;
    client
        .insert_with(Task { n: 1_000 }, InsertOpts::new().priority(1))
        .await
        .unwrap();
    wait_for("everything ran", async || {
        count_in(&ctx, JobState::Completed).await == 61
    })
    .await;
    client.stop().await;
    let order = order.lock().unwrap().clone();
    let at = order.iter().position(|&n| n == 1_000).unwrap();
    assert!(
        at < 40,
        "the priority job ran at position {at} of {}",
        order.len()
    );
}

/// Records the row each attempt was handed.
#[derive(Clone, Default)]
struct RowRecorder {
    rows: Arc<std::sync::Mutex<Vec<pgmill::JobRow>>>,
}

impl Worker<Task> for RowRecorder {
    async fn work(&self, job: &Job<Task>) -> Result<(), JobError> {
        self.rows.lock().unwrap().push(job.row().clone());
        Ok(())
    }
}

/// The row a worker is handed is the row as claimed in the table, column for column, whether its
/// metadata, tags, errors and earlier attempts are empty (the claim leaves those out) or not.
pub async fn a_claimed_row_is_the_row_as_stored<H: Harness>() {
    let ctx = ctx::<H>().await;
    let recorder = RowRecorder::default();
    let client = test_client(&ctx)
        .queue("default", 4)
        .worker(recorder.clone())
        .build()
        .unwrap();
    let plain = client.insert(Task { n: 1 }).await.unwrap().id;
    let tagged = client
        .insert_with(
            Task { n: 2 },
            InsertOpts::new()
                .metadata(json!({"team": "ops", "n": [1, 2]}))
                .tags(["a", "b"]),
        )
        .await
        .unwrap()
        .id;
    let retried = client.insert(Task { n: 3 }).await.unwrap().id;
    // A job attempted before by two other clients, with one error recorded.
    ctx.script(&ctx.schema.render(&format!(
        "UPDATE {{schema}}.pgmill_job SET attempt = 1, attempted_by = ARRAY['old-1', 'old-2'], \
         errors = ARRAY[jsonb_build_object('attempt', 1, 'at', now(), 'error', 'boom', \
         'panic', false)] WHERE id = {};",
        retried.0
    )))
    .await;
    client.start().await.unwrap();
    wait_for("three completed", async || {
        count_in(&ctx, JobState::Completed).await == 3
    })
    .await;
    client.stop().await;
    let rows = recorder.rows.lock().unwrap().clone();
    assert_eq!(rows.len(), 3);
    for claimed in rows {
        let mut stored = client.job_get(claimed.id).await.unwrap().unwrap();
        // What the completion changed since the claim.
        assert_eq!(stored.state, JobState::Completed);
        stored.state = JobState::Running;
        stored.finalized_at = None;
        stored.claim_token = claimed.claim_token;
        assert_eq!(claimed, stored, "job {}", claimed.id);
    }
    let me = client.id().to_owned();
    for (id, mut expected) in [
        (plain, vec![]),
        (tagged, vec![]),
        (retried, vec!["old-1".to_owned(), "old-2".to_owned()]),
    ] {
        expected.push(me.clone());
        let stored = client.job_get(id).await.unwrap().unwrap();
        assert_eq!(stored.attempted_by, expected, "job {id}");
    }
}

/// The claim statements keep one generic plan once prepared: their plans depend on none of their
/// values (each reaches the scan through a scalar subquery), so Postgres stops planning them after
/// its five custom plans, as it does not when the limit and position are bound directly. Run on
/// one connection through the driver's prepared statements; each claim takes one job and the
/// next starts after it, so every claim has different values.
///
/// Which plan the plan cache chose is read two ways. On every version pgmill runs on (13 and
/// later), the head's claim prepared in SQL and executed past the five custom plans shows the
/// cache's choice in `EXPLAIN (VERBOSE) EXECUTE`: a generic plan names the parameters, a custom
/// one has the values bound in. From PostgreSQL 14 on, `pg_prepared_statements` also counts the
/// generic and custom plans of the driver's own prepared statements; PostgreSQL 13 has no such
/// counts, so there the first reading stands alone.
pub async fn claims_keep_one_generic_plan<H: Harness>() {
    let ctx = ctx::<H>().await;
    let version: i64 = ctx
        .conn()
        .await
        .query_scalar(&Statement::new(
            "SELECT current_setting('server_version_num')::int8 AS v",
        ))
        .await
        .unwrap();
    let client = test_client(&ctx).build().unwrap();
    // A backlog the planner knows of: with one of a few jobs, a custom plan and the generic one
    // cost the same whatever the SQL, so the test could not tell.
    let params: Vec<_> = (0..20_000)
        .map(|n| InsertParams::from_args(&Task { n }, None).unwrap())
        .collect();
    client.insert_bulk(&params).await.unwrap();
    ctx.script(&ctx.schema.render("ANALYZE {schema}.pgmill_job"))
        .await;
    let mut conn = ctx.conn().await;
    let head = ctx.stmt(include_str!("../../../core/sql/job/job_get_available.sql"));
    let after = ctx.stmt(include_str!(
        "../../../core/sql/job/job_get_available_after.sql"
    ));
    // The head's claim once, then nine from the last claimed job, each taking one job.
    let mut position: Option<(i16, chrono::DateTime<chrono::Utc>, i64)> = None;
    for token in 1..=10_i64 {
        let claim = match position {
            None => head
                .clone()
                .bind("default")
                .bind(1_i64)
                .bind("plan-probe")
                .bind(token),
            Some((priority, scheduled_at, id)) => after
                .clone()
                .bind("default")
                .bind(1_i64)
                .bind("plan-probe")
                .bind(token)
                .bind(priority)
                .bind(scheduled_at)
                .bind(id),
        };
        let rows = conn.query(&claim).await.unwrap();
        assert_eq!(rows.len(), 1, "claim {token} takes one job");
        position = Some((
            rows[0].get::<i16>("priority").unwrap(),
            rows[0]
                .get::<chrono::DateTime<chrono::Utc>>("scheduled_at")
                .unwrap(),
            rows[0].get::<i64>("id").unwrap(),
        ));
    }
    // The head's claim eight more times, with other limits and tokens.
    for token in 11..=18_i64 {
        let claim = head
            .clone()
            .bind("default")
            .bind(token % 3)
            .bind("plan-probe")
            .bind(token);
        conn.query(&claim).await.unwrap();
    }
    // Every version: the head's claim prepared in SQL, run six times with other values (five
    // custom plans, then the cache's choice), then explained with values of its own. The client
    // id is one no other statement binds, so it shows in the plan only if bound in.
    conn.execute_script(&format!(
        "PREPARE head_probe(text, bigint, text, bigint) AS {}",
        ctx.schema
            .render(include_str!("../../../core/sql/job/job_get_available.sql"))
    ))
    .await
    .unwrap();
    for token in 101..=106_i64 {
        conn.execute_script(&format!(
            "EXECUTE head_probe('default', {}, 'plan-probe-sql-{token}', {token})",
            token % 3 + 1
        ))
        .await
        .unwrap();
    }
    let explained = conn
        .query(&Statement::new(
            "EXPLAIN (VERBOSE) EXECUTE head_probe('default', 2, 'plan-probe-explained', 107)",
        ))
        .await;
    conn.execute_script("DEALLOCATE head_probe").await.unwrap();
    let explained: Vec<String> = explained
        .unwrap()
        .iter()
        .map(|row| row.get::<String>("QUERY PLAN").unwrap())
        .collect();
    let explained = explained.join("\n");
    // Generic: the queue's subquery outputs the parameter (`Output: $1`); custom: the value.
    assert!(
        explained.contains("Output: $1")
            && !explained.contains("'default'::text")
            && !explained.contains("plan-probe-explained"),
        "the claim is planned again for its values, not kept generic:\n{explained}"
    );
    // From PostgreSQL 14 on, the driver's own prepared statements' plan counts.
    if version >= 140_000 {
        let plans = conn
            .query(&ctx.stmt(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements \
                 WHERE statement LIKE '%FOR UPDATE SKIP LOCKED%' \
                   AND statement NOT LIKE '%pg_prepared_statements%' \
                   AND name <> 'head_probe' ORDER BY statement",
            ))
            .await
            .unwrap();
        assert_eq!(plans.len(), 2, "both claims ran as prepared statements");
        for row in &plans {
            let statement = row.get::<String>("statement").unwrap();
            let generic = row.get::<i64>("generic_plans").unwrap();
            let custom = row.get::<i64>("custom_plans").unwrap();
            assert!(
                custom <= 5 && generic >= 2,
                "{generic} generic and {custom} custom plans for {statement}"
            );
        }
    }
    // The generic plan is the one a custom plan would be: the fetch index scanned in order and
    // stopped by the limit (no sort of the queue's jobs), the ids looked up in the primary key.
    let prepare = format!(
        "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; \
         PREPARE generic_claim(text, bigint, text, bigint, smallint, timestamptz, bigint) AS {}",
        ctx.schema.render(include_str!(
            "../../../core/sql/job/job_get_available_after.sql"
        ))
    );
    conn.execute_script(&prepare).await.unwrap();
    let plan = conn
        .query(&Statement::new(
            "EXPLAIN EXECUTE generic_claim('default', 100, 'plan-probe', 99, 1::smallint, \
             '-infinity', 0)",
        ))
        .await;
    conn.execute_script("ROLLBACK; DEALLOCATE generic_claim")
        .await
        .unwrap();
    let plan: Vec<String> = plan
        .unwrap()
        .iter()
        .map(|row| row.get::<String>("QUERY PLAN").unwrap())
        .collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains("Index Scan using pgmill_job_fetch_idx")
            && plan.contains("Index Scan using pgmill_job_pkey")
            && !plan.contains("Sort"),
        "{plan}"
    );
}
