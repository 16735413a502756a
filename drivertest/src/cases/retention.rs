//! Retention rules stored in the database: per final state and per queue (or for every queue),
//! set by the operator API without a deploy, winning over the clients' configuration, applied by
//! the cleaner in the history ring, the dead-letter queue and the job table.

use std::collections::BTreeMap;
use std::time::Duration;

use pgmill::driver::{Driver, Executor};
use pgmill::maintenance::{JobCleaner, JobCleanerConfig};
use pgmill::{Error, JobState};

use crate::scripted::{ScriptedWorker, test_client, wait_for};
use crate::{Harness, TestContext, migrated as ctx};

const HOUR: Duration = Duration::from_secs(3600);

/// Writes `n` finished jobs of `queue` straight into the history, finished `age` ago (a Postgres
/// interval), each in the slot its finish time falls in.
async fn in_history<D: Driver>(ctx: &TestContext<D>, queue: &str, state: &str, n: i64, age: &str) {
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(&format!(
                "INSERT INTO {{schema}}.pgmill_job_done (id, state, queue, kind, args, metadata, \
                 priority, attempt, max_attempts, attempted_by, created_at, scheduled_at, \
                 finalized_at, errors, tags, slot) \
                 SELECT nextval(pg_get_serial_sequence('{{schema}}.pgmill_job', 'id')), \
                     $1::text::{{schema}}.pgmill_job_state, $2::text, 'task', '{{}}', '{{}}', 1, 1, \
                     25, '{{}}', now() - interval '{age}', now() - interval '{age}', \
                     now() - interval '{age}', '{{}}', '{{}}', \
                     {{schema}}.pgmill_job_done_slot(now() - interval '{age}', \
                     (SELECT done_slot_seconds FROM {{schema}}.pgmill_storage)) \
                 FROM generate_series(1, $3::bigint)"
            ))
            .bind(state)
            .bind(queue)
            .bind(n),
        )
        .await
        .unwrap();
}

/// Writes `n` jobs of `queue` straight into the dead-letter queue, dead `age` ago.
async fn in_dead_letters<D: Driver>(ctx: &TestContext<D>, queue: &str, n: i64, age: &str) {
    ctx.conn()
        .await
        .execute(
            &ctx.stmt(&format!(
                "INSERT INTO {{schema}}.pgmill_job_dead (id, queue, kind, args, metadata, \
                 priority, attempt, max_attempts, attempted_by, created_at, scheduled_at, \
                 finalized_at, errors, tags, dead_at, dead_reason) \
                 SELECT nextval(pg_get_serial_sequence('{{schema}}.pgmill_job', 'id')), \
                     $1::text, 'task', '{{}}', '{{}}', 1, 1, 1, '{{}}', \
                     now() - interval '{age}', now() - interval '{age}', \
                     now() - interval '{age}', '{{}}', '{{}}', now() - interval '{age}', \
                     'discarded' \
                 FROM generate_series(1, $2::bigint)"
            ))
            .bind(queue)
            .bind(n),
        )
        .await
        .unwrap();
}

/// How many jobs of `state` each queue has wherever they are, as `queue@where`.
async fn kept<D: Driver>(ctx: &TestContext<D>, state: &str) -> BTreeMap<String, i64> {
    let rows = ctx
        .conn()
        .await
        .query(
            &ctx.stmt(
                "SELECT queue || '@' || stored_in AS at, count(*) AS n \
                 FROM {schema}.pgmill_job_all \
                 WHERE state = $1::text::{schema}.pgmill_job_state GROUP BY 1 ORDER BY 1",
            )
            .bind(state),
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get("at").unwrap(), r.get("n").unwrap()))
        .collect()
}

