//! `Client::health()`: what a readiness endpoint reports, from before start to after stop.

use std::time::Duration;

use pgmill::{Health, ListenerState};

use crate::scripted::{ScriptedWorker, test_client, wait_for};
use crate::{Harness, migrated as ctx};

/// A working client becomes ready once started (every producer fetching, heartbeat written,
/// itself leading, listener listening) and reports not started after stop.
pub async fn health_follows_the_client_from_start_to_stop<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("a", 1)
        .queue("b", 1)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    let before = client.health().await;
    assert!(
        before.connected && before.database_error.is_none(),
        "{before:?}"
    );
    assert!(!before.started && !before.is_ready(), "{before:?}");
    assert_eq!((before.producers_running, before.producers_total), (0, 2));
    assert_eq!(before.listener, ListenerState::NotStarted);
    assert_eq!(before.leader, None);

    client.start().await.unwrap();
    wait_for("ready", async || client.health().await.is_ready()).await;
    let ready = client.health().await;
    assert_eq!(ready.producers_running, 2);
    assert_eq!(ready.listener, ListenerState::Listening);
    assert_eq!(ready.leader.as_deref(), Some(client.id()));
    assert!(ready.is_leader);
    assert!(ready.heartbeat_age.is_some());

    client.stop().await;
    let after = client.health().await;
    assert!(
        after.connected && !after.started && !after.is_ready(),
        "{after:?}"
    );
    assert_eq!(after.producers_running, 0);
    assert_eq!(after.listener, ListenerState::NotStarted);
    assert!(!after.is_leader);
}

/// A poll-only client is ready without a listener; a client without queues (one that only
/// inserts) is ready as soon as the database answers.
pub async fn health_of_poll_only_and_insert_only_clients<H: Harness>() {
    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("default", 1)
        .poll_only(true)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    client.start().await.unwrap();
    wait_for("ready", async || client.health().await.is_ready()).await;
    assert_eq!(client.health().await.listener, ListenerState::PollOnly);
    client.stop().await;

    let inserting = test_client(&ctx).build().unwrap();
    let health = inserting.health().await;
    assert!(health.is_ready(), "{health:?}");
    assert_eq!(health.producers_total, 0);
}

/// `Health::is_ready` fails on each part a ready client can lose, and only on it: from a working
/// client's ready health, each part set as a failing client reports it (database unreachable,
/// stopped, a producer not fetching, the heartbeat missing or older than three intervals, no
/// leader, the listener not listening) makes it not ready; a heartbeat exactly three intervals
/// old and poll-only mode keep it ready. A client without queues is ready while the database
/// answers, and not when it does not.
pub async fn readiness_fails_on_each_missing_part<H: Harness>() {
    /// A change to a health report.
    type Change = Box<dyn Fn(&mut Health)>;

    let ctx = ctx::<H>().await;
    let client = test_client(&ctx)
        .queue("a", 1)
        .queue("b", 1)
        .worker(ScriptedWorker::ok())
        .build()
        .unwrap();
    client.start().await.unwrap();
    wait_for("ready", async || client.health().await.is_ready()).await;
    let ready = client.health().await;
    client.stop().await;
    assert!(ready.is_ready(), "{ready:?}");
    let interval = ready.heartbeat_interval;
    let not_ready: Vec<(&str, Change)> = vec![
        (
            "database unreachable",
            Box::new(|h| {
                h.connected = false;
                h.database_error = Some("connection refused".into());
            }),
        ),
        ("not started", Box::new(|h| h.started = false)),
        (
            "a producer not fetching",
            Box::new(|h| h.producers_running = h.producers_total - 1),
        ),
        ("no heartbeat yet", Box::new(|h| h.heartbeat_age = None)),
        (
            "heartbeat older than three intervals",
            Box::new(move |h| h.heartbeat_age = Some(interval * 3 + Duration::from_millis(1))),
        ),
        ("no leader", Box::new(|h| h.leader = None)),
        (
            "listener connecting",
            Box::new(|h| h.listener = ListenerState::Connecting),
        ),
        (
            "listener not started",
            Box::new(|h| h.listener = ListenerState::NotStarted),
        ),
    ];
    for (what, fail) in &not_ready {
        let mut health = ready.clone();
        fail(&mut health);
        assert!(!health.is_ready(), "ready with {what}: {health:?}");
    }
    let still_ready: Vec<(&str, Change)> = vec![
        (
            "heartbeat exactly three intervals old",
            Box::new(move |h| h.heartbeat_age = Some(interval * 3)),
        ),
        (
            "polling only",
            Box::new(|h| h.listener = ListenerState::PollOnly),
        ),
        (
            "led by another client",
            Box::new(|h| {
                h.leader = Some("another".into());
                h.is_leader = false;
            }),
        ),
    ];
    for (what, keep) in &still_ready {
        let mut health = ready.clone();
        keep(&mut health);
        assert!(health.is_ready(), "not ready with {what}: {health:?}");
    }

    let inserting = test_client(&ctx).build().unwrap();
    let mut health = inserting.health().await;
    assert!(health.is_ready() && !health.started, "{health:?}");
    health.connected = false;
    health.database_error = Some("connection refused".into());
    assert!(
        !health.is_ready(),
        "an insert-only client without its database: {health:?}"
    );
}
