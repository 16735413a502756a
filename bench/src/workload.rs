//! The workloads, the scenarios they run in (workers, depth), the options they run with, and the
//! constants that shape them.

use std::time::Duration;

use clap::ValueEnum;

/// Concurrent tasks inserting in the single-insert workloads.
pub(crate) const INSERT_TASKS: usize = 8;
/// How long the latency workload leaves the workers idle before the first insert.
pub(crate) const IDLE_BEFORE_LATENCY: Duration = Duration::from_secs(1);
/// Jobs w5_burst inserts one by one before its burst, one every [`TRICKLE_INTERVAL`].
pub(crate) const TRICKLE: u64 = 40;
/// Time between w5_burst's trickled inserts: 40 over 10 s, so a queue's claims and completions
/// have run (and been planned) many times on the small table when the burst comes.
pub(crate) const TRICKLE_INTERVAL: Duration = Duration::from_millis(250);
/// A run making no progress for this long fails.
pub(crate) const STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub(crate) enum Workload {
    /// Bulk insert of n jobs in one call.
    #[value(name = "w1_insert_bulk")]
    W1InsertBulk,
    /// Bulk insert of n jobs in calls of --batch-size jobs, each its own transaction.
    #[value(name = "w1_insert_batches")]
    W1InsertBatches,
    /// n / 10 single-row inserts, each committed on its own, from 8 concurrent tasks.
    #[value(name = "w2_insert_single")]
    W2InsertSingle,
    /// n / 10 single-row inserts, each in an application transaction of its own (`BEGIN`, the
    /// insert, `COMMIT`), from 8 concurrent tasks.
    #[value(name = "w2_insert_tx")]
    W2InsertTx,
    /// A queue of n (or each of --depths) no-op jobs worked through.
    #[value(name = "w3_work")]
    W3Work,
    /// Commit-to-start latency with idle listening workers.
    #[value(name = "w4_latency")]
    W4Latency,
    /// A started client's queue, empty but for a trickle of jobs one by one (its statements
    /// planned on the small table), then n jobs inserted in one call and worked through.
    #[value(name = "w5_burst")]
    W5Burst,
}

impl Workload {
    /// Every workload, in order.
    pub(crate) const ALL: [Workload; 7] = [
        Workload::W1InsertBulk,
        Workload::W1InsertBatches,
        Workload::W2InsertSingle,
        Workload::W2InsertTx,
        Workload::W3Work,
        Workload::W4Latency,
        Workload::W5Burst,
    ];

    /// The name in results.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::W1InsertBulk => "w1_insert_bulk",
            Workload::W1InsertBatches => "w1_insert_batches",
            Workload::W2InsertSingle => "w2_insert_single",
            Workload::W2InsertTx => "w2_insert_tx",
            Workload::W3Work => "w3_work",
            Workload::W4Latency => "w4_latency",
            Workload::W5Burst => "w5_burst",
        }
    }

    /// True for the workloads that run jobs (and so have workers).
    pub(crate) fn works(self) -> bool {
        matches!(
            self,
            Workload::W3Work | Workload::W4Latency | Workload::W5Burst
        )
    }

    /// The scenarios of this workload under `opts`: one per worker count for the working
    /// workloads (and per depth for w3), one otherwise.
    pub(crate) fn scenarios(self, opts: &BenchOptions) -> Vec<Scenario> {
        let jobs = |n: u64| match self {
            Workload::W2InsertSingle | Workload::W2InsertTx => (n / 10).max(1),
            Workload::W4Latency => opts.latency_jobs,
            _ => n,
        };
        if !self.works() {
            return vec![Scenario {
                workload: self,
                workers: None,
                jobs: jobs(opts.n),
            }];
        }
        let depths = if self == Workload::W3Work && !opts.depths.is_empty() {
            opts.depths.clone()
        } else {
            vec![opts.n]
        };
        let mut out = Vec::new();
        for &depth in &depths {
            for &workers in &opts.workers {
                out.push(Scenario {
                    workload: self,
                    workers: Some(workers),
                    jobs: jobs(depth),
                });
            }
        }
        out
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One measured configuration: a workload, its worker count (working workloads only) and how
/// many jobs it handles (for w3: the depth of the queue worked through).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Scenario {
    /// The workload.
    pub(crate) workload: Workload,
    /// Worker slots, for w3 and w4.
    pub(crate) workers: Option<usize>,
    /// Jobs the run handles.
    pub(crate) jobs: u64,
}

impl Scenario {
    /// Worker slots (1 for the insert workloads, which have none).
    pub(crate) fn workers(&self) -> usize {
        self.workers.unwrap_or(1)
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.workers {
            Some(w) => write!(f, "{} ({} jobs, {w} workers)", self.workload, self.jobs),
            None => write!(f, "{} ({} jobs)", self.workload, self.jobs),
        }
    }
}

/// The options every contender runs with.
#[derive(Debug, Clone)]
pub(crate) struct BenchOptions {
    /// Jobs per workload.
    pub(crate) n: u64,
    /// The queue depths w3 works through; empty: n.
    pub(crate) depths: Vec<u64>,
    /// Worker counts of w3 and w4, one scenario each.
    pub(crate) workers: Vec<usize>,
    /// Jobs per call in w1_insert_batches.
    pub(crate) batch_size: u64,
    /// Completed rows preloaded before w3.
    pub(crate) preload_completed: u64,
    /// Jobs in w4.
    pub(crate) latency_jobs: u64,
    /// Time between w4's inserts.
    pub(crate) latency_interval: Duration,
    /// Insert notification cooldown of w4's inserting client; `None` keeps pgmill's default.
    pub(crate) insert_notify_cooldown: Option<Duration>,
}
