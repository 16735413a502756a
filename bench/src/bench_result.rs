//! One benchmark figure, its ratio to the hand-written ceiling, and how results are shown.

use std::time::Duration;

use serde_json::json;

use crate::bench_database::DbMark;
use crate::markdown_table::MarkdownTable;
use crate::percentiles::{Percentiles, millis};
use crate::{Scenario, Workload};

/// The name results of the hand-written queue carry in the `driver` field.
pub(crate) const CEILING: &str = "ceiling";
/// The name of the second w2_insert_single reference: a hand-written insert that sends a
/// `NOTIFY` in every insert's transaction.
pub(crate) const CEILING_NOTIFY: &str = "ceiling_notify";
/// The suffix of the w2_insert_tx references written by hand on each driver's library
/// (`sqlx_plain`, ...).
pub(crate) const PLAIN_SUFFIX: &str = "_plain";

/// True for the name of a hand-written reference on a driver's library.
pub(crate) fn is_host_plain(driver: &str) -> bool {
    driver.ends_with(PLAIN_SUFFIX)
}

/// The name of the w3_work reference that claims with advisory locks, Que's way
/// (`--advisory`).
pub(crate) const ADVISORY: &str = "advisory";

/// What the database spent on a measured phase, per job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DbCost {
    /// WAL bytes inserted per job.
    pub(crate) wal_bytes_per_job: f64,
    /// Transactions that took a transaction id (wrote something) per job.
    pub(crate) xacts_per_job: f64,
    /// CPU microseconds every server process spent per job (backends, WAL writer, checkpointer,
    /// autovacuum), when the server runs on this machine.
    pub(crate) server_cpu_us_per_job: Option<f64>,
}

impl DbCost {
    /// The cost between two marks, over `jobs` jobs; the mark's own transaction id is left out.
    pub(crate) fn between(before: &DbMark, after: &DbMark, jobs: u64) -> Self {
        let jobs = jobs.max(1) as f64;
        DbCost {
            wal_bytes_per_job: (after.wal_bytes - before.wal_bytes).max(0) as f64 / jobs,
            xacts_per_job: (after.xid - before.xid - 1).max(0) as f64 / jobs,
            server_cpu_us_per_job: match (before.server_cpu, after.server_cpu) {
                (Some(b), Some(a)) => Some(a.saturating_sub(b).as_secs_f64() * 1e6 / jobs),
                _ => None,
            },
        }
    }
}

/// What the machine was like during one run: how much of its CPU the hypervisor took and what the
/// probes (see [`crate::speed_probe`]) read. Each reading is `None` where it could not be taken.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct MachineReadings {
    /// The share (0 to 1) of the machine's CPU time the hypervisor took (steal time).
    pub(crate) stolen: Option<f64>,
    /// The speed probe's median time (ms) for its fixed work.
    pub(crate) probe_ms: Option<f64>,
    /// The flush probe's mean time (ms) for a flush.
    pub(crate) flush_ms: Option<f64>,
}

/// What one run of a workload measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Measurement {
    /// `jobs` handled in `elapsed`.
    Throughput {
        /// Jobs in the run.
        jobs: u64,
        /// Wall time of the measured phase.
        elapsed: Duration,
        /// CPU time the benchmark process spent in the phase, where it can be read.
        client_cpu: Option<Duration>,
        /// The machine during the phase.
        machine: MachineReadings,
        /// WAL and write transactions of the phase, where they can be read.
        db_cost: Option<DbCost>,
    },
    /// Commit-to-start latency of each job.
    Latency {
        /// One sample per job.
        samples: Vec<Duration>,
        /// The machine during the inserts and starts.
        machine: MachineReadings,
    },
}

impl Measurement {
    /// The machine during the run.
    pub(crate) fn machine(&self) -> MachineReadings {
        match self {
            Measurement::Throughput { machine, .. } | Measurement::Latency { machine, .. } => {
                *machine
            }
        }
    }
}

