//! One fault scenario: a database, worker processes on one driver, a steady backlog, the plan's
//! faults from outside, then the checks.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pgmill::Schema;
use pgmill_testdb::Cluster;

use crate::driver_kind::DriverKind;
use crate::error::Error;
use crate::plan::{Fault, Plan, Target};
use crate::probe::Probe;
use crate::report::Report;
use crate::worker_process::{WorkerProcess, WorkerSpec, log_tail};

/// How long the workers get to start their first jobs.
const STARTUP: Duration = Duration::from_secs(90);
/// How long the jobs get to finish once the faults are over.
const DRAIN: Duration = Duration::from_secs(240);
/// How long a worker gets to exit after SIGTERM.
const EXIT: Duration = Duration::from_secs(60);
/// The pause between two top-ups (and the resolution of the fault schedule).
const TICK: Duration = Duration::from_millis(200);

/// A fault scenario on one driver.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The driver the worker processes run on.
    pub driver: DriverKind,
    /// The `fault-worker` binary (`env!("CARGO_BIN_EXE_fault-worker")` in an integration test).
    pub worker_bin: PathBuf,
    /// What to do.
    pub plan: Plan,
}

impl Scenario {
    /// The scenario of [`Plan::from_env`] on `driver`.
    pub fn new(driver: DriverKind, worker_bin: impl AsRef<Path>) -> Scenario {
        Scenario {
            driver,
            worker_bin: worker_bin.as_ref().to_owned(),
            plan: Plan::from_env(),
        }
    }

    /// Runs the scenario: on a private cluster (or on `DATABASE_URL`'s server, without the
    /// crash restarts), in a fresh schema, and returns what it found. Every process it started
    /// is stopped, and the schema (on `DATABASE_URL`) or the cluster dropped, before it returns.
    ///
    /// # Errors
    ///
    /// When the scenario cannot run to its end (the cluster does not start, a worker cannot be
    /// spawned, the jobs do not finish within four minutes of the last fault).
    pub async fn run(self) -> Result<Report, Error> {
        let shared = std::env::var(pgmill_testdb::DATABASE_URL).ok();
        let (cluster, url, plan) = match shared {
            Some(url) => (None, url, self.plan.clone().without_restarts()),
            None => {
                let cluster = Cluster::start()?;
                let url = cluster.url();
                (Some(cluster), url, self.plan.clone())
            }
        };
        let schema_name = pgmill_testdb::fresh_schema_name();
        let schema = Schema::new(&schema_name)?;
        let log_dir = std::env::temp_dir().join(format!(
            "pgmill-faults-{}-{schema_name}",
            self.driver.name()
        ));
        std::fs::create_dir_all(&log_dir)
            .map_err(|e| Error::io(format!("creating {}", log_dir.display()), e))?;
        let mut probe = Probe::setup(&url, schema, cluster.is_some()).await?;
        let spec = WorkerSpec {
            bin: self.worker_bin.clone(),
            driver: self.driver,
            url: url.clone(),
            schema: schema_name.clone(),
            application_name: format!("pgmill-fault-{schema_name}"),
            concurrency: plan.concurrency,
            sleep_ms: plan.sleep_ms,
            job_timeout: plan.job_timeout,
            log_dir: log_dir.clone(),
        };
        let mut run = Run {
            spec,
            plan,
            cluster: cluster.as_ref(),
            probe: &mut probe,
            workers: Vec::new(),
            generations: Vec::new(),
            rng: Rng::from_env(),
            started: Instant::now(),
        };
        let outcome = run.go().await;
        drop(run);
        if cluster.is_none() {
            let _ = probe
                .query("DROP SCHEMA IF EXISTS {schema} CASCADE", &[])
                .await;
        }
        if std::env::var_os("PGMILL_FAULTS_KEEP_LOGS").is_some() {
            eprintln!("worker logs kept in {}", log_dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&log_dir);
        }
        outcome
    }
}

