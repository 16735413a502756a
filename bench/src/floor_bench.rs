//! The floor: each workload as hand-written minimal SQL on tokio-postgres, against the same
//! `pgmill_job` table, with the same concurrency shape as pgmill's run.
//!
//! - w1: one `COPY ... FROM STDIN` of (kind, args).
//! - w2: `INSERT` of (kind, args), prepared, from the same number of tasks, each on its own
//!   connection, without notification.
//! - w3: one fetcher claims up to `min(free slots, 100)` jobs with one CTE (`FOR UPDATE SKIP
//!   LOCKED`, marking them running), each job runs in its own task holding a slot, and one
//!   completer marks finished jobs completed with one `UPDATE ... WHERE id = ANY($1)` per batch
//!   of whatever is waiting (up to 2,000): pgmill's shape (one producer, slots, one completer)
//!   without its bookkeeping.
//! - w4: the inserter's `INSERT` sends `pg_notify` in the same statement; a listening connection
//!   wakes the fetcher, which claims with the same CTE.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use pgmill::{CompleterConfig, Config, JobArgs, JobId, Schema};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Statement};

use crate::bench_database::{BenchDatabase, copy_rows};
use crate::bench_error::BenchError;
use crate::bench_job::BenchJob;
use crate::bench_result::{FLOOR, Measurement};
use crate::engine_bench::{collect_starts, join_all, latencies};
use crate::execution_ledger::ExecutionLedger;
use crate::progress::Progress;
use crate::stopwatch::Stopwatch;
use crate::{
    BenchOptions, Contender, IDLE_BEFORE_LATENCY, INSERT_TASKS, Run, STALL_TIMEOUT, Workload,
};

/// Hand-written SQL on the benchmark's database.
#[derive(Debug)]
pub(crate) struct FloorBench<'a> {
    /// The database.
    pub(crate) db: &'a BenchDatabase,
}

impl Contender for FloorBench<'_> {
    fn name(&self) -> &'static str {
        FLOOR
    }

    async fn run(
        &self,
        workload: Workload,
        schema: &Schema,
        opts: &BenchOptions,
    ) -> Result<Run, BenchError> {
        match workload {
            Workload::W1InsertBulk => self.insert_bulk(schema, opts.n).await,
            Workload::W2InsertSingle => self.insert_single(schema, workload.jobs(opts)).await,
            Workload::W3Work => self.work(schema, opts).await,
            Workload::W4Latency => self.latency(schema, opts).await,
        }
    }
}

/// The claim: up to $1 due available jobs of the default queue, in fetch order, marked running.
fn claim_sql(schema: &Schema) -> String {
    format!(
        "WITH c AS ( \
           SELECT id FROM {s}.pgmill_job \
           WHERE state = 'available' AND queue = 'default' AND scheduled_at <= now() \
           ORDER BY priority, scheduled_at, id \
           LIMIT $1 \
           FOR UPDATE SKIP LOCKED) \
         UPDATE {s}.pgmill_job AS j \
         SET state = 'running', attempt = j.attempt + 1, attempted_at = now() \
         FROM c WHERE j.id = c.id \
         RETURNING j.id, j.args",
        s = schema.quoted()
    )
}

/// The completion of many jobs at once.
fn complete_sql(schema: &Schema) -> String {
    format!(
        "UPDATE {}.pgmill_job SET state = 'completed', finalized_at = now() \
         WHERE id = ANY($1)",
        schema.quoted()
    )
}

/// The `i` of a claimed row's args.
fn job_number(row: &tokio_postgres::Row) -> Result<(i64, u64), BenchError> {
    let id: i64 = row.try_get(0)?;
    let args: serde_json::Value = row.try_get(1)?;
    let i = args["i"]
        .as_u64()
        .ok_or_else(|| BenchError::new(format!("job {id} has no number in its args: {args}")))?;
    Ok((id, i))
}

async fn claim(
    client: &Client,
    stmt: &Statement,
    limit: usize,
) -> Result<Vec<(i64, u64)>, BenchError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    client
        .query(stmt, &[&limit])
        .await?
        .iter()
        .map(job_number)
        .collect()
}

