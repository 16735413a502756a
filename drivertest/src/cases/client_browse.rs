//! Browsing at scale: newest-first job summaries under a keyset cursor, and queue activity.

use chrono::TimeDelta;
use pgmill::admin::JobSummaryParams;
use pgmill::driver::Executor;
use pgmill::{InsertOpts, InsertParams, JobId, JobState};

use crate::scripted::{Task, test_client};
use crate::{Harness, migrated as ctx};

/// Args of a second kind.
#[derive(serde::Serialize, serde::Deserialize)]
struct Other {
    n: i64,
}

impl pgmill::JobArgs for Other {
    const KIND: &'static str = "other";
}

/// Every page of a newest-first listing, following the cursor.
async fn all_pages<D: pgmill::driver::Driver>(
    client: &pgmill::Client<D>,
    mut params: JobSummaryParams,
) -> Vec<JobId> {
    let mut seen = Vec::new();
    loop {
        let page = client.job_list_newest(&params).await.unwrap();
        assert!(page.jobs.len() <= 3);
        seen.extend(page.jobs.iter().map(|j| j.id));
        match page.next_cursor {
            Some(c) => params = params.before(c),
            None => return seen,
        }
    }
}

/// Newest first, filtered by state, queue and kind alone and together, paged by a cursor; args
/// and the last error come as previews with their full length.
pub async fn list_newest_pages_backwards_through_every_filter<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let mut params = Vec::new();
    for n in 0..20 {
        let queue = ["a", "b", "c"][n % 3];
        let opts = Some(InsertOpts::new().queue(queue));
        let n = n as i64;
        params.push(if n % 4 == 0 {
            InsertParams::from_args(&Other { n }, opts).unwrap()
        } else {
            InsertParams::from_args(&Task { n }, opts).unwrap()
        });
    }
    let rows = client.insert_many(&params).await.unwrap();
    // Every fifth job discarded with two errors, every seventh completed.
    for r in &rows {
        let (state, errors) = if r.id.0 % 5 == 0 {
            (
                "discarded",
                "ARRAY['{\"attempt\":1,\"at\":\"2024-01-01T00:00:00Z\",\"error\":\"first\"}'::jsonb, '{\"attempt\":2,\"at\":\"2024-01-01T00:00:01Z\",\"error\":\"second failure\"}'::jsonb]",
            )
        } else if r.id.0 % 7 == 0 {
            ("completed", "'{}'::jsonb[]")
        } else {
            continue;
        };
        ctx.conn()
            .await
            .execute(
                &ctx.stmt(&format!(
                    "UPDATE {{schema}}.pgmill_job SET state = '{state}', finalized_at = now(), \
                     attempt = 2, errors = {errors} WHERE id = $1::bigint"
                ))
                .bind(r.id.0),
            )
            .await
            .unwrap();
    }
    let all = client
        .job_list(&pgmill::admin::JobListParams::new().limit(100))
        .await
        .unwrap()
        .jobs;
    let expect = |f: &dyn Fn(&pgmill::JobRow) -> bool| -> Vec<JobId> {
        let mut ids: Vec<JobId> = all.iter().filter(|j| f(j)).map(|j| j.id).collect();
        ids.reverse();
        ids
    };
    let page = || JobSummaryParams::new().limit(3);
    assert_eq!(all_pages(&client, page()).await, expect(&|_| true));
    assert_eq!(
        all_pages(&client, page().states([JobState::Discarded])).await,
        expect(&|j| j.state == JobState::Discarded)
    );
    assert_eq!(
        all_pages(&client, page().queues(["b"])).await,
        expect(&|j| j.queue == "b")
    );
    assert_eq!(
        all_pages(&client, page().kinds(["other"])).await,
        expect(&|j| j.kind == "other")
    );
    assert_eq!(
        all_pages(
            &client,
            page()
                .states([JobState::Available, JobState::Completed])
                .queues(["a", "c"])
                .kinds(["task"])
        )
        .await,
        expect(&|j| {
            matches!(j.state, JobState::Available | JobState::Completed)
                && (j.queue == "a" || j.queue == "c")
                && j.kind == "task"
        })
    );
    assert!(all_pages(&client, page().queues(["nope"])).await.is_empty());

    let discarded = client
        .job_list_newest(
            &JobSummaryParams::new()
                .states([JobState::Discarded])
                .preview_chars(6)
                .limit(1),
        )
        .await
        .unwrap();
    let j = &discarded.jobs[0];
    assert_eq!(j.error_count, 2);
    assert_eq!(j.last_error.as_deref(), Some("second"));
    assert_eq!(j.args_preview, r#"{"n": "#);
    assert_eq!(
        j.args_chars,
        i64::try_from(
            format!(
                r#"{{"n": {}}}"#,
                all.iter().find(|r| r.id == j.id).unwrap().args["n"]
            )
            .len()
        )
        .unwrap()
    );
    assert!(j.args_truncated());
    assert!(discarded.next_cursor.is_some());
}

/// Activity counts what finished within the window per queue, by outcome, registered queue or
/// not, and leaves older outcomes and unfinished jobs out.
pub async fn activity_counts_recent_outcomes_per_queue<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let mut params = Vec::new();
    for (queue, n) in [("busy", 6), ("idle", 2), ("quiet", 1)] {
        for i in 0..n {
            params.push(
                InsertParams::from_args(&Task { n: i }, Some(InsertOpts::new().queue(queue)))
                    .unwrap(),
            );
        }
    }
    let rows = client.insert_many(&params).await.unwrap();
    let set = |id: JobId, sql: &'static str| {
        let ctx = &ctx;
        async move {
            ctx.conn()
                .await
                .execute(
                    &ctx.stmt(&format!(
                        "UPDATE {{schema}}.pgmill_job SET {sql} WHERE id = $1::bigint"
                    ))
                    .bind(id.0),
                )
                .await
                .unwrap();
        }
    };
    // busy: two completed and one discarded now, one completed an hour ago, one cancelled now,
    // one still available. idle: one discarded now, one available. quiet: completed an hour ago.
    set(rows[0].id, "state = 'completed', finalized_at = now()").await;
    set(rows[1].id, "state = 'completed', finalized_at = now()").await;
    set(rows[2].id, "state = 'discarded', finalized_at = now()").await;
    let hour_ago = "state = 'completed', finalized_at = now() - interval '1 hour'";
    set(rows[3].id, hour_ago).await;
    set(rows[4].id, "state = 'cancelled', finalized_at = now()").await;
    set(rows[6].id, "state = 'discarded', finalized_at = now()").await;
    set(rows[8].id, hour_ago).await;

    let activity = client.queue_activity(TimeDelta::minutes(5)).await.unwrap();
    let seen: Vec<_> = activity
        .iter()
        .map(|a| (a.queue.as_str(), a.completed, a.discarded, a.cancelled))
        .collect();
    assert_eq!(seen, [("busy", 2, 1, 1), ("idle", 0, 1, 0)]);
    assert!((activity[0].failure_rate().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(activity[1].failure_rate(), Some(1.0));

    let wide = client.queue_activity(TimeDelta::hours(2)).await.unwrap();
    let seen: Vec<_> = wide
        .iter()
        .map(|a| (a.queue.as_str(), a.completed))
        .collect();
    assert_eq!(seen, [("busy", 3), ("idle", 0), ("quiet", 1)]);
}
