//! `pgmill-bench-web`: the dashboard's jobs page and overview over a large table, served over
//! HTTP, against the obvious hand-written SQL for the same page on the same table.
//!
//! Run with: `cargo run --release -p pgmill-bench --bin pgmill-bench-web -- --rows 1000000`
//!
//! It fills a fresh schema with `--rows` jobs (mostly completed history over 8 queues and 20
//! kinds, a few discarded, available, scheduled and retryable ones, every 1,000th with 100 kB of
//! args), vacuums and analyzes it, serves the dashboard on a loopback port, and times each page
//! (`--requests` GETs after a warm-up; median, p95, max), beside the same filter as a plain
//! `SELECT ... ORDER BY id DESC LIMIT 50` run through tokio-postgres. The schema is dropped at the
//! end. The database is `--database-url`, else `DATABASE_URL`, else a throwaway cluster with
//! initdb's default settings.

#![allow(clippy::print_stdout)] // A benchmark reports on stdout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use clap::Parser;
use pgmill::{Client, Schema};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use pgmill_testdb::Cluster;
use tokio_postgres::NoTls;

/// Times the dashboard's pages over a large job table.
#[derive(Debug, Parser)]
#[command(name = "pgmill-bench-web", version, about)]
struct Args {
    /// Postgres URL; default DATABASE_URL, else a throwaway cluster.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true, value_name = "URL")]
    database_url: Option<String>,
    /// Jobs in the table.
    #[arg(long, default_value_t = 1_000_000)]
    rows: i64,
    /// Timed requests per page (after 5 untimed ones).
    #[arg(long, default_value_t = 50)]
    requests: usize,
}

/// The pages timed: a label, the dashboard path, and the hand-written reference's WHERE clause.
const PAGES: &[(&str, &str, &str)] = &[
    ("jobs, no filter", "/jobs", "true"),
    (
        "jobs, state=available",
        "/jobs?state=available",
        "state = 'available'",
    ),
    (
        "jobs, state=discarded (rare, old)",
        "/jobs?state=discarded",
        "state = 'discarded'",
    ),
    (
        "jobs, state=completed",
        "/jobs?state=completed",
        "state = 'completed'",
    ),
    ("jobs, queue=q3", "/jobs?queue=q3", "queue = 'q3'"),
    (
        "jobs, state=retryable&queue=q3",
        "/jobs?state=retryable&queue=q3",
        "state = 'retryable' AND queue = 'q3'",
    ),
    ("jobs, kind=k7", "/jobs?kind=k7", "kind = 'k7'"),
    (
        "jobs, kind=none (matches nothing: worst case)",
        "/jobs?kind=none",
        "kind = 'none'",
    ),
    (
        "jobs, page at the table's middle",
        "/jobs?before=MIDDLE",
        "id < MIDDLE",
    ),
    ("overview", "/", ""),
];

fn get(addr: &str, path: &str) -> usize {
    let mut stream = TcpStream::connect(addr).expect("dashboard answers");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{path}: {}",
        String::from_utf8_lossy(&answer[..answer.len().min(300)])
    );
    answer.len()
}

