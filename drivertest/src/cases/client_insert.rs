//! Insert paths end to end: in the application's own transaction (rolled back: never runs;
//! committed: runs once), many, bulk, scheduled, pending, validation.

use chrono::{TimeDelta, Utc};
use pgmill::driver::{Executor, Value};
use pgmill::{Error, InsertOpts, InsertParams, Inserter, JobState};
use serde_json::json;

use crate::scripted::{ScriptedWorker, Task, count_in, state_counts, test_client, wait_for};
use crate::{Harness, migrated as ctx};

fn task(n: i64) -> InsertParams {
    InsertParams::from_args(&Task { n }, None).unwrap()
}

/// A job inserted in the application's transaction that then rolls back never exists or runs.
pub async fn rolled_back_host_insert_never_runs<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let inside = H::host_insert(&ctx.url, client.inserter(), vec![task(1)], false)
        .await
        .expect("insert inside the host transaction");
    assert_eq!(inside.len(), 1);
    assert_eq!(inside[0].state, JobState::Available);
    // A committed marker job proves the client is fetching; the rolled-back one never shows up.
    client.insert(Task { n: 2 }).await.unwrap();
    wait_for("marker completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    assert_eq!(ctx.count("pgmill_job_all").await, 1);
    assert!(client.job_get(inside[0].id).await.unwrap().is_none());
    assert_eq!(worker.total_runs(), 1);
}

/// A job inserted in the application's transaction that commits runs exactly once.
pub async fn committed_host_insert_runs_once<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    client.start().await.unwrap();
    let inserted = H::host_insert(&ctx.url, client.inserter(), vec![task(1), task(2)], true)
        .await
        .expect("insert inside the host transaction");
    wait_for("both completed", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    client.stop().await;
    for job in inserted {
        assert_eq!(worker.runs()[&job.id], 1);
    }
}

/// `insert_many` inserts in one round trip and returns the rows in input order.
pub async fn insert_many_returns_rows_in_input_order<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let params: Vec<_> = (0..500).map(task).collect();
    let rows = client.insert_many(&params).await.unwrap();
    assert_eq!(rows.len(), 500);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.args, json!({"n": i}));
        assert_eq!(r.kind, "task");
        assert_eq!(r.state, JobState::Available);
    }
    assert!(client.insert_many(&[]).await.unwrap().is_empty());
}

/// The bulk path inserts 10,000 jobs (COPY where the driver has it) and each runs once.
pub async fn bulk_insert_of_ten_thousand_jobs_runs_each_once<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 50)
        .worker(worker.clone())
        .build()
        .unwrap();
    let mut params: Vec<_> = (0..9_990).map(task).collect();
    // A few scheduled and pending jobs take the non-COPY path inside the same transaction.
    for n in 0..5 {
        params.push(
            InsertParams::from_args(
                &Task { n },
                Some(InsertOpts::new().schedule_in(TimeDelta::hours(1))),
            )
            .unwrap(),
        );
        params
            .push(InsertParams::from_args(&Task { n }, Some(InsertOpts::new().pending())).unwrap());
    }
    assert_eq!(client.insert_bulk(&params).await.unwrap(), 10_000);
    let counts = state_counts(&ctx).await;
    assert_eq!(counts[&JobState::Available], 9_990);
    assert_eq!(counts[&JobState::Scheduled], 5);
    assert_eq!(counts[&JobState::Pending], 5);
    client.start().await.unwrap();
    wait_for("all available jobs completed", async || {
        count_in(&ctx, JobState::Completed).await == 9_990
    })
    .await;
    client.stop().await;
    let runs = worker.runs();
    assert_eq!(runs.len(), 9_990);
    assert!(runs.values().all(|&n| n == 1));
}

