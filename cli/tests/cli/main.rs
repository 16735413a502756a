//! End-to-end tests of the `pgmill` binary against the throwaway test database.
//!
//! Each test works in a fresh schema and drops it at the end.

mod admin;
mod errors;
mod serve;

use std::process::{Command, Output};

use pgmill_testdb as testdb;

/// Runs `pgmill` with `args` against the test database and `schema`.
pub(crate) fn pgmill(schema: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgmill"))
        .args(["--database-url", &testdb::url(), "--schema", schema])
        .args(args)
        .env_remove("DATABASE_URL")
        .env_remove("RUST_LOG")
        .output()
        .expect("the pgmill binary runs")
}

/// Runs `pgmill` and returns its stdout, failing the test when it fails.
pub(crate) fn ok(schema: &str, args: &[&str]) -> String {
    let out = pgmill(schema, args);
    assert!(
        out.status.success(),
        "pgmill {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Runs `pgmill --json` and parses its output.
pub(crate) fn json(schema: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = ok(schema, &all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// Runs SQL on the test database.
pub(crate) fn sql(statement: &str) -> Vec<tokio_postgres::Row> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&testdb::url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        let driver = tokio::spawn(conn);
        let rows = client.query(statement, &[]).await.unwrap();
        drop(client);
        let _ = driver.await;
        rows
    })
}

/// Drops a test schema.
pub(crate) fn drop_schema(schema: &str) {
    sql(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"));
}
