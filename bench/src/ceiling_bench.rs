//! The ceiling: each workload as the fastest simple hand-written queue on tokio-postgres, against
//! the same `pgmill_job` table, on the same database, in the same invocation.
//!
//! - w1: one `COPY ... FROM STDIN` of (kind, args) per call (w1_insert_bulk: one call of n;
//!   w1_insert_batches: calls of --batch-size, each committed on its own).
//! - w2_insert_single: a prepared `INSERT` of (kind, args) per job, committed on its own, from the
//!   same number of tasks, each on its own connection, without notification. The second reference,
//!   `ceiling_notify`, sends `pg_notify` in each insert's statement, as a queue that notifies in
//!   every insert transaction does.
//! - w2_insert_tx: the same prepared `INSERT` in an application transaction of its own (`BEGIN`,
//!   the insert, `COMMIT`), the shape of an application that enqueues inside its own transaction,
//!   without notification.
//! - w3: one fetcher claims 100 jobs per round trip (`UPDATE ... WHERE id = ANY(ARRAY(SELECT ...
//!   FOR UPDATE SKIP LOCKED LIMIT 100)) RETURNING`), each claim starting after the last job
//!   the previous one took (a keyset position, so a deep backlog's claims do not walk the dead
//!   index entries of the jobs claimed before them), into a bounded channel of 200 (it claims
//!   again as soon as there is room, so the workers never wait for a claim), `--workers` executor tasks take jobs
//!   from it, and one completer marks finished jobs with one `UPDATE ... WHERE id = ANY($1)` per
//!   batch of whatever is waiting (up to 2,000).
//! - w4: the inserter's `INSERT` sends `pg_notify` in the same statement; a listening connection
//!   wakes the fetcher, which claims with the same statement and completes what it claimed.
//! - w5: w3's queue, started on the empty table; the trickle's jobs inserted one by one with the
//!   prepared `INSERT`, each waking the fetcher (which otherwise claims every 50 ms); the burst
//!   one `COPY`, then `ANALYZE` of the table (at a statistics target of 10, as pgmill's analyzer
//!   takes it), then a wake. The `ANALYZE` is what a hand-written
//!   queue must do after a burst: its prepared statements' plans were made on the small table and
//!   keep scanning the table for the claimed and completed ids until the table's statistics
//!   change.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use pgmill::{CompleterConfig, Config, JobArgs, JobId, Schema};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Statement};

use crate::bench_database::{BenchDatabase, copy_rows};
use crate::bench_error::BenchError;
use crate::bench_job::BenchJob;
use crate::bench_result::{ADVISORY, CEILING, CEILING_NOTIFY, Measurement};
use crate::engine_bench::{collect_starts, join_all, latencies};
use crate::execution_ledger::ExecutionLedger;
use crate::progress::Progress;
use crate::stopwatch::{MachineMeter, Stopwatch};
use crate::{
    BenchOptions, Contender, IDLE_BEFORE_LATENCY, INSERT_TASKS, Run, STALL_TIMEOUT, Scenario,
    TRICKLE, TRICKLE_INTERVAL, Workload,
};

/// Jobs one claim of the ceiling takes.
pub(crate) const CLAIM_BATCH: usize = 100;
/// Claimed jobs waiting for an executor, at most.
pub(crate) const PREFETCH: usize = 2 * CLAIM_BATCH;

/// The hand-written queue on the benchmark's database.
#[derive(Debug)]
pub(crate) struct CeilingBench<'a> {
    /// The database.
    pub(crate) db: &'a BenchDatabase,
    /// Sends a `NOTIFY` with every single insert (the `ceiling_notify` reference of
    /// w2_insert_single).
    pub(crate) notify_each_insert: bool,
    /// Claims with advisory locks instead of row state (the `advisory` reference of w3_work,
    /// `crate::advisory_bench`).
    pub(crate) advisory: bool,
}

impl CeilingBench<'_> {
    /// The name in results (a `&'static str`, whatever the database's lifetime).
    pub(crate) fn name_of(&self) -> &'static str {
        if self.advisory {
            ADVISORY
        } else if self.notify_each_insert {
            CEILING_NOTIFY
        } else {
            CEILING
        }
    }
}

