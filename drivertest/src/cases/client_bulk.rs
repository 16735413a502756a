//! Operator actions on many jobs at once: a count first, then batches under a cursor, for retry,
//! cancel and delete; and what an operator sees of the clients and of queues nobody works.

use std::time::Duration;

use pgmill::admin::{BulkAction, JobListParams};
use pgmill::driver::Executor;
use pgmill::{InsertOpts, InsertParams, JobId, JobState};

use crate::scripted::{
    ScriptedWorker, Task, busy_and_rare_jobs, count_in, set_state, state_counts, test_client,
    wait_for,
};
use crate::{Harness, migrated as ctx};

/// Runs `action` batch by batch to the end; returns the jobs changed per batch.
async fn run_bulk<D: pgmill::driver::Driver>(
    client: &pgmill::Client<D>,
    action: BulkAction,
    mut params: JobListParams,
) -> Vec<u64> {
    let mut batches = Vec::new();
    loop {
        let batch = client.job_bulk(action, &params).await.unwrap();
        batches.push(batch.changed);
        match batch.next_cursor {
            Some(cursor) => params = params.after(cursor),
            None => return batches,
        }
    }
}

fn tasks(n: i64, queue: &str) -> Vec<InsertParams> {
    (0..n)
        .map(|n| {
            InsertParams::from_args(&Task { n }, Some(InsertOpts::new().queue(queue))).unwrap()
        })
        .collect()
}

/// Retrying by filter counts the jobs it would change first, then changes exactly those, batch by
/// batch, giving jobs out of attempts one more; jobs of other queues and available ones are left
/// alone.
pub async fn bulk_retry_counts_first_and_pages_through_matching_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let jobs = client.insert_many(&tasks(25, "mail")).await.unwrap();
    client.insert_many(&tasks(4, "other")).await.unwrap();
    let discarded: Vec<JobId> = jobs[..20].iter().map(|j| j.id).collect();
    set_state(&ctx, &discarded, "discarded").await;
    let params = JobListParams::new().queues(["mail"]).limit(7);
    assert_eq!(client.job_count(&params).await.unwrap(), 25);
    assert_eq!(
        client
            .job_bulk_count(BulkAction::Retry, &params)
            .await
            .unwrap(),
        20,
        "available jobs are not retried"
    );
    let batches = run_bulk(&client, BulkAction::Retry, params).await;
    assert_eq!(batches.iter().sum::<u64>(), 20, "{batches:?}");
    assert!(batches.iter().all(|n| *n <= 7), "{batches:?}");
    assert_eq!(count_in(&ctx, JobState::Available).await, 29);
    let retried = client.job_get(discarded[0]).await.unwrap().unwrap();
    assert_eq!(retried.state, JobState::Available);
    assert_eq!(retried.max_attempts, retried.attempt + 1);
    assert_eq!(retried.finalized_at, None);
}

/// Cancelling by filter cancels waiting jobs at once and tells the client running a matching job,
/// which drops its work; finished jobs are left alone.
pub async fn bulk_cancel_cancels_waiting_jobs_and_tells_running_ones<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::new(|run| async move {
        if run.n == 0 {
            tokio::time::sleep(Duration::from_secs(600)).await;
        }
        Ok(())
    });
    let client = test_client(&ctx)
        .queue("busy", 1)
        .worker(worker)
        .build()
        .unwrap();
    let running = client
        .insert_with(Task { n: 0 }, InsertOpts::new().queue("busy"))
        .await
        .unwrap();
    client.start().await.unwrap();
    wait_for("the long job runs", async || {
        count_in(&ctx, JobState::Running).await == 1
    })
    .await;
    let waiting = client.insert_many(&tasks(5, "idle")).await.unwrap();
    set_state(&ctx, &[waiting[0].id], "completed").await;
    // The operator works from another process: a client that works no queue.
    let operator = test_client(&ctx).build().unwrap();
    let params = JobListParams::new().kinds(["task"]).limit(2);
    assert_eq!(
        operator
            .job_bulk_count(BulkAction::Cancel, &params)
            .await
            .unwrap(),
        5
    );
    let batches = run_bulk(&operator, BulkAction::Cancel, params).await;
    assert_eq!(batches.iter().sum::<u64>(), 5, "{batches:?}");
    wait_for("the running job ends cancelled", async || {
        operator.job_get(running.id).await.unwrap().unwrap().state == JobState::Cancelled
    })
    .await;
    let counts = state_counts(&ctx).await;
    assert_eq!(counts.get(&JobState::Cancelled), Some(&5), "{counts:?}");
    assert_eq!(counts.get(&JobState::Completed), Some(&1), "{counts:?}");
    client.stop().await;
}