/// Median, p95 and max of some timings, in milliseconds.
fn summary(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (ms(at(0.5)), ms(at(0.95)), ms(*samples.last().unwrap()))
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
    let schema = Schema::new(&format!("pgmill_bench_web_{}", std::process::id()))?;
    let driver = TokioPostgresDriver::connect(&url, 4).await?;
    let client = Client::builder(driver).schema(schema.clone()).build()?;
    client.migrate().await?;
    let q = schema.quoted();

    let started = Instant::now();
    sql.batch_execute(&format!(
        "INSERT INTO {q}.pgmill_job (state, queue, kind, args, attempt, max_attempts, created_at, \
             scheduled_at, attempted_at, finalized_at, errors)
         SELECT st, 'q' || (g % 8), 'k' || (g % 20),
             CASE WHEN g % 1000 = 0 THEN jsonb_build_object('blob', repeat('x', 100000))
                  ELSE jsonb_build_object('user_id', g, 'email', 'user' || g || '@example.com',
                       'plan', 'pro', 'tags', jsonb_build_array('a', 'b', 'c')) END,
             CASE WHEN st IN ('available', 'scheduled') THEN 0 ELSE 1 END, 3,
             t, t, CASE WHEN st IN ('available', 'scheduled') THEN NULL ELSE t END,
             CASE WHEN st IN ('completed', 'cancelled', 'discarded') THEN t END,
             CASE WHEN st IN ('discarded', 'retryable')
                  THEN ARRAY[jsonb_build_object('attempt', 1, 'at', t, 'error', 'timeout')]
                  ELSE '{{}}'::jsonb[] END
         FROM (
             SELECT g, now() - (({rows} - g) * interval '10 milliseconds') AS t,
                 (CASE
                     WHEN g % 1000 = 7 AND g < {rows} / 10 THEN 'discarded'
                     WHEN g > {rows} - {rows} / 50 THEN 'available'
                     WHEN g % 200 = 3 THEN 'retryable'
                     WHEN g % 500 = 4 THEN 'scheduled'
                     WHEN g % 300 = 5 THEN 'cancelled'
                     ELSE 'completed'
                 END)::{q}.pgmill_job_state AS st
             FROM generate_series(1, {rows}) AS g
         ) AS s;
         INSERT INTO {q}.pgmill_queue (name) SELECT 'q' || i FROM generate_series(0, 7) AS i;",
        rows = args.rows
    ))
    .await?;
    sql.batch_execute(&format!("VACUUM ANALYZE {q}.pgmill_job"))
        .await?;
    let loaded = started.elapsed();
    let middle: i64 = sql
        .query_one(
            &format!("SELECT (max(id) / 2)::bigint FROM {q}.pgmill_job"),
            &[],
        )
        .await?
        .get(0);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    let app = pgmill_web::Dashboard::new(client.clone()).router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    println!(
        "{} jobs loaded and vacuumed in {:.1} s; {} timed requests per page after 5 untimed\n",
        args.rows,
        loaded.as_secs_f64(),
        args.requests
    );
    println!(
        "| page | dashboard median ms | p95 | max | page bytes | hand-written SQL median ms | p95 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (label, path, reference) in PAGES {
        let path = path.replace("MIDDLE", &middle.to_string());
        let reference = reference.replace("MIDDLE", &middle.to_string());
        let page = path.clone();
        let target = addr.clone();
        let requests = args.requests;
        let (bytes, times) = tokio::task::spawn_blocking(move || {
            let mut bytes = 0;
            for _ in 0..5 {
                bytes = get(&target, &page);
            }
            let times: Vec<Duration> = (0..requests)
                .map(|_| {
                    let t = Instant::now();
                    get(&target, &page);
                    t.elapsed()
                })
                .collect();
            (bytes, times)
        })
        .await?;
        let (med, p95, max) = summary(times);
        let hand = if reference.is_empty() {
            "—".to_owned()
        } else {
            let stmt = format!(
                "SELECT id, state::text, queue, kind, left(args::text, 160), attempt, max_attempts, \
                 created_at, scheduled_at, finalized_at FROM {q}.pgmill_job WHERE {reference} \
                 ORDER BY id DESC LIMIT 50"
            );
            for _ in 0..5 {
                sql.query(&stmt, &[]).await?;
            }
            let mut times = Vec::new();
            for _ in 0..args.requests {
                let t = Instant::now();
                sql.query(&stmt, &[]).await?;
                times.push(t.elapsed());
            }
            let (m, p, _) = summary(times);
            format!("{m:.1} | {p:.1}")
        };
        let hand = if hand == "—" {
            "— | —".to_owned()
        } else {
            hand
        };
        println!("| {label} | {med:.1} | {p95:.1} | {max:.1} | {bytes} | {hand} |");
    }
    sql.batch_execute(&format!("DROP SCHEMA {q} CASCADE"))
        .await?;
    Ok(())
}