/// The figure of one contender on one scenario, over one or more runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Figure {
    /// Throughput: the median run counts.
    Throughput {
        /// Jobs per run.
        jobs: u64,
        /// Jobs per second of each run, in run order.
        runs: Vec<f64>,
        /// Client CPU microseconds per job of each run that could measure it.
        client_cpu_us_per_job: Vec<f64>,
        /// The machine during each run, in run order.
        machine: Vec<MachineReadings>,
        /// Database cost of each run that could measure it.
        db_costs: Vec<DbCost>,
    },
    /// Latency percentiles over the samples of every run together.
    Latency {
        /// The percentiles.
        percentiles: Percentiles,
        /// How many runs the samples came from.
        runs: usize,
        /// The machine during each run, in run order.
        machine: Vec<MachineReadings>,
    },
}

impl Figure {
    /// The figure of several runs of one scenario; `None` without runs or when they disagree in
    /// kind.
    pub(crate) fn from_runs(runs: Vec<Measurement>) -> Option<Self> {
        let machine = runs.iter().map(Measurement::machine).collect();
        match runs.first()? {
            Measurement::Throughput { jobs, .. } => {
                let jobs = *jobs;
                let mut rates = Vec::with_capacity(runs.len());
                let mut cpu = Vec::with_capacity(runs.len());
                let mut db_costs = Vec::with_capacity(runs.len());
                for m in &runs {
                    let Measurement::Throughput {
                        jobs,
                        elapsed,
                        client_cpu,
                        db_cost,
                        ..
                    } = m
                    else {
                        return None;
                    };
                    rates.push(*jobs as f64 / elapsed.as_secs_f64().max(1e-9));
                    if let Some(c) = client_cpu {
                        cpu.push(c.as_secs_f64() * 1e6 / (*jobs).max(1) as f64);
                    }
                    db_costs.extend(*db_cost);
                }
                Some(Figure::Throughput {
                    jobs,
                    runs: rates,
                    client_cpu_us_per_job: cpu,
                    machine,
                    db_costs,
                })
            }
            Measurement::Latency { .. } => {
                let count = runs.len();
                let mut all = Vec::new();
                for m in runs {
                    match m {
                        Measurement::Latency { samples, .. } => all.extend(samples),
                        Measurement::Throughput { .. } => return None,
                    }
                }
                Some(Figure::Latency {
                    percentiles: Percentiles::of(all)?,
                    runs: count,
                    machine,
                })
            }
        }
    }

    /// Jobs per second (the median run), for throughput figures.
    pub(crate) fn jobs_per_s(&self) -> Option<f64> {
        match self {
            Figure::Throughput { runs, .. } => median(runs),
            Figure::Latency { .. } => None,
        }
    }

    /// The median WAL bytes and write transactions per job, where measured.
    pub(crate) fn db_cost(&self) -> Option<DbCost> {
        match self {
            Figure::Throughput { db_costs, .. } => Some(DbCost {
                wal_bytes_per_job: median(
                    &db_costs
                        .iter()
                        .map(|c| c.wal_bytes_per_job)
                        .collect::<Vec<_>>(),
                )?,
                xacts_per_job: median(
                    &db_costs.iter().map(|c| c.xacts_per_job).collect::<Vec<_>>(),
                )?,
                server_cpu_us_per_job: median(
                    &db_costs
                        .iter()
                        .filter_map(|c| c.server_cpu_us_per_job)
                        .collect::<Vec<_>>(),
                ),
            }),
            Figure::Latency { .. } => None,
        }
    }

    /// The machine during each run, in run order.
    fn machine(&self) -> &[MachineReadings] {
        match self {
            Figure::Throughput { machine, .. } | Figure::Latency { machine, .. } => machine,
        }
    }

