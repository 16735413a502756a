//! The workloads run through pgmill's public API on one driver.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pgmill::middleware::MetricsConfig;
use pgmill::{Client, ClientBuilder, InsertParams, JobId, Schema};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::bench_database::BenchDatabase;
use crate::bench_error::BenchError;
use crate::bench_job::{BenchJob, BenchWorker};
use crate::bench_result::Measurement;
use crate::execution_ledger::ExecutionLedger;
use crate::host_insert::HostInsert;
use crate::progress::Progress;
use crate::stopwatch::{MachineMeter, Stopwatch};
use crate::{
    BenchOptions, Contender, IDLE_BEFORE_LATENCY, INSERT_TASKS, Run, STALL_TIMEOUT, Scenario,
    TRICKLE, TRICKLE_INTERVAL, Workload,
};

/// pgmill on one driver.
#[derive(Debug, Clone)]
pub(crate) struct EngineBench<'a, D: HostInsert> {
    /// The driver's name in results.
    pub(crate) name: &'static str,
    /// The driver, connected.
    pub(crate) driver: D,
    /// The database (for the cost marks of each measured phase).
    pub(crate) db: &'a BenchDatabase,
    /// pgmill's metrics, on for the `+metrics` contenders (`--metrics`).
    pub(crate) metrics: Option<MetricsConfig>,
    /// The hand-written reference on this driver's library instead of pgmill (`<driver>_plain`,
    /// w2_insert_tx only).
    pub(crate) host_plain: bool,
}

impl<D: HostInsert> Contender for EngineBench<'_, D> {
    fn name(&self) -> &'static str {
        self.name
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
            Workload::W2InsertSingle => self.insert_single(schema, n, false, opts).await,
            Workload::W2InsertTx => self.insert_single(schema, n, true, opts).await,
            Workload::W3Work => self.work(schema, scenario).await,
            Workload::W4Latency => self.latency(schema, scenario, opts).await,
            Workload::W5Burst => self.burst(schema, scenario).await,
        }
    }
}

/// The insert parameters of jobs `0..n`.
fn bench_params(n: u64) -> Result<Vec<InsertParams>, BenchError> {
    (0..n)
        .map(|i| InsertParams::from_args(&BenchJob { i }, None).map_err(BenchError::from))
        .collect()
}

