//! A queue's handle: what the producer working it shares with the rest of the client (the
//! notifier, the scheduler's wake-ups, the operator API): its wake-up, pause state, and the
//! cancellation tokens of its running jobs.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::job::JobId;

/// What the rest of the client shares with one queue's producer.
#[derive(Debug, Default)]
pub(crate) struct QueueHandle {
    wake: Notify,
    paused: AtomicBool,
    resync: AtomicBool,
    running: Mutex<HashMap<JobId, CancellationToken>>,
}

impl QueueHandle {
    /// Asks the producer to fetch now.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Pauses or resumes fetching (running jobs are not touched).
    pub(crate) fn set_paused(&self, paused: bool) {
        if self.paused.swap(paused, Ordering::SeqCst) != paused {
            info!(paused, "queue pause state changed");
        }
        self.wake();
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Asks the producer to re-read its queue's state and fetch (after a listener reconnect).
    pub(crate) fn request_resync(&self) {
        self.resync.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// True once after [`QueueHandle::request_resync`]: the producer takes the request.
    pub(crate) fn take_resync(&self) -> bool {
        self.resync.swap(false, Ordering::SeqCst)
    }

    /// Waits for the next [`QueueHandle::wake`] (or one given while nobody waited).
    pub(crate) async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Cancels a job running in this producer, if it is.
    pub(crate) fn cancel_job(&self, id: JobId) {
        if let Some(token) = self.lock_running().get(&id) {
            info!(job_id = id.0, "cancelling a running job on request");
            token.cancel();
        }
    }

    pub(crate) fn lock_running(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<JobId, CancellationToken>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn cancel_all_running(&self) {
        self.lock_running()
            .values()
            .for_each(CancellationToken::cancel);
    }

    pub(crate) fn running_ids(&self) -> Vec<JobId> {
        self.lock_running().keys().copied().collect()
    }
}
