//! `pgmill-bench`: pgmill's drivers against the fastest simple hand-written queue on the same
//! database.
//!
//! Run with: `cargo run --release -p pgmill-bench -- --help`
//!
//! The workloads ([`Workload`]) run in the same invocation for the ceiling (hand-written SQL on
//! tokio-postgres, see `ceiling_bench`) and for each chosen driver, each run in a fresh, freshly
//! migrated schema that is dropped afterwards. The working workloads run once per worker count
//! (`--workers 16,100`), w3 also once per queue depth (`--depths`). After each run the jobs are
//! checked in SQL (and, for the working workloads, against the workers' own execution counts):
//! every job inserted once, or completed exactly once. A failed check fails the command.
//!
//! Results print as one JSON line each with `--json`, as a Markdown table otherwise; each figure
//! is reported with its ratio to the ceiling's (higher is better), with the WAL bytes and write
//! transactions the database spent per job. The database is `--database-url`, else
//! `DATABASE_URL`, else a throwaway cluster with initdb's default settings.

mod advisory_bench;
mod bench_database;
mod bench_error;
mod bench_job;
mod bench_result;
mod ceiling_bench;
mod contender;
mod driver_choice;
mod engine_bench;
mod execution_ledger;
mod host_insert;
mod markdown_table;
mod percentiles;
mod progress;
mod rounds;
mod speed_probe;
mod stopwatch;
mod workload;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

pub(crate) use self::contender::{Contender, Run};
pub(crate) use self::driver_choice::DriverChoice;
pub(crate) use self::workload::{
    BenchOptions, IDLE_BEFORE_LATENCY, INSERT_TASKS, STALL_TIMEOUT, Scenario, TRICKLE,
    TRICKLE_INTERVAL, Workload,
};

use self::bench_database::BenchDatabase;
use self::bench_result::{
    BenchResult, CEILING, CEILING_NOTIFY, Figure, Measurement, depth_lines, results_table,
};
use self::ceiling_bench::CeilingBench;
use self::contender::measure;
use self::driver_choice::{BenchDriver, Variant, measure_driver};
use crate::bench_error::BenchError;

