//! Run with: cargo run -p example-quickstart
//!
//! With no `DATABASE_URL` it starts a throwaway PostgreSQL cluster from the installed binaries
//! (and removes it at the end). It migrates, registers two workers, inserts three jobs (one inside
//! the application's own transaction together with the row it belongs to, one that fails once and
//! then succeeds, one scheduled a few seconds ahead), prints each job as it finishes, and stops
//! gracefully. A fourth job is inserted in a transaction that rolls back: it never runs.

#![allow(clippy::print_stdout)] // An example reports what it did on stdout.

use std::error::Error;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::TimeDelta;
use pgmill::{Client, EventKind, InsertOpts, Job, JobArgs, JobError, Worker};
use pgmill_driver_sqlx::{PgConnectionExt, SqlxDriver};
use serde::{Deserialize, Serialize};

/// Sends a welcome e-mail.
#[derive(Serialize, Deserialize)]
struct WelcomeEmail {
    to: String,
}

impl JobArgs for WelcomeEmail {
    const KIND: &'static str = "welcome_email";
}

struct WelcomeEmailWorker;

impl Worker<WelcomeEmail> for WelcomeEmailWorker {
    async fn work(&self, job: &Job<WelcomeEmail>) -> Result<(), JobError> {
        // A real worker would talk to an e-mail service here.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let _ = &job.args.to;
        Ok(())
    }
}

/// Calls a flaky partner API: the first attempt fails, the retry succeeds.
#[derive(Serialize, Deserialize)]
struct SyncCrm {
    account: i64,
}

impl JobArgs for SyncCrm {
    const KIND: &'static str = "sync_crm";
}

#[derive(Default)]
struct SyncCrmWorker {
    failed_once: AtomicBool,
}

impl Worker<SyncCrm> for SyncCrmWorker {
    async fn work(&self, _job: &Job<SyncCrm>) -> Result<(), JobError> {
        if !self.failed_once.swap(true, Ordering::SeqCst) {
            return Err(JobError::retry("partner API answered 503"));
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "error".into()),
        )
        .init();

    // A database: DATABASE_URL, or a throwaway cluster that lives until the end of main.
    let (url, _cluster) = match std::env::var("DATABASE_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            println!("No DATABASE_URL: starting a throwaway PostgreSQL cluster...");
            let cluster = pgmill_testdb::Cluster::start()?;
            (cluster.url(), Some(cluster))
        }
    };
    let pool = sqlx::PgPool::connect(&url).await?;

    let client = Client::builder(SqlxDriver::new(pool.clone()))
        .queue("default", 10)
        .worker(WelcomeEmailWorker)
        .worker(SyncCrmWorker::default())
        .build()?;
    let report = client.migrate().await?;
    println!("Migrated (versions applied now: {:?}).", report.versions);
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS app_user (id bigserial PRIMARY KEY, email text NOT NULL)",
    )
    .execute(&pool)
    .await?;

    let mut events = client.subscribe();
    client.start().await?;

    // 1. Enqueue inside the application's own transaction: the user row and its job commit together.
    let mut tx = pool.begin().await?;
    sqlx::query("INSERT INTO app_user (email) VALUES ($1)")
        .bind("ada@example.com")
        .execute(&mut *tx)
        .await?;
    let welcome = tx
        .insert_job(
            client.inserter(),
            WelcomeEmail {
                to: "ada@example.com".into(),
            },
        )
        .await?;
    tx.commit().await?;
    println!(
        "Inserted job {} ({}) with its user, in one transaction.",
        welcome.id, welcome.kind
    );

    // A transaction that rolls back takes its job with it: that job never exists, never runs.
    let mut tx = pool.begin().await?;
    let ghost = tx
        .insert_job(
            client.inserter(),
            WelcomeEmail {
                to: "nobody@example.com".into(),
            },
        )
        .await?;
    tx.rollback().await?;
    println!(
        "Inserted job {} in a transaction that rolled back: it will never run.",
        ghost.id
    );

    // 2. A job that fails once, then succeeds on its retry.
    let flaky = client.insert(SyncCrm { account: 42 }).await?;
    println!(
        "Inserted job {} ({}): its first attempt fails.",
        flaky.id, flaky.kind
    );

    // 3. A job scheduled a few seconds ahead (by the database clock).
    let later = client
        .insert_with(
            WelcomeEmail {
                to: "grace@example.com".into(),
            },
            InsertOpts::new().schedule_in(TimeDelta::seconds(3)),
        )
        .await?;
    println!(
        "Inserted job {} ({}), scheduled 3 s ahead.",
        later.id, later.kind
    );

    let mut completed = 0;
    while completed < 3 {
        let Some(event) = tokio::time::timeout(Duration::from_secs(60), events.recv()).await?
        else {
            break;
        };
        let job = &event.job;
        match event.kind {
            EventKind::JobCompleted => {
                completed += 1;
                println!(
                    "  job {} {:<13} completed on attempt {} (waited {:?}, ran {:?})",
                    job.id, job.kind, job.attempt, event.queue_wait, event.run_time
                );
            }
            EventKind::JobFailed => println!(
                "  job {} {:<13} failed attempt {}: {}; it will be retried",
                job.id,
                job.kind,
                job.attempt,
                event.error.as_deref().unwrap_or("")
            ),
            other => println!("  job {} {:<13} {other:?}", job.id, job.kind),
        }
    }

    client.stop().await;
    assert!(client.job_get(ghost.id).await?.is_none());
    println!("All jobs done; the client stopped gracefully.");
    Ok(())
}