/// Bulk-inserted jobs keep every option, whether they carry metadata and tags or not (COPY
/// drivers send the two kinds in differently shaped COPYs; a driver whose small COPYs are slow
/// sends a batch this small as typed multi-row inserts).
pub async fn bulk_insert_keeps_each_jobs_options<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let opts = |n: i64| match n % 4 {
        0 => InsertOpts::new(),
        1 => InsertOpts::new()
            .queue("other")
            .priority(3)
            .tags(["a", "b:c", &format!("n{n}")]),
        2 => InsertOpts::new()
            .metadata(json!({"m": n, "s": "x\ny"}))
            .max_attempts(5)
            .pending(),
        _ => InsertOpts::new()
            .queue("third")
            .priority(2)
            .max_attempts(7)
            .pending(),
    };
    let params: Vec<_> = (0..400)
        .map(|n| InsertParams::from_args(&Task { n }, Some(opts(n))).unwrap())
        .collect();
    assert_eq!(client.insert_bulk(&params).await.unwrap(), 400);
    let mut conn = ctx.conn().await;
    let rows = conn
        .query(&ctx.stmt(
            "SELECT (args->>'n')::int8, state::text, queue, priority::int8, \
             max_attempts::int8, tags, metadata FROM {schema}.pgmill_job ORDER BY 1",
        ))
        .await
        .unwrap();
    assert_eq!(rows.len(), 400);
    for (n, row) in (0_i64..).zip(&rows) {
        let (state, queue, priority, max_attempts, tags, metadata) = match n % 4 {
            0 => ("available", "default", 1, 25, vec![], json!({})),
            1 => (
                "available",
                "other",
                3,
                25,
                vec!["a".to_owned(), "b:c".to_owned(), format!("n{n}")],
                json!({}),
            ),
            2 => (
                "pending",
                "default",
                1,
                5,
                vec![],
                json!({"m": n, "s": "x\ny"}),
            ),
            _ => ("pending", "third", 2, 7, vec![], json!({})),
        };
        assert_eq!(
            row.values(),
            &[
                Value::Int8(n),
                Value::Text(state.into()),
                Value::Text(queue.into()),
                Value::Int8(priority),
                Value::Int8(max_attempts),
                Value::TextArray(tags),
                Value::Jsonb(metadata),
            ],
            "job {n}"
        );
    }
}

/// A bulk insert of jobs that share their state, queue, priority and max_attempts keeps those
/// and each job's own kind and args (a driver whose small COPYs are slow sends such a batch as
/// one insert carrying the shared options once, and the args as JSON text).
pub async fn bulk_insert_of_alike_jobs_keeps_their_kinds_args_and_options<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let args = |n: i64| {
        json!({
            "n": n,
            "s": format!("é\t\\\n\"{n}\u{1F600}"),
            "list": [1, 2.5, null, {"k": [true, "x,y}"]}],
        })
    };
    let kind = |n: i64| if n % 3 == 0 { "task" } else { "other_task" };
    let batches = [
        (
            InsertOpts::new()
                .queue("alike")
                .priority(4)
                .max_attempts(9)
                .pending(),
            ("pending", "alike", 4, 9),
        ),
        (InsertOpts::new(), ("available", "default", 1, 25)),
    ];
    for (batch, (opts, _)) in (0_i64..).zip(&batches) {
        let params: Vec<_> = (batch * 300..(batch + 1) * 300)
            .map(|n| InsertParams::new(kind(n), args(n), opts.clone()).unwrap())
            .collect();
        assert_eq!(client.insert_bulk(&params).await.unwrap(), 300);
    }
    let mut conn = ctx.conn().await;
    let rows = conn
        .query(&ctx.stmt(
            "SELECT (args->>'n')::int8, kind, args, state::text, queue, priority::int8, \
             max_attempts::int8 FROM {schema}.pgmill_job ORDER BY 1",
        ))
        .await
        .unwrap();
    assert_eq!(rows.len(), 600);
    for (n, row) in (0_i64..).zip(&rows) {
        let (state, queue, priority, max_attempts) = batches[usize::from(n >= 300)].1;
        assert_eq!(
            row.values(),
            &[
                Value::Int8(n),
                Value::Text(kind(n).into()),
                Value::Jsonb(args(n)),
                Value::Text(state.into()),
                Value::Text(queue.into()),
                Value::Int8(priority),
                Value::Int8(max_attempts),
            ],
            "job {n}"
        );
    }
}

