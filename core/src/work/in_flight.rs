//! The claims a client holds: fetched and not yet durably recorded.
//!
//! A claim enters when a producer fetches its job and leaves when the completer's flush recording
//! its outcome succeeds. Claims are told apart by their fencing token, so a job this client claims
//! again (after it was rescued from under a frozen process, say) is a second entry, and recording
//! the first claim's outcome does not forget the second. After a database restart or failover, or
//! a fetch lost with its connection, the heartbeat uses this set to tell which `running` rows are
//! still this client's business (re-assert them) and which are orphans: claims whose reply was
//! lost, or outcomes lost with the lost commits (release them).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::fast_hash::FastMap;
use crate::job::JobId;
pub(crate) use crate::query::HeldClaim;

/// Held claims, by job and token.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    claims: Mutex<FastMap<(JobId, i64), HeldClaim>>,
    reconcile: AtomicBool,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, FastMap<(JobId, i64), HeldClaim>> {
        self.claims.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn add_all(&self, claims: impl IntoIterator<Item = HeldClaim>) {
        self.lock()
            .extend(claims.into_iter().map(|c| ((c.id, c.token), c)));
    }

    /// Forgets claims, each named by job and token.
    pub(crate) fn remove_all(&self, claims: impl IntoIterator<Item = (JobId, i64)>) {
        let mut held = self.lock();
        for key in claims {
            held.remove(&key);
        }
    }

    /// Asks the heartbeat to release jobs this client may own without knowing it: a fetch failed
    /// with its claim possibly committed (a lost connection, a timeout), so claims whose reply
    /// never arrived may exist.
    pub(crate) fn request_reconcile(&self) {
        self.reconcile.store(true, Ordering::SeqCst);
    }

    /// Takes a pending reconcile request.
    pub(crate) fn take_reconcile(&self) -> bool {
        self.reconcile.swap(false, Ordering::SeqCst)
    }

    pub(crate) fn snapshot(&self) -> Vec<HeldClaim> {
        self.lock().values().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;

    #[test]
    fn a_second_claim_of_one_job_is_kept_apart_from_the_first() {
        let held = InFlight::default();
        let first = HeldClaim {
            id: JobId(7),
            attempt: 1,
            token: 10,
            attempted_at: None,
            created_at: DateTime::<Utc>::MIN_UTC,
        };
        let second = HeldClaim { token: 11, ..first };
        held.add_all([first, second]);
        held.remove_all([(first.id, first.token)]);
        assert_eq!(held.snapshot(), vec![second]);
    }
}
