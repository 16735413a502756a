//! The dashboard's authentication over HTTP: a request without the credentials gets 401 with the
//! challenge that makes a browser ask (or tells a script which scheme to use), before anything
//! else runs; a request with them gets the page.

use std::time::Duration;

use base64::Engine as _;
use pgmill::{Client, Schema};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use pgmill_web::{Auth, Dashboard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A response as read off the wire.
#[derive(Debug)]
struct Response {
    status: u16,
    /// Header names in lower case, with their values.
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The dashboard of a fresh migrated schema with `auth`, served on a free local port; its address.
async fn serve(auth: Option<Auth>) -> String {
    let driver = TokioPostgresDriver::connect(&pgmill_testdb::url(), 4)
        .await
        .expect("connects");
    let client = Client::builder(driver)
        .schema(Schema::new(&pgmill_testdb::fresh_schema_name()).unwrap())
        .build()
        .unwrap();
    client.migrate().await.expect("migrates");
    let mut dashboard = Dashboard::new(client);
    if let Some(auth) = auth {
        dashboard = dashboard.auth(auth);
    }
    let app = axum::Router::new().nest("/admin", dashboard.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// Sends one HTTP/1.1 request (`authorization`, if any, as its Authorization header) and reads
/// the whole response.
async fn request(addr: &str, method: &str, path: &str, authorization: Option<&str>) -> Response {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(a) = authorization {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    if method == "POST" {
        head.push_str(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\n\r\nqueue=tasks",
        );
    } else {
        head.push_str("\r\n");
    }
    stream.write_all(head.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw))
        .await
        .expect("a response in time")
        .expect("read");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn basic(user_password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_password)
    )
}

/// Asserts `r` is the 401 asking for `challenge`, from the auth layer (no page, no CSRF cookie).
fn assert_challenged(r: &Response, challenge: &str, what: &str) {
    assert_eq!(r.status, 401, "{what}: {r:?}");
    assert_eq!(
        r.header("www-authenticate"),
        Some(challenge),
        "{what}: {r:?}"
    );
    assert_eq!(r.header("set-cookie"), None, "{what}: {r:?}");
    assert_eq!(r.body, "authentication required", "{what}: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_challenges_without_credentials_and_serves_with_them() {
    let addr = serve(Some(Auth::basic("ops", "a long password").unwrap())).await;
    let challenge = "Basic realm=\"pgmill\", charset=\"UTF-8\"";
    for (what, authorization) in [
        ("no credentials", None),
        ("a wrong password", Some(basic("ops:a wrong password"))),
        ("another user", Some(basic("admin:a long password"))),
        ("a bearer token", Some("Bearer a long password".to_owned())),
    ] {
        for (method, path) in [
            ("GET", "/admin"),
            ("GET", "/admin/jobs"),
            ("POST", "/admin/queues/pause"),
        ] {
            let r = request(&addr, method, path, authorization.as_deref()).await;
            assert_challenged(&r, challenge, &format!("{what}, {method} {path}"));
        }
    }
    let good = basic("ops:a long password");
    for path in ["/admin", "/admin/jobs"] {
        let r = request(&addr, "GET", path, Some(&good)).await;
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert!(r.body.contains("<html"), "{path}: {r:?}");
        assert_eq!(r.header("www-authenticate"), None);
    }
    // Authenticated, a POST goes on to the next check: its CSRF token is missing.
    let r = request(&addr, "POST", "/admin/queues/pause", Some(&good)).await;
    assert_eq!(r.status, 403, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_auth_challenges_without_the_token_and_serves_with_it() {
    let addr = serve(Some(Auth::bearer("s3cret-token").unwrap())).await;
    let challenge = "Bearer realm=\"pgmill\"";
    for (what, authorization) in [
        ("no token", None),
        ("a wrong token", Some("Bearer s3cret-toke".to_owned())),
        ("basic credentials", Some(basic("ops:s3cret-token"))),
    ] {
        let r = request(&addr, "GET", "/admin", authorization.as_deref()).await;
        assert_challenged(&r, challenge, what);
    }
    let r = request(&addr, "GET", "/admin", Some("Bearer s3cret-token")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("<html"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_every_request_is_served() {
    let addr = serve(None).await;
    let r = request(&addr, "GET", "/admin", None).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("www-authenticate"), None);
}