/// Deleting by filter deletes matching jobs in every state but running.
pub async fn bulk_delete_leaves_running_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let jobs = client.insert_many(&tasks(9, "q")).await.unwrap();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    set_state(&ctx, &ids[0..2], "running").await;
    set_state(&ctx, &ids[2..4], "completed").await;
    set_state(&ctx, &ids[4..6], "scheduled").await;
    let only_finished = JobListParams::new().states([JobState::Completed, JobState::Running]);
    assert_eq!(
        client
            .job_bulk_count(BulkAction::Delete, &only_finished)
            .await
            .unwrap(),
        2
    );
    let batches = run_bulk(&client, BulkAction::Delete, JobListParams::new().limit(4)).await;
    assert_eq!(batches.iter().sum::<u64>(), 7, "{batches:?}");
    let left = client.job_list(&JobListParams::new()).await.unwrap().jobs;
    assert_eq!(
        left.iter().map(|j| j.id).collect::<Vec<_>>(),
        ids[0..2].to_vec()
    );
}

/// Counting and acting on a rare state or queue read only its jobs, however many finished jobs the
/// table keeps (checked with `EXPLAIN ANALYZE` of `job_count.sql` and of a `job_bulk.sql` batch
/// that changes nothing), and count and change exactly the matching jobs.
pub async fn count_and_bulk_of_a_rare_state_or_queue_read_only_its_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    busy_and_rare_jobs(&ctx).await;
    let count_sql = include_str!("../../../core/sql/job/job_count.sql");
    let bulk_sql = include_str!("../../../core/sql/job/job_bulk.sql");
    for filter in [
        ["'{discarded}'", "NULL", "NULL", "NULL"],
        ["'{running}'", "NULL", "NULL", "NULL"],
        ["NULL", "'{rare}'", "NULL", "NULL"],
        ["'{available,discarded}'", "'{rare}'", "NULL", "NULL"],
        ["'{discarded}'", "NULL", "'{k}'", "NULL"],
    ] {
        assert_eq!(
            ctx.job_rows_filtered_out(count_sql, &filter).await,
            0,
            "count {filter:?}"
        );
        let batch = [&filter[..], &["0", "2", "'none'", "'{}'"]].concat();
        assert_eq!(
            ctx.job_rows_filtered_out(bulk_sql, &batch).await,
            0,
            "batch {batch:?}"
        );
    }
    let client = test_client(&ctx).build().unwrap();
    let discarded = JobListParams::new().states([JobState::Discarded]);
    assert_eq!(client.job_count(&discarded).await.unwrap(), 3);
    let rare = JobListParams::new().queues(["rare"]);
    assert_eq!(client.job_count(&rare).await.unwrap(), 4);
    assert_eq!(
        client
            .job_bulk_count(BulkAction::Retry, &rare)
            .await
            .unwrap(),
        2,
        "available jobs are not retried"
    );
    assert_eq!(client.job_count(&JobListParams::new()).await.unwrap(), 3015);
    let batches = run_bulk(&client, BulkAction::Retry, discarded.clone().limit(2)).await;
    assert_eq!(batches, [2, 1]);
    assert_eq!(client.job_count(&discarded).await.unwrap(), 0);
    assert_eq!(count_in(&ctx, JobState::Available).await, 15);
}

