//! `pgmill-bench`: pgmill's drivers against hand-written SQL on the same database.
//!
//! Run with: `cargo run --release -p pgmill-bench -- --help`
//!
//! Four workloads ([`Workload`]) run in the same invocation for the floor (minimal SQL on
//! tokio-postgres, see `floor_bench`) and for each chosen driver, each run in a fresh,
//! freshly migrated schema that is dropped afterwards. After each run the jobs are checked in SQL
//! (and, for the working workloads, against the workers' own execution counts): every job
//! inserted once, or completed exactly once. A failed check fails the command.
//!
//! Results print as one JSON line each with `--json`, as a Markdown table otherwise; each figure
//! is reported with its ratio to the floor's (higher is better). The database is
//! `--database-url`, else `DATABASE_URL`, else a throwaway cluster with initdb's default settings.

mod bench_database;
mod bench_error;
mod bench_job;
mod bench_result;
mod contender;
mod driver_choice;
mod engine_bench;
mod execution_ledger;
mod floor_bench;
mod markdown_table;
mod percentiles;
mod progress;
mod stopwatch;
mod workload;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

pub(crate) use self::contender::{Contender, Run};
pub(crate) use self::driver_choice::DriverChoice;
pub(crate) use self::workload::{
    BenchOptions, IDLE_BEFORE_LATENCY, INSERT_TASKS, STALL_TIMEOUT, Workload,
};

use self::bench_database::BenchDatabase;
use self::bench_result::{BenchResult, FLOOR, Figure, Measurement, results_table};
use self::contender::measure;
use self::driver_choice::measure_driver;
use self::floor_bench::FloorBench;
use crate::bench_error::BenchError;

/// Benchmarks pgmill's drivers against hand-written SQL on the same database.
#[derive(Debug, Parser)]
#[command(name = "pgmill-bench", version, about)]
pub(crate) struct BenchArgs {
    /// Postgres URL; default DATABASE_URL, else a throwaway cluster started from the installed
    /// PostgreSQL binaries with initdb's default settings.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    pub(crate) database_url: Option<String>,
    /// Print one JSON line per result instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Drivers to run (the floor runs too, unless --no-floor).
    #[arg(long, value_enum, default_value_t = DriverChoice::All)]
    pub(crate) driver: DriverChoice,
    /// Jobs per workload (w2_insert_single inserts n / 10).
    #[arg(short = 'n', long = "jobs", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(10..))]
    pub(crate) n: u64,
    /// Workloads to run, comma-separated; all by default.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Workload::ALL)]
    pub(crate) workloads: Vec<Workload>,
    /// Workers (slots) of the working client, and of the floor, in w3 and w4.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub(crate) workers: u64,
    /// Completed jobs put in the table (by COPY) before w3_work runs, to show the cost per job
    /// stays flat as the table grows.
    #[arg(long, default_value_t = 0)]
    pub(crate) preload_completed: u64,
    /// Jobs inserted in w4_latency.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) latency_jobs: u64,
    /// Milliseconds between the inserts of w4_latency.
    #[arg(long, default_value_t = 20)]
    pub(crate) latency_interval_ms: u64,
    /// Insert notification cooldown of w4_latency's inserting client, in milliseconds (pgmill's
    /// `Config::insert_notify_cooldown`); pgmill's default when not given.
    #[arg(long, value_name = "MS")]
    pub(crate) insert_notify_cooldown_ms: Option<u64>,
    /// Runs of each workload per contender, interleaved (floor, then each driver, then again);
    /// throughput is the median run, latency percentiles pool every run's samples.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub(crate) repeat: u64,
    /// Skips the floor (to profile one driver alone); results then have no floor_ratio.
    #[arg(long)]
    pub(crate) no_floor: bool,
}

