//! Unique jobs: one job per key among the jobs holding it, on single, many, bulk and
//! in-transaction inserts, from concurrent inserters; keys by args (all or some fields), queue
//! and period; the states that hold a key.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use pgmill::driver::Statement;
use pgmill::{InsertOpts, InsertParams, JobState, UniqueOpts};

use crate::scripted::{Task, set_state, test_client};
use crate::{Harness, HostWork, TestContext, migrated as ctx};

fn unique_task(n: i64, unique: UniqueOpts) -> InsertParams {
    InsertParams::from_args(&Task { n }, Some(InsertOpts::new().unique(unique))).unwrap()
}

async fn jobs_in_table<D: pgmill::driver::Driver>(ctx: &TestContext<D>) -> i64 {
    ctx.count("pgmill_job_all").await
}

/// Sixteen tasks inserting the same unique job at once, each committing its own insert, and
/// sixteen more each in an application transaction, create exactly one job; every other insert
/// returns it as a duplicate.
pub async fn concurrent_inserts_of_one_unique_job_create_exactly_one<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let unique = UniqueOpts::new().by_args();
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (client, unique) = (client.clone(), unique.clone());
        tasks.push(tokio::spawn(async move {
            client
                .insert_with(Task { n: 7 }, InsertOpts::new().unique(unique))
                .await
                .unwrap()
        }));
    }
    for _ in 0..16 {
        let (url, inserter, job) = (
            ctx.url.clone(),
            client.inserter().clone(),
            unique_task(7, unique.clone()),
        );
        tasks.push(tokio::spawn(async move {
            H::host_insert(&url, &inserter, vec![job], true)
                .await
                .unwrap()
                .remove(0)
        }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    assert_eq!(jobs_in_table(&ctx).await, 1);
    let id = results[0].id;
    assert!(results.iter().all(|r| r.id == id), "one job for all");
    assert_eq!(
        results.iter().filter(|r| !r.skipped_as_duplicate).count(),
        1
    );
}

/// Many and bulk inserts whose jobs duplicate each other and existing jobs insert each key once,
/// return the existing job for every duplicate, and leave jobs that are not unique alone; the
/// same on the application's transaction.
pub async fn many_and_bulk_inserts_skip_duplicates_of_each_other_and_of_existing_jobs<
    H: Harness,
>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let by_args = UniqueOpts::new().by_args();
    let existing = client
        .insert_with(Task { n: 1 }, InsertOpts::new().unique(by_args.clone()))
        .await
        .unwrap();
    let plain = InsertParams::from_args(&Task { n: 3 }, None).unwrap();
    let batch = vec![
        unique_task(1, by_args.clone()),
        unique_task(2, by_args.clone()),
        plain.clone(),
        unique_task(2, by_args.clone()),
        plain.clone(),
        unique_task(1, by_args.clone()),
    ];
    let results = client.insert_many(&batch).await.unwrap();
    let skipped: Vec<bool> = results.iter().map(|r| r.skipped_as_duplicate).collect();
    assert_eq!(skipped, [true, false, false, true, false, true]);
    assert_eq!(results[0].id, existing.id);
    assert_eq!(results[5].id, existing.id);
    assert_eq!(results[3].id, results[1].id);
    assert_ne!(
        results[2].id, results[4].id,
        "jobs that are not unique are each inserted"
    );
    assert!(
        results
            .iter()
            .all(|r| r.kind == "task" && r.state == JobState::Available)
    );
    assert_eq!(jobs_in_table(&ctx).await, 4);

    // Bulk: the same keys again, plus a new one twice and one plain job.
    let mut bulk = batch.clone();
    bulk.push(unique_task(9, by_args.clone()));
    bulk.push(unique_task(9, by_args.clone()));
    let inserted = client.insert_bulk(&bulk).await.unwrap();
    assert_eq!(inserted, 3, "two plain jobs and one new unique one");
    assert_eq!(jobs_in_table(&ctx).await, 7);

    // In the application's transaction.
    let host = H::host_insert(
        &ctx.url,
        client.inserter(),
        vec![unique_task(9, by_args.clone()), unique_task(10, by_args)],
        true,
    )
    .await
    .unwrap();
    assert_eq!(
        host.iter()
            .map(|r| r.skipped_as_duplicate)
            .collect::<Vec<_>>(),
        [true, false]
    );
    assert_eq!(jobs_in_table(&ctx).await, 8);
}

/// Unique by period: jobs scheduled in the same period are duplicates, across its boundary they
/// are not. A job inserted with no scheduled time falls in the period of the database's `now()`:
/// inserted in an application transaction that first reads `now()` (the same clock for the whole
/// transaction), its period is known to the microsecond, so jobs scheduled at that period's
/// first and last microsecond are its duplicates and jobs one microsecond outside are not,
/// whenever the test runs.
pub async fn period_boundary_separates_unique_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let hourly = UniqueOpts::new().by_period(Duration::from_secs(3600));
    let at = |h: u32, m: u32, s: u32, us: u32| {
        Utc.with_ymd_and_hms(2100, 1, 1, h, m, s).unwrap()
            + chrono::TimeDelta::microseconds(i64::from(us))
    };
    let insert = async |when| {
        client
            .insert_with(
                Task { n: 0 },
                InsertOpts::new().scheduled_at(when).unique(hourly.clone()),
            )
            .await
            .unwrap()
    };
    let first = insert(at(10, 0, 0, 0)).await;
    let same_hour = insert(at(10, 59, 59, 999_999)).await;
    let next_hour = insert(at(11, 0, 0, 0)).await;
    assert!(!first.skipped_as_duplicate);
    assert!(same_hour.skipped_as_duplicate && same_hour.id == first.id);
    assert!(!next_hour.skipped_as_duplicate && next_hour.id != first.id);
    assert_eq!(next_hour.state, JobState::Scheduled);

    // A job due now, in the period of the database clock's now(), read in its own transaction.
    let due_now = HostWork {
        statements: vec![Statement::new("SELECT now() AS now")],
        jobs: Some((
            client.inserter().clone(),
            vec![unique_task(1, hourly.clone())],
        )),
        commit: true,
    };
    let done = H::run_host_transaction(&ctx.url, due_now).await.unwrap();
    let now: DateTime<Utc> = done.rows[0][0].get("now").unwrap();
    let now_job = &done.jobs[0];
    assert!(!now_job.skipped_as_duplicate);
    assert_eq!(now_job.state, JobState::Available);
    let hour_us: i64 = 3_600_000_000;
    let start = Utc
        .timestamp_micros(now.timestamp_micros().div_euclid(hour_us) * hour_us)
        .unwrap();
    let hour = chrono::TimeDelta::microseconds(hour_us);
    let one_us = chrono::TimeDelta::microseconds(1);
    let same_period = [start, start + hour - one_us];
    for when in same_period {
        let got = insert(when).await;
        assert!(
            got.skipped_as_duplicate && got.id == now_job.id,
            "scheduled at {when}, in the period of the database's now() {now}: {got:?}"
        );
    }
    for when in [start - one_us, start + hour] {
        let got = insert(when).await;
        assert!(
            !got.skipped_as_duplicate && got.id != now_job.id,
            "scheduled at {when}, outside the period of the database's now() {now}: {got:?}"
        );
    }
}

