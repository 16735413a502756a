//! LISTEN/NOTIFY through the driver's dedicated listener connection.

use std::time::Duration;

use pgmill::driver::{
    Driver, Executor, Listener, ListenerEvent, Notification, Statement, Transaction,
};

use crate::{Harness, TestContext};

const WAIT: Duration = Duration::from_secs(20);

/// A listener on its own driver whose connections carry `application_name = tag`, so a test can
/// find and terminate exactly its backend.
async fn listener_tagged<H: Harness>(url: &str, tag: &str) -> <H::Driver as Driver>::Listener {
    let sep = if url.contains('?') { '&' } else { '?' };
    let driver = H::connect(&format!("{url}{sep}application_name={tag}"), 2)
        .await
        .expect("driver connects");
    assert!(
        driver.supports_listener(),
        "every conformance driver has a listener"
    );
    driver.listener().await.expect("listener opens")
}

/// Terminates the backends tagged `tag` (the listener's, and its driver's pooled connections), and
/// returns how many there were.
async fn terminate_tagged<E: Executor>(exec: &mut E, tag: &str) -> i64 {
    exec.query_scalar(
        &Statement::new(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) AS killed \
             FROM pg_stat_activity WHERE application_name = $1::text",
        )
        .bind(tag),
    )
    .await
    .expect("terminate the listener's backend")
}

async fn notify<E: Executor>(exec: &mut E, channel: &str, payload: &str) {
    exec.execute(
        &Statement::new("SELECT pg_notify($1::text, $2::text)")
            .bind(channel)
            .bind(payload),
    )
    .await
    .expect("notify");
}

async fn next<L: Listener>(l: &mut L) -> ListenerEvent {
    tokio::time::timeout(WAIT, l.next_event())
        .await
        .expect("an event arrives in time")
        .expect("listener event")
}

async fn next_notification<L: Listener>(l: &mut L) -> Notification {
    loop {
        match next(l).await {
            ListenerEvent::Notification(n) => return n,
            ListenerEvent::Reconnected => continue,
            other => panic!("unexpected event {other:?}"),
        }
    }
}

/// A NOTIFY on `<schema>.<topic>` reaches a listener of that channel with its payload.
pub async fn notification_is_delivered_on_a_schema_scoped_channel<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let channel = ctx.schema.channel("pgmill_insert");
    let mut l = listener_tagged::<H>(&ctx.url, ctx.schema.name()).await;
    l.listen(&channel).await.expect("listen");
    notify(&mut ctx.conn().await, &channel, "{\"queue\":\"default\"}").await;
    assert_eq!(
        next_notification(&mut l).await,
        Notification {
            channel,
            payload: "{\"queue\":\"default\"}".into()
        }
    );
}

/// Non-ASCII payloads arrive intact.
pub async fn non_ascii_payload_is_delivered<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let channel = ctx.schema.channel("pgmill_control");
    let mut l = listener_tagged::<H>(&ctx.url, ctx.schema.name()).await;
    l.listen(&channel).await.expect("listen");
    notify(&mut ctx.conn().await, &channel, "héllo 🦀 日本").await;
    assert_eq!(next_notification(&mut l).await.payload, "héllo 🦀 日本");
}

/// After UNLISTEN, a channel's notifications no longer arrive; others still do.
pub async fn unlisten_stops_delivery<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let a = ctx.schema.channel("a");
    let b = ctx.schema.channel("b");
    let mut l = listener_tagged::<H>(&ctx.url, ctx.schema.name()).await;
    l.listen(&a).await.expect("listen a");
    l.listen(&b).await.expect("listen b");
    l.unlisten(&a).await.expect("unlisten a");
    let mut conn = ctx.conn().await;
    notify(&mut conn, &a, "to a").await;
    notify(&mut conn, &b, "to b").await;
    let n = next_notification(&mut l).await;
    assert_eq!(
        (n.channel.as_str(), n.payload.as_str()),
        (b.as_str(), "to b")
    );
}