    /// One reading of every run that took it, in run order.
    fn readings(&self, reading: impl Fn(&MachineReadings) -> Option<f64>) -> Vec<f64> {
        self.machine().iter().filter_map(reading).collect()
    }

    /// The largest share of the machine's CPU time stolen during any of the runs that could
    /// read it: how far the hypervisor may have disturbed the figure.
    pub(crate) fn most_stolen(&self) -> Option<f64> {
        self.readings(|m| m.stolen).into_iter().reduce(f64::max)
    }

    /// The speed probe's time (ms) in each run that could measure it.
    pub(crate) fn probe_ms_runs(&self) -> Vec<f64> {
        self.readings(|m| m.probe_ms)
    }

    /// The speed probe's median time (ms) over the runs that could measure it: how fast the
    /// machine was while the figure was measured.
    pub(crate) fn probe_ms(&self) -> Option<f64> {
        median(&self.probe_ms_runs())
    }

    /// The flush probe's mean (ms) in each run that could measure it.
    pub(crate) fn flush_ms_runs(&self) -> Vec<f64> {
        self.readings(|m| m.flush_ms)
    }

    /// The flush probe's median over the runs that could measure it (each run's own figure
    /// being its mean flush): how fast the disk flushed while the figure was measured.
    pub(crate) fn flush_ms(&self) -> Option<f64> {
        median(&self.flush_ms_runs())
    }

    /// How many runs the figure summarises.
    pub(crate) fn runs(&self) -> usize {
        match self {
            Figure::Throughput { runs, .. } => runs.len(),
            Figure::Latency { runs, .. } => *runs,
        }
    }

