//! Notifications end to end: insert notifications wake idle producers, are sent only on commit,
//! are debounced, skip future jobs, survive losing the listener; poll-only mode still works.

use std::time::Duration;

use chrono::TimeDelta;
use pgmill::driver::{Driver, Executor, Listener, ListenerEvent, Statement, Transaction};
use pgmill::{InsertOpts, InsertParams, Inserter, JobState, ListenerState, UniqueOpts};

use crate::scripted::{
    ScriptedWorker, Task, count_in, tagged_driver, terminate_tagged, test_client, wait_for,
};
use crate::{Harness, TestContext, migrated as ctx};

/// Long enough that a job picked up sooner must have been picked up through a notification.
const LONG_POLL: Duration = Duration::from_secs(120);

/// Waits up to 30 s (far below [`LONG_POLL`]) for `n` completed jobs.
async fn completes_without_polling<D: Driver>(ctx: &TestContext<D>, n: i64) {
    let done = crate::testdb::eventually(Duration::from_secs(30), async || {
        count_in(ctx, JobState::Completed).await == n
    })
    .await;
    assert!(done, "the job was not picked up through a notification");
}

/// A started client working the default queue with `slots` ok workers, polling so rarely that
/// a job it picks up must have been announced; returned once it listens and its producer is
/// idle ([`listening_and_idle`]).
async fn never_polling_worker<H: Harness>(
    ctx: &TestContext<H::Driver>,
    slots: usize,
) -> pgmill::Client<H::Driver> {
    let client = test_client(ctx)
        .queue("default", slots)
        .poll_interval(LONG_POLL)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    log_fetches(ctx).await;
    client.start().await.unwrap();
    listening_and_idle(ctx, &client).await;
    client
}

/// Logs, in order, in the table `fetch_log` of the test's schema, each registration or refresh
/// of a queue row (`refresh`) and each claim (`claim`: an UPDATE of `pgmill_job` setting jobs
/// running, also when it finds none), for [`listening_and_idle`]. Call before the client starts.
async fn log_fetches<D: Driver>(ctx: &TestContext<D>) {
    ctx.script(&ctx.schema.render(
        "CREATE TABLE {schema}.fetch_log (seq bigserial PRIMARY KEY, what text NOT NULL);
         CREATE FUNCTION {schema}.log_fetch() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF TG_TABLE_NAME = 'pgmill_queue' THEN
             INSERT INTO {schema}.fetch_log (what) VALUES ('refresh');
           ELSIF current_query() LIKE '%SET state = ''running''%' THEN
             INSERT INTO {schema}.fetch_log (what) VALUES ('claim');
           END IF;
           RETURN NULL;
         END $$;
         CREATE TRIGGER log_refresh AFTER INSERT ON {schema}.pgmill_queue
           FOR EACH STATEMENT EXECUTE FUNCTION {schema}.log_fetch();
         CREATE TRIGGER log_claim AFTER UPDATE ON {schema}.pgmill_job
           FOR EACH STATEMENT EXECUTE FUNCTION {schema}.log_fetch();",
    ))
    .await;
}

/// Waits until `client` (working one queue, its fetches logged by [`log_fetches`]) listens and
/// its producer is idle, so that only a notification (or its poll) makes it fetch again.
///
/// The listener reports [`ListenerState::Listening`] once it listens, and then makes the
/// producer look again (anything sent before was missed): the producer refreshes its queue row
/// and claims. Its first refresh comes before its first claim; so the claim after its second
/// refresh is its last until something wakes it. A job inserted before that claim would be
/// picked up without a notification.
async fn listening_and_idle<D: Driver>(ctx: &TestContext<D>, client: &pgmill::Client<D>) {
    wait_for("the listener listening", async || {
        client.health().await.listener == ListenerState::Listening
    })
    .await;
    let settled = ctx.stmt(
        "SELECT EXISTS (SELECT 1 FROM {schema}.fetch_log AS c WHERE c.what = 'claim' \
           AND c.seq > (SELECT r.seq FROM {schema}.fetch_log AS r WHERE r.what = 'refresh' \
                        ORDER BY r.seq OFFSET 1 LIMIT 1)) AS settled",
    );
    wait_for(
        "the producer's fetch after the listener opened",
        async || ctx.conn().await.query_scalar(&settled).await.unwrap(),
    )
    .await;
}

