//! Several applications on one schema: each client claims only the kinds it has workers for, so
//! two services sharing a database, a schema and even a queue name never attempt, retry, discard
//! or rescue each other's jobs as unknown; a job whose kind no live client knows waits, reported.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use pgmill::driver::{Driver, Executor};
use pgmill::maintenance::JobRescuerConfig;
use pgmill::{Client, Inserter, Job, JobArgs, JobError, JobState, Worker};
use serde::{Deserialize, Serialize};

use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext, migrated as ctx};

/// The other application's job.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Mail {
    n: i64,
}

impl JobArgs for Mail {
    const KIND: &'static str = "mail";
}

/// The other application's worker: counts what it runs.
#[derive(Debug, Clone, Default)]
struct MailWorker {
    runs: Arc<AtomicU32>,
}

impl Worker<Mail> for MailWorker {
    async fn work(&self, _job: &Job<Mail>) -> Result<(), JobError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A job of a kind neither application has a worker for.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Legacy {
    n: i64,
}

impl JobArgs for Legacy {
    const KIND: &'static str = "legacy";
}

/// The application that runs `mail` jobs, on the `default` queue too.
fn mail_app<D: Driver>(ctx: &TestContext<D>, worker: &MailWorker) -> Client<D> {
    test_client(ctx)
        .queue("default", 4)
        .worker(worker.clone())
        .build()
        .unwrap()
}

/// Attempts and attempted_by of every job of `kind`, wherever it is.
async fn attempts<D: Driver>(ctx: &TestContext<D>, kind: &str) -> Vec<(i16, Vec<String>, i64)> {
    let rows = ctx
        .conn()
        .await
        .query(
            &ctx.stmt(
                "SELECT attempt, attempted_by, cardinality(errors)::bigint AS num_errors \
                 FROM {schema}.pgmill_job_all WHERE kind = $1::text ORDER BY id",
            )
            .bind(kind),
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get("attempt").unwrap(),
                r.get("attempted_by").unwrap(),
                r.get("num_errors").unwrap(),
            )
        })
        .collect()
}

/// Two applications share the schema and the queue name `default`, each with workers for its
/// own kinds: every job runs once, in the application that knows its kind, with no attempt
/// spent and no error recorded elsewhere; each client advertises its kinds. A job of a kind
/// neither knows is never attempted and is reported until a client that knows it starts; a
/// stopped application's jobs are reported the same way.
pub async fn two_applications_share_a_queue_each_running_its_own_kinds<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tasks = test_client(&ctx)
        .queue("default", 4)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    let mail_worker = MailWorker::default();
    let mails = mail_app(&ctx, &mail_worker);
    let inserter = Inserter::new(ctx.schema.clone());
    let mut conn = ctx.conn().await;
    // Interleaved, so each application's claims meet the other's jobs at the head of the queue.
    for n in 0..30 {
        inserter.insert(&mut conn, Task { n }).await.unwrap();
        inserter.insert(&mut conn, Mail { n }).await.unwrap();
    }
    for n in 0..3 {
        inserter.insert(&mut conn, Legacy { n }).await.unwrap();
    }
    tasks.start().await.unwrap();
    mails.start().await.unwrap();
    wait_for("both applications ran their jobs", async || {
        count_in(&ctx, JobState::Completed).await == 60
    })
    .await;
    for (kind, runner) in [("task", tasks.id()), ("mail", mails.id())] {
        let seen = attempts(&ctx, kind).await;
        assert_eq!(seen.len(), 30);
        for (attempt, by, num_errors) in seen {
            assert_eq!(
                (attempt, by, num_errors),
                (1, vec![runner.to_owned()], 0),
                "{kind}"
            );
        }
    }
    assert_eq!(mail_worker.runs.load(Ordering::SeqCst), 30);

    // Each client says which kinds it runs.
    let listed = tasks.client_list().await.unwrap();
    let kinds_of = |id: &str| {
        listed
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.kinds.clone())
            .unwrap()
    };
    assert_eq!(kinds_of(tasks.id()), ["task"]);
    assert_eq!(kinds_of(mails.id()), ["mail"]);

    // The legacy jobs wait, never attempted, reported by queue and kind.
    wait_for("the legacy jobs are reported", async || {
        let unknown = tasks.queue_unknown_kinds().await.unwrap();
        unknown.len() == 1 && unknown[0].kind == "legacy" && unknown[0].num_jobs == 3
    })
    .await;
    // More work after them still runs: the claims pass over the legacy jobs every time.
    inserter.insert(&mut conn, Task { n: 100 }).await.unwrap();
    wait_for("the later job ran", async || {
        count_in(&ctx, JobState::Completed).await == 61
    })
    .await;
    let legacy = attempts(&ctx, "legacy").await;
    assert_eq!(
        legacy,
        vec![(0, Vec::<String>::new(), 0); 3],
        "never attempted"
    );
    assert_eq!(count_in(&ctx, JobState::Available).await, 3);

    // The mail application stops: its queued jobs are reported too, and run once it is back.
    mails.stop().await;
    inserter.insert(&mut conn, Mail { n: 200 }).await.unwrap();
    wait_for("the stopped application's job is reported", async || {
        let unknown = tasks.queue_unknown_kinds().await.unwrap();
        unknown.iter().any(|u| u.kind == "mail" && u.num_jobs == 1)
    })
    .await;
    let again = MailWorker::default();
    let mails = mail_app(&ctx, &again);
    mails.start().await.unwrap();
    wait_for("the mail job ran after the restart", async || {
        count_in(&ctx, JobState::Completed).await == 62
    })
    .await;
    wait_for("only the legacy jobs are left reported", async || {
        let unknown = tasks.queue_unknown_kinds().await.unwrap();
        unknown.len() == 1 && unknown[0].kind == "legacy"
    })
    .await;
    mails.stop().await;
    tasks.stop().await;
}

