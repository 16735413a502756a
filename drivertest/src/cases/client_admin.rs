//! Reading and administering jobs: get, list with cursor pagination, cancel, retry, delete.

use pgmill::admin::JobListParams;
use pgmill::driver::Executor;
use pgmill::{InsertOpts, InsertParams, JobId, JobState};

use crate::scripted::{Task, busy_and_rare_jobs, test_client};
use crate::{Harness, TestContext, migrated as ctx};

async fn set_state<D: pgmill::driver::Driver>(ctx: &TestContext<D>, id: JobId, state: &str) {
    let finalized = if ["completed", "cancelled", "discarded"].contains(&state) {
        "now()"
    } else {
        "NULL"
    };
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(&format!(
                "UPDATE {{schema}}.pgmill_job SET state = '{state}', finalized_at = {finalized}, \
             attempt = greatest(attempt, 1) WHERE id = $1::bigint"
            ))
            .bind(id.0),
        )
        .await
        .unwrap();
}

/// `job_get` returns the job, or `None` for an unknown id.
pub async fn get_returns_the_job_or_none<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let job = client.insert(Task { n: 5 }).await.unwrap();
    assert_eq!(client.job_get(job.id).await.unwrap(), Some(job.job));
    assert_eq!(client.job_get(JobId(i64::MAX)).await.unwrap(), None);
}

/// Listing filters by state, queue, kind and ids, and pages with a cursor.
pub async fn list_filters_and_paginates_with_a_cursor<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let params: Vec<_> = (0..25)
        .map(|n| {
            let queue = if n % 2 == 0 { "even" } else { "odd" };
            InsertParams::from_args(&Task { n }, Some(InsertOpts::new().queue(queue))).unwrap()
        })
        .collect();
    let rows = client.insert_many(&params).await.unwrap();
    let mut seen = Vec::new();
    let mut page_params = JobListParams::new().queues(["even"]).limit(5);
    loop {
        let page = client.job_list(&page_params).await.unwrap();
        seen.extend(page.jobs.iter().map(|j| j.id));
        match page.next_cursor {
            Some(c) => page_params = page_params.after(c),
            None => break,
        }
    }
    let even: Vec<JobId> = rows
        .iter()
        .filter(|r| r.queue == "even")
        .map(|r| r.id)
        .collect();
    assert_eq!(seen, even);
    set_state(&ctx, rows[0].id, "completed").await;
    let done = client
        .job_list(&JobListParams::new().states([JobState::Completed]))
        .await
        .unwrap();
    assert_eq!(done.jobs.len(), 1);
    let by_id = client
        .job_list(
            &JobListParams::new()
                .ids([rows[3].id, rows[4].id])
                .kinds(["task"]),
        )
        .await
        .unwrap();
    assert_eq!(
        by_id.jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
        [rows[3].id, rows[4].id]
    );
    assert!(
        client
            .job_list(&JobListParams::new().kinds(["other"]))
            .await
            .unwrap()
            .jobs
            .is_empty()
    );
}

/// Listing a rare state or queue reads only its jobs, however many finished jobs the table keeps
/// (one scan in id order, the state compared as text, read every row), and pages through them in
/// id order.
pub async fn list_of_a_rare_state_or_queue_reads_only_its_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    busy_and_rare_jobs(&ctx).await;
    let sql = include_str!("../../../core/sql/job/job_list.sql");
    for args in [
        ["'{discarded}'", "NULL", "NULL", "NULL", "0", "2"],
        ["'{running}'", "NULL", "NULL", "NULL", "0", "100"],
        ["NULL", "'{rare}'", "NULL", "NULL", "0", "100"],
        [
            "'{available,discarded}'",
            "'{rare}'",
            "NULL",
            "NULL",
            "0",
            "100",
        ],
    ] {
        assert_eq!(ctx.job_rows_filtered_out(sql, &args).await, 0, "{args:?}");
    }
    let client = test_client(&ctx).build().unwrap();
    let list = async |params: JobListParams| {
        let mut seen = Vec::new();
        let mut params = params.limit(2);
        loop {
            let page = client.job_list(&params).await.unwrap();
            seen.extend(page.jobs.iter().map(|j| (j.id.0, j.state, j.queue.clone())));
            match page.next_cursor {
                Some(c) => params = params.after(c),
                None => return seen,
            }
        }
    };
    let discarded = list(JobListParams::new().states([JobState::Discarded])).await;
    let rare = |id, state| (id, state, "rare".to_owned());
    assert_eq!(
        discarded,
        [
            (3011, JobState::Discarded, "busy".to_owned()),
            rare(3012, JobState::Discarded),
            rare(3013, JobState::Discarded)
        ]
    );
    let in_rare = list(JobListParams::new().queues(["rare"])).await;
    assert_eq!(
        in_rare,
        [
            rare(3012, JobState::Discarded),
            rare(3013, JobState::Discarded),
            rare(3014, JobState::Available),
            rare(3015, JobState::Available)
        ]
    );
    let tail = list(JobListParams::new().after(JobId(3009))).await;
    assert_eq!(
        tail.iter().map(|j| j.0).collect::<Vec<_>>(),
        (3010..=3015).collect::<Vec<_>>()
    );
}

