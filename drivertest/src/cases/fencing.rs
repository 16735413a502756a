//! Fencing: an outcome lands only on the claim it belongs to, even when the attempt number was
//! given back and claimed again.

use std::sync::Arc;
use std::time::Duration;

use pgmill::driver::{Driver, Executor, Transaction};
use pgmill::middleware::MetricsConfig;
use pgmill::{Client, JobError, JobId, JobRow, JobState};
use tokio::sync::Notify;

use crate::metrics_probe::MetricsProbe;
use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext, migrated};

/// A worker that holds every attempt until `gate` is notified, then ends it with `result`.
fn held_worker(gate: &Arc<Notify>, result: fn() -> Result<(), JobError>) -> ScriptedWorker {
    let gate = Arc::clone(gate);
    ScriptedWorker::new(move |_| {
        let gate = Arc::clone(&gate);
        async move {
            gate.notified().await;
            result()
        }
    })
}

/// A client of one slot and no buffer: while its one job is held it claims nothing else.
fn client_with<D: Driver>(ctx: &TestContext<D>, worker: ScriptedWorker) -> Client<D> {
    builder(ctx, worker).build().unwrap()
}

fn builder<D: Driver>(ctx: &TestContext<D>, worker: ScriptedWorker) -> pgmill::ClientBuilder<D> {
    test_client(ctx)
        .queue("default", 1)
        .prefetch(0)
        .heartbeat_interval(Duration::from_millis(100))
        .job_timeout(None)
        .worker(worker)
}

/// A started client, registered, running one job it holds until `gate` is notified (then it
/// completes).
async fn running_one_held_job<D: Driver>(
    ctx: &TestContext<D>,
    gate: &Arc<Notify>,
) -> (Client<D>, JobId) {
    let a = client_with(ctx, held_worker(gate, || Ok(())));
    let job_id = a.insert(Task { n: 1 }).await.unwrap().id;
    a.start().await.unwrap();
    wait_for("A runs attempt 1", async || {
        job(&a, job_id).await.state == JobState::Running
    })
    .await;
    wait_for("A registered", async || {
        ctx.count("pgmill_client").await == 1
    })
    .await;
    (a, job_id)
}

async fn job<D: Driver>(client: &Client<D>, id: JobId) -> JobRow {
    client.job_get(id).await.unwrap().expect("the job exists")
}

/// Holds a claim's outcome, releases the job with its attempt given back (what the heartbeat's
/// orphan release and a failover that lost the claim both do), lets a second client claim it
/// again under the same attempt number, then delivers the held outcome: it changes nothing and is
/// counted as superseded, and the second claim's own outcome is the one recorded.
pub async fn late_outcome_after_the_attempt_was_given_back_and_claimed_again_is_dropped<
    H: Harness,
