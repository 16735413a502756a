//! The jobs a client owns: fetched and not yet durably recorded.
//!
//! A job enters when a producer fetches it and leaves when the completer's flush recording its
//! outcome succeeds. After a database restart or failover, or a fetch lost with its connection,
//! the heartbeat uses this set to tell which `running` rows are still this client's business
//! (re-assert them) and which are orphans: claims whose reply was lost, or outcomes lost with the
//! lost commits (release them).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::job::JobId;

/// Owned jobs with the attempt each runs.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    jobs: Mutex<HashMap<JobId, i16>>,
    reconcile: AtomicBool,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, i16>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn add_all(&self, jobs: impl IntoIterator<Item = (JobId, i16)>) {
        self.lock().extend(jobs);
    }

    pub(crate) fn remove_all(&self, ids: impl IntoIterator<Item = JobId>) {
        let mut jobs = self.lock();
        for id in ids {
            jobs.remove(&id);
        }
    }

    /// Asks the heartbeat to release jobs this client may own without knowing it: a fetch failed
    /// with a lost connection, so it may have committed claims whose reply never arrived.
    pub(crate) fn request_reconcile(&self) {
        self.reconcile.store(true, Ordering::SeqCst);
    }

    /// Takes a pending reconcile request.
    pub(crate) fn take_reconcile(&self) -> bool {
        self.reconcile.swap(false, Ordering::SeqCst)
    }

    pub(crate) fn snapshot(&self) -> Vec<(JobId, i16)> {
        self.lock().iter().map(|(id, a)| (*id, *a)).collect()
    }
}
