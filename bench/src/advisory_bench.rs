//! The advisory-lock reference (`advisory`): w3 as a Que-style locker written by hand on
//! tokio-postgres, against the same `pgmill_job` table, next to the row-state ceiling.
//!
//! A job is taken by a session-level `pg_try_advisory_lock` on its id, held on the one locker
//! connection until its outcome is recorded; the claim writes nothing. As in Que
//! (`lib/que/poller.rb`), a recursive CTE walks `pgmill_job_fetch_idx` one row at a time and
//! tries each row's lock, so it locks exactly the jobs it returns, and leaves out the ids the
//! locker already holds (a session's advisory locks are re-entrant: its own `pg_try_advisory_lock`
//! on a held id succeeds again). Unlike Que, each claim starts after the last job the previous one
//! took instead of at the head of the index, which skips the jobs held or finished since (the
//! ceiling's claim never rescans them either). The locker claims 100 jobs per round trip into a
//! bounded channel of 200, `--workers` executor tasks take from it, and one completer records
//! whatever has finished (up to 2,000) with one `UPDATE ... WHERE id = ANY($1)` on a connection of
//! its own; once that has committed, the locker connection releases the batch's locks with one
//! `pg_advisory_unlock` statement (pipelined with its claims). Two connections in all, as the
//! ceiling.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use pgmill::{CompleterConfig, Schema};
use tokio::sync::mpsc;
use tokio_postgres::types::Type;

use crate::bench_database::BenchDatabase;
use crate::bench_error::BenchError;
use crate::ceiling_bench::{CLAIM_BATCH, PREFETCH, queue_jobs, spawn_executors};
use crate::engine_bench::join_all;
use crate::execution_ledger::ExecutionLedger;
use crate::progress::Progress;
use crate::stopwatch::Stopwatch;
use crate::{Run, STALL_TIMEOUT, Scenario};

/// The claim: walks the available jobs of the default queue in fetch order after the position
/// `($3, $4, $5)`, skipping the held ids `$1`, trying each one's advisory lock until `$2` are
/// locked; returns the locked ones.
fn claim_sql(schema: &Schema) -> String {
    let next = |after: &str| {
        format!(
            "SELECT j FROM {s}.pgmill_job AS j \
             WHERE j.state = 'available' AND j.queue = 'default' AND j.scheduled_at <= now() \
               AND NOT j.id = ANY($1::bigint[]) \
               AND (j.priority, j.scheduled_at, j.id) > {after} \
             ORDER BY j.priority, j.scheduled_at, j.id \
             LIMIT 1",
            s = schema.quoted()
        )
    };
    format!(
        "WITH RECURSIVE jobs AS ( \
           SELECT (t.j).id, (t.j).priority, (t.j).scheduled_at, (t.j).args, l.locked, \
                  $2::bigint - l.locked::int AS remaining \
           FROM ({first}) AS t \
           CROSS JOIN LATERAL (SELECT pg_try_advisory_lock((t.j).id) AS locked) AS l \
           UNION ALL ( \
             SELECT (t.j).id, (t.j).priority, (t.j).scheduled_at, (t.j).args, l.locked, \
                    t.remaining - l.locked::int \
             FROM (SELECT jobs.remaining, ({rest}) AS j \
                   FROM jobs WHERE jobs.id IS NOT NULL AND jobs.remaining > 0 LIMIT 1) AS t \
             CROSS JOIN LATERAL (SELECT pg_try_advisory_lock((t.j).id) AS locked) AS l \
           ) \
         ) \
         SELECT id, priority, scheduled_at, args FROM jobs WHERE locked",
        first = next("($3::smallint, $4::timestamptz, $5::bigint)"),
        rest = next("(jobs.priority, jobs.scheduled_at, jobs.id)"),
    )
}

/// The completion of many jobs at once: the columns the ceiling's claim and completion write
/// (the attempt is counted here, as no claim wrote it).
fn complete_sql(schema: &Schema) -> String {
    format!(
        "UPDATE {}.pgmill_job \
         SET state = 'completed', attempt = attempt + 1, attempted_at = now(), \
             finalized_at = now() \
         WHERE id = ANY($1)",
        schema.quoted()
    )
}

/// Releases the locks of `$1` on the locker connection; counts the locks released.
const UNLOCK_SQL: &str = "SELECT count(*) AS released FROM unnest($1::bigint[]) AS u(id) \
                          WHERE pg_advisory_unlock(u.id)";

/// The fetch position: the last job claimed, in fetch order.
type Position = (i16, DateTime<Utc>, i64);

