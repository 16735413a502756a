//! One benchmark figure, its ratio to the floor, and how results are shown.

use std::time::Duration;

use serde_json::json;

use crate::Workload;
use crate::markdown_table::MarkdownTable;
use crate::percentiles::{Percentiles, millis};

/// The name results of the hand-written SQL carry in the `driver` field.
pub(crate) const FLOOR: &str = "floor";

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
    },
    /// Commit-to-start latency of each job.
    Latency(Vec<Duration>),
}

/// The figure of one contender on one workload, over one or more runs.
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
    },
    /// Latency percentiles over the samples of every run together.
    Latency {
        /// The percentiles.
        percentiles: Percentiles,
        /// How many runs the samples came from.
        runs: usize,
    },
}

impl Figure {
    /// The figure of several runs of one workload; `None` without runs or when they disagree in
    /// kind.
    pub(crate) fn from_runs(runs: Vec<Measurement>) -> Option<Self> {
        match runs.first()? {
            Measurement::Throughput { jobs, .. } => {
                let jobs = *jobs;
                let mut rates = Vec::with_capacity(runs.len());
                let mut cpu = Vec::with_capacity(runs.len());
                for m in &runs {
                    let Measurement::Throughput {
                        jobs,
                        elapsed,
                        client_cpu,
                    } = m
                    else {
                        return None;
                    };
                    rates.push(*jobs as f64 / elapsed.as_secs_f64().max(1e-9));
                    if let Some(c) = client_cpu {
                        cpu.push(c.as_secs_f64() * 1e6 / (*jobs).max(1) as f64);
                    }
                }
                Some(Figure::Throughput {
                    jobs,
                    runs: rates,
                    client_cpu_us_per_job: cpu,
                })
            }
            Measurement::Latency(_) => {
                let count = runs.len();
                let mut samples = Vec::new();
                for m in runs {
                    match m {
                        Measurement::Latency(s) => samples.extend(s),
                        Measurement::Throughput { .. } => return None,
                    }
                }
                Some(Figure::Latency {
                    percentiles: Percentiles::of(samples)?,
                    runs: count,
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

    /// How many runs the figure summarises.
    pub(crate) fn runs(&self) -> usize {
        match self {
            Figure::Throughput { runs, .. } => runs.len(),
            Figure::Latency { runs, .. } => *runs,
        }
    }

    /// This figure relative to the floor's: throughput divided by the floor's, or for latency the
    /// floor's p50 divided by this p50 (higher is better either way).
    pub(crate) fn ratio_to(&self, floor: &Figure) -> Option<f64> {
        match (self, floor) {
            (Figure::Throughput { .. }, Figure::Throughput { .. }) => {
                Some(self.jobs_per_s()? / floor.jobs_per_s()?.max(1e-9))
            }
            (
                Figure::Latency {
                    percentiles: own, ..
                },
                Figure::Latency {
                    percentiles: floor, ..
                },
            ) => Some(floor.p50.as_secs_f64() / own.p50.as_secs_f64().max(1e-9)),
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
    /// `sqlx`, `tokio-postgres`, `diesel` or `floor`.
    pub(crate) driver: &'static str,
    /// The workload.
    pub(crate) workload: Workload,
    /// Jobs in the workload.
    pub(crate) n: u64,
    /// The measurement.
    pub(crate) figure: Figure,
    /// The figure relative to the floor's in the same invocation.
    pub(crate) floor_ratio: Option<f64>,
    /// Completed rows put in the table before the run (w3_work only).
    pub(crate) preload_completed: u64,
}

fn round(v: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (v * f).round() / f
}

impl BenchResult {
    /// The JSON line: `driver`, `workload`, `n`, `jobs_per_s` (or `p50_ms`, `p95_ms`, `p99_ms`,
    /// `max_ms`) and `floor_ratio`, plus `runs`, `jobs_per_s_runs` (each run's figure),
    /// `client_cpu_us_per_job` (the benchmark process's CPU per job, median run) and
    /// `preload_completed` where they apply.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut v = json!({
            "driver": self.driver,
            "workload": self.workload.name(),
            "n": self.n,
        });
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
            }
            Figure::Latency { percentiles: p, .. } => {
                v["p50_ms"] = json!(millis(p.p50));
                v["p95_ms"] = json!(millis(p.p95));
                v["p99_ms"] = json!(millis(p.p99));
                v["max_ms"] = json!(millis(p.max));
            }
        }
        v["floor_ratio"] = json!(self.floor_ratio.map(|r| round(r, 3)));
        v["runs"] = json!(self.figure.runs());
        if self.preload_completed > 0 {
            v["preload_completed"] = json!(self.preload_completed);
        }
        v
    }

    /// Whether the figure meets issue 6's target for this workload and driver, with the target;
    /// `None` where there is none (the floor, w2).
    pub(crate) fn target(&self) -> Option<(bool, String)> {
        if self.driver == FLOOR {
            return None;
        }
        let ratio = self.floor_ratio.unwrap_or(0.0);
        match (self.workload, &self.figure) {
            (Workload::W1InsertBulk, _) => Some((ratio >= 0.9, ">= 0.90 of floor".into())),
            (Workload::W3Work, _) => {
                let min = if self.driver == "diesel" { 0.7 } else { 0.85 };
                Some((ratio >= min, format!(">= {min:.2} of floor")))
            }
            (Workload::W4Latency, Figure::Latency { percentiles: p, .. }) => Some((
                millis(p.p50) <= 2.5 && millis(p.p99) <= 6.0,
                "p50 <= 2.5 ms, p99 <= 6 ms".into(),
            )),
            _ => None,
        }
    }
}

/// The results as a Markdown table.
pub(crate) fn results_table(results: &[BenchResult]) -> MarkdownTable {
    let mut table = MarkdownTable::new(
        [
            "WORKLOAD",
            "DRIVER",
            "N",
            "JOBS/S",
            "P50_MS",
            "P95_MS",
            "P99_MS",
            "MAX_MS",
            "FLOOR_RATIO",
            "CPU_US/JOB",
            "RUNS",
            "TARGET",
        ],
        [2, 3, 4, 5, 6, 7, 8, 9, 10],
    );
    for r in results {
        let (rate, lat) = match &r.figure {
            Figure::Throughput { .. } => (
                format!("{:.0}", r.figure.jobs_per_s().unwrap_or(0.0)),
                [String::new(), String::new(), String::new(), String::new()],
            ),
            Figure::Latency { percentiles: p, .. } => (
                String::new(),
                [p.p50, p.p95, p.p99, p.max].map(|d| format!("{:.3}", millis(d))),
            ),
        };
        let workload = if r.preload_completed > 0 {
            format!("{} (+{} done)", r.workload.name(), r.preload_completed)
        } else {
            r.workload.name().to_owned()
        };
        let target = match r.target() {
            Some((true, t)) => format!("met ({t})"),
            Some((false, t)) => format!("MISSED ({t})"),
            None => String::new(),
        };
        let [p50, p95, p99, max] = lat;
        table.row([
            workload,
            r.driver.to_owned(),
            r.n.to_string(),
            rate,
            p50,
            p95,
            p99,
            max,
            r.floor_ratio.map_or(String::new(), |f| format!("{f:.3}")),
            match &r.figure {
                Figure::Throughput {
                    client_cpu_us_per_job,
                    ..
                } => median(client_cpu_us_per_job).map_or(String::new(), |c| format!("{c:.1}")),
                Figure::Latency { .. } => String::new(),
            },
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
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn medians_take_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn runs_combine_into_the_median_or_pooled_samples() {
        let t = throughput(1000, &[100, 400, 200]);
        assert_eq!(t.jobs_per_s(), Some(5000.0));
        assert_eq!(t.runs(), 3);
        let l = Figure::from_runs(vec![
            Measurement::Latency(vec![ms(1), ms(2)]),
            Measurement::Latency(vec![ms(3), ms(4)]),
        ])
        .unwrap();
        let Figure::Latency { percentiles, runs } = l else {
            panic!("not latency");
        };
        assert_eq!((percentiles.count, percentiles.p50, runs), (4, ms(2), 2));
        assert_eq!(Figure::from_runs(Vec::new()), None);
        let mixed = vec![
            Measurement::Latency(vec![ms(1)]),
            Measurement::Throughput {
                jobs: 1,
                elapsed: ms(1),
                client_cpu: None,
            },
        ];
        assert_eq!(Figure::from_runs(mixed), None);
    }

    #[test]
    fn ratios_are_higher_when_better() {
        let floor = throughput(1000, &[100]);
        let own = throughput(1000, &[200]);
        assert_eq!(own.jobs_per_s(), Some(5000.0));
        assert_eq!(own.ratio_to(&floor), Some(0.5));
        assert_eq!(latency(4, 8).ratio_to(&latency(1, 2)), Some(0.25));
        assert_eq!(own.ratio_to(&latency(1, 2)), None);
    }

    #[test]
    fn json_lines_carry_the_documented_fields() {
        let r = BenchResult {
            driver: "sqlx",
            workload: Workload::W3Work,
            n: 1000,
            figure: throughput(1000, &[250]),
            floor_ratio: Some(0.91234),
            preload_completed: 0,
        };
        let v = r.to_json();
        assert_eq!(v["driver"], "sqlx");
        assert_eq!(v["workload"], "w3_work");
        assert_eq!(v["n"], 1000);
        assert_eq!(v["jobs_per_s"], 4000.0);
        assert_eq!(v["jobs_per_s_runs"], json!([4000.0]));
        assert_eq!(v["floor_ratio"], 0.912);
        assert_eq!(v["runs"], 1);
        assert_eq!(v["client_cpu_us_per_job"], 125.0);
        assert!(v.get("preload_completed").is_none());
        assert_eq!(r.target(), Some((true, ">= 0.85 of floor".into())));
        let r = BenchResult {
            driver: "diesel",
            workload: Workload::W4Latency,
            n: 500,
            figure: latency(3, 5),
            floor_ratio: Some(0.3),
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
    fn the_table_marks_missed_targets() {
        let rows = [BenchResult {
            driver: "diesel",
            workload: Workload::W3Work,
            n: 10,
            figure: throughput(10, &[10]),
            floor_ratio: Some(0.5),
            preload_completed: 5,
        }];
        let text = results_table(&rows).render();
        assert!(text.contains("w3_work (+5 done)"), "{text}");
        assert!(text.contains("MISSED (>= 0.70 of floor)"), "{text}");
    }
}
