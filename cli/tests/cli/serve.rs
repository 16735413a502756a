//! `pgmill serve`: the dashboard over a real schema.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use pgmill_testdb as testdb;
use pgmill_testdb::fresh_schema_name;

use crate::{drop_schema, ok, pgmill};

/// A `pgmill serve` process of this test, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` over plain HTTP/1.1; the whole answer.
fn get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn serve_shows_the_dashboard_of_a_schema() {
    let schema = fresh_schema_name();
    ok(&schema, &["migrate", "up"]);
    let child = Command::new(env!("CARGO_BIN_EXE_pgmill"))
        .args(["--database-url", &testdb::url(), "--schema", &schema])
        .args(["serve", "--listen", "127.0.0.1:0", "--read-only"])
        .env_remove("DATABASE_URL")
        .env_remove("PGMILL_WEB_TOKEN")
        .env_remove("PGMILL_WEB_BASIC_AUTH")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Server(child);
    let mut line = String::new();
    BufReader::new(server.0.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    let page = get(&addr, "/");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.contains("<h1>Overview</h1>") && page.contains("read-only"),
        "{page}"
    );
    let jobs = get(&addr, "/jobs?state=nope");
    assert!(jobs.starts_with("HTTP/1.1 400"), "{jobs}");
    drop(server);
    drop_schema(&schema);
}

#[test]
fn serve_refuses_an_open_address_without_auth_and_an_unmigrated_schema() {
    let out = pgmill("public", &["serve", "--listen", "0.0.0.0:0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without authentication"), "{err}");
    let schema = fresh_schema_name();
    let out = pgmill(&schema, &["serve", "--listen", "127.0.0.1:0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is it migrated"), "{err}");
}