/// Runs the benchmark.
///
/// # Errors
///
/// No database, a failed run, or a failed exactly-once check.
async fn run(args: BenchArgs) -> Result<(), BenchError> {
    let json = args.json;
    let url = args.database_url.clone().filter(|u| !u.is_empty());
    let opts = BenchOptions {
        n: args.n,
        workers: usize::try_from(args.workers).unwrap_or(usize::MAX),
        preload_completed: args.preload_completed,
        latency_jobs: args.latency_jobs,
        latency_interval: Duration::from_millis(args.latency_interval_ms),
        insert_notify_cooldown: args.insert_notify_cooldown_ms.map(Duration::from_millis),
    };
    let db = BenchDatabase::open(url).await?;
    let about = db.describe().await?;
    progress::note(&format!("pgmill bench on {about}"));
    let drivers = args.driver.drivers();
    let mut results: Vec<BenchResult> = Vec::new();
    for workload in args.workloads.iter().copied() {
        let mut floor_runs = Vec::new();
        let mut driver_runs: Vec<Vec<Measurement>> = vec![Vec::new(); drivers.len()];
        for _ in 0..args.repeat {
            if !args.no_floor {
                floor_runs.push(measure(&db, &FloorBench { db: &db }, workload, &opts).await?);
            }
            for (runs, driver) in driver_runs.iter_mut().zip(&drivers) {
                runs.push(measure_driver(&db, *driver, workload, &opts).await?);
            }
        }
        let floor = Figure::from_runs(floor_runs);
        if let Some(floor) = &floor {
            let row = result(FLOOR, workload, &opts, floor.clone(), Some(floor));
            emit(&row, json);
            results.push(row);
        }
        for (runs, driver) in driver_runs.into_iter().zip(&drivers) {
            let figure = Figure::from_runs(runs)
                .ok_or_else(|| BenchError::new(format!("{} {workload}: no runs", driver.name())))?;
            let row = result(driver.name(), workload, &opts, figure, floor.as_ref());
            emit(&row, json);
            results.push(row);
        }
    }
    if !json {
        write_stdout(&format!(
            "{}\ndatabase: {about}\n",
            results_table(&results).render()
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = BenchArgs::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pgmill-bench: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(args));
    // Background tasks (pool connections) must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pgmill-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes to stdout and flushes; a closed pipe is not worth a panic.
fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

fn result(
    driver: &'static str,
    workload: Workload,
    opts: &BenchOptions,
    figure: Figure,
    floor: Option<&Figure>,
) -> BenchResult {
    BenchResult {
        driver,
        workload,
        n: workload.jobs(opts),
        floor_ratio: floor.and_then(|f| figure.ratio_to(f)),
        figure,
        preload_completed: if workload == Workload::W3Work {
            opts.preload_completed
        } else {
            0
        },
    }
}

fn emit(row: &BenchResult, json: bool) {
    if json {
        write_stdout(&format!("{}\n", row.to_json()));
    } else {
        progress::note(&format!(
            "{} {}: {}",
            row.workload,
            row.driver,
            match &row.figure {
                Figure::Throughput { .. } => format!(
                    "{:.0} jobs/s, floor ratio {}",
                    row.figure.jobs_per_s().unwrap_or(0.0),
                    row.floor_ratio.map_or("-".into(), |r| format!("{r:.3}"))
                ),
                Figure::Latency { percentiles: p, .. } => format!(
                    "p50 {:.3} ms, p99 {:.3} ms, floor ratio {}",
                    percentiles::millis(p.p50),
                    percentiles::millis(p.p99),
                    row.floor_ratio.map_or("-".into(), |r| format!("{r:.3}"))
                ),
            }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
        BenchArgs::try_parse_from(std::iter::once("pgmill-bench").chain(args.iter().copied()))
    }

    #[test]
    fn bench_options_parse_with_their_defaults() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.n, 100_000);
        assert_eq!(args.driver, DriverChoice::All);
        let args = parse(&[
            "--driver",
            "tokio-postgres",
            "-n",
            "2000",
            "--json",
            "--workloads",
            "w3_work,w4_latency",
            "--preload-completed",
            "1000",
        ])
        .unwrap();
        assert!(args.json);
        assert_eq!(args.driver, DriverChoice::TokioPostgres);
        assert_eq!(args.n, 2000);
        assert_eq!(args.preload_completed, 1000);
        assert_eq!(args.workloads, vec![Workload::W3Work, Workload::W4Latency]);
        assert!(parse(&["--driver", "mysql"]).is_err());
    }
}