/// A job keeps duplicates out while it is in one of its unique states: a running job always, a
/// completed one by default; a completed job whose states leave `completed` out no longer blocks
/// a new one.
pub async fn finished_jobs_block_duplicates_only_in_their_unique_states<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let default = UniqueOpts::new().by_args();
    let job = client
        .insert_with(Task { n: 1 }, InsertOpts::new().unique(default.clone()))
        .await
        .unwrap();
    set_state(&ctx, &[job.id], "running").await;
    let again = client
        .insert_with(Task { n: 1 }, InsertOpts::new().unique(default.clone()))
        .await
        .unwrap();
    assert!(again.skipped_as_duplicate && again.id == job.id);
    assert_eq!(
        again.state,
        JobState::Running,
        "the existing job as it is now"
    );
    set_state(&ctx, &[job.id], "completed").await;
    let again = client
        .insert_with(Task { n: 1 }, InsertOpts::new().unique(default))
        .await
        .unwrap();
    assert!(again.skipped_as_duplicate, "completed blocks by default");

    let while_live = UniqueOpts::new().by_args().by_state([
        JobState::Available,
        JobState::Scheduled,
        JobState::Pending,
        JobState::Running,
        JobState::Retryable,
    ]);
    let first = client
        .insert_with(Task { n: 2 }, InsertOpts::new().unique(while_live.clone()))
        .await
        .unwrap();
    set_state(&ctx, &[first.id], "completed").await;
    let second = client
        .insert_with(Task { n: 2 }, InsertOpts::new().unique(while_live))
        .await
        .unwrap();
    assert!(!second.skipped_as_duplicate && second.id != first.id);
}

