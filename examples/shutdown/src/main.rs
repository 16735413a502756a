//! Run with: cargo run -p example-shutdown, then press Ctrl-C (or send SIGTERM).
//!
//! A worker process as an orchestrator runs it: it works its queue until SIGTERM or SIGINT, then
//! stops softly (no more fetching; running jobs finish), and interrupts the jobs still running
//! after the grace period (they go back to `available` with their attempt given back, for another
//! process to run at once). A second signal interrupts them at once. It prints its readiness
//! (`Client::health`) once started and how it stopped at the end.
//!
//! Settings (environment): `DATABASE_URL` (else a throwaway cluster), `PGMILL_SCHEMA` (default
//! `public`), `GRACE_MS` (default 10000). It inserts one job that naps `NAP_MS` (default 2000)
//! unless `NAP_MS=none`.

#![allow(clippy::print_stdout)] // An example reports what it did on stdout.

use std::error::Error;
use std::time::Duration;

use pgmill::{Client, Job, JobArgs, JobError, Schema, Worker};
use pgmill_driver_sqlx::SqlxDriver;
use serde::{Deserialize, Serialize};

/// A job that takes `ms` milliseconds.
#[derive(Debug, Serialize, Deserialize)]
pub struct Nap {
    /// How long the job runs.
    pub ms: u64,
}

impl JobArgs for Nap {
    const KIND: &'static str = "nap";
}

#[derive(Debug)]
struct NapWorker;

impl Worker<Nap> for NapWorker {
    async fn work(&self, job: &Job<Nap>) -> Result<(), JobError> {
        tokio::time::sleep(Duration::from_millis(job.args.ms)).await;
        Ok(())
    }
}

fn env_ms(name: &str, default: u64) -> Result<Option<u64>, Box<dyn Error>> {
    match std::env::var(name) {
        Ok(v) if v == "none" => Ok(None),
        Ok(v) => Ok(Some(v.parse()?)),
        Err(_) => Ok(Some(default)),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        // Logs go to stderr: stdout carries the example's own status lines.
        .with_writer(std::io::stderr)
        .init();
    let (url, _cluster) = match std::env::var("DATABASE_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let cluster = pgmill_testdb::Cluster::start()?;
            (cluster.url(), Some(cluster))
        }
    };
    let schema = match std::env::var("PGMILL_SCHEMA") {
        Ok(name) => Schema::new(&name)?,
        Err(_) => Schema::public(),
    };
    let grace = Duration::from_millis(env_ms("GRACE_MS", 10_000)?.unwrap_or(10_000));
    let pool = sqlx::PgPool::connect(&url).await?;
    let client = Client::builder(SqlxDriver::new(pool))
        .schema(schema)
        .queue("default", 4)
        .worker(NapWorker)
        .build()?;
    client.migrate().await?;
    if let Some(ms) = env_ms("NAP_MS", 2_000)? {
        client.insert(Nap { ms }).await?;
    }
    client.start().await?;
    // Listening from here on: a signal arriving while the line below is printed stops the client.
    let stopped = client.stop_on_signal(grace);
    println!("started; ready: {}", client.health().await.is_ready());
    let soft = stopped.await;
    println!("stopped: {}", if soft { "soft" } else { "hard" });
    Ok(())
}