    /// This figure relative to a reference's: throughput divided by the reference's, or for
    /// latency the reference's p50 divided by this p50 (higher is better either way).
    pub(crate) fn ratio_to(&self, reference: &Figure) -> Option<f64> {
        match (self, reference) {
            (Figure::Throughput { .. }, Figure::Throughput { .. }) => {
                Some(self.jobs_per_s()? / reference.jobs_per_s()?.max(1e-9))
            }
            (
                Figure::Latency {
                    percentiles: own, ..
                },
                Figure::Latency {
                    percentiles: reference,
                    ..
                },
            ) => Some(reference.p50.as_secs_f64() / own.p50.as_secs_f64().max(1e-9)),
            _ => None,
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// One row of the benchmark's output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BenchResult {
    /// `sqlx`, `tokio-postgres`, `diesel`, `ceiling`, `ceiling_notify` or `advisory`.
    pub(crate) driver: &'static str,
    /// The scenario.
    pub(crate) scenario: Scenario,
    /// The measurement.
    pub(crate) figure: Figure,
    /// The figure relative to the ceiling's in the same invocation.
    pub(crate) ceiling_ratio: Option<f64>,
    /// For w2_insert_single: the figure relative to the NOTIFY-per-insert reference.
    pub(crate) notify_ratio: Option<f64>,
    /// For w2_insert_tx: the figure relative to the same library's hand-written insert in its own
    /// transaction (`<driver>_plain`), which separates pgmill's cost from the library's.
    pub(crate) host_ratio: Option<f64>,
    /// Completed rows put in the table before the run (w3_work only).
    pub(crate) preload_completed: u64,
}

fn round(v: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (v * f).round() / f
}

impl BenchResult {
    /// The JSON line: `driver`, `workload`, `n`, `workers` (w3, w4), `jobs_per_s` (or `p50_ms`,
    /// `p95_ms`, `p99_ms`, `max_ms`), `ceiling_ratio`, plus `runs`, `jobs_per_s_runs` (each run's
    /// figure), `client_cpu_us_per_job` (the benchmark process's CPU per job, median run),
    /// `stolen_pct` (the most of the machine's CPU time the hypervisor took during a run),
    /// `probe_ms` (the speed probe's median time for its fixed work over the runs: lower is a
    /// faster machine) and `probe_ms_runs` (each run's), `flush_ms` and `flush_ms_runs` (the
    /// flush probe's mean flush, the median over the runs and each run's),
    /// `wal_bytes_per_job` and `xacts_per_job` (median run), `notify_ratio` (w2_insert_single)
    /// and `preload_completed` where they apply.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut v = json!({
            "driver": self.driver,
            "workload": self.scenario.workload.name(),
            "n": self.scenario.jobs,
        });
        if let Some(w) = self.scenario.workers {
            v["workers"] = json!(w);
        }
        match &self.figure {
            Figure::Throughput {
                runs,
                client_cpu_us_per_job,
                ..
            } => {
                v["jobs_per_s"] = json!(round(self.figure.jobs_per_s().unwrap_or(0.0), 1));
                v["jobs_per_s_runs"] = json!(runs.iter().map(|r| round(*r, 1)).collect::<Vec<_>>());
                if let Some(cpu) = median(client_cpu_us_per_job) {
                    v["client_cpu_us_per_job"] = json!(round(cpu, 2));
                }
                if let Some(c) = self.figure.db_cost() {
                    v["wal_bytes_per_job"] = json!(round(c.wal_bytes_per_job, 1));
                    v["xacts_per_job"] = json!(round(c.xacts_per_job, 3));
                    if let Some(cpu) = c.server_cpu_us_per_job {
                        v["server_cpu_us_per_job"] = json!(round(cpu, 2));
                    }
                }
            }
            Figure::Latency { percentiles: p, .. } => {
                v["p50_ms"] = json!(millis(p.p50));
                v["p95_ms"] = json!(millis(p.p95));
                v["p99_ms"] = json!(millis(p.p99));
                v["max_ms"] = json!(millis(p.max));
            }
        }
        if let Some(stolen) = self.figure.most_stolen() {
            v["stolen_pct"] = json!(round(stolen * 100.0, 1));
        }
        for (key, runs) in [
            ("probe_ms", self.figure.probe_ms_runs()),
            ("flush_ms", self.figure.flush_ms_runs()),
        ] {
            if let Some(m) = median(&runs) {
                v[key] = json!(round(m, 3));
                v[format!("{key}_runs")] =
                    json!(runs.iter().map(|r| round(*r, 3)).collect::<Vec<_>>());
            }
        }
        v["ceiling_ratio"] = json!(self.ceiling_ratio.map(|r| round(r, 3)));
        if let Some(r) = self.host_ratio {
            v["host_plain_ratio"] = json!(round(r, 3));
        }
        if let Some(r) = self.notify_ratio {
            v["notify_ratio"] = json!(round(r, 3));
        }
        v["runs"] = json!(self.figure.runs());
        if self.preload_completed > 0 {
            v["preload_completed"] = json!(self.preload_completed);
        }
        v
    }

    /// Whether the figure meets pgmill's target for this scenario and driver, with the target;
    /// `None` where there is none (the references, the one-call bulk insert).
    pub(crate) fn target(&self) -> Option<(bool, String)> {
        if [CEILING, CEILING_NOTIFY, ADVISORY].contains(&self.driver) || is_host_plain(self.driver)
        {
            return None;
        }
        let ratio = self.ceiling_ratio.unwrap_or(0.0);
        match (self.scenario.workload, &self.figure) {
            (Workload::W1InsertBatches, _) => Some((ratio >= 0.85, ">= 0.85 of ceiling".into())),
            (Workload::W2InsertSingle, _) => {
                let r = self.notify_ratio.unwrap_or(0.0);
                Some((r >= 1.5, ">= 1.5x ceiling_notify".into()))
            }
            (Workload::W2InsertTx, _) => Some((ratio >= 0.9, ">= 0.90 of ceiling".into())),
            (Workload::W3Work, _) => {
                let min = match (self.scenario.workers, self.driver) {
                    (Some(w), _) if w >= 100 => 0.9,
                    (_, "diesel") => 0.7,
                    _ => 0.85,
                };
                Some((ratio >= min, format!(">= {min:.2} of ceiling")))
            }
            (Workload::W4Latency, Figure::Latency { percentiles: p, .. }) => Some((
                millis(p.p50) <= 1.5 && millis(p.p99) <= 5.0,
                "p50 <= 1.5 ms, p99 <= 5 ms".into(),
            )),
            _ => None,
        }
    }
}