/// Benchmarks pgmill's drivers against the fastest simple hand-written queue on the same
/// database.
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
    /// Drivers to run (the ceiling runs too, unless --no-ceiling).
    #[arg(long, value_enum, default_value_t = DriverChoice::All)]
    pub(crate) driver: DriverChoice,
    /// Jobs per workload (the w2 workloads insert n / 10).
    #[arg(short = 'n', long = "jobs", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(10..))]
    pub(crate) n: u64,
    /// Workloads to run, comma-separated; all by default.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Workload::ALL)]
    pub(crate) workloads: Vec<Workload>,
    /// Worker counts of w3 and w4 (pgmill's queue concurrency, the ceiling's executor tasks),
    /// comma-separated: each is a scenario of its own.
    #[arg(long, value_delimiter = ',', default_values_t = [16, 100], value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub(crate) workers: Vec<u64>,
    /// Queue depths w3 works through, comma-separated, each a scenario of its own; default n.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(10..))]
    pub(crate) depths: Vec<u64>,
    /// Jobs per call of w1_insert_batches (each call its own transaction).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) batch_size: u64,
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
    /// Insert notification cooldown of the inserting clients of w2 and w4_latency, in
    /// milliseconds (pgmill's `Config::insert_notify_cooldown`); pgmill's default when not given.
    #[arg(long, value_name = "MS")]
    pub(crate) insert_notify_cooldown_ms: Option<u64>,
    /// Runs of each scenario per contender, interleaved (the references, then each driver, then
    /// again); throughput is the median run, latency percentiles pool every run's samples.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub(crate) repeat: u64,
    /// A pass (every contender once) during which the hypervisor took more than this percentage
    /// of the machine's CPU (steal time) from any of its runs is run again, up to `--repeat` more
    /// passes per scenario; when too few passes stay within it, the least disturbed are used. The
    /// passes set aside are reported. 100 keeps every pass.
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = percent)]
    pub(crate) max_stolen: f64,
    /// A pass in which the speed probe (a fixed piece of arithmetic timed every 200 ms by its
    /// thread's CPU clock) took more than this percentage longer or shorter in one run than in
    /// the pass's first (the ceiling's, to which every figure is compared) is run again in the
    /// same way: that contender met a machine of different speed. 1000 keeps every pass.
    #[arg(long, value_name = "PCT", default_value_t = 15.0, value_parser = spread_percent)]
    pub(crate) max_speed_spread: f64,
    /// A pass in which the flush probe (one 8 KiB block rewritten and flushed with `fdatasync`
    /// in the temporary directory every 50 ms) took on average more than this percentage longer
    /// or shorter per flush in one run than in the pass's first (the ceiling's) is run again in
    /// the same way: that contender's commits waited on a disk of different speed than the
    /// ceiling's. 1000 keeps every pass.
    #[arg(long, value_name = "PCT", default_value_t = 25.0, value_parser = spread_percent)]
    pub(crate) max_flush_spread: f64,
    /// Skips the hand-written references (to profile one driver alone); results then have no
    /// ratios.
    #[arg(long)]
    pub(crate) no_ceiling: bool,
    /// Also runs each driver with pgmill's metrics on (`Config::metrics`, recording into an
    /// in-process `metrics-util` registry), as `<driver>+metrics`, interleaved with the plain
    /// runs: the cost of the metrics middleware and the engine's metrics.
    #[arg(long)]
    pub(crate) metrics: bool,
    /// Also runs w3_work with the advisory-lock reference (`advisory`): a Que-style locker
    /// written by hand, claiming with `pg_try_advisory_lock` instead of row state (see
    /// docs/advisory-locks.md).
    #[arg(long)]
    pub(crate) advisory: bool,
}

/// A percentage, 0 to 100.
fn percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("{s} is not a percentage from 0 to 100")),
    }
}

