//! The example binary stopped by real signals: SIGINT with a job that ends within the grace
//! period (a soft stop, the job completed), SIGTERM with one that does not (a hard stop after the
//! grace period, the job back in `available` with its attempt given back), and a second signal
//! during a long grace period (a hard stop at once).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use sqlx::{AssertSqlSafe, Row};

/// How long the example gets to print what a test waits for.
const PATIENCE: Duration = Duration::from_secs(60);

/// The lines of `pipe`, read on a thread of their own.
fn lines_of(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (send, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { return };
            if send.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

/// The next line of `lines` for which `wanted` holds, within [`PATIENCE`].
fn next_line(lines: &Receiver<String>, what: &str, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if wanted(&line) => return line,
            Ok(_) => {}
            Err(e) => panic!("no {what} from the example within {PATIENCE:?}: {e}"),
        }
    }
}

/// The example's process, killed if a test ends before it does (a failed test must not leave an
/// hour-long job running).
struct Example(Child);

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn send_signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
}

/// Runs the example in a fresh schema with `env`, waits until its job is running, sends each of
/// `signals` (each after the example logged that it received the one before), and returns what
/// it printed last and the job's state and attempt.
async fn run_until_signals(signals: &[&str], env: &[(&str, &str)]) -> (String, String, i16) {
    let url = pgmill_testdb::url();
    let schema = pgmill_testdb::fresh_schema_name();
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    let mut example = Example(
        Command::new(env!("CARGO_BIN_EXE_example-shutdown"))
            .env("DATABASE_URL", &url)
            .env("PGMILL_SCHEMA", &schema)
            .env("RUST_LOG", "warn,pgmill=info")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the example"),
    );
    let child = &mut example.0;
    let stdout = lines_of(child.stdout.take().expect("stdout"));
    let stderr = lines_of(child.stderr.take().expect("stderr"));
    let first = next_line(&stdout, "first line", |_| true);
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
    for (i, signal) in signals.iter().enumerate() {
        if i > 0 {
            // The example listens for the next signal once it has taken the one before.
            next_line(&stderr, "log line of the first signal", |l| {
                l.contains("shutdown signal received")
            });
        }
        send_signal(child, signal);
    }
    let last = next_line(&stdout, "last line", |_| true);
    let status = child.wait().expect("the example ends");
    assert!(status.success(), "{status}");
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT state::text AS state, attempt FROM \"{schema}\".pgmill_job_all"
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
        run_until_signals(&["INT"], &[("NAP_MS", "3000"), ("GRACE_MS", "120000")]).await;
    assert_eq!(last, "stopped: soft");
    assert_eq!((state.as_str(), attempt), ("completed", 1));
}

#[tokio::test]
async fn sigterm_interrupts_the_job_after_the_grace_period() {
    let (last, state, attempt) =
        run_until_signals(&["TERM"], &[("NAP_MS", "3600000"), ("GRACE_MS", "300")]).await;
    assert_eq!(last, "stopped: hard");
    assert_eq!((state.as_str(), attempt), ("available", 0));
}

/// A second signal during the grace period interrupts the running job at once: with an hour's
/// grace and an hour's job, only the second signal can end the example within the test's
/// patience.
#[tokio::test]
async fn a_second_signal_interrupts_the_job_during_the_grace_period() {
    let (last, state, attempt) = run_until_signals(
        &["TERM", "INT"],
        &[("NAP_MS", "3600000"), ("GRACE_MS", "3600000")],
    )
    .await;
    assert_eq!(last, "stopped: hard");
    assert_eq!((state.as_str(), attempt), ("available", 0));
}
