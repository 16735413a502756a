//! Read-only mode hides and refuses actions; a state-changing request without the CSRF token is
//! refused.

use pgmill::JobArgs;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::harness::{Browser, Env};

/// Args of the jobs these tests look at.
#[derive(Serialize, Deserialize)]
struct Note {
    text: String,
}

impl JobArgs for Note {
    const KIND: &'static str = "note";
}

/// Posts a form from inside the page with `fetch`; the page's answer as `[status, body]`.
async fn post(b: &Browser, path: &str, body: &str) -> (u64, String) {
    let script = format!(
        "return fetch({path:?}, {{method: 'POST', credentials: 'same-origin', \
         headers: {{'Content-Type': 'application/x-www-form-urlencoded'}}, body: {body:?}}})\
         .then(r => r.text().then(t => [r.status, t]))"
    );
    let answer: Value = b.js(&script).await;
    (
        answer[0].as_u64().unwrap(),
        answer[1].as_str().unwrap().to_owned(),
    )
}

/// A read-only dashboard shows no action and answers 403 to one sent anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_mode_hides_and_refuses_actions() {
    let env = Env::with(|d| d.read_only(true)).await;
    env.sql("INSERT INTO {schema}.pgmill_queue (name) VALUES ('mail')")
        .await;
    let job = env
        .client
        .insert_with(
            Note { text: "hi".into() },
            pgmill::InsertOpts::new().queue("mail"),
        )
        .await
        .unwrap();
    let b = Browser::start().await;
    for path in [
        "".to_owned(),
        "/jobs".to_owned(),
        format!("/jobs/{}", job.id),
        "/periodic".to_owned(),
    ] {
        b.goto(&env.url(&path)).await;
        assert_eq!(b.text(".badge.readonly").await, "read-only");
        assert_eq!(
            b.count("form[method=post]").await,
            0,
            "an action shows on {path:?}"
        );
        assert_eq!(b.count("a[data-bulk]").await, 0, "a bulk link on {path:?}");
    }
    b.goto(&env.url("")).await;
    let (status, body) = post(&b, "/admin/queues/pause", "queue=mail").await;
    assert_eq!(status, 403);
    assert!(body.contains("read-only"), "{body}");
    let (status, _) = post(&b, &format!("/admin/jobs/{}/delete", job.id), "").await;
    assert_eq!(status, 403);
    let (status, _) = post(&b, "/admin/jobs/bulk/delete", "queue=mail").await;
    assert_eq!(status, 403);
    b.goto(&env.url("/jobs/bulk/delete?queue=mail")).await;
    assert!(b.text("#error").await.contains("read-only"));
    assert!(
        env.client
            .queue_get("mail")
            .await
            .unwrap()
            .unwrap()
            .paused_at
            .is_none()
    );
    assert!(env.client.job_get(job.id).await.unwrap().is_some());
    b.close().await;
    env.finish().await;
}

/// An action without the page's CSRF token, or with another one, is refused and changes
/// nothing; with it, the same request goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_the_csrf_token_is_refused() {
    let env = Env::start().await;
    env.sql("INSERT INTO {schema}.pgmill_queue (name) VALUES ('mail')")
        .await;
    let b = Browser::start().await;
    b.goto(&env.url("")).await;
    let token = b
        .js("return document.querySelector('input[name=_csrf]').value")
        .await;
    let token = token.as_str().unwrap().to_owned();

    let (status, body) = post(&b, "/admin/queues/pause", "queue=mail").await;
    assert_eq!(status, 403);
    assert!(body.contains("missing CSRF token"), "{body}");
    let wrong = "0".repeat(64);
    let (status, body) = post(
        &b,
        "/admin/queues/pause",
        &format!("queue=mail&_csrf={wrong}"),
    )
    .await;
    assert_eq!(status, 403);
    assert!(body.contains("wrong CSRF token"), "{body}");
    assert!(
        env.client
            .queue_get("mail")
            .await
            .unwrap()
            .unwrap()
            .paused_at
            .is_none()
    );

    let (status, _) = post(
        &b,
        "/admin/queues/pause",
        &format!("queue=mail&_csrf={token}"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        env.client
            .queue_get("mail")
            .await
            .unwrap()
            .unwrap()
            .paused_at
            .is_some()
    );
    assert_eq!(
        b.js("return document.cookie").await,
        json!(""),
        "the CSRF cookie is HttpOnly"
    );
    b.close().await;
    env.finish().await;
}