/// A job that changes while a batch waits for its lock is checked again once the lock is had: one
/// that no longer matches is passed over, and the batches go on to the rest.
pub async fn bulk_passes_over_a_job_that_stopped_matching_while_it_waited<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let jobs = client.insert_many(&tasks(4, "q")).await.unwrap();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    set_state(&ctx, &ids, "discarded").await;
    // Holds the first job's row, changed, until a statement of this schema waits for a lock.
    ctx.script(&ctx.schema.render(
        "CREATE FUNCTION {schema}.wait_for_a_lock_waiter(pattern text) RETURNS boolean \
         LANGUAGE plpgsql AS $f$ \
         BEGIN \
             FOR i IN 1..3000 LOOP \
                 PERFORM pg_stat_clear_snapshot(); \
                 IF EXISTS (SELECT 1 FROM pg_stat_activity \
                     WHERE wait_event_type = 'Lock' AND position(pattern IN query) > 0) THEN \
                     RETURN true; \
                 END IF; \
                 PERFORM pg_sleep(0.01); \
             END LOOP; \
             RETURN false; \
         END $f$",
    ))
    .await;
    let holder = vec![
        ctx.stmt(
            "UPDATE {schema}.pgmill_job SET state = 'available', finalized_at = NULL \
             WHERE id = $1::bigint",
        )
        .bind(ids[0].0),
        ctx.stmt("SELECT {schema}.wait_for_a_lock_waiter($1::text) AS waited")
            .bind(ctx.schema.render("FROM {schema}.pgmill_job AS j")),
    ];
    let hold = H::host_transaction(&ctx.url, holder, true);
    let bulk = async {
        wait_for("the row to be held", async || {
            let stmt = ctx
                .stmt(
                    "SELECT count(*) AS n FROM pg_stat_activity \
                     WHERE position($1::text IN query) > 0 AND state = 'active'",
                )
                .bind(ctx.schema.render("{schema}.wait_for_a_lock_waiter"));
            ctx.conn().await.query_scalar::<i64>(&stmt).await.unwrap() > 0
        })
        .await;
        let params = JobListParams::new().states([JobState::Discarded]).limit(2);
        client.job_bulk(BulkAction::Delete, &params).await.unwrap()
    };
    let (held, batch) = tokio::join!(hold, bulk);
    let held = held.unwrap();
    let waited: bool = held[1][0].get("waited").unwrap();
    assert!(waited, "the batch waited for the held row");
    let rest = match batch.next_cursor {
        Some(cursor) => {
            let params = JobListParams::new()
                .states([JobState::Discarded])
                .limit(2)
                .after(cursor);
            run_bulk(&client, BulkAction::Delete, params).await
        }
        None => Vec::new(),
    };
    assert_eq!(
        batch.changed + rest.iter().sum::<u64>(),
        3,
        "{batch:?} {rest:?}"
    );
    let left = client.job_list(&JobListParams::new()).await.unwrap().jobs;
    assert_eq!(
        left.iter().map(|j| (j.id, j.state)).collect::<Vec<_>>(),
        [(ids[0], JobState::Available)]
    );
}

/// The client list shows each registered client with its queues, whether it is live and whether
/// it leads; a stopped client's row is gone.
pub async fn client_list_shows_queues_liveness_and_the_leader<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .id("worker-1")
        .queue("b", 1)
        .queue("a", 1)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    client.start().await.unwrap();
    wait_for("the client leads", async || client.is_leader()).await;
    let operator = test_client(&ctx).build().unwrap();
    // The heartbeat service writes the client's row on its own schedule after start.
    wait_for("the client registers", async || {
        operator
            .client_list()
            .await
            .unwrap()
            .iter()
            .any(|c| c.id == "worker-1")
    })
    .await;
    // A row left behind by a client that died 55 minutes ago (within the rescuer's retention).
    ctx.conn()
        .await
        .execute(&ctx.stmt(
            "INSERT INTO {schema}.pgmill_client (id, hostname, pid, heartbeat_at) \
             VALUES ('dead', 'gone', 1, now() - interval '55 minutes')",
        ))
        .await
        .unwrap();
    let clients = operator.client_list().await.unwrap();
    assert_eq!(
        clients.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["dead", "worker-1"]
    );
    let (dead, live) = (&clients[0], &clients[1]);
    assert!(
        !dead.live && !dead.leader && dead.queues.is_empty(),
        "{dead:?}"
    );
    assert!(dead.heartbeat_age >= Duration::from_secs(3000), "{dead:?}");
    assert!(live.live && live.leader, "{live:?}");
    assert_eq!(live.queues, ["a", "b"]);
    assert_eq!(live.pid, i32::try_from(std::process::id()).unwrap());
    client.stop().await;
    let ids: Vec<String> = operator
        .client_list()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["dead"]);
}