impl FloorBench<'_> {
    /// w1: one COPY.
    async fn insert_bulk(&self, schema: &Schema, n: u64) -> Result<Run, BenchError> {
        let client = self.db.connect().await?;
        let sql = format!(
            "COPY {}.pgmill_job (kind, args) FROM STDIN",
            schema.quoted()
        );
        let progress = Progress::bar(n, "floor: COPY");
        let stopwatch = Stopwatch::start();
        let copied = copy_rows(&client, &sql, n, &progress, |i, buf| {
            buf.extend_from_slice(format!("{}\t{{\"i\":{i}}}\n", BenchJob::KIND).as_bytes());
        })
        .await?;
        let measurement = stopwatch.stop(n);
        progress.finish();
        if copied != n {
            return Err(BenchError::new(format!(
                "COPY reported {copied} rows for {n}"
            )));
        }
        Ok(Run::throughput(measurement))
    }

    /// w2: prepared single-row INSERTs from concurrent tasks, one connection each.
    async fn insert_single(&self, schema: &Schema, n: u64) -> Result<Run, BenchError> {
        let sql = format!(
            "INSERT INTO {}.pgmill_job (kind, args) VALUES ($1, $2)",
            schema.quoted()
        );
        let mut conns = Vec::new();
        for _ in 0..INSERT_TASKS {
            let client = self.db.connect().await?;
            let stmt = client
                .prepare_typed(&sql, &[Type::TEXT, Type::JSONB])
                .await?;
            conns.push((client, stmt));
        }
        let next = Arc::new(AtomicU64::new(0));
        let progress = Progress::bar(n, "floor: single inserts");
        let stopwatch = Stopwatch::start();
        let mut tasks = JoinSet::new();
        for (client, stmt) in conns {
            let (next, progress) = (Arc::clone(&next), progress.clone());
            tasks.spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok::<(), BenchError>(());
                    }
                    let args = serde_json::json!({ "i": i });
                    client.execute(&stmt, &[&BenchJob::KIND, &args]).await?;
                    progress.inc(1);
                }
            });
        }
        join_all(tasks).await?;
        let measurement = stopwatch.stop(n);
        progress.finish();
        Ok(Run::throughput(measurement))
    }

    /// w3: one fetcher filling slots, a task per job, one batching completer.
    async fn work(&self, schema: &Schema, opts: &BenchOptions) -> Result<Run, BenchError> {
        let n = opts.n;
        let ledger = Arc::new(ExecutionLedger::new(n));
        let queue = format!(
            "COPY {}.pgmill_job (kind, args) FROM STDIN",
            schema.quoted()
        );
        let filler = self.db.connect().await?;
        let progress = Progress::bar(n, "floor: queueing");
        copy_rows(&filler, &queue, n, &progress, |i, buf| {
            buf.extend_from_slice(format!("{}\t{{\"i\":{i}}}\n", BenchJob::KIND).as_bytes());
        })
        .await?;
        progress.finish();
        drop(filler);

        let fetcher = self.db.connect().await?;
        let claim_stmt = fetcher
            .prepare_typed(&claim_sql(schema), &[Type::INT8])
            .await?;
        let completer = self.db.connect().await?;
        let complete_stmt = completer
            .prepare_typed(&complete_sql(schema), &[Type::INT8_ARRAY])
            .await?;
        let slots = Arc::new(Semaphore::new(opts.workers));
        let (done_tx, mut done_rx) = mpsc::channel::<i64>(CompleterConfig::default().buffer);
        let progress = Progress::bar(n, "floor: working");

        let stopwatch = Stopwatch::start();
        let completing = {
            let progress = progress.clone();
            tokio::spawn(async move {
                let mut completed = 0u64;
                let mut batch = Vec::with_capacity(CompleterConfig::default().max_batch);
                while completed < n {
                    let first = tokio::time::timeout(STALL_TIMEOUT, done_rx.recv()).await;
                    let Ok(Some(first)) = first else {
                        return Err(BenchError::new(format!(
                            "floor stalled: {completed} of {n} jobs completed"
                        )));
                    };
                    batch.push(first);
                    while batch.len() < CompleterConfig::default().max_batch {
                        match done_rx.try_recv() {
                            Ok(id) => batch.push(id),
                            Err(_) => break,
                        }
                    }
                    completed += completer.execute(&complete_stmt, &[&batch]).await?;
                    progress.set(completed);
                    batch.clear();
                }
                Ok(completed)
            })
        };
        loop {
            let first = Arc::clone(&slots)
                .acquire_owned()
                .await
                .map_err(|e| BenchError::context("slots", e))?;
            first.forget();
            let extra = slots
                .available_permits()
                .min(Config::default().fetch_limit - 1);
            if extra > 0
                && let Ok(p) = slots.try_acquire_many(extra as u32)
            {
                p.forget();
            }
            let want = 1 + extra;
            let jobs = claim(&fetcher, &claim_stmt, want).await?;
            let got = jobs.len();
            slots.add_permits(want - got);
            for (id, i) in jobs {
                let (ledger, done_tx, slots) =
                    (Arc::clone(&ledger), done_tx.clone(), Arc::clone(&slots));
                tokio::spawn(async move {
                    ledger.record(i);
                    let _ = done_tx.send(id).await;
                    slots.add_permits(1);
                });
            }
            if got < want {
                // Nothing else inserts: fewer rows than asked means the queue is drained.
                break;
            }
        }
        drop(done_tx);
        let completed = completing
            .await
            .map_err(|e| BenchError::context("floor completer", e))??;
        let measurement = stopwatch.stop(n);
        progress.finish();
        if completed != n {
            return Err(BenchError::new(format!(
                "floor completed {completed} rows for {n} jobs"
            )));
        }
        Ok(Run {
            measurement,
            ledger: Some(ledger),
        })
    }

    /// w4: INSERT + pg_notify per job; LISTEN wakes a fetcher that claims and completes.
    async fn latency(&self, schema: &Schema, opts: &BenchOptions) -> Result<Run, BenchError> {
        let m = opts.latency_jobs;
        let ledger = Arc::new(ExecutionLedger::new(m));
        let channel = format!("{}.floor_insert", schema.name());
        let (listener, mut notifications) = self.db.connect_listening().await?;
        listener
            .batch_execute(&pgmill::driver::listen_sql(&channel)?)
            .await?;
        let fetcher = self.db.connect().await?;
        let claim_stmt = fetcher
            .prepare_typed(&claim_sql(schema), &[Type::INT8])
            .await?;
        let complete_stmt = fetcher
            .prepare_typed(&complete_sql(schema), &[Type::INT8_ARRAY])
            .await?;
        let (starts_tx, mut starts_rx) = mpsc::unbounded_channel::<(JobId, Instant)>();
        let fetching = {
            let ledger = Arc::clone(&ledger);
            tokio::spawn(async move {
                loop {
                    // A notification, or the same 1 s poll pgmill falls back on.
                    let woke =
                        tokio::time::timeout(Config::default().poll_interval, notifications.recv())
                            .await;
                    if matches!(woke, Ok(None)) {
                        return Ok::<(), BenchError>(());
                    }
                    loop {
                        let jobs =
                            claim(&fetcher, &claim_stmt, Config::default().fetch_limit).await?;
                        let started = Instant::now();
                        let mut ids = Vec::with_capacity(jobs.len());
                        for &(id, i) in &jobs {
                            if starts_tx.send((JobId(id), started)).is_err() {
                                return Ok(());
                            }
                            ledger.record(i);
                            ids.push(id);
                        }
                        if !ids.is_empty() {
                            fetcher.execute(&complete_stmt, &[&ids]).await?;
                        }
                        if jobs.len() < Config::default().fetch_limit {
                            break;
                        }
                    }
                }
            })
        };
        tokio::time::sleep(IDLE_BEFORE_LATENCY).await;
        let inserter = self.db.connect().await?;
        let insert = inserter
            .prepare_typed(
                &format!(
                    "WITH j AS (INSERT INTO {}.pgmill_job (kind, args) VALUES ($1, $2) RETURNING id) \
                     SELECT j.id, pg_notify($3, 'default')::text FROM j",
                    schema.quoted()
                ),
                &[Type::TEXT, Type::JSONB, Type::TEXT],
            )
            .await?;
        let progress = Progress::bar(m, "floor: latency inserts");
        let mut committed: HashMap<JobId, Instant> = HashMap::new();
        let mut ticks = tokio::time::interval(opts.latency_interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for i in 0..m {
            ticks.tick().await;
            let args = serde_json::json!({ "i": i });
            let row = inserter
                .query_one(&insert, &[&BenchJob::KIND, &args, &channel])
                .await?;
            committed.insert(JobId(row.try_get(0)?), Instant::now());
            progress.inc(1);
        }
        progress.finish();
        let starts = collect_starts(&mut starts_rx, m, FLOOR).await;
        drop(starts_rx);
        drop(listener);
        // The fetcher ends when the listener's channel closes; its last completion commits first.
        let fetched = tokio::time::timeout(STALL_TIMEOUT, fetching).await;
        let starts = starts?;
        match fetched {
            Ok(Ok(result)) => result?,
            Ok(Err(e)) => return Err(BenchError::context("floor fetcher", e)),
            Err(_) => return Err(BenchError::new("floor fetcher did not stop")),
        }
        Ok(Run {
            measurement: Measurement::Latency(latencies(&committed, &starts)?),
            ledger: Some(ledger),
        })
    }
}
