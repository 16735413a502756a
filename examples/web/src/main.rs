//! Run with: cargo run -p example-web
//!
//! Then open http://127.0.0.1:3000/pgmill (`PORT` changes the port). With no `DATABASE_URL` it
//! starts a throwaway PostgreSQL cluster from the installed binaries (removed at the end). An
//! axum application with a route of its own mounts pgmill's dashboard under `/pgmill`, beside a
//! working client: a worker that fails one job in three, a periodic job every 10 seconds, and a
//! job inserted every second. Stop it with Ctrl-C.

#![allow(clippy::print_stdout)] // An example reports what it did on stdout.

use std::error::Error;
use std::time::Duration;

use pgmill::{Client, Job, JobArgs, JobError, PeriodicJob, Schedule, Worker};
use pgmill_driver_sqlx::SqlxDriver;
use serde::{Deserialize, Serialize};

/// Resizes an uploaded image.
#[derive(Serialize, Deserialize)]
struct ResizeImage {
    upload: i64,
    width: u32,
}

impl JobArgs for ResizeImage {
    const KIND: &'static str = "resize_image";
}

struct ResizeImageWorker;

impl Worker<ResizeImage> for ResizeImageWorker {
    async fn work(&self, job: &Job<ResizeImage>) -> Result<(), JobError> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if job.args.upload % 3 == 0 {
            return Err(JobError::retry("image decoder: unexpected end of file"));
        }
        Ok(())
    }
}

/// Sends the hourly digest.
#[derive(Serialize, Deserialize)]
struct Digest {}

impl JobArgs for Digest {
    const KIND: &'static str = "digest";
}

struct DigestWorker;

impl Worker<Digest> for DigestWorker {
    async fn work(&self, _job: &Job<Digest>) -> Result<(), JobError> {
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
    let (url, _cluster) = match std::env::var("DATABASE_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            println!("No DATABASE_URL: starting a throwaway PostgreSQL cluster...");
            let cluster = pgmill_testdb::Cluster::start()?;
            (cluster.url(), Some(cluster))
        }
    };
    let pool = sqlx::PgPool::connect(&url).await?;
    let client = Client::builder(SqlxDriver::new(pool))
        .queue("default", 5)
        .worker(ResizeImageWorker)
        .worker(DigestWorker)
        .periodic(PeriodicJob::new(
            "digest",
            Schedule::every(Duration::from_secs(10))?,
            || Digest {},
        )?)
        .build()?;
    client.migrate().await?;
    client.start().await?;

    // The dashboard, mounted under /pgmill of the application's own router.
    let dashboard = pgmill_web::Dashboard::new(client.clone()).router();
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "the application" }))
        .nest("/pgmill", dashboard);

    let inserter = client.clone();
    tokio::spawn(async move {
        for upload in 1.. {
            let _ = inserter.insert(ResizeImage { upload, width: 640 }).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });

    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".into());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("Dashboard on http://{}/pgmill", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    client.stop().await;
    Ok(())
}
