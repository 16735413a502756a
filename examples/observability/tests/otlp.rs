//! The example run as a user runs it, exporting its spans over OTLP/HTTP to a small collector in
//! the test: the request's span and both attempts' `pgmill.job` spans arrive, in one trace (the
//! one the example prints).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use sqlx::AssertSqlSafe;

/// One request the collector received.
#[derive(Debug)]
struct Received {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// An OTLP/HTTP collector on a free local port: it keeps every request and answers each with an
/// empty success (an empty protobuf message), until the test process ends.
fn collector() -> (SocketAddr, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("its address");
    let received = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&received);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let keep = Arc::clone(&keep);
            std::thread::spawn(move || serve(conn, &keep));
        }
    });
    (addr, received)
}

/// Serves the requests of one connection (HTTP/1.1, kept alive) until the client closes it.
fn serve(conn: TcpStream, received: &Mutex<Vec<Received>>) {
    let mut out = conn.try_clone().expect("a second handle");
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let (mut length, mut content_type) = (None, String::new());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse::<usize>().ok(),
                    "content-type" => content_type = value.trim().to_owned(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length.expect("the exporter sends a Content-Length")];
        reader.read_exact(&mut body).expect("the request's body");
        received.lock().unwrap().push(Received {
            path,
            content_type,
            body,
        });
        let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n\
                      Content-Length: 0\r\n\r\n";
        if out.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn the_example_exports_the_requests_trace_over_otlp() {
    let (addr, received) = collector();
    let url = pgmill_testdb::url();
    let schema = pgmill_testdb::fresh_schema_name();
    let run = Command::new(env!("CARGO_BIN_EXE_example-observability"))
        .env("DATABASE_URL", &url)
        .env("PGMILL_SCHEMA", &schema)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{addr}"))
        .env("NO_PROXY", "127.0.0.1")
        .env("no_proxy", "127.0.0.1")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}\n{stdout}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    sqlx::query(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
        .execute(&pool)
        .await
        .expect("drop the schema");

    // "Trace <32 hex digits> (n spans):", the request's trace as the example printed it.
    let trace = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Trace "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("the example printed no trace:\n{stdout}"));
    let trace: Vec<u8> = (0..trace.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&trace[i..i + 2], 16).expect("a hex trace id"))
        .collect();

    let received = received.lock().unwrap();
    assert!(!received.is_empty(), "the collector received nothing");
    let mut spans = Vec::new();
    for r in received.iter() {
        assert_eq!(r.path, "/v1/traces", "{r:?}");
        assert_eq!(r.content_type, "application/x-protobuf", "{r:?}");
        let request = ExportTraceServiceRequest::decode(r.body.as_slice()).expect("OTLP protobuf");
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    let in_trace = |name: &str| {
        spans
            .iter()
            .filter(|s| s.name == name && s.trace_id == trace)
            .count()
    };
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        in_trace("POST /signup"),
        1,
        "the request's span in its trace: {names:?}"
    );
    assert!(
        in_trace("pgmill.job") >= 2,
        "both attempts' pgmill.job spans continue the request's trace: {names:?}"
    );
}