/// For w3 at several depths: each driver's cost per job at its deepest queue relative to its
/// shallowest, per worker count (target: within 20 %), with the most of the CPU stolen during
/// each of the two.
pub(crate) fn depth_lines(results: &[BenchResult]) -> Vec<String> {
    let mut lines = Vec::new();
    for r in results
        .iter()
        .filter(|r| r.scenario.workload == Workload::W3Work)
    {
        let same = |o: &&BenchResult| {
            o.driver == r.driver
                && o.scenario.workload == Workload::W3Work
                && o.scenario.workers == r.scenario.workers
        };
        let shallowest = results.iter().filter(same).min_by_key(|o| o.scenario.jobs);
        if let Some(s) = shallowest.filter(|s| s.scenario.jobs < r.scenario.jobs)
            && let (Some(deep), Some(shallow)) = (r.figure.jobs_per_s(), s.figure.jobs_per_s())
        {
            let growth = shallow / deep.max(1e-9);
            // Runs disturbed unequally by the hypervisor, or on machines of different speed,
            // make the growth say little of depth.
            let stolen = match (r.figure.most_stolen(), s.figure.most_stolen()) {
                (Some(d), Some(s)) => format!(
                    "; at most {:.0} % and {:.0} % of the CPU stolen",
                    d * 100.0,
                    s * 100.0
                ),
                _ => String::new(),
            };
            // A probe's reading in the deep run and in the shallow one, in ms.
            let probe = |label: &str, deep: Option<f64>, shallow: Option<f64>| match (deep, shallow)
            {
                (Some(d), Some(s)) => format!("; {label} {d:.2} and {s:.2} ms"),
                _ => String::new(),
            };
            let speed = probe("speed probe", r.figure.probe_ms(), s.figure.probe_ms());
            let flush = probe("flush", r.figure.flush_ms(), s.figure.flush_ms());
            lines.push(format!(
                "w3_work depth, {} with {} workers: {:.1} us/job at {} queued, {:.1} at {}: x{growth:.2} ({} within 20 %{stolen}{speed}{flush})",
                r.driver,
                r.scenario.workers(),
                1e6 / deep.max(1e-9),
                r.scenario.jobs,
                1e6 / shallow.max(1e-9),
                s.scenario.jobs,
                if growth <= 1.2 { "met," } else { "MISSED," }
            ));
        }
    }
    lines
}