/// w3 with advisory-lock claims: a locker, executor tasks, one batching completer.
pub(crate) async fn work(
    db: &BenchDatabase,
    schema: &Schema,
    scenario: &Scenario,
) -> Result<Run, BenchError> {
    let n = scenario.jobs;
    let ledger = Arc::new(ExecutionLedger::new(n));
    queue_jobs(db, schema, n, "advisory: queueing").await?;
    db.settle(schema).await?;

    let locker = Arc::new(db.connect().await?);
    let claim_stmt = locker
        .prepare_typed(
            &claim_sql(schema),
            &[
                Type::INT8_ARRAY,
                Type::INT8,
                Type::INT2,
                Type::TIMESTAMPTZ,
                Type::INT8,
            ],
        )
        .await?;
    let unlock_stmt = locker
        .prepare_typed(UNLOCK_SQL, &[Type::INT8_ARRAY])
        .await?;
    let completer = db.connect().await?;
    let complete_stmt = completer
        .prepare_typed(&complete_sql(schema), &[Type::INT8_ARRAY])
        .await?;
    // The ids whose locks the locker holds.
    let held: Arc<Mutex<HashSet<i64>>> = Arc::default();
    let max_batch = CompleterConfig::default().max_batch;
    let (job_tx, job_rx) = flume::bounded::<(i64, u64)>(PREFETCH);
    let (done_tx, mut done_rx) = mpsc::channel::<i64>(CompleterConfig::default().buffer);
    let progress = Progress::bar(n, "advisory: working");

    let stopwatch = Stopwatch::start(db).await;
    let completing = {
        let (progress, locker, held) = (progress.clone(), Arc::clone(&locker), Arc::clone(&held));
        tokio::spawn(async move {
            let mut completed = 0u64;
            let mut batch = Vec::with_capacity(max_batch);
            while completed < n {
                let first = tokio::time::timeout(STALL_TIMEOUT, done_rx.recv()).await;
                let Ok(Some(first)) = first else {
                    return Err(BenchError::new(format!(
                        "advisory stalled: {completed} of {n} jobs completed"
                    )));
                };
                batch.push(first);
                while batch.len() < max_batch {
                    match done_rx.try_recv() {
                        Ok(id) => batch.push(id),
                        Err(_) => break,
                    }
                }
                completed += completer.execute(&complete_stmt, &[&batch]).await?;
                // Only after the outcome is committed may another locker take the job.
                let released: i64 = locker.query_one(&unlock_stmt, &[&batch]).await?.get(0);
                if usize::try_from(released).ok() != Some(batch.len()) {
                    return Err(BenchError::new(format!(
                        "advisory released {released} locks for {} jobs",
                        batch.len()
                    )));
                }
                {
                    let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
                    for id in &batch {
                        held.remove(id);
                    }
                }
                progress.set(completed);
                batch.clear();
            }
            Ok(completed)
        })
    };
    let executors = spawn_executors(scenario.workers(), job_rx, done_tx, &ledger);
    let limit = i64::try_from(CLAIM_BATCH).unwrap_or(i64::MAX);
    // Before every job: the lowest priority, year 1 (inside Postgres's range), id 0.
    let year_one = DateTime::<Utc>::from_timestamp(-62_135_596_800, 0).unwrap_or_default();
    let mut position: Position = (i16::MIN, year_one, 0);
    loop {
        let held_now: Vec<i64> = held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        let rows = locker
            .query(
                &claim_stmt,
                &[&held_now, &limit, &position.0, &position.1, &position.2],
            )
            .await?;
        let got = rows.len();
        let mut jobs = Vec::with_capacity(got);
        {
            let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
            for row in &rows {
                let id: i64 = row.try_get("id")?;
                if !held.insert(id) {
                    return Err(BenchError::new(format!("advisory claimed job {id} twice")));
                }
                position = (row.try_get("priority")?, row.try_get("scheduled_at")?, id);
                let args: serde_json::Value = row.try_get("args")?;
                let i = args["i"].as_u64().ok_or_else(|| {
                    BenchError::new(format!("job {id} has no number in its args: {args}"))
                })?;
                jobs.push((id, i));
            }
        }
        for job in jobs {
            job_tx
                .send_async(job)
                .await
                .map_err(|_| BenchError::new("advisory executors ended early"))?;
        }
        if got < CLAIM_BATCH {
            // Nothing else inserts: fewer rows than asked after the position means it is drained.
            break;
        }
    }
    drop(job_tx);
    join_all(executors).await?;
    let completed = completing
        .await
        .map_err(|e| BenchError::context("advisory completer", e))??;
    let measurement = stopwatch.stop(n).await;
    progress.finish();
    if completed != n {
        return Err(BenchError::new(format!(
            "advisory completed {completed} rows for {n} jobs"
        )));
    }
    Ok(Run {
        measurement,
        ledger: Some(ledger),
    })
}