impl<D: HostInsert> EngineBench<'_, D> {
    /// A client builder on `schema`, with metrics when this contender has them.
    fn builder(&self, schema: &Schema) -> ClientBuilder<D> {
        let builder = Client::builder(self.driver.clone()).schema(schema.clone());
        match &self.metrics {
            Some(metrics) => builder.metrics(metrics.clone()),
            None => builder,
        }
    }

    /// An inserting client, with `--insert-notify-cooldown-ms` when given.
    fn inserter(&self, schema: &Schema, opts: &BenchOptions) -> Result<Client<D>, BenchError> {
        let mut builder = self.builder(schema);
        if let Some(cooldown) = opts.insert_notify_cooldown {
            builder = builder.insert_notify_cooldown(Some(cooldown));
        }
        Ok(builder.build()?)
    }

    fn worker_client(
        &self,
        schema: &Schema,
        scenario: &Scenario,
        worker: BenchWorker,
    ) -> Result<Client<D>, BenchError> {
        Ok(self
            .builder(schema)
            .queue("default", scenario.workers())
            .worker(worker)
            .build()?)
    }

    /// w1: `Client::insert_bulk` of n jobs in calls of `per_call`, each its own transaction.
    async fn insert_bulk(&self, schema: &Schema, n: u64, per_call: u64) -> Result<Run, BenchError> {
        let client = self.builder(schema).build()?;
        let params = bench_params(n)?;
        let per_call = usize::try_from(per_call.max(1)).unwrap_or(usize::MAX);
        let spinner = Progress::spinner(format!(
            "{}: insert_bulk of {n} jobs, {per_call} per call",
            self.name
        ));
        let stopwatch = Stopwatch::start(self.db).await;
        let mut inserted = 0;
        for chunk in params.chunks(per_call) {
            inserted += client.insert_bulk(chunk).await?;
        }
        let measurement = stopwatch.stop(n).await;
        spinner.finish();
        if inserted != n {
            return Err(BenchError::new(format!(
                "insert_bulk reported {inserted} rows for {n} jobs"
            )));
        }
        Ok(Run::throughput(measurement))
    }

    /// w2: n jobs inserted one by one from concurrent tasks: `Client::insert` (each committed on
    /// its own, announced after its commit), or, `in_tx`, `tx.insert_job(..)` in a transaction of
    /// the driver's own library (with the inserter's debounced in-transaction notification).
    async fn insert_single(
        &self,
        schema: &Schema,
        n: u64,
        in_tx: bool,
        opts: &BenchOptions,
    ) -> Result<Run, BenchError> {
        let client = self.inserter(schema, opts)?;
        let next = Arc::new(AtomicU64::new(0));
        let progress = Progress::bar(n, format!("{}: single inserts", self.name));
        let stopwatch = Stopwatch::start(self.db).await;
        let mut tasks = JoinSet::new();
        for _ in 0..INSERT_TASKS {
            let (client, next, progress) = (client.clone(), Arc::clone(&next), progress.clone());
            let driver = self.driver.clone();
            let (schema, host_plain) = (schema.clone(), self.host_plain);
            tasks.spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok::<(), BenchError>(());
                    }
                    if in_tx && host_plain {
                        driver
                            .insert_plain_in_own_transaction(&schema, BenchJob { i })
                            .await?;
                    } else if in_tx {
                        driver
                            .insert_in_own_transaction(client.inserter(), BenchJob { i })
                            .await?;
                    } else {
                        client.insert(BenchJob { i }).await?;
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

    /// w3: n jobs queued by `insert_bulk`, then a client started; timed from start until the
    /// client has recorded n outcomes.
    async fn work(&self, schema: &Schema, scenario: &Scenario) -> Result<Run, BenchError> {
        let n = scenario.jobs;
        let ledger = Arc::new(ExecutionLedger::new(n));
        let worker = BenchWorker {
            ledger: Arc::clone(&ledger),
            starts: None,
        };
        let client = self.worker_client(schema, scenario, worker)?;
        let spinner = Progress::spinner(format!("{}: queueing {n} jobs", self.name));
        client.insert_bulk(&bench_params(n)?).await?;
        self.db.settle(schema).await?;
        spinner.finish();
        let progress = Progress::bar(n, format!("{}: working", self.name));
        let stopwatch = Stopwatch::start(self.db).await;
        client.start().await?;
        self.wait_for_outcomes(&client, n, &ledger, &progress)
            .await?;
        let measurement = stopwatch.stop(n).await;
        progress.finish();
        client.stop().await;
        Ok(Run {
            measurement,
            ledger: Some(ledger),
        })
    }

    /// Waits until `client` has recorded `n` outcomes, showing them on `progress`; fails (and
    /// stops the client) when none is recorded for [`STALL_TIMEOUT`].
    async fn wait_for_outcomes(
        &self,
        client: &Client<D>,
        n: u64,
        ledger: &ExecutionLedger,
        progress: &Progress,
    ) -> Result<(), BenchError> {
        let mut last = (0, Instant::now());
        loop {
            let done = client.stats().recorded_outcomes;
            progress.set(done);
            if done >= n {
                return Ok(());
            }
            if done != last.0 {
                last = (done, Instant::now());
            } else if last.1.elapsed() > STALL_TIMEOUT {
                client.stop_and_cancel().await;
                return Err(BenchError::new(format!(
                    "{} stalled: {done} of {n} outcomes recorded, {} executions, nothing for {} s",
                    self.name,
                    ledger.total(),
                    STALL_TIMEOUT.as_secs()
                )));
            }
            // Looked at every 5 ms: the stop is late by at most that (0.2 % of a 2.5 s run),
            // which counts against pgmill; looking every millisecond woke this thread a thousand
            // times a second on the two cores the run shares.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// w5: a client started on the empty queue; [`TRICKLE`] jobs inserted one by one, one every
    /// [`TRICKLE_INTERVAL`], and worked (the client's claims and completions run, and are
    /// planned, on the small table); then the other n - [`TRICKLE`] jobs inserted by one
    /// `insert_bulk`, timed from the call until the client has recorded all n outcomes.
    async fn burst(&self, schema: &Schema, scenario: &Scenario) -> Result<Run, BenchError> {
        let n = scenario.jobs.max(TRICKLE + 1);
        let ledger = Arc::new(ExecutionLedger::new(n));
        let worker = BenchWorker {
            ledger: Arc::clone(&ledger),
            starts: None,
        };
        let client = self.worker_client(schema, scenario, worker)?;
        client.start().await?;
        let progress = Progress::bar(n, format!("{}: trickle, then burst", self.name));
        for i in 0..TRICKLE {
            client.insert(BenchJob { i }).await?;
            tokio::time::sleep(TRICKLE_INTERVAL).await;
        }
        self.wait_for_outcomes(&client, TRICKLE, &ledger, &progress)
            .await?;
        let burst: Vec<InsertParams> =
            bench_params(n)?.split_off(usize::try_from(TRICKLE).unwrap_or(usize::MAX));
        let stopwatch = Stopwatch::start(self.db).await;
        client.insert_bulk(&burst).await?;
        self.wait_for_outcomes(&client, n, &ledger, &progress)
            .await?;
        let measurement = stopwatch.stop(n - TRICKLE).await;
        progress.finish();
        client.stop().await;
        Ok(Run {
            measurement,
            ledger: Some(ledger),
        })
    }

    /// w4: an idle listening client; jobs inserted one by one by another client, a fixed interval
    /// apart, each committed on its own; latency from the insert's return to the worker's start.
    async fn latency(
        &self,
        schema: &Schema,
        scenario: &Scenario,
        opts: &BenchOptions,
    ) -> Result<Run, BenchError> {
        let m = scenario.jobs;
        let ledger = Arc::new(ExecutionLedger::new(m));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let worker = BenchWorker {
            ledger: Arc::clone(&ledger),
            starts: Some(tx),
        };
        let client = self.worker_client(schema, scenario, worker)?;
        client.start().await?;
        tokio::time::sleep(IDLE_BEFORE_LATENCY).await;
        let inserter = self.inserter(schema, opts)?;
        let meter = MachineMeter::start();
        let progress = Progress::bar(m, format!("{}: latency inserts", self.name));
        let mut committed: HashMap<JobId, Instant> = HashMap::new();
        let mut ticks = tokio::time::interval(opts.latency_interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for i in 0..m {
            ticks.tick().await;
            let job = inserter.insert(BenchJob { i }).await?;
            committed.insert(job.id, Instant::now());
            progress.inc(1);
        }
        progress.finish();
        let starts = collect_starts(&mut rx, m, self.name).await;
        let machine = meter.readings();
        let recorded = wait_for(|| client.stats().recorded_outcomes >= m).await;
        client.stop().await;
        let starts = starts?;
        if !recorded {
            return Err(BenchError::new(format!(
                "{}: only {} of {m} outcomes recorded within {} s",
                self.name,
                client.stats().recorded_outcomes,
                STALL_TIMEOUT.as_secs()
            )));
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

/// Waits (up to the stall timeout) until `done` is true.
pub(crate) async fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + STALL_TIMEOUT;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// Receives `m` start times, or fails once none arrived for the stall timeout.
pub(crate) async fn collect_starts(
    rx: &mut mpsc::UnboundedReceiver<(JobId, Instant)>,
    m: u64,
    name: &str,
) -> Result<HashMap<JobId, Instant>, BenchError> {
    let mut starts = HashMap::new();
    while (starts.len() as u64) < m {
        match tokio::time::timeout(STALL_TIMEOUT, rx.recv()).await {
            Ok(Some((id, at))) => {
                if starts.insert(id, at).is_some() {
                    return Err(BenchError::new(format!("{name}: job {id} started twice")));
                }
            }
            _ => {
                return Err(BenchError::new(format!(
                    "{name}: only {} of {m} jobs started within {} s of the last",
                    starts.len(),
                    STALL_TIMEOUT.as_secs()
                )));
            }
        }
    }
    Ok(starts)
}

/// Commit-to-start latencies of every job (zero when the start was seen before the insert
/// returned).
pub(crate) fn latencies(
    committed: &HashMap<JobId, Instant>,
    starts: &HashMap<JobId, Instant>,
) -> Result<Vec<Duration>, BenchError> {
    let mut samples = Vec::with_capacity(committed.len());
    for (id, at) in committed {
        let started = starts
            .get(id)
            .ok_or_else(|| BenchError::new(format!("job {id} was inserted but never started")))?;
        samples.push(started.saturating_duration_since(*at));
    }
    Ok(samples)
}

/// Waits for every task, returning the first error.
pub(crate) async fn join_all(mut tasks: JoinSet<Result<(), BenchError>>) -> Result<(), BenchError> {
    let mut first = None;
    while let Some(joined) = tasks.join_next().await {
        let result =
            joined.unwrap_or_else(|e| Err(BenchError::context("a benchmark task failed", e)));
        if let Err(e) = result {
            first.get_or_insert(e);
            tasks.abort_all();
        }
    }
    first.map_or(Ok(()), Err)
}
