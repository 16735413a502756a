//! The benchmark's job: a number, and a worker that does nothing but count its executions.

use std::sync::Arc;
use std::time::Instant;

use pgmill::{Job, JobArgs, JobError, JobId, Worker};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::execution_ledger::ExecutionLedger;

/// A no-op job numbered `i` (0 to n - 1), so every execution can be told apart.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct BenchJob {
    /// The job's number.
    pub(crate) i: u64,
}

impl JobArgs for BenchJob {
    const KIND: &'static str = "bench_noop";
}

/// Records each execution in the ledger and, for the latency workload, when it started.
#[derive(Debug, Clone)]
pub(crate) struct BenchWorker {
    /// Executions per job.
    pub(crate) ledger: Arc<ExecutionLedger>,
    /// Where start times go (w4_latency only).
    pub(crate) starts: Option<mpsc::UnboundedSender<(JobId, Instant)>>,
}

impl Worker<BenchJob> for BenchWorker {
    async fn work(&self, job: &Job<BenchJob>) -> Result<(), JobError> {
        let started = Instant::now();
        if let Some(starts) = &self.starts {
            // The receiver outlives the client; a send error only means the run was abandoned.
            let _ = starts.send((job.id(), started));
        }
        self.ledger.record(job.args.i);
        Ok(())
    }
}