impl Contender for CeilingBench<'_> {
    fn name(&self) -> &'static str {
        self.name_of()
    }

    async fn run(
        &self,
        scenario: &Scenario,
        schema: &Schema,
        opts: &BenchOptions,
    ) -> Result<Run, BenchError> {
        let n = scenario.jobs;
        match scenario.workload {
            Workload::W1InsertBulk => self.insert_bulk(schema, n, n).await,
            Workload::W1InsertBatches => self.insert_bulk(schema, n, opts.batch_size).await,
            Workload::W2InsertSingle => self.insert_single(schema, n, false).await,
            Workload::W2InsertTx => self.insert_single(schema, n, true).await,
            Workload::W3Work if self.advisory => {
                crate::advisory_bench::work(self.db, schema, scenario).await
            }
            Workload::W3Work => self.work(schema, scenario).await,
            Workload::W4Latency => self.latency(schema, opts).await,
            Workload::W5Burst => self.burst(schema, scenario).await,
        }
    }
}

/// The claim: up to $1 due available jobs of the default queue, in fetch order, marked running.
///
/// The locked ids are matched as one array (`WHERE id = ANY(ARRAY(SELECT ...))`), rather than
/// joined from a CTE or matched with `WHERE id IN (SELECT ...)`: the same rows, with the least to
/// plan and run. `pg_stat_statements` measured the CTE join at 8.9 µs of server time per claimed
/// row against 10.9 for the `IN` form, and the array at 1.519 ms of execution and 0.146 ms of
/// planning per claim of 100 rows against the CTE join's 1.613 and 0.177.
///
/// The limit and the position are read through scalar subqueries (`(SELECT $1::bigint)`), so the
/// plan does not depend on their values and Postgres keeps one generic plan for the prepared
/// statement instead of planning every claim: bound directly, the generic plan's estimate (a
/// LIMIT of 10 % of the rows) made it look far dearer than a custom one, and every claim was
/// planned again (0.10–0.16 ms a claim). pgmill's claim is written the same way.
fn claim_sql(schema: &Schema) -> String {
    claim_sql_from(schema, "", "")
}

/// w3's claim: as [`claim_sql`], but from a position in fetch order, `($2, $3, $4)` =
/// `(priority, scheduled_at, id)` of the last job claimed, so the index scan starts there rather
/// than at the head of the queue, where the entries of the jobs claimed since the last vacuum
/// pile up (a fetcher alone on its queue, into which nothing is inserted behind it, needs no
/// claim from the head). Returns the position columns with each job.
fn claim_after_sql(schema: &Schema) -> String {
    claim_sql_from(
        schema,
        "AND (priority, scheduled_at, id) > \
         ((SELECT $2::smallint), (SELECT $3::timestamptz), (SELECT $4::bigint))",
        ", j.priority, j.scheduled_at",
    )
}

/// The claim with `condition` added to its scan and `returning` to what it returns.
fn claim_sql_from(schema: &Schema, condition: &str, returning: &str) -> String {
    format!(
        "UPDATE {s}.pgmill_job AS j \
         SET state = 'running', attempt = j.attempt + 1, attempted_at = now() \
         WHERE j.id = ANY(ARRAY( \
           SELECT id FROM {s}.pgmill_job \
           WHERE state = 'available' AND queue = 'default' AND scheduled_at <= now() \
             {condition} \
           ORDER BY priority, scheduled_at, id \
           LIMIT (SELECT $1::bigint) \
           FOR UPDATE SKIP LOCKED)) \
         RETURNING j.id, j.args{returning}",
        s = schema.quoted()
    )
}

/// Where a positioned claim starts: `(priority, scheduled_at, id)` of the last job claimed, or
/// before every job.
type FetchPosition = (i16, chrono::DateTime<chrono::Utc>, i64);

/// Before every job: priorities are never `i16::MIN`, so the time and id do not matter.
const BEFORE_EVERY_JOB: FetchPosition = (i16::MIN, chrono::DateTime::UNIX_EPOCH, 0);