/// A job scheduled in the future waits; one scheduled in the past is available at once.
pub async fn scheduled_job_waits_for_its_time<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    let later = client
        .insert_with(
            Task { n: 1 },
            InsertOpts::new().schedule_in(TimeDelta::hours(1)),
        )
        .await
        .unwrap();
    assert_eq!(later.state, JobState::Scheduled);
    let at = client
        .insert_with(
            Task { n: 2 },
            InsertOpts::new().scheduled_at(Utc::now() + TimeDelta::days(1)),
        )
        .await
        .unwrap();
    assert_eq!(at.state, JobState::Scheduled);
    let past = client
        .insert_with(
            Task { n: 3 },
            InsertOpts::new().scheduled_at(Utc::now() - TimeDelta::days(1)),
        )
        .await
        .unwrap();
    assert_eq!(past.state, JobState::Available);
    client.start().await.unwrap();
    wait_for("past job completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    assert_eq!(count_in(&ctx, JobState::Scheduled).await, 2);
    assert_eq!(worker.total_runs(), 1);
}

/// A pending job is never fetched.
pub async fn pending_job_is_never_fetched<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(worker.clone())
        .build()
        .unwrap();
    let pending = client
        .insert_with(Task { n: 1 }, InsertOpts::new().pending())
        .await
        .unwrap();
    assert_eq!(pending.state, JobState::Pending);
    client.start().await.unwrap();
    client.insert(Task { n: 2 }).await.unwrap();
    wait_for("other job completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    assert_eq!(
        client.job_get(pending.id).await.unwrap().unwrap().state,
        JobState::Pending
    );
}

/// A client with workers refuses kinds it cannot run, unless told not to check.
pub async fn unknown_kind_is_refused_unless_allowed<H: Harness>() {
    let ctx = ctx::<H>().await;
    let strict = test_client(&ctx)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    let stranger = InsertParams::new("stranger", json!({}), InsertOpts::new()).unwrap();
    let err = strict
        .insert_many(std::slice::from_ref(&stranger))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::UnknownKind(ref k) if k == "stranger"),
        "{err}"
    );
    assert_eq!(ctx.count("pgmill_job").await, 0);
    let lax = test_client(&ctx)
        .worker(ScriptedWorker::ok())
        .reject_unknown_kinds(false)
        .build()
        .unwrap();
    assert_eq!(lax.insert_many(&[stranger]).await.unwrap().len(), 1);
}

/// Invalid names and options are typed errors, and nothing is inserted.
pub async fn invalid_insert_options_are_typed_errors<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let err = client
        .insert_with(Task { n: 1 }, InsertOpts::new().queue("no spaces allowed"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidName { kind: "queue", .. }),
        "{err}"
    );
    let err = client
        .insert_with(Task { n: 1 }, InsertOpts::new().priority(9))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidConfig(_)), "{err}");
    assert_eq!(ctx.count("pgmill_job").await, 0);
}

/// Enqueueing needs only an executor and an [`Inserter`], no client at all.
pub async fn enqueue_needs_only_an_executor<H: Harness>() {
    let ctx = ctx::<H>().await;
    let inserter = Inserter::new(ctx.schema.clone());
    let mut conn = ctx.conn().await;
    let job = inserter
        .insert_with(
            &mut conn,
            Task { n: 7 },
            InsertOpts::new().queue("elsewhere").tags(["a", "b"]),
        )
        .await
        .unwrap();
    assert_eq!(job.queue, "elsewhere");
    assert_eq!(job.tags, ["a", "b"]);
    assert_eq!(job.args, json!({"n": 7}));
    assert_eq!(job.max_attempts, 25);
    assert_eq!(job.metadata, json!({}));
}