fn spread_percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1000.0).contains(&p) => Ok(p),
        _ => Err(format!("{s} is not a percentage from 0 to 1000")),
    }
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
        depths: args.depths.clone(),
        workers: args
            .workers
            .iter()
            .map(|w| usize::try_from(*w).unwrap_or(usize::MAX))
            .collect(),
        batch_size: args.batch_size,
        preload_completed: args.preload_completed,
        latency_jobs: args.latency_jobs,
        latency_interval: Duration::from_millis(args.latency_interval_ms),
        insert_notify_cooldown: args.insert_notify_cooldown_ms.map(Duration::from_millis),
    };
    speed_probe::start();
    let db = BenchDatabase::open(url).await?;
    let about = db.describe().await?;
    progress::note(&format!("pgmill bench on {about}"));
    // Each driver, after it the same driver with metrics on (--metrics) and, for w2_insert_tx,
    // the hand-written reference on its library (`<driver>_plain`).
    let all_drivers: Vec<(BenchDriver, Variant)> = args
        .driver
        .drivers()
        .into_iter()
        .flat_map(|d| {
            std::iter::once((d, Variant::Pgmill))
                .chain(args.metrics.then_some((d, Variant::Metrics)))
                .chain((!args.no_ceiling).then_some((d, Variant::Plain)))
        })
        .collect();
    let mut results: Vec<BenchResult> = Vec::new();
    let mut set_aside_lines: Vec<String> = Vec::new();
    for workload in args.workloads.iter().copied() {
        let drivers: Vec<(BenchDriver, Variant)> = all_drivers
            .iter()
            .copied()
            .filter(|(_, v)| *v != Variant::Plain || workload == Workload::W2InsertTx)
            .collect();
        for scenario in workload.scenarios(&opts) {
            let mut references: Vec<CeilingBench<'_>> = Vec::new();
            if !args.no_ceiling {
                references.push(CeilingBench {
                    db: &db,
                    notify_each_insert: false,
                    advisory: false,
                });
                if workload == Workload::W3Work && args.advisory {
                    references.push(CeilingBench {
                        db: &db,
                        notify_each_insert: false,
                        advisory: true,
                    });
                }
                if workload == Workload::W2InsertSingle {
                    references.push(CeilingBench {
                        db: &db,
                        notify_each_insert: true,
                        advisory: false,
                    });
                }
            }
            let repeat = usize::try_from(args.repeat).unwrap_or(usize::MAX);
            let limits = rounds::Limits {
                max_stolen: args.max_stolen / 100.0,
                max_speed_spread: args.max_speed_spread / 100.0,
                max_flush_spread: args.max_flush_spread / 100.0,
            };
            let mut ran: Vec<rounds::Round> = Vec::new();
            while rounds::another(&ran, repeat, limits) {
                let mut round = Vec::with_capacity(references.len() + drivers.len());
                for reference in &references {
                    round.push(measure(&db, reference, &scenario, &opts).await?);
                }
                for (driver, variant) in &drivers {
                    round.push(measure_driver(&db, *driver, *variant, &scenario, &opts).await?);
                }
                if rounds::disturbed(&round, limits) {
                    progress::note(&format!(
                        "{scenario}: {:.0} % of the CPU stolen in a pass, its CPU in one run \
                         {:.0} % and disk flush {:.0} % off its first run's; running it again",
                        rounds::most_stolen(&round) * 100.0,
                        rounds::speed_spread(&round) * 100.0,
                        rounds::flush_spread(&round) * 100.0
                    ));
                }
                ran.push(round);
            }
            let ran_count = ran.len();
            let (kept, set_aside) = rounds::keep(ran, repeat, limits);
            if set_aside > 0 {
                set_aside_lines.push(format!(
                    "{scenario}: {set_aside} of {ran_count} passes set aside (more than {} % of \
                     the CPU stolen during one of their runs, or the CPU more than {} % or the \
                     disk's flush more than {} % slower or faster in one run than in the first)",
                    args.max_stolen, args.max_speed_spread, args.max_flush_spread
                ));
            }
            let mut reference_runs: Vec<Vec<Measurement>> = vec![Vec::new(); references.len()];
            let mut driver_runs: Vec<Vec<Measurement>> = vec![Vec::new(); drivers.len()];
            for round in kept {
                let mut round = round.into_iter();
                for runs in reference_runs.iter_mut() {
                    runs.extend(round.next());
                }
                for runs in driver_runs.iter_mut() {
                    runs.extend(round.next());
                }
            }
            let mut reference_figures = Vec::new();
            for (runs, reference) in reference_runs.into_iter().zip(&references) {
                if let Some(figure) = Figure::from_runs(runs) {
                    reference_figures.push((reference.name_of(), figure));
                }
            }
            let find = |name: &str| {
                reference_figures
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, f)| f)
            };
            let ceiling = find(CEILING).cloned();
            let notify = find(CEILING_NOTIFY).cloned();
            let mut rows = Vec::new();
            for (name, figure) in &reference_figures {
                rows.push(result(
                    name,
                    scenario,
                    &opts,
                    figure.clone(),
                    &ceiling,
                    &notify,
                ));
            }
            let mut driver_figures = Vec::new();
            for (runs, (driver, variant)) in driver_runs.into_iter().zip(&drivers) {
                let figure = Figure::from_runs(runs).ok_or_else(|| {
                    BenchError::new(format!("{} {scenario}: no runs", driver.name()))
                })?;
                driver_figures.push((*driver, *variant, figure));
            }
            for (driver, variant, figure) in &driver_figures {
                let name = match variant {
                    Variant::Pgmill => driver.name(),
                    Variant::Metrics => driver.name_with_metrics(),
                    Variant::Plain => driver.name_plain(),
                };
                let mut row = result(name, scenario, &opts, figure.clone(), &ceiling, &notify);
                if *variant == Variant::Pgmill {
                    row.host_ratio = driver_figures
                        .iter()
                        .find(|(d, v, _)| d == driver && *v == Variant::Plain)
                        .and_then(|(_, _, plain)| figure.ratio_to(plain));
                }
                rows.push(row);
            }
            for row in rows {
                emit(&row, json);
                results.push(row);
            }
        }
    }
    let mut notes = depth_lines(&results);
    notes.extend(set_aside_lines);
    if !json {
        write_stdout(&format!(
            "{}\n{}database: {about}\n",
            results_table(&results).render(),
            notes.iter().map(|l| format!("{l}\n")).collect::<String>()
        ));
    } else {
        for line in notes {
            progress::note(&line);
        }
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
    scenario: Scenario,
    opts: &BenchOptions,
    figure: Figure,
    ceiling: &Option<Figure>,
    notify: &Option<Figure>,
) -> BenchResult {
    BenchResult {
        driver,
        scenario,
        ceiling_ratio: ceiling.as_ref().and_then(|c| figure.ratio_to(c)),
        notify_ratio: if driver == CEILING || driver == CEILING_NOTIFY {
            None
        } else {
            notify.as_ref().and_then(|c| figure.ratio_to(c))
        },
        host_ratio: None,
        figure,
        preload_completed: if scenario.workload == Workload::W3Work {
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
            row.scenario,
            row.driver,
            match &row.figure {
                Figure::Throughput { .. } => format!(
                    "{:.0} jobs/s, ceiling ratio {}",
                    row.figure.jobs_per_s().unwrap_or(0.0),
                    row.ceiling_ratio.map_or("-".into(), |r| format!("{r:.3}"))
                ),
                Figure::Latency { percentiles: p, .. } => format!(
                    "p50 {:.3} ms, p99 {:.3} ms, ceiling ratio {}",
                    percentiles::millis(p.p50),
                    percentiles::millis(p.p99),
                    row.ceiling_ratio.map_or("-".into(), |r| format!("{r:.3}"))
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
        assert_eq!(args.workers, vec![16, 100]);
        assert_eq!(args.batch_size, 1_000);
        assert!(args.depths.is_empty());
        assert!(!args.metrics);
        assert!(parse(&["--metrics"]).unwrap().metrics);
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
            "--workers",
            "4,8",
            "--depths",
            "100,1000",
        ])
        .unwrap();
        assert!(args.json);
        assert_eq!(args.driver, DriverChoice::TokioPostgres);
        assert_eq!(args.n, 2000);
        assert_eq!(args.preload_completed, 1000);
        assert_eq!(args.workloads, vec![Workload::W3Work, Workload::W4Latency]);
        assert_eq!(args.workers, vec![4, 8]);
        assert_eq!(args.depths, vec![100, 1000]);
        assert!(parse(&["--driver", "mysql"]).is_err());
    }

    #[test]
    fn max_stolen_is_a_percentage() {
        assert_eq!(parse(&[]).unwrap().max_stolen, 5.0);
        assert_eq!(parse(&["--max-stolen", "100"]).unwrap().max_stolen, 100.0);
        assert!(parse(&["--max-stolen", "101"]).is_err());
        assert!(parse(&["--max-stolen", "-1"]).is_err());
        assert!(parse(&["--max-stolen", "some"]).is_err());
    }

    #[test]
    fn max_speed_spread_is_a_percentage_up_to_ten_times() {
        assert_eq!(parse(&[]).unwrap().max_speed_spread, 15.0);
        let wide = parse(&["--max-speed-spread", "1000"]).unwrap();
        assert_eq!(wide.max_speed_spread, 1000.0);
        assert!(parse(&["--max-speed-spread", "1001"]).is_err());
        assert!(parse(&["--max-speed-spread", "-1"]).is_err());
        assert_eq!(parse(&[]).unwrap().max_flush_spread, 25.0);
        assert!(parse(&["--max-flush-spread", "1001"]).is_err());
    }
}