/// A job committed by another process wakes an idle, listening producer (no poll needed).
pub async fn insert_notification_wakes_an_idle_producer<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = never_polling_worker::<H>(&ctx, 2).await;
    // The producer idle and the listener listening: insert from "elsewhere".
    let elsewhere = Inserter::new(ctx.schema.clone());
    elsewhere
        .insert(&mut ctx.conn().await, Task { n: 1 })
        .await
        .unwrap();
    completes_without_polling(&ctx, 1).await;
    client.stop().await;
}

async fn insert_listener<H: Harness>(
    ctx: &TestContext<H::Driver>,
) -> <H::Driver as Driver>::Listener {
    let mut l = ctx.driver.listener().await.expect("listener");
    l.listen(&ctx.schema.channel("pgmill_insert"))
        .await
        .unwrap();
    l.listen(&ctx.schema.channel("marker")).await.unwrap();
    l
}

/// Waits (up to 20 s) for the listener's next event, which must be an insert notification for
/// the default queue.
async fn expect_default_queue_notification<H: Harness>(l: &mut <H::Driver as Driver>::Listener) {
    let event = tokio::time::timeout(Duration::from_secs(20), l.next_event())
        .await
        .expect("an insert notification")
        .expect("listener event");
    assert!(
        matches!(event, ListenerEvent::Notification(ref n) if n.payload == "default"),
        "{event:?}"
    );
}

/// Collects insert-channel payloads until the marker notification arrives.
async fn insert_payloads_until_marker<H: Harness>(
    ctx: &TestContext<H::Driver>,
    l: &mut <H::Driver as Driver>::Listener,
) -> Vec<String> {
    ctx.conn()
        .await
        .execute(
            &Statement::new("SELECT pg_notify($1::text, 'end')").bind(ctx.schema.channel("marker")),
        )
        .await
        .unwrap();
    let mut payloads = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), l.next_event())
            .await
            .expect("marker arrives")
            .expect("listener event");
        if let ListenerEvent::Notification(n) = event {
            if n.channel == ctx.schema.channel("marker") {
                return payloads;
            }
            payloads.push(n.payload);
        }
    }
}

/// An insert rolled back in the application's transaction sends no notification.
pub async fn rolled_back_insert_sends_no_notification<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut l = insert_listener::<H>(&ctx).await;
    let inserter = Inserter::new(ctx.schema.clone());
    let job = InsertParams::from_args(&Task { n: 1 }, None).unwrap();
    H::host_insert(&ctx.url, &inserter, vec![job.clone()], false)
        .await
        .unwrap();
    assert!(
        insert_payloads_until_marker::<H>(&ctx, &mut l)
            .await
            .is_empty()
    );
    // The same insert committed notifies (a fresh inserter: the first one's cooldown was used).
    let inserter = Inserter::new(ctx.schema.clone());
    H::host_insert(&ctx.url, &inserter, vec![job], true)
        .await
        .unwrap();
    assert_eq!(
        insert_payloads_until_marker::<H>(&ctx, &mut l).await,
        ["default"]
    );
}

/// One transaction inserting 10,000 jobs into three queues sends one notification per queue.
pub async fn ten_thousand_inserts_in_three_queues_send_three_notifications<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut l = insert_listener::<H>(&ctx).await;
    let inserter = Inserter::new(ctx.schema.clone());
    let jobs: Vec<_> = (0..10_000)
        .map(|n| {
            let queue = ["a", "b", "c"][(n % 3) as usize];
            InsertParams::from_args(&Task { n }, Some(InsertOpts::new().queue(queue))).unwrap()
        })
        .collect();
    H::host_insert(&ctx.url, &inserter, jobs, true)
        .await
        .unwrap();
    let mut payloads = insert_payloads_until_marker::<H>(&ctx, &mut l).await;
    payloads.sort();
    assert_eq!(payloads, ["a", "b", "c"]);
}

