//! Counts how often each benchmark job ran, to prove every job ran exactly once.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// One execution counter per job, indexed by the job's `i` argument (0 to n - 1).
#[derive(Debug)]
pub(crate) struct ExecutionLedger {
    counts: Vec<AtomicU32>,
    total: AtomicU64,
    out_of_range: AtomicU64,
}

impl ExecutionLedger {
    /// A ledger for jobs `0..n`.
    pub(crate) fn new(n: u64) -> Self {
        ExecutionLedger {
            counts: (0..n).map(|_| AtomicU32::new(0)).collect(),
            total: AtomicU64::new(0),
            out_of_range: AtomicU64::new(0),
        }
    }

    /// Records one execution of job `i`.
    pub(crate) fn record(&self, i: u64) {
        self.total.fetch_add(1, Ordering::Relaxed);
        match usize::try_from(i).ok().and_then(|i| self.counts.get(i)) {
            Some(c) => {
                c.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.out_of_range.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Executions recorded so far.
    pub(crate) fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Checks that every job ran exactly once.
    ///
    /// # Errors
    ///
    /// What went wrong: jobs never run, jobs run more than once, unknown jobs.
    pub(crate) fn check(&self) -> Result<(), String> {
        let never = self
            .counts
            .iter()
            .filter(|c| c.load(Ordering::Relaxed) == 0)
            .count();
        let twice = self
            .counts
            .iter()
            .filter(|c| c.load(Ordering::Relaxed) > 1)
            .count();
        let unknown = self.out_of_range.load(Ordering::Relaxed);
        if never == 0 && twice == 0 && unknown == 0 {
            return Ok(());
        }
        Err(format!(
            "the workers ran {} executions for {} jobs: {never} never ran, {twice} ran more than \
             once, {unknown} were not benchmark jobs",
            self.total(),
            self.counts.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_once_passes_and_anything_else_fails() {
        let ledger = ExecutionLedger::new(3);
        for i in 0..3 {
            ledger.record(i);
        }
        assert_eq!(ledger.check(), Ok(()));
        ledger.record(1);
        let err = ledger.check().unwrap_err();
        assert!(err.contains("1 ran more than once"), "{err}");
        let ledger = ExecutionLedger::new(2);
        ledger.record(0);
        ledger.record(7);
        let err = ledger.check().unwrap_err();
        assert!(
            err.contains("1 never ran") && err.contains("1 were not"),
            "{err}"
        );
    }
}
