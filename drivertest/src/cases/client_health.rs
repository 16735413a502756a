//! `Client::health()`: what a readiness endpoint reports, from before start to after stop.

use pgmill::ListenerState;

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
