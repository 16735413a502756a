//! Queue names: pausing a queue that does not exist is an error unless asked to create it, and
//! schema versions 3-4 hold job queue names to the API's rule, applied under running clients
//! without losing the rows that broke it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pgmill::driver::{Driver, Executor};
use pgmill::{JobState, Migrator};

use crate::scripted::{ScriptedWorker, Task, count_in, test_client, wait_for};
use crate::{Harness, TestContext, migrated as ctx};

/// The last version before the queue name constraint.
const BEFORE: u32 = 2;

/// `queue_pause` of a queue no client registered and that holds no live jobs is a typed error
/// that creates nothing; `queue_pause_or_create` registers it paused; a queue that only holds jobs
/// (no client ever worked it) and one the pausing client is built to work both exist.
pub async fn pausing_an_unknown_queue_is_an_error_unless_asked_to_create_it<H: Harness>() {
    let ctx = ctx::<H>().await;
    let operator = test_client(&ctx)
        .reject_unknown_kinds(false)
        .build()
        .unwrap();
    let err = operator.queue_pause("mial").await.unwrap_err();
    assert!(
        matches!(&err, pgmill::Error::UnknownQueue(q) if q == "mial"),
        "{err}"
    );
    assert!(
        operator.queue_list().await.unwrap().is_empty(),
        "nothing created"
    );
    assert!(matches!(
        operator.queue_pause("bad name").await.unwrap_err(),
        pgmill::Error::InvalidName { .. }
    ));

    assert_eq!(
        operator.queue_pause_or_create("mial").await.unwrap(),
        ["mial"]
    );
    let q = operator.queue_get("mial").await.unwrap().unwrap();
    assert!(q.paused_at.is_some());
    assert_eq!(
        operator.queue_pause("mial").await.unwrap(),
        ["mial"],
        "exists now"
    );

    // Jobs only: a queue no client worked yet, but it holds live jobs.
    operator
        .insert_with(Task { n: 1 }, pgmill::InsertOpts::new().queue("waiting"))
        .await
        .unwrap();
    assert_eq!(operator.queue_pause("waiting").await.unwrap(), ["waiting"]);
    // The pausing client's own queue, before it ever started.
    let worker = test_client(&ctx)
        .queue("mine", 1)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    assert_eq!(worker.queue_pause("mine").await.unwrap(), ["mine"]);
    // `*` with nothing registered is no error.
    operator.queue_resume("*").await.unwrap();
}

/// Versions 3 and 4 (and the rest) applied while a client of version 2 inserts jobs: it goes on
/// without an error during the upgrade, rows that already broke the name rule are kept (moved to
/// `pgmill:invalid`, their name in metadata) and show as an unserved queue, a row with a bad
/// name can no longer be written, the constraint ends validated, and a client of the new version
/// works every job inserted. Reverting gives the moved rows their names back.
///
/// The version 2 client is this crate's inserter on a version 2 schema: its insert statements
/// read nothing later versions add. (This crate's workers need the current schema: finished jobs
/// move to the history, which version 9 adds.)
pub async fn queue_name_check_applies_under_running_clients_and_keeps_bad_rows<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let migrator = Migrator::new(ctx.schema.clone());
    migrator
        .up(&mut ctx.conn().await, Some(BEFORE))
        .await
        .unwrap();
    // Version 1 already holds names to 1-128 characters; these break only the name rule.
    let bad = ["bad queue", "é", "semi;colon"];
    for name in bad {
        ctx.conn()
            .await
            .execute(
                &ctx.stmt(
                    "INSERT INTO {schema}.pgmill_job (queue, kind, args) \
                     VALUES ($1::text, 'task', '{\"n\": 0}')",
                )
                .bind(name),
            )
            .await
            .unwrap();
    }

    let old = test_client(&ctx)
        .queue("default", 4)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    old.insert(Task { n: 1 }).await.unwrap();

    // The old client inserts without a pause while the schema moves on.
    let stop = Arc::new(AtomicBool::new(false));
    let inserting = {
        let (old, stop) = (old.clone(), Arc::clone(&stop));
        tokio::spawn(async move {
            let mut n: i64 = 0;
            while !stop.load(Ordering::Relaxed) {
                old.insert(Task { n: 2 }).await.expect("old client insert");
                n += 1;
                tokio::task::yield_now().await;
            }
            n
        })
    };
    let report = migrator.up(&mut ctx.conn().await, None).await.unwrap();
    assert_eq!(
        report.versions,
        (BEFORE + 1..=Migrator::latest_version()).collect::<Vec<_>>()
    );
    stop.store(true, Ordering::Relaxed);
    let inserted = inserting.await.unwrap();
    old.insert(Task { n: 3 }).await.unwrap();
    old.start().await.unwrap();
    wait_for(
        "a client of the new version works every job after the upgrade",
        async || count_in(&ctx, JobState::Completed).await == inserted + 2,
    )
    .await;

    // Nothing lost: the bad rows wait, named, in one queue.
    let moved = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT queue, metadata->>'invalid_queue' AS original, state::text AS state \
             FROM {schema}.pgmill_job WHERE metadata ? 'invalid_queue' ORDER BY id",
        ))
        .await
        .unwrap();
    let originals: Vec<String> = moved.iter().map(|r| r.get("original").unwrap()).collect();
    assert_eq!(originals, bad);
    assert!(moved.iter().all(|r| {
        r.get::<String>("queue").unwrap() == "pgmill:invalid"
            && r.get::<String>("state").unwrap() == "available"
    }));
    let unserved = old.queue_list_unserved().await.unwrap();
    assert_eq!(unserved.len(), 1, "{unserved:?}");
    assert_eq!(unserved[0].name, "pgmill:invalid");
    assert_eq!(unserved[0].counts.get(&JobState::Available), Some(&3));

    // A bad name cannot be written any more, and the constraint holding the rule is validated.
    for name in ["bad queue", "é", ""] {
        let err = ctx
            .conn()
            .await
            .execute(
                &ctx.stmt("INSERT INTO {schema}.pgmill_job (queue, kind) VALUES ($1::text, 'k')")
                    .bind(name),
            )
            .await
            .unwrap_err();
        assert_eq!(err.sqlstate(), Some("23514"), "{name:?}: {err}");
    }
    let validated = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            "SELECT convalidated AS v FROM pg_constraint \
             WHERE conname = 'row_is_valid' AND conrelid = '{schema}.pgmill_job'::regclass",
        ))
        .await
        .unwrap();
    assert!(validated[0].get::<bool>("v").unwrap());

    // A new client joins next to the old one.
    let new = test_client(&ctx)
        .queue("default", 4)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    new.start().await.unwrap();
    old.stop().await;
    new.insert(Task { n: 4 }).await.unwrap();
    wait_for("the new client works", async || {
        count_in(&ctx, JobState::Completed).await == inserted + 3
    })
    .await;
    new.stop().await;

    // Down to version 2: the moved rows get their names back.
    migrator.down(&mut ctx.conn().await, BEFORE).await.unwrap();
    let back = ctx
        .conn()
        .await
        .query(&ctx.stmt(
            // Version 2 has no history tables: every row is back in the job table.
            "SELECT queue FROM {schema}.pgmill_job \
             WHERE queue <> 'default' AND NOT metadata ? 'invalid_queue' ORDER BY id",
        ))
        .await
        .unwrap();
    let names: Vec<String> = back.iter().map(|r| r.get("queue").unwrap()).collect();
    assert_eq!(names, bad);
    let _ = ctx.driver.clone().acquire().await.unwrap();
}
