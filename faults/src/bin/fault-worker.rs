//! A pgmill worker process for the fault tests: works the `default` queue with a
//! [`FaultWorker`] on the chosen driver until SIGTERM or SIGINT, then stops softly (running jobs
//! finish and their outcomes are recorded), writes its figures to the side table and exits 0.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use pgmill::driver::{Driver, Executor};
use pgmill::{Client, Schema};
use pgmill_driver_diesel::DieselDriver;
use pgmill_driver_sqlx::SqlxDriver;
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use pgmill_faults::attempt_log::exited;
use pgmill_faults::{DriverKind, Error, FaultWorker};
use tokio::signal::unix::{SignalKind, signal};

/// How long the worker keeps trying to connect and start before it gives up.
const START_DEADLINE: Duration = Duration::from_secs(60);

#[derive(Debug, Parser)]
#[command(about = "A pgmill worker process for the fault-injection tests")]
struct Args {
    /// The driver the client runs on.
    #[arg(long, value_enum)]
    driver: DriverKind,
    /// The database URL.
    #[arg(long)]
    url: String,
    /// The schema pgmill is migrated into (the side tables live there too).
    #[arg(long)]
    schema: String,
    /// The client's id (also recorded with every attempt).
    #[arg(long)]
    id: String,
    /// The `application_name` of every connection, by which the tests terminate them.
    #[arg(long, default_value = "pgmill-fault-worker")]
    application_name: String,
    /// Worker slots of the `default` queue.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Shortest sleep of a job, in milliseconds.
    #[arg(long, default_value_t = 5)]
    sleep_min_ms: u64,
    /// Longest sleep of a job, in milliseconds.
    #[arg(long, default_value_t = 100)]
    sleep_max_ms: u64,
    /// The job timeout, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    job_timeout_ms: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let args = Args::parse();
    match run_driver(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "fault worker failed");
            ExitCode::FAILURE
        }
    }
}

/// The URL with the worker's `application_name` added.
fn url_with_application_name(args: &Args) -> String {
    let sep = if args.url.contains('?') { '&' } else { '?' };
    format!(
        "{}{sep}application_name={}",
        args.url, args.application_name
    )
}

async fn run_driver(args: &Args) -> Result<(), Error> {
    let url = url_with_application_name(args);
    let pool_size = u32::try_from(args.concurrency + 6).unwrap_or(u32::MAX);
    match args.driver {
        DriverKind::Sqlx => {
            let driver = retry_until_started(|| SqlxDriver::connect(&url, pool_size)).await?;
            run(driver, args).await
        }
        DriverKind::TokioPostgres => {
            let driver =
                retry_until_started(|| TokioPostgresDriver::connect(&url, pool_size)).await?;
            run(driver, args).await
        }
        DriverKind::Diesel => {
            let driver = retry_until_started(|| DieselDriver::connect(&url, pool_size)).await?;
            run(driver, args).await
        }
    }
}

/// Tries `step` every 200 ms until it succeeds or [`START_DEADLINE`] passes (a worker respawned
/// while its backends are being terminated fails its first tries; its exit figures may meet a
/// database that is restarting).
async fn retry_until_started<T, F, Fut>(mut step: F) -> pgmill::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = pgmill::Result<T>>,
{
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        match step().await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() < deadline => {
                tracing::warn!(error = %e, "starting failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn run<D: Driver>(driver: D, args: &Args) -> Result<(), Error> {
    let schema = Schema::new(&args.schema)?;
    let worker = FaultWorker::new(
        driver.clone(),
        schema.clone(),
        &args.id,
        (
            Duration::from_millis(args.sleep_min_ms),
            Duration::from_millis(args.sleep_max_ms),
        ),
        Duration::from_millis(args.job_timeout_ms),
    );
    let client = Client::builder(driver.clone())
        .schema(schema.clone())
        .id(args.id.clone())
        .queue("default", args.concurrency)
        .worker(worker)
        .build()?;
    let mut term = signal(SignalKind::terminate())
        .map_err(|e| Error::io("installing SIGTERM's handler", e))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| Error::io("installing SIGINT's handler", e))?;
    client.start().await?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    client.stop().await;
    let stats = client.stats();
    let stmt = exited(
        &schema,
        &args.id,
        stats.recorded_outcomes,
        stats.superseded_results,
    );
    let recorded = retry_until_started(|| async {
        let mut conn = driver.acquire().await?;
        conn.execute(&stmt).await
    })
    .await;
    if let Err(e) = recorded {
        tracing::warn!(error = %e, "recording the exit figures failed");
    }
    Ok(())
}