/// One claim of up to [`CLAIM_BATCH`] jobs from `position`, which it moves to the last job
/// claimed; the jobs, once all are decoded, handed to the executors on `jobs`. Returns how many
/// it claimed.
async fn claim_into(
    client: &Client,
    stmt: &Statement,
    position: &mut FetchPosition,
    jobs: &flume::Sender<(i64, u64)>,
) -> Result<usize, BenchError> {
    let limit = i64::try_from(CLAIM_BATCH).unwrap_or(i64::MAX);
    let rows = client
        .query(stmt, &[&limit, &position.0, &position.1, &position.2])
        .await?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in &rows {
        let at: FetchPosition = (row.try_get(2)?, row.try_get(3)?, row.try_get(0)?);
        *position = (*position).max(at);
        claimed.push(job_number(row)?);
    }
    for job in claimed {
        jobs.send_async(job)
            .await
            .map_err(|_| BenchError::new("ceiling executors ended early"))?;
    }
    Ok(rows.len())
}

/// The completion of many jobs at once.
fn complete_sql(schema: &Schema) -> String {
    format!(
        "UPDATE {}.pgmill_job SET state = 'completed', finalized_at = now() \
         WHERE id = ANY($1)",
        schema.quoted()
    )
}

/// The ceiling's insert of one job's (kind, args), without notification.
pub(crate) fn insert_sql(schema: &Schema) -> String {
    format!(
        "INSERT INTO {}.pgmill_job (kind, args) VALUES ($1, $2)",
        schema.quoted()
    )
}