/// A scenario in progress.
struct Run<'a> {
    spec: WorkerSpec,
    plan: Plan,
    cluster: Option<&'a Cluster>,
    probe: &'a mut Probe,
    workers: Vec<WorkerProcess>,
    /// Per slot, how many processes it has had.
    generations: Vec<u32>,
    rng: Rng,
    started: Instant,
}

impl Run<'_> {
    async fn go(&mut self) -> Result<Report, Error> {
        self.probe.top_up(self.plan.backlog).await?;
        for slot in 0..self.plan.workers {
            self.generations.push(0);
            let id = self.client_id(slot);
            self.workers.push(WorkerProcess::spawn(&self.spec, &id)?);
        }
        self.wait_until_working().await?;

        let mut report = Report {
            driver: self.spec.driver,
            plan: self.plan.name,
            seed: self.rng.seed,
            fault_s: 0.0,
            drain_s: 0.0,
            inserted: 0,
            states: Vec::new(),
            lost: 0,
            never_run: 0,
            attempts: 0,
            started_twice: 0,
            finished_twice: 0,
            errored_attempts: 0,
            claim_run_twice: 0,
            without_token: 0,
            stale_outcomes: 0,
            superseded: 0,
            stale_work: 0,
            faults: Vec::new(),
            terminated: Vec::new(),
            restarts_s: Vec::new(),
            exits: Vec::new(),
            stops: Vec::new(),
            log_tails: Vec::new(),
            trace: Default::default(),
        };
        self.started = Instant::now();
        self.probe.record("start", None, true).await?;
        let steps = self.plan.steps.clone();
        let mut next = steps.iter().peekable();
        loop {
            let elapsed = self.started.elapsed();
            if let Some(step) = next.next_if(|s| s.at <= elapsed) {
                self.apply(step.fault, step.at, &mut report).await?;
                continue;
            }
            if next.peek().is_none() && elapsed >= self.plan.duration {
                break;
            }
            self.probe.top_up(self.plan.backlog).await?;
            tokio::time::sleep(TICK).await;
        }
        report.fault_s = self.started.elapsed().as_secs_f64();

        let drained = Instant::now();
        loop {
            let unfinished = self
                .probe
                .count(
                    "SELECT count(*) FROM {schema}.pgmill_job_all \
                     WHERE state NOT IN ('completed', 'cancelled', 'discarded')",
                    &[],
                )
                .await?;
            if unfinished == 0 {
                break;
            }
            if drained.elapsed() > DRAIN {
                // The checks below say which jobs are stuck.
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        report.drain_s = drained.elapsed().as_secs_f64();

        for w in &mut self.workers {
            let status = w.terminate(EXIT).await?;
            report.exits.push((w.client_id().to_owned(), status));
        }
        report.log_tails = self
            .all_client_ids()
            .into_iter()
            .map(|id| {
                let tail = log_tail(&self.spec.log_dir, &id, 15);
                (id, tail)
            })
            .collect();
        report.inserted = self.probe.inserted();
        Report::gather(self.probe, report).await
    }

    fn client_id(&self, slot: usize) -> String {
        format!(
            "{}-w{slot}-g{}",
            self.spec.driver.name(),
            self.generations[slot]
        )
    }

    fn all_client_ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for (slot, &generations) in self.generations.iter().enumerate() {
            for g in 0..=generations {
                ids.push(format!("{}-w{slot}-g{g}", self.spec.driver.name()));
            }
        }
        ids
    }

    /// Waits until every worker has started an attempt and one of them leads.
    async fn wait_until_working(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + STARTUP;
        let want = i64::try_from(self.workers.len()).unwrap_or(i64::MAX);
        while Instant::now() < deadline {
            let working = self
                .probe
                .count(
                    "SELECT count(DISTINCT client_id) FROM {schema}.fault_attempt",
                    &[],
                )
                .await?;
            if working >= want && self.probe.leader().await?.is_some() {
                return Ok(());
            }
            self.probe.top_up(self.plan.backlog).await?;
            tokio::time::sleep(TICK).await;
        }
        let tails: Vec<String> = self
            .workers
            .iter()
            .map(|w| {
                format!(
                    "{}: {}",
                    w.client_id(),
                    log_tail(&self.spec.log_dir, w.client_id(), 5)
                )
            })
            .collect();
        Err(Error::Scenario(format!(
            "the workers did not all start working within {STARTUP:?}:\n{}",
            tails.join("\n")
        )))
    }

    async fn apply(
        &mut self,
        fault: Fault,
        at: Duration,
        report: &mut Report,
    ) -> Result<(), Error> {
        let bounded = self.plan.bounded(at);
        match fault {
            Fault::Kill(target) => {
                let Some(slot) = self.pick(target).await? else {
                    return Ok(());
                };
                let id = self.workers[slot].client_id().to_owned();
                self.probe.record("kill", Some(&id), bounded).await?;
                self.workers[slot].kill()?;
                self.generations[slot] += 1;
                let id = self.client_id(slot);
                self.workers[slot] = WorkerProcess::spawn(&self.spec, &id)?;
            }
            Fault::Freeze(target) => {
                let Some(slot) = self.pick(target).await? else {
                    return Ok(());
                };
                let id = self.workers[slot].client_id().to_owned();
                self.probe.record("freeze", Some(&id), bounded).await?;
                self.workers[slot].freeze()?;
            }
            Fault::Stop(target) => {
                let Some(slot) = self.pick(target).await? else {
                    return Ok(());
                };
                let id = self.workers[slot].client_id().to_owned();
                self.probe.record("stop", Some(&id), bounded).await?;
                let began = Instant::now();
                let status = self.workers[slot].terminate(EXIT).await?;
                report
                    .stops
                    .push((id, status, began.elapsed().as_secs_f64()));
                self.generations[slot] += 1;
                let id = self.client_id(slot);
                self.workers[slot] = WorkerProcess::spawn(&self.spec, &id)?;
            }
            Fault::Thaw => {
                for w in self.workers.iter_mut().filter(|w| w.is_frozen()) {
                    w.thaw()?;
                }
                self.probe.record("thaw", None, bounded).await?;
            }
            Fault::TerminateBackends => {
                let n = self
                    .probe
                    .terminate_backends(&self.spec.application_name)
                    .await?;
                report.terminated.push(n);
                self.probe.record("terminate", None, bounded).await?;
            }
            Fault::RestartImmediate => {
                let Some(cluster) = self.cluster else {
                    return Ok(());
                };
                self.probe.record("restart", None, bounded).await?;
                let began = Instant::now();
                cluster.restart_immediate()?;
                report.restarts_s.push(began.elapsed().as_secs_f64());
            }
        }
        Ok(())
    }

    /// The slot of the worker `target` names, among the live and unfrozen ones.
    async fn pick(&mut self, target: Target) -> Result<Option<usize>, Error> {
        let leader = self.probe.leader().await?;
        let is_leader = |w: &WorkerProcess| leader.as_deref() == Some(w.client_id());
        let live: Vec<usize> = (0..self.workers.len())
            .filter(|&i| !self.workers[i].is_frozen())
            .collect();
        if target == Target::Leader
            && let Some(&slot) = live.iter().find(|&&i| is_leader(&self.workers[i]))
        {
            return Ok(Some(slot));
        }
        let others: Vec<usize> = live
            .into_iter()
            .filter(|&i| !is_leader(&self.workers[i]))
            .collect();
        if others.is_empty() {
            return Ok(None);
        }
        Ok(Some(others[self.rng.below(others.len())]))
    }
}

/// A small xorshift generator for the victims; its seed is reported, and `PGMILL_FAULTS_SEED`
/// sets it.
#[derive(Debug)]
struct Rng {
    seed: u64,
    state: u64,
}

impl Rng {
    fn from_env() -> Rng {
        let seed = std::env::var("PGMILL_FAULTS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        Rng {
            seed,
            state: seed | 1,
        }
    }

    fn below(&mut self, n: usize) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state % n as u64) as usize
    }
}
