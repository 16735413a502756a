//! `pgmill-bench-steady`: a steady offered load over minutes, with the job table's dead tuples
//! over time, optionally while another session holds a REPEATABLE READ snapshot open.
//!
//! Run with: `cargo run --release -p pgmill-bench --bin pgmill-bench-steady -- --rate 3000
//! --duration-secs 240 [--hold-snapshot]`
//!
//! One client (tokio-postgres driver, pgmill's defaults, `--workers` slots) works a queue while
//! another inserts `--rate` jobs per second (`Client::insert_bulk` every 10 ms, paced to the
//! offered rate) for `--duration-secs`; jobs are retained with the default retention. With
//! `--hold-snapshot` a third session opens a REPEATABLE READ transaction, reads the table, and
//! keeps that snapshot until the load ends, so vacuum can remove nothing deleted or updated after
//! it. Every second it samples the jobs completed, the backlog (jobs inserted and not yet
//! completed, from the two sides' own counters: a `count(*)` would itself walk the dead index
//! entries a held snapshot keeps) and `pg_stat_user_tables` for `pgmill_job` (live and dead
//! tuples, autovacuum runs, size). It prints one row per `--print-secs`, then every 30 s window:
//! its completion rate against the run's median (the target: no 30 s window below 90 % of the
//! median) and the table at its end. At the end the
//! backlog is drained and every job is checked to have run exactly once (the workers' counts and
//! the table). The database is `--database-url`, else `DATABASE_URL`, else a throwaway cluster
//! with initdb's default settings.

#![allow(clippy::print_stdout)] // A benchmark reports on stdout.

#[allow(dead_code)] // Shared with pgmill-bench, which uses all of it.
#[path = "execution_ledger.rs"]
mod execution_ledger;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use pgmill::{Client, InsertParams, Job, JobArgs, JobError, Schema, Worker};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use pgmill_testdb::Cluster;
use serde::{Deserialize, Serialize};
use tokio_postgres::NoTls;

use execution_ledger::ExecutionLedger;

/// A steady offered load, with dead tuples over time.
#[derive(Debug, Parser)]
#[command(name = "pgmill-bench-steady", version, about)]
struct Args {
    /// Postgres URL; default DATABASE_URL, else a throwaway cluster.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    database_url: Option<String>,
    /// Jobs inserted (and so offered to the workers) per second.
    #[arg(long, default_value_t = 3_000)]
    rate: u64,
    /// How long the load runs.
    #[arg(long, default_value_t = 240)]
    duration_secs: u64,
    /// Worker slots of the working client.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// Hold a REPEATABLE READ snapshot open in another session for the whole load.
    #[arg(long)]
    hold_snapshot: bool,
    /// Seconds between printed rows.
    #[arg(long, default_value_t = 10)]
    print_secs: u64,
}

/// A numbered no-op job.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct SteadyJob {
    i: u64,
}

impl JobArgs for SteadyJob {
    const KIND: &'static str = "bench_steady";
}

/// Counts each job's executions.
struct SteadyWorker(Arc<ExecutionLedger>);

impl Worker<SteadyJob> for SteadyWorker {
    async fn work(&self, job: &Job<SteadyJob>) -> Result<(), JobError> {
        self.0.record(job.args.i);
        Ok(())
    }
}

/// One second's sample.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: f64,
    completed: u64,
    backlog: i64,
    live: i64,
    dead: i64,
    autovacuums: i64,
    size_mb: f64,
    /// Checkpoints started so far (timed and requested).
    checkpoints: i64,
    /// WAL written so far, MB.
    wal_mb: f64,
    /// Whether a vacuum of the job table is running.
    vacuuming: bool,
    /// The machine's busy and total CPU time so far (`/proc/stat`, in ticks; 0 elsewhere).
    cpu: (u64, u64),
}