>() {
    let ctx = migrated::<H>().await;
    let (gate_a, gate_b) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let probe = MetricsProbe::new();
    let a = builder(
        &ctx,
        held_worker(&gate_a, || {
            Err(JobError::retry("late failure of a released claim"))
        }),
    )
    .metrics(MetricsConfig::new().recorder(probe.recorder()))
    .build()
    .unwrap();
    let job_id = a.insert(Task { n: 1 }).await.unwrap().id;
    a.start().await.unwrap();
    wait_for("A runs attempt 1", async || {
        let j = job(&a, job_id).await;
        j.state == JobState::Running && j.attempted_by.last().map(String::as_str) == Some(a.id())
    })
    .await;
    wait_for("A registered", async || {
        ctx.count("pgmill_client").await == 1
    })
    .await;

    // The release: available again, the attempt given back.
    let released = ctx
        .conn()
        .await
        .execute(
            &ctx.stmt(
                "UPDATE {schema}.pgmill_job SET state = 'available', attempt = attempt - 1 \
                 WHERE id = $1::bigint AND state = 'running'",
            )
            .bind(job_id.0),
        )
        .await
        .unwrap();
    assert_eq!(released, 1);

    let b = client_with(&ctx, held_worker(&gate_b, || Ok(())));
    b.start().await.unwrap();
    wait_for("B runs attempt 1 again", async || {
        let j = job(&b, job_id).await;
        j.state == JobState::Running && j.attempted_by.last().map(String::as_str) == Some(b.id())
    })
    .await;
    assert_eq!(
        job(&b, job_id).await.attempt,
        1,
        "the attempt number was reused"
    );

    gate_a.notify_one();
    wait_for("A's held outcome delivered", async || {
        let s = a.stats();
        s.recorded_outcomes + s.superseded_results == 1
    })
    .await;
    assert_eq!(
        a.stats().superseded_results,
        1,
        "the released claim's outcome was dropped and counted"
    );
    assert_eq!(
        probe.counter("pgmill_completer_superseded_total", &[]),
        Some(1),
        "the fence drop reached the metrics"
    );
    let during = job(&b, job_id).await;
    assert_eq!(
        (during.state, during.attempt, during.errors.len()),
        (JobState::Running, 1, 0),
        "B's claim is untouched: {during:?}"
    );

    gate_b.notify_one();
    wait_for("B's outcome recorded", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    a.stop().await;
    b.stop().await;
    let after = job(&a, job_id).await;
    assert_eq!((after.attempt, after.errors.len()), (1, 0), "{after:?}");
    assert_eq!(after.claim_token, None, "a finished job carries no claim");
    assert_eq!(
        (b.stats().recorded_outcomes, b.stats().superseded_results),
        (1, 0)
    );
}

/// A job's `n` and the fencing token of the claim a run belonged to.
type RunClaim = (i64, Option<i64>);

/// A job this client claims again while its earlier claim's outcome is still held, with another
/// job of the new claim: the held outcome and the new claim's other outcome reach the completer in
/// one batch, whose ids (both jobs) and tokens (both claims) would also match the job under its
/// new claim if the completion matched them as two sets rather than as pairs. The held outcome is
/// dropped and counted, the job keeps running under its new claim, and that claim's own outcome
/// is the one recorded.
pub async fn late_outcome_beside_its_jobs_new_claim_in_one_batch_is_dropped<H: Harness>() {
    let ctx = migrated::<H>().await;
    let (first_gate, second_gate, other_gate) = (
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
        Arc::new(Notify::new()),
    );
    // Each run's job (`n`) and claim token, in start order.
    let tokens: Arc<std::sync::Mutex<Vec<RunClaim>>> = Arc::default();
    let worker = {
        let (first_gate, second_gate, other_gate) = (
            Arc::clone(&first_gate),
            Arc::clone(&second_gate),
            Arc::clone(&other_gate),
        );
        let tokens = Arc::clone(&tokens);
        ScriptedWorker::new(move |run| {
            let runs_of_job = {
                let mut t = tokens.lock().unwrap();
                t.push((run.n, run.claim_token));
                t.iter().filter(|(n, _)| *n == run.n).count()
            };
            let gate = match (run.n, runs_of_job) {
                (1, 1) => Arc::clone(&first_gate),
                (1, _) => Arc::clone(&second_gate),
                _ => Arc::clone(&other_gate),
            };
            async move {
                gate.notified().await;
                Ok(())
            }
        })
    };
    // Outcomes linger long enough in the completer for two released together to share a batch.
    let mut completer = pgmill::CompleterConfig::default();
    completer.linger = Duration::from_millis(300);
    let a = test_client(&ctx)
        .queue("default", 3)
        .heartbeat_interval(Duration::from_millis(100))
        .job_timeout(None)
        .completer(completer)
        .worker(worker)
        .build()
        .unwrap();
    let job_id = a.insert(Task { n: 1 }).await.unwrap().id;
    a.start().await.unwrap();
    wait_for("A runs attempt 1", async || {
        tokens.lock().unwrap().len() == 1
    })
    .await;

    // The release (available again, the attempt given back, due now) and another job, in one
    // transaction: A's next claim takes both, whether it starts after the position of its last
    // claim (X's old one) or from the first job.
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.unwrap();
    let released = tx
        .execute(
            &ctx.stmt(
                "UPDATE {schema}.pgmill_job SET state = 'available', attempt = attempt - 1, \
                 scheduled_at = now() WHERE id = $1::bigint AND state = 'running'",
            )
            .bind(job_id.0),
        )
        .await
        .unwrap();
    assert_eq!(released, 1);
    a.inserter().insert(&mut tx, Task { n: 2 }).await.unwrap();
    tx.commit().await.unwrap();
    drop(conn);
    wait_for("A runs the job again and the other job", async || {
        tokens.lock().unwrap().len() == 3
    })
    .await;
    let runs = tokens.lock().unwrap().clone();
    let (first, again, other) = (
        runs[0].1,
        runs[1..].iter().find(|r| r.0 == 1),
        runs[1..].iter().find(|r| r.0 == 2),
    );
    let (again, other) = (again.expect("ran again").1, other.expect("other ran").1);
    assert_eq!(again, other, "one claim took both: {runs:?}");
    assert_ne!(first, again, "{runs:?}");

    // The held outcome and the other job's, together.
    first_gate.notify_one();
    other_gate.notify_one();
    wait_for("both outcomes delivered", async || {
        let s = a.stats();
        s.recorded_outcomes + s.superseded_results == 2
    })
    .await;
    assert_eq!(
        (a.stats().recorded_outcomes, a.stats().superseded_results),
        (1, 1),
        "the other job's outcome recorded, the held one dropped"
    );
    let during = job(&a, job_id).await;
    assert_eq!(
        (during.state, during.claim_token),
        (JobState::Running, again),
        "the job still runs under its new claim: {during:?}"
    );

    second_gate.notify_one();
    wait_for("the new claim's outcome recorded", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    a.stop().await;
    let after = job(&a, job_id).await;
    assert_eq!((after.attempt, after.claim_token), (1, None), "{after:?}");
}

/// A claim that a failover lost (the row fell back to available with the attempt before it, no
/// token, and the client row gone) is re-asserted by its client with its own attempt and token,
/// so its outcome is recorded when it comes.
pub async fn lost_claim_is_reasserted_with_its_token_and_its_outcome_lands<H: Harness>() {
    let ctx = migrated::<H>().await;
    let gate = Arc::new(Notify::new());
    let (a, job_id) = running_one_held_job(&ctx, &gate).await;
    let claimed = job(&a, job_id).await;
    let (token, claimed_at) = (claimed.claim_token, claimed.attempted_at);
    assert!(token.is_some(), "a claim carries a token");

    // What a failover to a replica that never received the claim leaves behind.
    ctx.script(&ctx.schema.render(&format!(
        "UPDATE {{schema}}.pgmill_job SET state = 'available', attempt = attempt - 1, \
         claim_token = NULL, attempted_at = NULL, \
         attempted_by = attempted_by[1:cardinality(attempted_by) - 1] WHERE id = {id};\
         DELETE FROM {{schema}}.pgmill_client;",
        id = job_id.0
    )))
    .await;
    wait_for("the claim reasserted", async || {
        let j = job(&a, job_id).await;
        j.state == JobState::Running
    })
    .await;
    let reasserted = job(&a, job_id).await;
    assert_eq!(
        (
            reasserted.attempt,
            reasserted.claim_token,
            reasserted.attempted_at
        ),
        (1, token, claimed_at),
        "{reasserted:?}"
    );
    assert_eq!(
        reasserted.attempted_by.last().map(String::as_str),
        Some(a.id())
    );

    gate.notify_one();
    wait_for("completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    a.stop().await;
    assert_eq!(
        (a.stats().recorded_outcomes, a.stats().superseded_results),
        (1, 0)
    );
}

/// A client that re-registers (as after a restart) re-asserts only claims the database lost: a
/// job whose claim ended on this database (released here with its attempt given back, so it looks
/// like the row before the claim) stays available, and another client runs it.
pub async fn claim_that_ended_on_this_database_is_not_reasserted<H: Harness>() {
    let ctx = migrated::<H>().await;
    let gate = Arc::new(Notify::new());
    let (a, job_id) = running_one_held_job(&ctx, &gate).await;
    ctx.script(&ctx.schema.render(&format!(
        "UPDATE {{schema}}.pgmill_job SET state = 'available', attempt = attempt - 1, \
         claim_token = NULL WHERE id = {id};\
         DELETE FROM {{schema}}.pgmill_client;",
        id = job_id.0
    )))
    .await;
    wait_for("A registered again", async || {
        ctx.count("pgmill_client").await == 1
    })
    .await;
    assert_eq!(job(&a, job_id).await.state, JobState::Available);
    another_client_runs_it_and_the_held_outcome_is_dropped(&ctx, a, &gate, job_id).await;
}

/// A second client B runs the available job `job_id`; then `a` delivers the outcome it held
/// (behind `gate`), which is dropped. B ran the job once, and its attempt is the one recorded.
async fn another_client_runs_it_and_the_held_outcome_is_dropped<D: Driver>(
    ctx: &TestContext<D>,
    a: Client<D>,
    gate: &Arc<Notify>,
    job_id: JobId,
) {
    let worker = ScriptedWorker::ok();
    let b = client_with(ctx, worker.clone());
    b.start().await.unwrap();
    wait_for("B completed it", async || {
        count_in(ctx, JobState::Completed).await == 1
    })
    .await;
    gate.notify_one();
    wait_for("A's outcome superseded", async || {
        a.stats().superseded_results == 1
    })
    .await;
    a.stop().await;
    b.stop().await;
    assert_eq!(worker.runs().get(&job_id), Some(&1), "B ran it once");
    let done = job(&a, job_id).await;
    assert_eq!(
        done.attempted_by.last().map(String::as_str),
        Some(b.id()),
        "{done:?}"
    );
}

/// A failover that lost a job's insert lets the new primary hand the job's id out again to a
/// later job. The client still running the lost job re-registers and re-asserts its claims, but
/// not onto the later job, which was created after it: that job stays available and runs, and
/// the lost job's outcome is dropped instead of completing a job that never ran.
pub async fn a_lost_jobs_id_handed_out_again_is_not_taken_over_by_its_claim<H: Harness>() {
    let ctx = migrated::<H>().await;
    let gate = Arc::new(Notify::new());
    let (a, job_id) = running_one_held_job(&ctx, &gate).await;
    // What a failover to a replica that never received the insert leaves behind, once the
    // application inserted another job and the new primary gave it the same id.
    ctx.script(&ctx.schema.render(&format!(
        "DELETE FROM {{schema}}.pgmill_job WHERE id = {id};\
         INSERT INTO {{schema}}.pgmill_job (id, kind, args) OVERRIDING SYSTEM VALUE \
         VALUES ({id}, 'task', '{{\"n\": 2}}');\
         DELETE FROM {{schema}}.pgmill_client;",
        id = job_id.0
    )))
    .await;
    wait_for("A registered again", async || {
        ctx.count("pgmill_client").await == 1
    })
    .await;
    let later = job(&a, job_id).await;
    assert_eq!(
        (later.state, later.attempt, later.claim_token),
        (JobState::Available, 0, None),
        "the lost job's claim was re-asserted onto the later job: {later:?}"
    );
    another_client_runs_it_and_the_held_outcome_is_dropped(&ctx, a, &gate, job_id).await;
}

/// A claim appends its client to `attempted_by`, which keeps the last ten: a short history grows
/// by one, a long one keeps its last nine entries and the claim's client.
pub async fn attempted_by_keeps_the_last_ten_clients<H: Harness>() {
    let ctx = migrated::<H>().await;
    let client = test_client(&ctx)
        .queue("default", 2)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    let long = client.insert(Task { n: 1 }).await.unwrap().id;
    let short = client.insert(Task { n: 2 }).await.unwrap().id;
    let history = |n: usize| (1..=n).map(|i| format!("c{i}")).collect::<Vec<_>>();
    ctx.script(&ctx.schema.render(&format!(
        "UPDATE {{schema}}.pgmill_job SET attempted_by = ARRAY['{long_history}'] WHERE id = {long};\
         UPDATE {{schema}}.pgmill_job SET attempted_by = ARRAY['{short_history}'] WHERE id = {short};",
        long_history = history(12).join("','"),
        short_history = history(2).join("','"),
        long = long.0,
        short = short.0,
    )))
    .await;
    client.start().await.unwrap();
    wait_for("both completed", async || {
        count_in(&ctx, JobState::Completed).await == 2
    })
    .await;
    client.stop().await;
    let me = client.id().to_owned();
    let mut expected_long = history(12).split_off(3);
    expected_long.push(me.clone());
    assert_eq!(job(&client, long).await.attempted_by, expected_long);
    let mut expected_short = history(2);
    expected_short.push(me);
    assert_eq!(job(&client, short).await.attempted_by, expected_short);
}

/// Every claim carries a token of its own (the jobs of one fetch share it), also two claims of one
/// job under one attempt number: jobs that ran, were interrupted by a hard stop (their attempt
/// given back) and ran again.
pub async fn every_claim_has_a_token_of_its_own<H: Harness>() {
    let ctx = migrated::<H>().await;
    let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recording = |forever: bool| {
        let tokens = Arc::clone(&tokens);
        ScriptedWorker::new(move |run| {
            tokens
                .lock()
                .unwrap()
                .push((run.id, run.attempt, run.claim_token));
            async move {
                if forever {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                Ok(())
            }
        })
    };
    let build = |worker| {
        test_client(&ctx)
            .queue("default", 4)
            .job_timeout(None)
            .worker(worker)
            .build()
            .unwrap()
    };
    let first = build(recording(true));
    for n in 0..4 {
        first.insert(Task { n }).await.unwrap();
    }
    first.start().await.unwrap();
    wait_for("four started", async || tokens.lock().unwrap().len() == 4).await;
    first.stop_and_cancel().await;
    let second = build(recording(false));
    second.start().await.unwrap();
    wait_for("four completed", async || {
        count_in(&ctx, JobState::Completed).await == 4
    })
    .await;
    second.stop().await;
    let runs = tokens.lock().unwrap().clone();
    assert_eq!(runs.len(), 8, "{runs:?}");
    assert!(runs.iter().all(|(_, attempt, _)| *attempt == 1), "{runs:?}");
    // The jobs of one fetch share its token; a job's two claims never do.
    let distinct: std::collections::HashSet<(JobId, i64)> = runs
        .iter()
        .map(|(id, _, t)| (*id, t.expect("a token")))
        .collect();
    assert_eq!(distinct.len(), 8, "a job's claims share a token: {runs:?}");
}

/// Upgrading a schema from version 1 under running jobs: jobs a version 1 client claimed carry no
/// token, a version 2 client's outcome cannot land on them even under the same attempt number, and
/// the rescuer still recovers them once their client is dead.
pub async fn version_1_claims_survive_the_upgrade_and_are_fenced_from_version_2_outcomes<
    H: Harness,
>() {
    use pgmill::maintenance::{JobRescuer, JobRescuerConfig};

    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let migrator = pgmill::Migrator::new(ctx.schema.clone());
    migrator.up(&mut ctx.conn().await, Some(1)).await.unwrap();
    // A version 1 client's claim: running, attempt 1, no token; its client stopped heartbeating.
    ctx.script(&ctx.schema.render(
        "INSERT INTO {schema}.pgmill_client (id, hostname, pid, heartbeat_at) \
         VALUES ('v1-client', 'h', 1, now() - interval '1 hour');\
         INSERT INTO {schema}.pgmill_job (kind, args, state, attempt, attempted_at, attempted_by) \
         VALUES ('task', '{\"n\": 1}', 'running', 1, now(), '{v1-client}');",
    ))
    .await;
    migrator.up(&mut ctx.conn().await, None).await.unwrap();
    let client = client_with(&ctx, ScriptedWorker::ok());
    let v1_job = client
        .job_list(&pgmill::admin::JobListParams::new())
        .await
        .unwrap()
        .jobs
        .remove(0);
    assert_eq!(
        (v1_job.state, v1_job.attempt, v1_job.claim_token),
        (JobState::Running, 1, None)
    );

    // A version 2 outcome for attempt 1 of that job, from a claim that is not the running one.
    let mut conn = ctx.conn().await;
    let landed = conn
        .execute(
            &ctx.stmt(include_str!(
                "../../../core/sql/job/job_set_completed_many.sql"
            ))
            .bind(vec![v1_job.id.0])
            .bind(vec![12_345_i64]),
        )
        .await
        .unwrap();
    assert_eq!(landed, 0, "a version 2 outcome landed on a version 1 claim");

    let mut config = JobRescuerConfig::default();
    config.client_timeout = Duration::from_secs(1);
    let rescuer = JobRescuer::new(ctx.driver.clone(), ctx.schema.clone(), config).unwrap();
    assert_eq!(rescuer.run_once().await.unwrap().num_jobs_rescued, 1);
    client.start().await.unwrap();
    wait_for("the rescued job completed", async || {
        count_in(&ctx, JobState::Completed).await == 1
    })
    .await;
    client.stop().await;
    let done = job(&client, v1_job.id).await;
    assert_eq!((done.attempt, done.claim_token), (2, None));
}
