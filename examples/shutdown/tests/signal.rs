//! The example binary stopped by real signals: SIGINT with a job that ends within the grace
//! period (a soft stop, the job completed), SIGTERM with one that does not (a hard stop after the
//! grace period, the job back in `available` with its attempt given back).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use sqlx::{AssertSqlSafe, Row};

/// Runs the example in a fresh schema with `env`, waits until its job is running, sends
/// `signal`, and returns what it printed last and the job's state and attempt.
async fn run_until_signal(signal: &str, env: &[(&str, &str)]) -> (String, String, i16) {
    let url = pgmill_testdb::url();
    let schema = pgmill_testdb::fresh_schema_name();
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    let mut child = Command::new(env!("CARGO_BIN_EXE_example-shutdown"))
        .env("DATABASE_URL", &url)
        .env("PGMILL_SCHEMA", &schema)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the example");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("stdout");
    assert!(first.starts_with("started"), "{first}");
    let running =
        format!("SELECT count(*) AS n FROM \"{schema}\".pgmill_job WHERE state = 'running'");
    let mut is_running = false;
    for _ in 0..600 {
        let n: i64 = sqlx::query(AssertSqlSafe(running.as_str()))
            .fetch_one(&pool)
            .await
            .expect("count")
            .get("n");
        if n == 1 {
            is_running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(is_running, "the job never started");
    let sent = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let last = lines.next().expect("a last line").expect("stdout");
    let status = child.wait().expect("the example ends");
    assert!(status.success(), "{status}");
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT state::text AS state, attempt FROM \"{schema}\".pgmill_job"
    )))
    .fetch_one(&pool)
    .await
    .expect("the job");
    sqlx::query(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
        .execute(&pool)
        .await
        .expect("drop the schema");
    (last, row.get("state"), row.get("attempt"))
}

#[tokio::test]
async fn sigint_stops_softly_and_the_job_completes() {
    let (last, state, attempt) =
        run_until_signal("INT", &[("NAP_MS", "3000"), ("GRACE_MS", "120000")]).await;
    assert_eq!(last, "stopped: soft");
    assert_eq!((state.as_str(), attempt), ("completed", 1));
}

#[tokio::test]
async fn sigterm_interrupts_the_job_after_the_grace_period() {
    let (last, state, attempt) =
        run_until_signal("TERM", &[("NAP_MS", "3600000"), ("GRACE_MS", "300")]).await;
    assert_eq!(last, "stopped: hard");
    assert_eq!((state.as_str(), attempt), ("available", 0));
}