/// The machine's busy and total CPU ticks since boot, from `/proc/stat` (0, 0 where there is none).
fn machine_cpu() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let total: u64 = ticks.iter().sum();
    // user nice system idle iowait ...: idle and iowait are not busy.
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// One 30 s window: its completion rate, the sample at its end, and what the server did in it.
#[derive(Debug)]
struct Window {
    rate: f64,
    end: Sample,
    checkpoints: i64,
    wal_mb_per_s: f64,
    /// Seconds sampled with a vacuum of the job table running.
    vacuum_secs: usize,
    /// Share of the machine's CPU time that was busy (client, server and everything else).
    cpu_busy: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let (url, _cluster) = match args.database_url.clone().filter(|u| !u.is_empty()) {
        Some(u) => (u, None),
        None => {
            let c = tokio::task::spawn_blocking(Cluster::start_with_defaults).await??;
            (c.url(), Some(c))
        }
    };
    let (sql, conn) = tokio_postgres::connect(&url, NoTls).await?;
    tokio::spawn(conn);
    let name = format!("pgmill_bench_steady_{}", std::process::id());
    let schema = Schema::new(&name)?;
    let q = schema.quoted();
    let total = args.rate * args.duration_secs;
    let ledger = Arc::new(ExecutionLedger::new(total));
    let driver = TokioPostgresDriver::connect(&url, 10).await?;
    let worker = Client::builder(driver.clone())
        .schema(schema.clone())
        .queue("default", args.workers)
        .worker(SteadyWorker(Arc::clone(&ledger)))
        .build()?;
    worker.migrate().await?;
    let inserter = Client::builder(driver).schema(schema.clone()).build()?;