/// Queues holding live jobs that no live client works are listed with their counts, whether
/// registered or not (a typo, rows written by hand), and a queue whose last client stopped joins
/// them; queues a live client works and queues holding only finished jobs do not appear. The
/// overview lists the same queues beside the registered ones, each flagged served or not.
pub async fn unserved_queues_are_listed_with_their_counts_and_flagged_in_the_overview<
    H: Harness,
>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("served", 1)
        .worker(ScriptedWorker::new(|_| async {
            Err(pgmill::JobError::snooze(Duration::from_secs(3600)))
        }))
        .build()
        .unwrap();
    client.start().await.unwrap();
    let operator = test_client(&ctx).build().unwrap();
    wait_for("the client advertises its queue", async || {
        operator
            .client_list()
            .await
            .unwrap()
            .iter()
            .any(|c| c.live && c.queues == ["served"])
    })
    .await;
    client.insert_many(&tasks(2, "served")).await.unwrap();
    client.insert_many(&tasks(3, "srved")).await.unwrap();
    let done = client.insert_many(&tasks(1, "finished")).await.unwrap();
    ctx.conn()
        .await
        .execute(&ctx.stmt(
            "INSERT INTO {schema}.pgmill_job (queue, kind, state, scheduled_at) \
             VALUES ('by_hand', 'task', 'scheduled', now() + interval '1 day')",
        ))
        .await
        .unwrap();
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(
                "UPDATE {schema}.pgmill_job SET state = 'completed', finalized_at = now() \
                 WHERE id = $1::bigint",
            )
            .bind(done[0].id.0),
        )
        .await
        .unwrap();
    let unserved = operator.queue_list_unserved().await.unwrap();
    let names: Vec<&str> = unserved.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["by_hand", "srved"]);
    let typo = &unserved[1];
    assert!(!typo.registered && typo.paused_at.is_none(), "{typo:?}");
    assert_eq!(typo.counts[&JobState::Available], 3);
    assert!(typo.oldest_available_age.is_some(), "{typo:?}");
    assert_eq!(unserved[0].counts[&JobState::Scheduled], 1);

    // A registered queue without jobs or clients is in the overview, and not unserved.
    ctx.conn()
        .await
        .execute(
            &ctx.stmt("INSERT INTO {schema}.pgmill_queue (name, paused_at) VALUES ('idle', now())"),
        )
        .await
        .unwrap();
    let overview = operator.queue_overview().await.unwrap();
    let rows: Vec<(&str, bool, bool, bool)> = overview
        .iter()
        .map(|q| (q.name.as_str(), q.registered, q.served, q.is_unserved()))
        .collect();
    assert_eq!(
        rows,
        [
            ("by_hand", false, false, true),
            ("idle", true, false, false),
            ("served", true, true, false),
            ("srved", false, false, true),
        ]
    );
    assert!(overview[1].paused_at.is_some());
    assert_eq!(overview[2].counts.values().sum::<i64>(), 2);
    assert_eq!(overview[3].counts, typo.counts);
    assert!(overview[3].oldest_available_age.is_some());
    client.stop().await;
    let unserved = operator.queue_list_unserved().await.unwrap();
    let served = unserved
        .iter()
        .find(|q| q.name == "served")
        .expect("a queue whose last client stopped is unserved");
    assert!(served.registered, "{served:?}");
    assert_eq!(served.counts.values().sum::<i64>(), 2);
}