/// Inserts within the cooldown are announced by fewer notifications than inserts (the commit
/// watcher's coalesce); scheduled and pending jobs send none.
pub async fn notifications_are_debounced_and_skip_future_jobs<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut l = insert_listener::<H>(&ctx).await;
    let inserter = Inserter::new(ctx.schema.clone())
        .with_notify_cooldown(Some(Duration::from_secs(3600)))
        .with_commit_watch(ctx.driver.clone());
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.unwrap();
    for n in 0..20 {
        inserter.insert(&mut tx, Task { n }).await.unwrap();
    }
    tx.commit().await.unwrap();
    let later = InsertOpts::new()
        .queue("later")
        .schedule_in(TimeDelta::hours(1));
    inserter
        .insert_with(&mut conn, Task { n: 0 }, later)
        .await
        .unwrap();
    let held = InsertOpts::new().queue("held").pending();
    inserter
        .insert_with(&mut conn, Task { n: 0 }, held)
        .await
        .unwrap();
    // The transaction's own notification, and at most one from the commit watcher for the 19
    // jobs the cooldown held back (it may arrive after the marker).
    let payloads = insert_payloads_until_marker::<H>(&ctx, &mut l).await;
    assert!(
        (1..=2).contains(&payloads.len()) && payloads.iter().all(|p| p == "default"),
        "{payloads:?}"
    );
}

/// When the client's listener connection is killed, work continues, and once the listener is back
/// new jobs are again picked up through notifications.
pub async fn losing_the_listener_mid_run_recovers<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("{}_client", ctx.schema.name());
    let driver = tagged_driver::<H>(&ctx, &tag).await;
    let worker = ScriptedWorker::ok();
    let client = pgmill::Client::builder(driver)
        .schema(ctx.schema.clone())
        .queue("default", 4)
        .poll_interval(LONG_POLL)
        .worker(worker.clone())
        .build()
        .unwrap();
    log_fetches(&ctx).await;
    client.start().await.unwrap();
    let elsewhere = Inserter::new(ctx.schema.clone()).with_notify_cooldown(None);
    listening_and_idle(&ctx, &client).await;
    let notify_now = Inserter::new(ctx.schema.clone());
    notify_now
        .insert(&mut ctx.conn().await, Task { n: 1 })
        .await
        .unwrap();
    completes_without_polling(&ctx, 1).await;

    // A job inserted without a notification waits for the next poll...
    elsewhere
        .insert(&mut ctx.conn().await, Task { n: 2 })
        .await
        .unwrap();
    // ...until the listener is lost: its reconnect makes every producer fetch at once.
    assert!(
        terminate_tagged(&ctx, &tag).await >= 1,
        "the client's backends were found"
    );
    completes_without_polling(&ctx, 2).await;
    // After the reconnect, notifications work again.
    let notify_again = Inserter::new(ctx.schema.clone());
    notify_again
        .insert(&mut ctx.conn().await, Task { n: 3 })
        .await
        .unwrap();
    completes_without_polling(&ctx, 3).await;
    client.stop().await;
    assert_eq!(worker.total_runs(), 3);
}

/// In poll-only mode everything works, picked up within the poll interval.
pub async fn poll_only_mode_works_by_polling<H: Harness>() {
    let ctx = ctx::<H>().await;
    let worker = ScriptedWorker::ok();
    let client = test_client(&ctx)
        .queue("default", 2)
        .poll_only(true)
        .worker(worker.clone())
        .build()
        .unwrap();
    assert!(client.poll_only());
    client.start().await.unwrap();
    let elsewhere = Inserter::new(ctx.schema.clone());
    for n in 0..5 {
        elsewhere
            .insert(&mut ctx.conn().await, Task { n })
            .await
            .unwrap();
    }
    wait_for("polled jobs completed", async || {
        count_in(&ctx, JobState::Completed).await == 5
    })
    .await;
    client.stop().await;
    assert_eq!(worker.total_runs(), 5);
}

/// Inserts the client commits itself are announced right after their commit (within a few
/// milliseconds of the previous announcement), not debounced by the in-transaction cooldown: at a
/// moderate rate every one of them wakes idle workers.
pub async fn client_committed_inserts_are_each_announced<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut l = insert_listener::<H>(&ctx).await;
    let client = test_client(&ctx).build().unwrap();
    for n in 0..3 {
        client.insert(Task { n }).await.unwrap();
        // Wait for this insert's notification before the next insert, so none coalesce.
        expect_default_queue_notification::<H>(&mut l).await;
    }
    let scheduled = InsertOpts::new().schedule_in(TimeDelta::hours(1));
    client.insert_with(Task { n: 9 }, scheduled).await.unwrap();
    assert!(
        insert_payloads_until_marker::<H>(&ctx, &mut l)
            .await
            .is_empty(),
        "none for scheduled jobs"
    );
}

