//! The workloads, the options they run with, and the constants that shape them.

use std::time::Duration;

use clap::ValueEnum;

/// Concurrent tasks inserting in w2_insert_single.
pub(crate) const INSERT_TASKS: usize = 8;
/// How long the latency workload leaves the workers idle before the first insert.
pub(crate) const IDLE_BEFORE_LATENCY: Duration = Duration::from_secs(1);
/// A run making no progress for this long fails.
pub(crate) const STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Workload {
    /// Bulk insert of n jobs.
    #[value(name = "w1_insert_bulk")]
    W1InsertBulk,
    /// n / 10 single-row inserts from 8 concurrent tasks.
    #[value(name = "w2_insert_single")]
    W2InsertSingle,
    /// n queued no-op jobs worked through.
    #[value(name = "w3_work")]
    W3Work,
    /// Commit-to-start latency with idle listening workers.
    #[value(name = "w4_latency")]
    W4Latency,
}

impl Workload {
    /// Every workload, in order.
    pub(crate) const ALL: [Workload; 4] = [
        Workload::W1InsertBulk,
        Workload::W2InsertSingle,
        Workload::W3Work,
        Workload::W4Latency,
    ];

    /// The name in results.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::W1InsertBulk => "w1_insert_bulk",
            Workload::W2InsertSingle => "w2_insert_single",
            Workload::W3Work => "w3_work",
            Workload::W4Latency => "w4_latency",
        }
    }

    /// How many jobs a run of this workload handles.
    pub(crate) fn jobs(self, opts: &BenchOptions) -> u64 {
        match self {
            Workload::W1InsertBulk | Workload::W3Work => opts.n,
            Workload::W2InsertSingle => (opts.n / 10).max(1),
            Workload::W4Latency => opts.latency_jobs,
        }
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The options every contender runs with.
#[derive(Debug, Clone)]
pub(crate) struct BenchOptions {
    /// Jobs per workload.
    pub(crate) n: u64,
    /// Worker slots in w3 and w4.
    pub(crate) workers: usize,
    /// Completed rows preloaded before w3.
    pub(crate) preload_completed: u64,
    /// Jobs in w4.
    pub(crate) latency_jobs: u64,
    /// Time between w4's inserts.
    pub(crate) latency_interval: Duration,
    /// Insert notification cooldown of w4's inserting client; `None` keeps pgmill's default.
    pub(crate) insert_notify_cooldown: Option<Duration>,
}