/// Two pgmill schemas in one database never see each other's notifications.
pub async fn two_schemas_do_not_see_each_other<H: Harness>() {
    let one = TestContext::<H::Driver>::new::<H>().await;
    let two = TestContext::<H::Driver>::new::<H>().await;
    let mut l = listener_tagged::<H>(&one.url, one.schema.name()).await;
    l.listen(&one.schema.channel("pgmill_insert"))
        .await
        .expect("listen");
    let mut conn = one.conn().await;
    notify(
        &mut conn,
        &two.schema.channel("pgmill_insert"),
        "other schema",
    )
    .await;
    notify(
        &mut conn,
        &one.schema.channel("pgmill_insert"),
        "own schema",
    )
    .await;
    let n = next_notification(&mut l).await;
    assert_eq!(n.payload, "own schema");
    assert_eq!(n.channel, one.schema.channel("pgmill_insert"));
}

/// A NOTIFY in a rolled-back transaction is never delivered.
pub async fn rolled_back_notification_is_not_delivered<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let channel = ctx.schema.channel("pgmill_insert");
    let mut l = listener_tagged::<H>(&ctx.url, ctx.schema.name()).await;
    l.listen(&channel).await.expect("listen");
    let mut conn = ctx.conn().await;
    let mut tx = conn.begin().await.expect("begin");
    notify(&mut tx, &channel, "rolled back").await;
    tx.rollback().await.expect("rollback");
    let mut tx = conn.begin().await.expect("begin");
    notify(&mut tx, &channel, "committed").await;
    tx.commit().await.expect("commit");
    assert_eq!(next_notification(&mut l).await.payload, "committed");
}

/// Many notifications arrive, in commit order.
pub async fn notifications_arrive_in_order<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let channel = ctx.schema.channel("pgmill_insert");
    let mut l = listener_tagged::<H>(&ctx.url, ctx.schema.name()).await;
    l.listen(&channel).await.expect("listen");
    let mut conn = ctx.conn().await;
    for i in 0..100 {
        notify(&mut conn, &channel, &i.to_string()).await;
    }
    for i in 0..100 {
        assert_eq!(next_notification(&mut l).await.payload, i.to_string());
    }
}

/// After its backend is terminated, the listener reconnects on its own, says so, and delivers
/// notifications again.
pub async fn reconnects_after_backend_terminated_and_reports_it<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let channel = ctx.schema.channel("pgmill_insert");
    let tag = ctx.schema.name().to_owned();
    let mut l = listener_tagged::<H>(&ctx.url, &tag).await;
    l.listen(&channel).await.expect("listen");
    let mut conn = ctx.conn().await;
    notify(&mut conn, &channel, "before").await;
    assert_eq!(next_notification(&mut l).await.payload, "before");

    let killed = terminate_tagged(&mut conn, &tag).await;
    assert!(killed >= 1, "the listener's backend was found");

    // The next event is the reconnect (no notification was sent in between).
    assert_eq!(next(&mut l).await, ListenerEvent::Reconnected);
    notify(&mut conn, &channel, "after").await;
    assert_eq!(next_notification(&mut l).await.payload, "after");
}

/// A `next_event` dropped again and again while the listener reconnects (as a `select!` against a
/// fast timer would) still ends in `Reconnected`: the reconnect is kept across calls, so the gap
/// in notifications is always reported.
pub async fn reconnect_is_reported_even_when_next_event_is_cancelled_midway<H: Harness>() {
    let ctx = TestContext::<H::Driver>::new::<H>().await;
    let channel = ctx.schema.channel("cancelled");
    let tag = ctx.schema.name().to_owned();
    let mut l = listener_tagged::<H>(&ctx.url, &tag).await;
    l.listen(&channel).await.expect("listen");
    let mut conn = ctx.conn().await;
    let killed = terminate_tagged(&mut conn, &tag).await;
    assert!(killed >= 1, "the listener's backend was found");

    // Every poll that times out drops the `next_event` future, many of them during the
    // reconnect (a new connection and its LISTEN take longer than a millisecond).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let event = loop {
        match tokio::time::timeout(Duration::from_millis(1), l.next_event()).await {
            Ok(event) => break event.expect("listener event"),
            Err(_) => assert!(
                tokio::time::Instant::now() < deadline,
                "the reconnect was never reported"
            ),
        }
    };
    assert_eq!(event, ListenerEvent::Reconnected);

    notify(&mut conn, &channel, "after").await;
    match next(&mut l).await {
        ListenerEvent::Notification(n) => assert_eq!(
            (n.channel.as_str(), n.payload.as_str()),
            (channel.as_str(), "after")
        ),
        other => panic!("expected the notification, got {other:?}"),
    }
}