/// A single insert keeps every option it is given, and returns the row as stored.
pub async fn single_insert_keeps_every_option<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let job = client
        .insert_with(
            Task { n: 3 },
            InsertOpts::new()
                .queue("other")
                .priority(4)
                .max_attempts(7)
                .tags(["x", "y:z"])
                .metadata(json!({"trace": "t-1", "n": [1, 2]})),
        )
        .await
        .unwrap();
    assert_eq!(job.state, JobState::Available);
    assert_eq!(job.queue, "other");
    assert_eq!(job.kind, "task");
    assert_eq!(job.args, json!({"n": 3}));
    assert_eq!(job.priority, 4);
    assert_eq!(job.max_attempts, 7);
    assert_eq!(job.attempt, 0);
    assert_eq!(job.tags, ["x", "y:z"]);
    assert_eq!(job.metadata, json!({"trace": "t-1", "n": [1, 2]}));
    assert!(job.scheduled_at <= job.created_at + TimeDelta::milliseconds(1));
    let stored = client.job_get(job.id).await.unwrap().expect("stored");
    assert_eq!(stored.queue, job.queue);
    assert_eq!(stored.priority, job.priority);
    assert_eq!(stored.max_attempts, job.max_attempts);
    assert_eq!(stored.tags, job.tags);
    assert_eq!(stored.metadata, job.metadata);
    let pending_later = client
        .insert_with(
            Task { n: 4 },
            InsertOpts::new().pending().schedule_in(TimeDelta::hours(2)),
        )
        .await
        .unwrap();
    assert_eq!(pending_later.state, JobState::Pending);
    assert!(pending_later.scheduled_at > job.created_at + TimeDelta::minutes(119));
}

/// Args of any shape, of the suite's `task` kind.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
struct RawTask(serde_json::Value);

impl pgmill::JobArgs for RawTask {
    const KIND: &'static str = "task";
}

/// A single insert returns the row exactly as stored, column for column, whatever the options
/// (the statement returns only what the database decides; the client fills in the rest), through
/// a client and through an inserter in a transaction, as `insert_many` (whole rows) does.
pub async fn single_insert_returns_the_row_as_stored<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let args = json!({
        "n": 1, "big": 9_007_199_254_740_993_i64, "f": 0.1, "e": 1e300, "neg": -2.5,
        "s": "\u{e9}\u{1F600}\"\\\n", "nested": {"b": [true, null, {"a": []}], "a": 2}
    });
    let all_opts = [
        InsertOpts::new(),
        InsertOpts::new()
            .queue("other")
            .priority(4)
            .max_attempts(7)
            .tags(["x", "y:z"])
            .metadata(json!({"trace": "t-1", "n": [1, 2.5]})),
        InsertOpts::new().scheduled_at(Utc::now() + TimeDelta::hours(1)),
        InsertOpts::new().scheduled_at(Utc::now() - TimeDelta::hours(1)),
        InsertOpts::new().schedule_in(TimeDelta::minutes(5)),
        InsertOpts::new().pending(),
        InsertOpts::new().pending().schedule_in(TimeDelta::hours(2)),
    ];
    for opts in all_opts {
        let params = InsertParams::new("task", args.clone(), opts.clone()).unwrap();
        let whole = client.insert_many(&[params]).await.unwrap().remove(0).job;
        let stored = client.job_get(whole.id).await.unwrap().expect("stored");
        assert_eq!(whole, stored, "insert_many");

        let job = client
            .insert_with(RawTask(args.clone()), opts.clone())
            .await
            .unwrap()
            .job;
        let stored = client.job_get(job.id).await.unwrap().expect("stored");
        assert_eq!(job, stored, "Client::insert_with");
        assert_eq!(job.state, whole.state);

        // Twice in one transaction: whichever statement each insert takes (carrying its queue's
        // notification, or without it when the cooldown holds it back), the row it returns is
        // the row stored.
        let mut conn = ctx.conn().await;
        let mut tx = conn.begin().await.unwrap();
        let mut jobs = Vec::new();
        for _ in 0..2 {
            let job = client
                .inserter()
                .insert_with(&mut tx, RawTask(args.clone()), opts.clone())
                .await
                .unwrap()
                .job;
            jobs.push(job);
        }
        pgmill::driver::Transaction::commit(tx).await.unwrap();
        for job in jobs {
            let stored = client.job_get(job.id).await.unwrap().expect("stored");
            assert_eq!(job, stored, "Inserter::insert_with in a transaction");
        }
    }
}