/// The leader's maintenance is the same whoever holds it: a leader with no worker for `mail`
/// rescues a dead client's `mail` job back into its queue (not discarded, not retried as
/// unknown), and the mail application runs it.
pub async fn a_leader_rescues_the_other_application_s_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    let inserter = Inserter::new(ctx.schema.clone());
    let job = inserter
        .insert(&mut ctx.conn().await, Mail { n: 1 })
        .await
        .unwrap();
    ctx.script(&ctx.schema.render(&format!(
        "INSERT INTO {{schema}}.pgmill_client (id, hostname, pid, heartbeat_at) \
         VALUES ('dead', 'h', 1, now() - interval '1 hour');\
         UPDATE {{schema}}.pgmill_job SET state = 'running', attempt = 1, \
         attempted_at = now() - interval '1 minute', claim_token = 7, \
         attempted_by = '{{dead}}' WHERE id = {id};",
        id = job.id.0
    )))
    .await;
    let mut rescuer = JobRescuerConfig::default();
    rescuer.interval = Duration::from_millis(200);
    rescuer.client_timeout = Duration::from_secs(1);
    let leader = test_client(&ctx)
        .queue("default", 2)
        .worker(ScriptedWorker::ok())
        .heartbeat_interval(Duration::from_millis(200))
        .rescuer(rescuer)
        .build()
        .unwrap();
    leader.start().await.unwrap();
    wait_for("the leader leads", async || leader.is_leader()).await;
    wait_for("the mail job is rescued", async || {
        count_in(&ctx, JobState::Running).await == 0
    })
    .await;
    let rescued = leader.job_get(job.id).await.unwrap().unwrap();
    assert!(
        matches!(rescued.state, JobState::Available | JobState::Retryable),
        "{rescued:?}"
    );
    assert_eq!(rescued.attempt, 1, "the leader did not attempt it");
    let mail_worker = MailWorker::default();
    let mails = mail_app(&ctx, &mail_worker);
    mails.start().await.unwrap();
    wait_for("the mail application ran it", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    let done = leader.job_get(job.id).await.unwrap().unwrap();
    assert_eq!(done.attempt, 2);
    assert_eq!(
        done.attempted_by,
        vec!["dead".to_owned(), mails.id().to_owned()]
    );
    mails.stop().await;
    leader.stop().await;
}