/// A queue's depth, as `queue_list`/`queue_get` and the dashboard's overview read it, counts its
/// live jobs without reading a finished one: its cost follows the queue's depth, not the history
/// the table keeps. (Checked on fresh statistics: on statistics taken while most jobs were still
/// waiting, until autovacuum's next `ANALYZE`, the planner may count by walking the table.)
pub async fn queue_depth_reads_no_finished_job<H: Harness>() {
    let ctx = ctx::<H>().await;
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_queue (name) VALUES ('busy'), ('rare');\
         INSERT INTO {schema}.pgmill_job (kind, queue) SELECT 'k', 'busy' FROM generate_series(1, 10);\
         INSERT INTO {schema}.pgmill_job (kind, queue, state, finalized_at) \
         SELECT 'k', q, 'completed', now() FROM generate_series(1, 3000), \
             unnest(ARRAY['busy', 'rare']) AS q;\
         INSERT INTO {schema}.pgmill_job (kind, queue, state, attempt, attempted_at) \
         VALUES ('k', 'rare', 'running', 1, now());\
         INSERT INTO {schema}.pgmill_job (kind, queue) VALUES ('k', 'rare'), ('k', 'rare');\
         ANALYZE {schema}.pgmill_job;",
    ))
    .await;
    let list = include_str!("../../../core/sql/queue/queue_list.sql");
    let overview = include_str!("../../../core/sql/queue/queue_overview.sql");
    for (sql, args) in [
        (list, &["NULL", "100"][..]),
        (list, &["'rare'", "1"][..]),
        (overview, &["60000000"][..]),
    ] {
        assert_eq!(ctx.job_rows_filtered_out(sql, args).await, 0, "{args:?}");
    }
    let client = test_client(&ctx).build().unwrap();
    let rare = client.queue_get("rare").await.unwrap().unwrap();
    let count = |state| rare.counts.get(&state).copied().unwrap_or(0);
    assert_eq!(
        (count(JobState::Available), count(JobState::Running)),
        (2, 1)
    );
    assert_eq!(count(JobState::Completed), 0);
}

/// Cancel works on jobs not running and leaves running and final jobs alone.
pub async fn cancel_only_cancels_jobs_not_running<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let (a, b, c) = (
        client.insert(Task { n: 1 }).await.unwrap(),
        client.insert(Task { n: 2 }).await.unwrap(),
        client.insert(Task { n: 3 }).await.unwrap(),
    );
    set_state(&ctx, b.id, "running").await;
    set_state(&ctx, c.id, "completed").await;
    let a = client.job_cancel(a.id).await.unwrap().unwrap();
    assert_eq!(a.state, JobState::Cancelled);
    assert!(a.finalized_at.is_some());
    assert_eq!(a.errors.len(), 1);
    assert_eq!(
        client.job_cancel(b.id).await.unwrap().unwrap().state,
        JobState::Running
    );
    assert_eq!(
        client.job_cancel(c.id).await.unwrap().unwrap().state,
        JobState::Completed
    );
    assert_eq!(client.job_cancel(JobId(i64::MAX)).await.unwrap(), None);
}

/// Retry makes a finished job available now, with an extra attempt when it had used them up.
pub async fn retry_makes_a_finished_job_available_again<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let job = client
        .insert_with(Task { n: 1 }, InsertOpts::new().max_attempts(1))
        .await
        .unwrap();
    set_state(&ctx, job.id, "discarded").await;
    let retried = client.job_retry(job.id).await.unwrap().unwrap();
    assert_eq!(retried.state, JobState::Available);
    assert_eq!(retried.finalized_at, None);
    assert_eq!(retried.max_attempts, 2);
    set_state(&ctx, job.id, "running").await;
    assert_eq!(
        client.job_retry(job.id).await.unwrap().unwrap().state,
        JobState::Running
    );
}

/// Delete removes a job that is not running and refuses a running one.
pub async fn delete_removes_only_jobs_not_running<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let (a, b) = (
        client.insert(Task { n: 1 }).await.unwrap(),
        client.insert(Task { n: 2 }).await.unwrap(),
    );
    set_state(&ctx, b.id, "running").await;
    assert_eq!(
        client.job_delete(a.id).await.unwrap().map(|j| j.id),
        Some(a.id)
    );
    assert_eq!(client.job_delete(b.id).await.unwrap(), None);
    assert_eq!(client.job_get(a.id).await.unwrap(), None);
    assert!(client.job_get(b.id).await.unwrap().is_some());
}