/// A listener on the insert channel, a started worker client that never polls, listening and
/// idle, and an inserting client: the next insert comes after a quiet moment.
async fn quiet_start<H: Harness>(
    ctx: &TestContext<H::Driver>,
) -> (
    <H::Driver as Driver>::Listener,
    pgmill::Client<H::Driver>,
    pgmill::Client<H::Driver>,
) {
    let l = insert_listener::<H>(ctx).await;
    let worker_client = never_polling_worker::<H>(ctx, 2).await;
    (l, worker_client, test_client(ctx).build().unwrap())
}

/// Waits until `done` jobs completed without a poll and the default queue's notification
/// arrived, and checks that `inserter` sent no notification statement: `what` carried it.
async fn expect_carried<H: Harness>(
    ctx: &TestContext<H::Driver>,
    l: &mut <H::Driver as Driver>::Listener,
    inserter: &pgmill::Client<H::Driver>,
    done: i64,
    what: &str,
) {
    completes_without_polling(ctx, done).await;
    expect_default_queue_notification::<H>(l).await;
    assert_eq!(
        inserter.stats().notification_statements,
        0,
        "{what} carried its notification"
    );
}

/// A single insert after a quiet moment carries its notification in its own statement, so it
/// leaves with the commit: workers that never poll start the job, a listener hears of it, and the
/// inserting client sent no notification statement after the commit. A due job with metadata
/// (the general insert statement) carries it too; a scheduled job sends none; and a unique job
/// (whose statement cannot carry it) is announced after its commit, as before.
pub async fn a_quiet_insert_carries_its_own_notification<H: Harness>() {
    let ctx = ctx::<H>().await;
    let (mut l, worker_client, inserter) = quiet_start::<H>(&ctx).await;
    inserter.insert(Task { n: 1 }).await.unwrap();
    expect_carried::<H>(&ctx, &mut l, &inserter, 1, "the insert").await;
    // Past the interval: quiet again. A scheduled job is not due, so nothing announces it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let scheduled = InsertOpts::new().schedule_in(TimeDelta::hours(1));
    inserter
        .insert_with(Task { n: 2 }, scheduled)
        .await
        .unwrap();
    // A due job with metadata and tags takes the general insert statement, which carries it too.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let with_metadata = InsertOpts::new()
        .metadata(serde_json::json!({ "from": "test" }))
        .tags(["carried"]);
    inserter
        .insert_with(Task { n: 3 }, with_metadata)
        .await
        .unwrap();
    expect_carried::<H>(&ctx, &mut l, &inserter, 2, "the general insert").await;
    // A unique job's statement carries nothing: a statement after the commit announces it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let unique = InsertOpts::new().unique(UniqueOpts::new().by_args());
    inserter.insert_with(Task { n: 4 }, unique).await.unwrap();
    completes_without_polling(&ctx, 3).await;
    worker_client.stop().await;
    assert_eq!(inserter.stats().notification_statements, 1);
    assert_eq!(
        insert_payloads_until_marker::<H>(&ctx, &mut l).await,
        vec!["default".to_owned()],
        "one notification, for the unique job"
    );
}