fn expect(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

fn day_config() -> JobCleanerConfig {
    let mut config = JobCleanerConfig::default();
    config.completed_retention = Some(24 * HOUR);
    config.cancelled_retention = Some(24 * HOUR);
    config.discarded_retention = Some(7 * 24 * HOUR);
    config
}

/// Rules are set, listed and cleared through the client; a state that is not final, a retention
/// under a second and a bad queue name are typed errors that store nothing.
pub async fn retention_rules_are_set_listed_and_cleared<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    let hot = client
        .retention_set("hot", JobState::Completed, Some(HOUR))
        .await
        .unwrap();
    assert_eq!(
        (hot.queue.as_str(), hot.state, hot.keep),
        ("hot", JobState::Completed, Some(HOUR))
    );
    let every = client
        .retention_set("*", JobState::Discarded, None)
        .await
        .unwrap();
    assert!(every.is_for_every_queue());
    assert_eq!(every.keep, None, "kept forever");
    // Setting again replaces the rule.
    client
        .retention_set("hot", JobState::Completed, Some(2 * HOUR))
        .await
        .unwrap();

    for (queue, state, keep) in [
        ("hot", JobState::Available, Some(HOUR)),
        ("hot", JobState::Completed, Some(Duration::from_millis(500))),
        ("hot", JobState::Completed, Some(Duration::ZERO)),
    ] {
        let err = client.retention_set(queue, state, keep).await.unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    }
    for queue in ["bad queue", "", "é"] {
        let err = client
            .retention_set(queue, JobState::Completed, Some(HOUR))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidName { .. }),
            "{queue:?}: {err:?}"
        );
    }
    let err = client
        .retention_clear("hot", JobState::Running)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");

    let rules = client.retention_rules().await.unwrap();
    let listed: Vec<(String, JobState, Option<Duration>)> = rules
        .iter()
        .map(|r| (r.queue.clone(), r.state, r.keep))
        .collect();
    assert_eq!(
        listed,
        [
            ("*".to_owned(), JobState::Discarded, None),
            ("hot".to_owned(), JobState::Completed, Some(2 * HOUR)),
        ]
    );

    let cleared = client
        .retention_clear("hot", JobState::Completed)
        .await
        .unwrap();
    assert_eq!(cleared.map(|r| r.keep), Some(Some(2 * HOUR)));
    assert!(
        client
            .retention_clear("hot", JobState::Completed)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(client.retention_rules().await.unwrap().len(), 1);
}

/// A queue kept for less than the rest loses its history jobs ahead of the ring's truncation; a
/// queue kept longer keeps them, the ring widening its slots so that no truncation reaches them;
/// queues without a rule keep the clients' retention.
pub async fn queue_rules_delete_ahead_of_the_ring_and_hold_it_back<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    in_history(&ctx, "hot", "completed", 10, "3 hours").await;
    in_history(&ctx, "hot", "completed", 5, "10 minutes").await;
    in_history(&ctx, "default", "completed", 20, "30 hours").await;
    in_history(&ctx, "default", "completed", 7, "2 hours").await;
    in_history(&ctx, "audit", "completed", 15, "30 hours").await;
    in_history(&ctx, "hot", "cancelled", 4, "3 hours").await;
    client
        .retention_set("hot", JobState::Completed, Some(HOUR))
        .await
        .unwrap();
    client
        .retention_set("audit", JobState::Completed, Some(30 * 24 * HOUR))
        .await
        .unwrap();
    let cleaner = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), day_config()).unwrap();
    let result = cleaner.run_once().await.unwrap();
    assert_eq!(result.num_done_deleted, 30, "{result:?}");
    assert_eq!(
        kept(&ctx, "completed").await,
        expect(&[("audit@done", 15), ("default@done", 7), ("hot@done", 5)])
    );
    assert_eq!(
        kept(&ctx, "cancelled").await,
        expect(&[("hot@done", 4)]),
        "the rule is for completed jobs only"
    );
    let width: i32 = ctx
        .conn()
        .await
        .query_scalar(&ctx.stmt("SELECT done_slot_seconds FROM {schema}.pgmill_storage"))
        .await
        .unwrap();
    assert_eq!(
        width,
        (30 * 24 * 3600_u32).div_ceil(13) as i32,
        "the ring widened"
    );

    // Without the long rule the ring narrows back and truncates by the day again.
    client
        .retention_clear("audit", JobState::Completed)
        .await
        .unwrap();
    cleaner.run_once().await.unwrap();
    assert_eq!(
        kept(&ctx, "completed").await,
        expect(&[("default@done", 7), ("hot@done", 5)])
    );
}