/// The results as a Markdown table.
pub(crate) fn results_table(results: &[BenchResult]) -> MarkdownTable {
    let mut table = MarkdownTable::new(
        [
            "WORKLOAD",
            "DRIVER",
            "N",
            "WORKERS",
            "JOBS/S",
            "P50_MS",
            "P99_MS",
            "MAX_MS",
            "CEILING_RATIO",
            "CPU_US/JOB",
            "SRV_US/JOB",
            "WAL_B/JOB",
            "XACTS/JOB",
            "STOLEN_%",
            "PROBE_MS",
            "FLUSH_MS",
            "RUNS",
            "TARGET",
        ],
        [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
    );
    for r in results {
        let (rate, lat) = match &r.figure {
            Figure::Throughput { .. } => (
                format!("{:.0}", r.figure.jobs_per_s().unwrap_or(0.0)),
                [String::new(), String::new(), String::new()],
            ),
            Figure::Latency { percentiles: p, .. } => (
                String::new(),
                [p.p50, p.p99, p.max].map(|d| format!("{:.3}", millis(d))),
            ),
        };
        let workload = if r.preload_completed > 0 {
            format!(
                "{} (+{} done)",
                r.scenario.workload.name(),
                r.preload_completed
            )
        } else {
            r.scenario.workload.name().to_owned()
        };
        let target = match r.target() {
            Some((true, t)) => format!("met ({t})"),
            Some((false, t)) => format!("MISSED ({t})"),
            None => String::new(),
        };
        let ratio = match (r.ceiling_ratio, r.notify_ratio, r.host_ratio) {
            (Some(c), Some(n), _) => format!("{c:.3} ({n:.2}x notify)"),
            (Some(c), None, Some(h)) => format!("{c:.3} ({h:.2}x {}{PLAIN_SUFFIX})", r.driver),
            (Some(c), None, None) => format!("{c:.3}"),
            _ => String::new(),
        };
        let cost = r.figure.db_cost();
        let [p50, p99, max] = lat;
        table.row([
            workload,
            r.driver.to_owned(),
            r.scenario.jobs.to_string(),
            r.scenario.workers.map_or(String::new(), |w| w.to_string()),
            rate,
            p50,
            p99,
            max,
            ratio,
            match &r.figure {
                Figure::Throughput {
                    client_cpu_us_per_job,
                    ..
                } => median(client_cpu_us_per_job).map_or(String::new(), |c| format!("{c:.1}")),
                Figure::Latency { .. } => String::new(),
            },
            cost.and_then(|c| c.server_cpu_us_per_job)
                .map_or(String::new(), |c| format!("{c:.1}")),
            cost.map_or(String::new(), |c| format!("{:.0}", c.wal_bytes_per_job)),
            cost.map_or(String::new(), |c| format!("{:.3}", c.xacts_per_job)),
            r.figure
                .most_stolen()
                .map_or(String::new(), |s| format!("{:.0}", s * 100.0)),
            r.figure
                .probe_ms()
                .map_or(String::new(), |p| format!("{p:.2}")),
            r.figure
                .flush_ms()
                .map_or(String::new(), |f| format!("{f:.2}")),
            r.figure.runs().to_string(),
            target,
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn latency(p50: u64, p99: u64) -> Figure {
        Figure::Latency {
            percentiles: Percentiles {
                count: 10,
                p50: ms(p50),
                p95: ms(p99),
                p99: ms(p99),
                max: ms(p99),
            },
            runs: 1,
            machine: Vec::new(),
        }
    }

    fn throughput(jobs: u64, elapsed_ms: &[u64]) -> Figure {
        Figure::from_runs(
            elapsed_ms
                .iter()
                .map(|e| Measurement::Throughput {
                    jobs,
                    elapsed: ms(*e),
                    client_cpu: Some(ms(*e) / 2),
                    machine: MachineReadings {
                        stolen: Some(*e as f64 / 1000.0),
                        probe_ms: Some(1.0 + *e as f64 / 1000.0),
                        flush_ms: Some(*e as f64 / 100.0),
                    },
                    db_cost: Some(DbCost {
                        wal_bytes_per_job: 100.0,
                        xacts_per_job: 0.5,
                        server_cpu_us_per_job: Some(*e as f64),
                    }),
                })
                .collect(),
        )
        .unwrap()
    }

    fn scenario(workload: Workload, workers: Option<usize>, jobs: u64) -> Scenario {
        Scenario {
            workload,
            workers,
            jobs,
        }
    }

    #[test]
    fn medians_take_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn db_cost_leaves_out_the_marks_own_transaction() {
        let before = DbMark {
            wal_bytes: 1_000,
            xid: 10,
            server_cpu: Some(ms(100)),
        };
        let after = DbMark {
            wal_bytes: 3_000,
            xid: 31,
            server_cpu: Some(ms(300)),
        };
        let c = DbCost::between(&before, &after, 10);
        assert_eq!((c.wal_bytes_per_job, c.xacts_per_job), (200.0, 2.0));
        assert_eq!(c.server_cpu_us_per_job, Some(20_000.0));
        let remote = DbMark {
            server_cpu: None,
            ..after
        };
        assert_eq!(
            DbCost::between(&before, &remote, 10).server_cpu_us_per_job,
            None
        );
    }

    #[test]
    fn runs_combine_into_the_median_or_pooled_samples() {
        let t = throughput(1000, &[100, 400, 200]);
        assert_eq!(t.jobs_per_s(), Some(5000.0));
        assert_eq!(t.runs(), 3);
        assert_eq!(t.db_cost().map(|c| c.xacts_per_job), Some(0.5));
        assert_eq!(t.probe_ms(), Some(1.2));
        assert_eq!(t.flush_ms(), Some(2.0));
        assert_eq!(
            t.db_cost().and_then(|c| c.server_cpu_us_per_job),
            Some(200.0)
        );
        let l = Figure::from_runs(vec![
            Measurement::Latency {
                samples: vec![ms(1), ms(2)],
                machine: MachineReadings {
                    stolen: Some(0.1),
                    probe_ms: Some(2.0),
                    flush_ms: Some(0.5),
                },
            },
            Measurement::Latency {
                samples: vec![ms(3), ms(4)],
                machine: MachineReadings {
                    stolen: Some(0.3),
                    probe_ms: None,
                    flush_ms: None,
                },
            },
        ])
        .unwrap();
        assert_eq!(l.most_stolen(), Some(0.3));
        assert_eq!(l.probe_ms(), Some(2.0));
        assert_eq!(l.flush_ms(), Some(0.5));
        let Figure::Latency {
            percentiles, runs, ..
        } = l
        else {
            panic!("not latency");
        };
        assert_eq!((percentiles.count, percentiles.p50, runs), (4, ms(2), 2));
        assert_eq!(Figure::from_runs(Vec::new()), None);
        let mixed = vec![
            Measurement::Latency {
                samples: vec![ms(1)],
                machine: MachineReadings::default(),
            },
            Measurement::Throughput {
                jobs: 1,
                elapsed: ms(1),
                client_cpu: None,
                machine: MachineReadings::default(),
                db_cost: None,
            },
        ];
        assert_eq!(Figure::from_runs(mixed), None);
    }

    #[test]
    fn ratios_are_higher_when_better() {
        let ceiling = throughput(1000, &[100]);
        let own = throughput(1000, &[200]);
        assert_eq!(own.jobs_per_s(), Some(5000.0));
        assert_eq!(own.ratio_to(&ceiling), Some(0.5));
        assert_eq!(latency(4, 8).ratio_to(&latency(1, 2)), Some(0.25));
        assert_eq!(own.ratio_to(&latency(1, 2)), None);
    }

    #[test]
    fn json_lines_carry_the_documented_fields() {
        let r = BenchResult {
            driver: "sqlx",
            scenario: scenario(Workload::W3Work, Some(16), 1000),
            figure: throughput(1000, &[250]),
            ceiling_ratio: Some(0.91234),
            notify_ratio: None,
            host_ratio: None,
            preload_completed: 0,
        };
        let v = r.to_json();
        assert_eq!(v["driver"], "sqlx");
        assert_eq!(v["workload"], "w3_work");
        assert_eq!(v["n"], 1000);
        assert_eq!(v["workers"], 16);
        assert_eq!(v["jobs_per_s"], 4000.0);
        assert_eq!(v["jobs_per_s_runs"], json!([4000.0]));
        assert_eq!(v["ceiling_ratio"], 0.912);
        assert_eq!(v["runs"], 1);
        assert_eq!(v["client_cpu_us_per_job"], 125.0);
        assert_eq!(v["wal_bytes_per_job"], 100.0);
        assert_eq!(v["xacts_per_job"], 0.5);
        assert_eq!(v["stolen_pct"], 25.0);
        assert_eq!(v["probe_ms"], 1.25);
        assert_eq!(v["probe_ms_runs"], json!([1.25]));
        assert_eq!(
            (v["flush_ms"].as_f64(), v["flush_ms_runs"].clone()),
            (Some(2.5), json!([2.5]))
        );
        assert!(v.get("preload_completed").is_none());
        assert!(v.get("notify_ratio").is_none());
        assert_eq!(r.target(), Some((true, ">= 0.85 of ceiling".into())));
        let r = BenchResult {
            driver: "diesel",
            scenario: scenario(Workload::W4Latency, Some(100), 500),
            figure: latency(3, 5),
            ceiling_ratio: Some(0.3),
            notify_ratio: None,
            host_ratio: None,
            preload_completed: 0,
        };
        let v = r.to_json();
        assert_eq!(
            (v["p50_ms"].as_f64(), v["p99_ms"].as_f64()),
            (Some(3.0), Some(5.0))
        );
        assert!(v.get("jobs_per_s").is_none());
        assert_eq!(r.target().map(|t| t.0), Some(false));
    }

    #[test]
    fn targets_depend_on_workers_and_references() {
        let w3 = |driver, workers, ratio| BenchResult {
            driver,
            scenario: scenario(Workload::W3Work, Some(workers), 1000),
            figure: throughput(1000, &[250]),
            ceiling_ratio: Some(ratio),
            notify_ratio: None,
            host_ratio: None,
            preload_completed: 0,
        };
        assert_eq!(w3("diesel", 16, 0.75).target().map(|t| t.0), Some(true));
        assert_eq!(w3("diesel", 100, 0.75).target().map(|t| t.0), Some(false));
        assert_eq!(w3("sqlx", 100, 0.95).target().map(|t| t.0), Some(true));
        let w2 = BenchResult {
            driver: "tokio-postgres",
            scenario: scenario(Workload::W2InsertSingle, None, 100),
            figure: throughput(100, &[10]),
            ceiling_ratio: Some(0.6),
            notify_ratio: Some(1.6),
            host_ratio: None,
            preload_completed: 0,
        };
        assert_eq!(w2.target().map(|t| t.0), Some(true));
        assert_eq!(w2.to_json()["notify_ratio"], 1.6);
    }

    #[test]
    fn depth_lines_compare_each_driver_with_its_shallowest_queue() {
        let at = |jobs, elapsed| BenchResult {
            driver: "sqlx",
            scenario: scenario(Workload::W3Work, Some(16), jobs),
            figure: throughput(jobs, &[elapsed]),
            ceiling_ratio: Some(1.0),
            notify_ratio: None,
            host_ratio: None,
            preload_completed: 0,
        };
        let lines = depth_lines(&[at(1000, 100), at(10_000, 1500)]);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("x1.50 (MISSED"), "{}", lines[0]);
        // The deep run's stolen share and speed probe first, then the shallow one's (the helper
        // steals 1 ‰ of the CPU per ms of a run, adds 1 µs to the probe and 10 µs to the flush
        // per ms).
        assert!(
            lines[0].ends_with(
                "at most 150 % and 10 % of the CPU stolen; speed probe 2.50 and 1.10 ms; flush 15.00 and 1.00 ms)"
            ),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn the_table_marks_missed_targets() {
        let rows = [BenchResult {
            driver: "diesel",
            scenario: scenario(Workload::W3Work, Some(16), 10),
            figure: throughput(10, &[10]),
            ceiling_ratio: Some(0.5),
            notify_ratio: None,
            host_ratio: None,
            preload_completed: 5,
        }];
        let text = results_table(&rows).render();
        assert!(text.contains("w3_work (+5 done)"), "{text}");
        assert!(text.contains("MISSED (>= 0.70 of ceiling)"), "{text}");
    }
}