/// Keys compare only what they are asked to: selected args fields, the queue, and always the
/// kind; bad unique options are typed errors.
pub async fn unique_keys_compare_only_what_they_are_asked_to<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .reject_unknown_kinds(false)
        .build()
        .unwrap();
    let by_field = UniqueOpts::new().by_args_fields(["account"]).by_queue();
    let job = |kind: &str, args: serde_json::Value, queue: &str| {
        InsertParams::new(
            kind,
            args,
            InsertOpts::new().queue(queue).unique(by_field.clone()),
        )
        .unwrap()
    };
    let results = client
        .insert_many(&[
            job("sync", serde_json::json!({"account": 1, "by": "ada"}), "q"),
            job("sync", serde_json::json!({"by": "bob", "account": 1}), "q"),
            job("sync", serde_json::json!({"account": 1}), "other"),
            job("sync", serde_json::json!({"account": 2}), "q"),
            job("export", serde_json::json!({"account": 1}), "q"),
        ])
        .await
        .unwrap();
    let skipped: Vec<bool> = results.iter().map(|r| r.skipped_as_duplicate).collect();
    assert_eq!(skipped, [false, true, false, false, false]);
    let bad = InsertOpts::new().unique(UniqueOpts::new().by_state([JobState::Available]));
    let err = client.insert_with(Task { n: 0 }, bad).await.unwrap_err();
    assert!(matches!(err, pgmill::Error::InvalidConfig(_)), "{err}");
}

/// A finished unique job whose key another job took meanwhile is not retried into a second job
/// under the key: one retry is a typed conflict, a bulk retry leaves it out; once the other job
/// lets the key go, the retry goes through.
pub async fn retrying_a_finished_unique_job_whose_key_is_taken_is_a_conflict<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let unique = InsertOpts::new().unique(UniqueOpts::new().by_args());
    let first = client
        .insert_with(Task { n: 4 }, unique.clone())
        .await
        .unwrap();
    set_state(&ctx, &[first.id], "cancelled").await;
    let second = client.insert_with(Task { n: 4 }, unique).await.unwrap();
    assert!(!second.skipped_as_duplicate && second.id != first.id);

    let err = client.job_retry(first.id).await.unwrap_err();
    assert!(
        matches!(&err, pgmill::Error::Conflict(m) if m.contains("unique")),
        "{err}"
    );
    let params = pgmill::admin::JobListParams::new().ids([first.id, second.id]);
    let batch = client
        .job_bulk(pgmill::admin::BulkAction::Retry, &params)
        .await
        .unwrap();
    assert_eq!(
        batch.changed, 0,
        "the second job is live, the first one left out"
    );
    let row = client.job_get(first.id).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Cancelled, "left as it was");

    set_state(&ctx, &[second.id], "discarded").await;
    let retried = client.job_retry(first.id).await.unwrap().unwrap();
    assert_eq!(retried.state, JobState::Available);
}