/// The rule for every queue replaces the clients' configuration, and a queue's own rule wins over
/// it, also to keep its jobs forever.
pub async fn the_rule_for_every_queue_replaces_the_configuration<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    in_history(&ctx, "default", "completed", 6, "5 hours").await;
    in_history(&ctx, "default", "completed", 3, "5 minutes").await;
    in_history(&ctx, "keep", "completed", 8, "5 hours").await;
    in_history(&ctx, "default", "cancelled", 2, "30 hours").await;
    client
        .retention_set("*", JobState::Completed, Some(HOUR))
        .await
        .unwrap();
    client
        .retention_set("keep", JobState::Completed, None)
        .await
        .unwrap();
    client
        .retention_set("*", JobState::Cancelled, None)
        .await
        .unwrap();
    let cleaner = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), day_config()).unwrap();
    cleaner.run_once().await.unwrap();
    assert_eq!(
        kept(&ctx, "completed").await,
        expect(&[("default@done", 3), ("keep@done", 8)])
    );
    assert_eq!(
        kept(&ctx, "cancelled").await,
        expect(&[("default@done", 2)]),
        "kept forever by the rule, whatever the configuration says"
    );
}

/// Dead letters follow their queue's rule for discarded jobs, counted from when they died; the
/// rest keep the rule for every queue or the configuration.
pub async fn dead_letters_follow_their_queue_s_rule<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    in_dead_letters(&ctx, "noisy", 12, "3 hours").await;
    in_dead_letters(&ctx, "noisy", 2, "10 minutes").await;
    in_dead_letters(&ctx, "default", 5, "3 hours").await;
    in_dead_letters(&ctx, "default", 4, "10 days").await;
    client
        .retention_set("noisy", JobState::Discarded, Some(HOUR))
        .await
        .unwrap();
    let cleaner = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), day_config()).unwrap();
    let result = cleaner.run_once().await.unwrap();
    assert_eq!(result.num_dead_deleted, 16, "{result:?}");
    assert_eq!(
        kept(&ctx, "discarded").await,
        expect(&[("default@dead", 5), ("noisy@dead", 2)])
    );
    // A month for every queue: the ten-day-old ones would have gone by the week's configuration.
    in_dead_letters(&ctx, "default", 3, "10 days").await;
    client
        .retention_set("*", JobState::Discarded, Some(30 * 24 * HOUR))
        .await
        .unwrap();
    cleaner.run_once().await.unwrap();
    assert_eq!(
        kept(&ctx, "discarded").await,
        expect(&[("default@dead", 8), ("noisy@dead", 2)])
    );
}

/// Finished jobs still in the job table (a unique key kept taken holds them there) follow the
/// same rules.
pub async fn finished_jobs_in_the_job_table_follow_the_rules<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx).build().unwrap();
    for queue in ["hot", "default"] {
        ctx.conn()
            .await
            .execute(
                &ctx.stmt(
                    "INSERT INTO {schema}.pgmill_job (queue, kind, state, finalized_at) \
                     SELECT $1::text, 'task', 'completed', now() - interval '3 hours' \
                     FROM generate_series(1, 3)",
                )
                .bind(queue),
            )
            .await
            .unwrap();
    }
    client
        .retention_set("hot", JobState::Completed, Some(HOUR))
        .await
        .unwrap();
    let cleaner = JobCleaner::new(ctx.driver.clone(), ctx.schema.clone(), day_config()).unwrap();
    let result = cleaner.run_once().await.unwrap();
    assert_eq!(result.num_jobs_deleted, 3, "{result:?}");
    assert_eq!(kept(&ctx, "completed").await, expect(&[("default@job", 3)]));
}

/// A running client's leader applies a rule set while it runs, without a restart.
pub async fn a_running_leader_applies_a_new_rule<H: Harness>() {
    let ctx = ctx::<H>().await;
    in_history(&ctx, "hot", "completed", 9, "3 hours").await;
    let mut config = day_config();
    config.interval = Duration::from_millis(200);
    // A client without queues is insert-only and never leads: this one works the default queue.
    let client = test_client(&ctx)
        .queue("default", 1)
        .worker(ScriptedWorker::ok())
        .cleaner(config)
        .build()
        .unwrap();
    client.start().await.unwrap();
    let admin = test_client(&ctx).build().unwrap();
    admin
        .retention_set("hot", JobState::Completed, Some(HOUR))
        .await
        .unwrap();
    wait_for("the rule applied", async || {
        kept(&ctx, "completed").await.is_empty()
    })
    .await;
    client.stop().await;
}
