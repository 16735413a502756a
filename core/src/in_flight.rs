//! The jobs a client owns: fetched and not yet durably recorded.
//!
//! A job enters when a producer fetches it and leaves when the completer's flush recording its
//! outcome succeeds. After a database restart or failover the heartbeat uses this set to tell
//! which `running` rows are still this client's business (re-assert them) and which lost their
//! outcome with the lost commits (release them).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::job::JobId;

/// Owned jobs with the attempt each runs.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    jobs: Mutex<HashMap<JobId, i16>>,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, i16>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn add(&self, id: JobId, attempt: i16) {
        self.lock().insert(id, attempt);
    }

    pub(crate) fn remove_all(&self, ids: impl IntoIterator<Item = JobId>) {
        let mut jobs = self.lock();
        for id in ids {
            jobs.remove(&id);
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<(JobId, i16)> {
        self.lock().iter().map(|(id, a)| (*id, *a)).collect()
    }
}