/// The ceiling's `COPY` of jobs' (kind, args) rows ([`copy_row`]).
fn copy_sql(schema: &Schema) -> String {
    format!(
        "COPY {}.pgmill_job (kind, args) FROM STDIN",
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

/// Queues `n` benchmark jobs by COPY (before the timed phase).
pub(crate) async fn queue_jobs(
    db: &BenchDatabase,
    schema: &Schema,
    n: u64,
    label: &'static str,
) -> Result<(), BenchError> {
    let queue = copy_sql(schema);
    let filler = db.connect().await?;
    let progress = Progress::bar(n, label);
    copy_rows(&filler, &queue, n, &progress, copy_row).await?;
    progress.finish();
    Ok(())
}

/// `workers` executor tasks: each takes claimed `(id, i)` jobs from `jobs`, records its run in
/// the ledger and hands the id to the completer through `done`.
pub(crate) fn spawn_executors(
    workers: usize,
    jobs: flume::Receiver<(i64, u64)>,
    done: mpsc::Sender<i64>,
    ledger: &Arc<ExecutionLedger>,
) -> JoinSet<Result<(), BenchError>> {
    let mut executors = JoinSet::new();
    for _ in 0..workers {
        let (jobs, done, ledger) = (jobs.clone(), done.clone(), Arc::clone(ledger));
        executors.spawn(async move {
            while let Ok((id, i)) = jobs.recv_async().await {
                ledger.record(i);
                if done.send(id).await.is_err() {
                    break;
                }
            }
            Ok::<(), BenchError>(())
        });
    }
    executors
}

/// The tasks of a w3 or w5 run that outlive its fetcher.
struct WorkTasks {
    executors: JoinSet<Result<(), BenchError>>,
    completing: tokio::task::JoinHandle<Result<(), BenchError>>,
    /// Jobs the completer has marked completed.
    completed: Arc<AtomicU64>,
}

/// The end of a w3 or w5 run: the executors and the completer done, the stopwatch stopped for
/// `timed` jobs, and every one of the `n` completed.
async fn finish_work(
    WorkTasks {
        executors,
        completing,
        completed,
    }: WorkTasks,
    stopwatch: Stopwatch<'_>,
    n: u64,
    timed: u64,
    progress: Progress,
    ledger: Arc<ExecutionLedger>,
) -> Result<Run, BenchError> {
    join_all(executors).await?;
    completing
        .await
        .map_err(|e| BenchError::context("ceiling completer", e))??;
    let measurement = stopwatch.stop(timed).await;
    progress.finish();
    let completed = completed.load(Ordering::Relaxed);
    if completed != n {
        return Err(BenchError::new(format!(
            "ceiling completed {completed} rows for {n} jobs"
        )));
    }
    Ok(Run {
        measurement,
        ledger: Some(ledger),
    })
}

/// The ceiling's completer: marks the ids `done` hands it completed, a batch of whatever is
/// waiting (up to the engine's default batch) per `UPDATE`, adding the rows it marked to
/// `completed`, until `n` are; fails when nothing arrives for [`STALL_TIMEOUT`].
fn spawn_completer(
    completer: Client,
    complete_stmt: Statement,
    mut done: mpsc::Receiver<i64>,
    n: u64,
    completed: Arc<AtomicU64>,
    progress: Progress,
) -> tokio::task::JoinHandle<Result<(), BenchError>> {
    let max_batch = CompleterConfig::default().max_batch;
    tokio::spawn(async move {
        let mut batch = Vec::with_capacity(max_batch);
        while completed.load(Ordering::Relaxed) < n {
            let first = tokio::time::timeout(STALL_TIMEOUT, done.recv()).await;
            let Ok(Some(first)) = first else {
                return Err(BenchError::new(format!(
                    "ceiling stalled: {} of {n} jobs completed",
                    completed.load(Ordering::Relaxed)
                )));
            };
            batch.push(first);
            while batch.len() < max_batch {
                match done.try_recv() {
                    Ok(id) => batch.push(id),
                    Err(_) => break,
                }
            }
            let rows = completer.execute(&complete_stmt, &[&batch]).await?;
            progress.set(completed.fetch_add(rows, Ordering::Relaxed) + rows);
            batch.clear();
        }
        Ok(())
    })
}

/// One benchmark job as a COPY text row of (kind, args).
fn copy_row(i: u64, buf: &mut bytes::BytesMut) {
    buf.extend_from_slice(format!("{}\t{{\"i\":{i}}}\n", BenchJob::KIND).as_bytes());
}

impl CeilingBench<'_> {
    /// w1: COPYs of `per_call` rows, each committed on its own.
    async fn insert_bulk(&self, schema: &Schema, n: u64, per_call: u64) -> Result<Run, BenchError> {
        let client = self.db.connect().await?;
        let sql = copy_sql(schema);
        let per_call = per_call.max(1);
        let progress = Progress::bar(n, "ceiling: COPY");
        let stopwatch = Stopwatch::start(self.db).await;
        let mut copied = 0;
        let mut start = 0;
        while start < n {
            let rows = per_call.min(n - start);
            copied += copy_rows(&client, &sql, rows, &progress, |i, buf| {
                copy_row(start + i, buf);
            })
            .await?;
            start += rows;
        }
        let measurement = stopwatch.stop(n).await;
        progress.finish();
        if copied != n {
            return Err(BenchError::new(format!(
                "COPY reported {copied} rows for {n}"
            )));
        }
        Ok(Run::throughput(measurement))
    }

    /// w2: prepared single-row INSERTs from concurrent tasks, one connection each; each its own
    /// statement (`in_tx` false, with a `NOTIFY` for `ceiling_notify`) or in a transaction of its
    /// own (`in_tx`).
    async fn insert_single(&self, schema: &Schema, n: u64, in_tx: bool) -> Result<Run, BenchError> {
        let channel = format!("{}.ceiling_insert", schema.name());
        let (sql, types) = if self.notify_each_insert {
            (
                format!(
                    "WITH j AS (INSERT INTO {}.pgmill_job (kind, args) VALUES ($1, $2) RETURNING id) \
                     SELECT pg_notify($3, 'default') FROM j",
                    schema.quoted()
                ),
                vec![Type::TEXT, Type::JSONB, Type::TEXT],
            )
        } else {
            (insert_sql(schema), vec![Type::TEXT, Type::JSONB])
        };
        let mut conns = Vec::new();
        for _ in 0..INSERT_TASKS {
            let client = self.db.connect().await?;
            let stmt = client.prepare_typed(&sql, &types).await?;
            conns.push((client, stmt));
        }
        let next = Arc::new(AtomicU64::new(0));
        let progress = Progress::bar(n, format!("{}: single inserts", self.name()));
        let notify = self.notify_each_insert;
        let stopwatch = Stopwatch::start(self.db).await;
        let mut tasks = JoinSet::new();
        for (mut client, stmt) in conns {
            let (next, progress, channel) = (Arc::clone(&next), progress.clone(), channel.clone());
            tasks.spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok::<(), BenchError>(());
                    }
                    let args = serde_json::json!({ "i": i });
                    if notify {
                        client
                            .execute(&stmt, &[&BenchJob::KIND, &args, &channel])
                            .await?;
                    } else if in_tx {
                        let tx = client.transaction().await?;
                        tx.execute(&stmt, &[&BenchJob::KIND, &args]).await?;
                        tx.commit().await?;
                    } else {
                        client.execute(&stmt, &[&BenchJob::KIND, &args]).await?;
                    }
                    progress.inc(1);
                }
            });
        }
        join_all(tasks).await?;
        let measurement = stopwatch.stop(n).await;
        progress.finish();
        Ok(Run::throughput(measurement))
    }

    /// w3: a prefetching fetcher, executor tasks, one batching completer.
    async fn work(&self, schema: &Schema, scenario: &Scenario) -> Result<Run, BenchError> {
        let n = scenario.jobs;
        let ledger = Arc::new(ExecutionLedger::new(n));
        queue_jobs(self.db, schema, n, "ceiling: queueing").await?;
        self.db.settle(schema).await?;

        let mut position = BEFORE_EVERY_JOB;
        let progress = Progress::bar(n, "ceiling: working");
        let (fetcher, claim_stmt, job_tx, tasks) = self
            .start_queue(schema, scenario.workers(), n, &ledger, &progress)
            .await?;
        let stopwatch = Stopwatch::start(self.db).await;
        loop {
            let got = claim_into(&fetcher, &claim_stmt, &mut position, &job_tx).await?;
            if got < CLAIM_BATCH {
                // Nothing else inserts: fewer rows than asked means the queue is drained.
                break;
            }
        }
        drop(job_tx);
        finish_work(tasks, stopwatch, n, n, progress, ledger).await
    }

    /// w5: w3's queue started on the empty table, [`TRICKLE`] jobs inserted one by one, then the
    /// rest in one `COPY`, followed by `ANALYZE`; timed from the `COPY` until all are completed.
    async fn burst(&self, schema: &Schema, scenario: &Scenario) -> Result<Run, BenchError> {
        let n = scenario.jobs.max(TRICKLE + 1);
        let ledger = Arc::new(ExecutionLedger::new(n));
        let inserter = self.db.connect().await?;
        let insert_stmt = inserter
            .prepare_typed(&insert_sql(schema), &[Type::TEXT, Type::JSONB])
            .await?;
        let wake = Arc::new(tokio::sync::Notify::new());
        let progress = Progress::bar(n, "ceiling: trickle, then burst");
        let (fetcher, claim_stmt, job_tx, tasks) = self
            .start_queue(schema, scenario.workers(), n, &ledger, &progress)
            .await?;
        // Set from just before the burst's COPY until its ANALYZE is done: the fetcher does not
        // claim with plans about to be replaced.
        let bursting = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fetching = {
            let (wake, bursting) = (Arc::clone(&wake), Arc::clone(&bursting));
            tokio::spawn(async move {
                let mut position = BEFORE_EVERY_JOB;
                let mut claimed = 0;
                while claimed < n {
                    if bursting.load(Ordering::Acquire) {
                        wake.notified().await;
                        continue;
                    }
                    let got = claim_into(&fetcher, &claim_stmt, &mut position, &job_tx).await?;
                    claimed += u64::try_from(got).unwrap_or(u64::MAX);
                    if got < CLAIM_BATCH && claimed < n {
                        let _ = tokio::time::timeout(
                            std::time::Duration::from_millis(50),
                            wake.notified(),
                        )
                        .await;
                    }
                }
                Ok::<(), BenchError>(())
            })
        };
        for i in 0..TRICKLE {
            let args = serde_json::json!({ "i": i });
            inserter
                .execute(&insert_stmt, &[&BenchJob::KIND, &args])
                .await?;
            wake.notify_one();
            tokio::time::sleep(TRICKLE_INTERVAL).await;
        }
        let trickled = Instant::now();
        while tasks.completed.load(Ordering::Relaxed) < TRICKLE {
            if trickled.elapsed() > STALL_TIMEOUT {
                return Err(BenchError::new("ceiling: the trickle was not completed"));
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        bursting.store(true, Ordering::Release);
        let stopwatch = Stopwatch::start(self.db).await;
        let queue = copy_sql(schema);
        let spinner = Progress::spinner("ceiling: burst");
        copy_rows(&inserter, &queue, n - TRICKLE, &spinner, |i, buf| {
            copy_row(i + TRICKLE, buf);
        })
        .await?;
        spinner.finish();
        // On a small sample, as pgmill's analyzer takes it: the plans need the table's size, and
        // a statistics target of 10 takes it in a tenth of the default's time.
        inserter
            .batch_execute(&format!(
                "BEGIN; SET LOCAL default_statistics_target = 10; ANALYZE {}.pgmill_job; COMMIT",
                schema.quoted()
            ))
            .await?;
        bursting.store(false, Ordering::Release);
        wake.notify_one();
        fetching
            .await
            .map_err(|e| BenchError::context("ceiling fetcher", e))??;
        finish_work(tasks, stopwatch, n, n - TRICKLE, progress, ledger).await
    }

    /// w3's queue but its fetcher: a connection with the claim from a position prepared on it
    /// (the fetcher's to use), the channel to the `workers` executor tasks, and the completer on
    /// a connection of its own, which ends once `n` jobs are completed.
    async fn start_queue(
        &self,
        schema: &Schema,
        workers: usize,
        n: u64,
        ledger: &Arc<ExecutionLedger>,
        progress: &Progress,
    ) -> Result<(Client, Statement, flume::Sender<(i64, u64)>, WorkTasks), BenchError> {
        let fetcher = self.db.connect().await?;
        let claim_stmt = fetcher
            .prepare_typed(
                &claim_after_sql(schema),
                &[Type::INT8, Type::INT2, Type::TIMESTAMPTZ, Type::INT8],
            )
            .await?;
        let completer = self.db.connect().await?;
        let complete_stmt = completer
            .prepare_typed(&complete_sql(schema), &[Type::INT8_ARRAY])
            .await?;
        let (job_tx, job_rx) = flume::bounded::<(i64, u64)>(PREFETCH);
        let (done_tx, done_rx) = mpsc::channel::<i64>(CompleterConfig::default().buffer);
        let completed = Arc::new(AtomicU64::new(0));
        let completing = spawn_completer(
            completer,
            complete_stmt,
            done_rx,
            n,
            Arc::clone(&completed),
            progress.clone(),
        );
        let executors = spawn_executors(workers, job_rx, done_tx, ledger);
        let tasks = WorkTasks {
            executors,
            completing,
            completed,
        };
        Ok((fetcher, claim_stmt, job_tx, tasks))
    }

    /// w4: INSERT + pg_notify per job; LISTEN wakes a fetcher that claims and completes.
    async fn latency(&self, schema: &Schema, opts: &BenchOptions) -> Result<Run, BenchError> {
        let m = opts.latency_jobs;
        let ledger = Arc::new(ExecutionLedger::new(m));
        let channel = format!("{}.ceiling_insert", schema.name());
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
                        let jobs = claim(&fetcher, &claim_stmt, CLAIM_BATCH).await?;
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
                        if jobs.len() < CLAIM_BATCH {
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
        let meter = MachineMeter::start();
        let progress = Progress::bar(m, "ceiling: latency inserts");
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
        let starts = collect_starts(&mut starts_rx, m, CEILING).await;
        let machine = meter.readings();
        drop(starts_rx);
        drop(listener);
        // The fetcher ends when the listener's channel closes; its last completion commits first.
        let fetched = tokio::time::timeout(STALL_TIMEOUT, fetching).await;
        let starts = starts?;
        match fetched {
            Ok(Ok(result)) => result?,
            Ok(Err(e)) => return Err(BenchError::context("ceiling fetcher", e)),
            Err(_) => return Err(BenchError::new("ceiling fetcher did not stop")),
        }
        Ok(Run {
            measurement: Measurement::Latency {
                samples: latencies(&committed, &starts)?,
                machine,
            },
            ledger: Some(ledger),
        })
    }
}