/// A burst of inserts the client commits itself is announced in a few notifications (one at a
/// time, a few milliseconds apart, each for everything committed meanwhile), and every job of the
/// burst is still picked up through them, not by a poll.
pub async fn a_burst_of_client_committed_inserts_is_announced_in_few_notifications<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut l = insert_listener::<H>(&ctx).await;
    let worker_client = never_polling_worker::<H>(&ctx, 4).await;
    let inserter = test_client(&ctx).build().unwrap();
    let burst = 200;
    let started = std::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..4 {
        let inserter = inserter.clone();
        tasks.spawn(async move {
            for n in 0..burst / 4 {
                inserter.insert(Task { n: t * 1000 + n }).await.unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let took = started.elapsed();
    completes_without_polling(&ctx, burst).await;
    worker_client.stop().await;
    let notified = insert_payloads_until_marker::<H>(&ctx, &mut l).await.len();
    // At most one notification per 5 ms of the burst, plus the one right after it ended.
    let most = usize::try_from(took.as_millis() / 5).unwrap_or(usize::MAX) + 2;
    assert!(
        (1..=most).contains(&notified) && notified < 200,
        "{notified} notifications for {burst} inserts in {took:?}"
    );
}

/// A client whose in-transaction insert notifications have a cooldown far longer than any test,
/// polling so rarely that a job picked up must have been announced, once notifications are shown
/// to reach it.
async fn notified_client<H: Harness>(ctx: &TestContext<H::Driver>) -> pgmill::Client<H::Driver> {
    let client = test_client(ctx)
        .queue("default", 2)
        .poll_interval(LONG_POLL)
        .insert_notify_cooldown(Some(Duration::from_secs(3600)))
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    client.start().await.unwrap();
    // A job notified by another inserter shows the listener is up (and leaves this client's
    // cooldown unused).
    Inserter::new(ctx.schema.clone())
        .insert(&mut ctx.conn().await, Task { n: 0 })
        .await
        .unwrap();
    completes_without_polling(ctx, 1).await;
    client
}

fn due_job(n: i64) -> InsertParams {
    InsertParams::from_args(&Task { n }, None).unwrap()
}

/// An insert rolled back in the application's transaction does not use up the cooldown: a job
/// committed right after, within the cooldown, is still picked up through a notification.
pub async fn rolled_back_insert_leaves_the_next_commit_its_wake_up<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = notified_client::<H>(&ctx).await;
    H::host_insert(&ctx.url, client.inserter(), vec![due_job(1)], false)
        .await
        .unwrap();
    H::host_insert(&ctx.url, client.inserter(), vec![due_job(2)], true)
        .await
        .unwrap();
    completes_without_polling(&ctx, 2).await;
    client.stop().await;
}

/// Interleaved transactions: a job committed within the cooldown while the transaction that sent
/// the queue's notification is still open is picked up at once, not when that one ends.
pub async fn interleaved_transactions_each_get_a_wake_up<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = notified_client::<H>(&ctx).await;
    let mut conn = ctx.conn().await;
    let mut open = conn.begin().await.unwrap();
    client
        .inserter()
        .insert(&mut open, Task { n: 1 })
        .await
        .unwrap();
    H::host_insert(&ctx.url, client.inserter(), vec![due_job(2)], true)
        .await
        .unwrap();
    completes_without_polling(&ctx, 2).await;
    open.rollback().await.unwrap();
    client.stop().await;
}

/// A burst of inserts in application transactions, each within the cooldown of the notification
/// the first one sent, is announced by the commit watcher in a few looks (at least 20 ms apart,
/// each for every job committed meanwhile), and every job is still picked up without a poll.
pub async fn a_burst_of_held_back_inserts_is_announced_in_few_looks<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = notified_client::<H>(&ctx).await;
    let mut l = insert_listener::<H>(&ctx).await;
    let burst = 200;
    let started = std::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..4 {
        let (driver, inserter) = (ctx.driver.clone(), client.inserter().clone());
        tasks.spawn(async move {
            for n in 0..burst / 4 {
                let mut conn = driver.acquire().await.unwrap();
                let mut tx = conn.begin().await.unwrap();
                inserter
                    .insert(&mut tx, Task { n: t * 1000 + n })
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let took = started.elapsed();
    // The job notified_client inserted to show the listener up, and the burst.
    completes_without_polling(&ctx, burst + 1).await;
    client.stop().await;
    let notified = insert_payloads_until_marker::<H>(&ctx, &mut l).await.len();
    // At most one look per 20 ms of the burst and the looks right after it.
    let most = usize::try_from(took.as_millis() / 20).unwrap_or(usize::MAX) + 3;
    assert!(
        (1..=most).contains(&notified),
        "{notified} notifications for {burst} inserts in {took:?}"
    );
}

/// An executor that records the statements run through it and hands them to `inner`.
struct Recording<'a, E> {
    inner: &'a mut E,
    statements: usize,
}

impl<E: Executor> Executor for Recording<'_, E> {
    type Transaction<'t>
        = E::Transaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> pgmill::Result<u64> {
        self.statements += 1;
        self.inner.execute(stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> pgmill::Result<Vec<pgmill::driver::Row>> {
        self.statements += 1;
        self.inner.query(stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> pgmill::Result<()> {
        self.statements += 1;
        self.inner.execute_script(sql).await
    }

    async fn begin(&mut self) -> pgmill::Result<E::Transaction<'_>> {
        self.inner.begin().await
    }
}

/// A single insert in the application's transaction whose queue is to be notified carries the
/// notification in its own statement: one statement in the transaction, and idle workers still
/// start the job at its commit. A later insert within the cooldown sends no notification
/// statement either (the commit watcher announces it).
pub async fn an_application_transactions_single_insert_carries_its_notification<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = notified_client::<H>(&ctx).await;
    let mut l = insert_listener::<H>(&ctx).await;
    for n in [1, 2] {
        let mut conn = ctx.conn().await;
        let mut tx = conn.begin().await.unwrap();
        let mut recording = Recording {
            inner: &mut tx,
            statements: 0,
        };
        client
            .inserter()
            .insert(&mut recording, Task { n })
            .await
            .unwrap();
        assert_eq!(recording.statements, 1, "insert {n}: one statement");
        tx.commit().await.unwrap();
        // The job notified_client inserted, and these.
        completes_without_polling(&ctx, 1 + n).await;
    }
    client.stop().await;
    let notified = insert_payloads_until_marker::<H>(&ctx, &mut l).await;
    assert!(
        !notified.is_empty() && notified.iter().all(|q| q == "default"),
        "{notified:?}"
    );
}

/// Many jobs inserted in the application's transaction carry their queues' notifications in the
/// insert statement: one statement in the transaction, one notification per queue with jobs due
/// now, none for a scheduled job's queue.
pub async fn an_application_transactions_insert_many_carries_its_notifications<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut l = insert_listener::<H>(&ctx).await;
    let inserter = Inserter::new(ctx.schema.clone());
    let in_queue = |n, queue: &str| {
        InsertParams::from_args(&Task { n }, Some(InsertOpts::new().queue(queue))).unwrap()
    };
    let scheduled = InsertParams::from_args(
        &Task { n: 4 },
        Some(
            InsertOpts::new()
                .queue("later")
                .schedule_in(TimeDelta::hours(1)),
        ),
    )
    .unwrap();
    let jobs = [
        in_queue(1, "default"),
        in_queue(2, "other"),
        in_queue(3, "default"),
        scheduled,
    ];
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.unwrap();
    let mut recording = Recording {
        inner: &mut tx,
        statements: 0,
    };
    let inserted = inserter.insert_many(&mut recording, &jobs).await.unwrap();
    assert_eq!(recording.statements, 1, "one statement");
    assert_eq!(inserted.len(), 4);
    tx.commit().await.unwrap();
    let mut notified = insert_payloads_until_marker::<H>(&ctx, &mut l).await;
    notified.sort();
    assert_eq!(notified, ["default", "other"]);
}

/// `Client::insert_many` after a quiet moment carries its queues' notifications too: no
/// notification statement after its commit, and idle workers start the jobs.
pub async fn a_quiet_insert_many_carries_its_notifications<H: Harness>() {
    let ctx = ctx::<H>().await;
    let (mut l, worker_client, inserter) = quiet_start::<H>(&ctx).await;
    inserter
        .insert_many(&[due_job(1), due_job(2)])
        .await
        .unwrap();
    completes_without_polling(&ctx, 2).await;
    worker_client.stop().await;
    assert_eq!(
        inserter.stats().notification_statements,
        0,
        "the insert carried its notification"
    );
    assert_eq!(
        insert_payloads_until_marker::<H>(&ctx, &mut l).await,
        ["default"]
    );
}

/// When the commit watcher (only it uses the pool tagged `tag`) last started a look, as the
/// server tells it (by the line naming the statement that opens every engine statement as sent);
/// `None` before its first.
async fn last_look<D: Driver>(ctx: &TestContext<D>, tag: &str) -> Option<String> {
    ctx.conn()
        .await
        .query_scalar(
            &Statement::new(
                "SELECT max(query_start)::text AS started FROM pg_stat_activity \
                 WHERE application_name = $1::text \
                 AND query LIKE '-- pgmill job_notify_committed%'",
            )
            .bind(tag),
        )
        .await
        .expect("read the watcher's looks")
}

/// The commit watcher asks the database whether a held-back insert's transaction has ended, not
/// whether its job is visible: a transaction rolled back is settled by the first look that sees
/// it ended, and never looked at again (looking for its job would go on at doubling intervals, at
/// most 1 s apart, for ten minutes).
pub async fn a_rolled_back_held_back_insert_is_looked_at_no_more<H: Harness>() {
    let ctx = ctx::<H>().await;
    let tag = format!("{}_watch", ctx.schema.name());
    let inserter = Inserter::new(ctx.schema.clone())
        .with_notify_cooldown(Some(Duration::from_secs(3600)))
        .with_commit_watch(tagged_driver::<H>(&ctx, &tag).await);
    let mut conn = ctx.conn().await;
    // The first insert uses up the queue's cooldown: its own statement notifies.
    let mut tx = conn.begin().await.unwrap();
    inserter.insert(&mut tx, Task { n: 1 }).await.unwrap();
    tx.commit().await.unwrap();
    // The second is held back, handed to the watcher, and rolled back.
    let mut tx = conn.begin().await.unwrap();
    inserter.insert(&mut tx, Task { n: 2 }).await.unwrap();
    tx.rollback().await.unwrap();
    let looked = crate::testdb::eventually(Duration::from_secs(10), async || {
        last_look(&ctx, &tag).await.is_some()
    })
    .await;
    assert!(looked, "the watcher never looked");
    // Room for a second look, had the first one run before the rollback.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let settled = last_look(&ctx, &tag).await;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(
        last_look(&ctx, &tag).await,
        settled,
        "the rolled-back transaction was looked at again"
    );
    assert_eq!(count_in(&ctx, JobState::Available).await, 1);
}

/// The id of the transaction `exec` runs in (assigning it one).
async fn xact_id<E: Executor>(exec: &mut E) -> i64 {
    exec.query_scalar(&Statement::new(
        "SELECT pg_current_xact_id()::text::bigint AS xact_id",
    ))
    .await
    .unwrap()
}

/// Runs the commit watcher's look at `watched` (transaction, queue) and returns the transactions
/// it found in progress (sorted) and how many queues it notified.
async fn look_at<D: Driver>(ctx: &TestContext<D>, watched: &[(i64, &str)]) -> (Vec<i64>, i64) {
    let (ids, queues): (Vec<i64>, Vec<String>) =
        watched.iter().map(|(x, q)| (*x, (*q).to_owned())).unzip();
    let stmt = ctx
        .stmt(include_str!(
            "../../../core/sql/job/job_notify_committed.sql"
        ))
        .bind(ctx.schema.channel("pgmill_insert"))
        .bind(ids)
        .bind(queues);
    let mut rows = ctx.conn().await.query(&stmt).await.unwrap();
    assert_eq!(rows.len(), 1, "a look returns one row");
    let mut in_progress = rows[0]
        .take::<Option<Vec<i64>>>("in_progress")
        .unwrap()
        .unwrap_or_default();
    in_progress.sort_unstable();
    (in_progress, rows[0].take("num_notified").unwrap())
}

/// The commit watcher's look tells transactions still open from ended ones: an open transaction
/// and one past every id the server has completed (the newest ones are there, and so is one the
/// server has yet to assign) are in progress and looked at again; a committed one is settled and
/// its queue notified; a rolled-back one is settled without a notification. When the open one
/// commits, the next look settles it and notifies its queue.
pub async fn the_commit_watchers_look_tells_open_transactions_from_ended_ones<H: Harness>() {
    let ctx = ctx::<H>().await;
    let mut l = insert_listener::<H>(&ctx).await;
    let mut open_conn = ctx.conn().await;
    let mut open = open_conn.begin().await.unwrap();
    let open_id = xact_id(&mut open).await;
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.unwrap();
    let committed = xact_id(&mut tx).await;
    tx.commit().await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    let rolled_back = xact_id(&mut tx).await;
    tx.rollback().await.unwrap();
    let unassigned: i64 = conn
        .query_scalar(&Statement::new(
            "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 1000000 AS x",
        ))
        .await
        .unwrap();
    let (in_progress, notified) = look_at(
        &ctx,
        &[
            (open_id, "q_open"),
            (committed, "q_committed"),
            (rolled_back, "q_rolled_back"),
            (unassigned, "q_unassigned"),
        ],
    )
    .await;
    assert_eq!(in_progress, [open_id, unassigned]);
    assert_eq!(notified, 1);
    assert_eq!(
        insert_payloads_until_marker::<H>(&ctx, &mut l).await,
        ["q_committed"]
    );
    open.commit().await.unwrap();
    assert_eq!(look_at(&ctx, &[(open_id, "q_open")]).await, (vec![], 1));
    assert_eq!(
        insert_payloads_until_marker::<H>(&ctx, &mut l).await,
        ["q_open"]
    );
}