    let holder = if args.hold_snapshot {
        let (holder, conn) = tokio_postgres::connect(&url, NoTls).await?;
        tokio::spawn(conn);
        holder
            .batch_execute(&format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM {q}.pgmill_job"
            ))
            .await?;
        Some(holder)
    } else {
        None
    };

    worker.start().await?;
    let started = Instant::now();
    let inserted_so_far = Arc::new(AtomicU64::new(0));
    let load = {
        let inserter = inserter.clone();
        let rate = args.rate;
        let inserted_so_far = Arc::clone(&inserted_so_far);
        tokio::spawn(async move {
            let mut inserted = 0;
            let mut ticks = tokio::time::interval(Duration::from_millis(10));
            while inserted < total {
                ticks.tick().await;
                let due = (started.elapsed().as_secs_f64() * rate as f64) as u64;
                let upto = due.min(total);
                if upto > inserted {
                    let params = (inserted..upto)
                        .map(|i| InsertParams::from_args(&SteadyJob { i }, None))
                        .collect::<pgmill::Result<Vec<_>>>()?;
                    inserter.insert_bulk(&params).await?;
                    inserted = upto;
                    inserted_so_far.store(inserted, Ordering::Relaxed);
                }
            }
            Ok::<u64, pgmill::Error>(inserted)
        })
    };

    let stats = "SELECT coalesce(n_live_tup, 0), coalesce(n_dead_tup, 0), \
         coalesce(autovacuum_count, 0), pg_total_relation_size(relid)::float8 / 1048576, \
         (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter), \
         pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 / 1048576, \
         EXISTS (SELECT FROM pg_stat_progress_vacuum v WHERE v.relid = t.relid) \
         FROM pg_stat_user_tables t WHERE schemaname = $1 AND relname = 'pgmill_job'";
    let mut samples = Vec::new();
    println!(
        "rate {} jobs/s for {} s, {} workers, snapshot held: {}\n",
        args.rate, args.duration_secs, args.workers, args.hold_snapshot
    );
    println!("| t s | jobs/s | backlog | live tuples | dead tuples | autovacuums | table MB |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut next = Duration::from_secs(1);
    while started.elapsed() < Duration::from_secs(args.duration_secs) {
        tokio::time::sleep(next.saturating_sub(started.elapsed())).await;
        next += Duration::from_secs(1);
        let row = sql.query_one(stats, &[&name]).await?;
        let completed = worker.stats().recorded_outcomes;
        let s = Sample {
            at: started.elapsed().as_secs_f64(),
            completed,
            live: row.get(0),
            dead: row.get(1),
            autovacuums: row.get(2),
            size_mb: row.get(3),
            checkpoints: row.get(4),
            wal_mb: row.get(5),
            vacuuming: row.get(6),
            cpu: machine_cpu(),
            backlog: i64::try_from(inserted_so_far.load(Ordering::Relaxed))?
                - i64::try_from(completed)?,
        };
        let step = usize::try_from(args.print_secs.max(1)).unwrap_or(10);
        if samples.len() % step == step - 1 {
            let before = samples.len().checked_sub(step).map_or((0.0, 0), |i| {
                let b: &Sample = &samples[i];
                (b.at, b.completed)
            });
            let rate = (s.completed - before.1) as f64 / (s.at - before.0);
            println!(
                "| {:.0} | {:.0} | {} | {} | {} | {} | {:.0} |",
                s.at, rate, s.backlog, s.live, s.dead, s.autovacuums, s.size_mb
            );
        }
        samples.push(s);
    }
    let inserted = load.await??;
    if let Some(holder) = holder {
        holder.batch_execute("COMMIT").await?;
    }

    // 30 s windows, from the per-second samples.
    let mut windows = Vec::new();
    let mut from: usize = 0;
    for (end, s) in samples.iter().enumerate().skip(29).step_by(30) {
        let first = &samples[0];
        let (at, completed, checkpoints, wal_mb, cpu) = samples
            .get(from.wrapping_sub(1))
            .map_or((0.0, 0, first.checkpoints, first.wal_mb, first.cpu), |b| {
                (b.at, b.completed, b.checkpoints, b.wal_mb, b.cpu)
            });
        let vacuum_secs = samples[from..=end].iter().filter(|s| s.vacuuming).count();
        windows.push(Window {
            rate: (s.completed - completed) as f64 / (s.at - at),
            end: *s,
            checkpoints: s.checkpoints - checkpoints,
            wal_mb_per_s: (s.wal_mb - wal_mb) / (s.at - at),
            vacuum_secs,
            cpu_busy: (s.cpu.0 - cpu.0) as f64 / ((s.cpu.1 - cpu.1) as f64).max(1.0),
        });
        from = end + 1;
    }
    let mut sorted: Vec<f64> = windows.iter().map(|w| w.rate).collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let lowest = sorted.first().copied().unwrap_or(0.0);
    println!(
        "\n| 30 s window ending at s | jobs/s | of the median | backlog | dead tuples | \
         autovacuums | s vacuuming | checkpoints | WAL MB/s | CPU busy | table MB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for w in &windows {
        let s = &w.end;
        println!(
            "| {:.0} | {:.0} | {:.2} | {} | {} | {} | {} | {} | {:.1} | {:.0} % | {:.0} |",
            s.at,
            w.rate,
            w.rate / median.max(1.0),
            s.backlog,
            s.dead,
            s.autovacuums,
            w.vacuum_secs,
            w.checkpoints,
            w.wal_mb_per_s,
            w.cpu_busy * 100.0,
            s.size_mb
        );
    }
    println!(
        "median {median:.0}, lowest {lowest:.0} ({:.2} of the median): {}",
        lowest / median.max(1.0),
        if lowest >= 0.9 * median {
            "met (no window below 90 %)"
        } else {
            "MISSED (a window below 90 %)"
        }
    );

    // Drain, then exactly once.
    let drained = Instant::now();
    while worker.stats().recorded_outcomes < inserted {
        if drained.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "backlog not drained: {} of {inserted} outcomes recorded",
                worker.stats().recorded_outcomes
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "backlog drained {:.1} s after the load",
        drained.elapsed().as_secs_f64()
    );
    worker.stop().await;
    ledger.check()?;
    let row = sql
        .query_one(
            &format!(
                "SELECT count(*), count(DISTINCT args->>'i'), \
                 count(*) FILTER (WHERE state = 'completed' AND attempt = 1) FROM {q}.pgmill_job_all"
            ),
            &[],
        )
        .await?;
    let (rows, distinct, once): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let n = i64::try_from(inserted)?;
    if rows != n || distinct != n || once != n {
        return Err(format!(
            "exactly-once check failed: {rows} rows, {distinct} distinct, {once} completed at attempt 1, {n} inserted"
        )
        .into());
    }
    println!("exactly once: {n} jobs, each completed once at attempt 1");
    sql.batch_execute(&format!("DROP SCHEMA {q} CASCADE"))
        .await?;
    Ok(())
}
