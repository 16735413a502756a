//! A queue's handle: what the producer working it shares with the rest of the client (the
//! notifier, the scheduler's wake-ups, the operator API): its wake-up, pause state, and the
//! cancellation tokens of its running jobs.
//!
//! Running jobs are registered by claim ([`ClaimedBatch`]): one entry per claim, added with one
//! lock and removed with one lock when its last job ends, so a job's end costs two atomic
//! operations instead of a locked map removal.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::fast_hash::FastMap;
use crate::job::JobId;
use crate::query::FetchPosition;

/// What the rest of the client shares with one queue's producer.
#[derive(Debug, Default)]
pub(crate) struct QueueHandle {
    wake: Notify,
    paused: AtomicBool,
    resync: AtomicBool,
    running: Mutex<FastMap<u64, Arc<ClaimedBatch>>>,
    next_batch: AtomicU64,
    /// The earliest position a job was made available at behind where claims start, not yet
    /// taken by the producer.
    rewind: Mutex<Option<FetchPosition>>,
}

/// The jobs of one claim, each with its cancellation token, while any of them is buffered or
/// running.
#[derive(Debug)]
pub(crate) struct ClaimedBatch {
    key: u64,
    jobs: Box<[(JobId, CancellationToken)]>,
    ended: Box<[AtomicBool]>,
    left: AtomicUsize,
}

impl ClaimedBatch {
    /// The id and cancellation token of the batch's job `i`.
    pub(crate) fn job(&self, i: usize) -> &(JobId, CancellationToken) {
        &self.jobs[i]
    }

    /// The jobs that have not ended.
    fn live(&self) -> impl Iterator<Item = &(JobId, CancellationToken)> + '_ {
        self.jobs
            .iter()
            .zip(self.ended.iter())
            .filter(|(_, ended)| !ended.load(Ordering::Acquire))
            .map(|(job, _)| job)
    }
}

impl QueueHandle {
    /// Asks the producer to fetch now.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// A job was made available at `position`, maybe behind where the producer claims from: its
    /// next claim starts there at the latest. Wakes the producer.
    pub(crate) fn rewind(&self, position: FetchPosition) {
        {
            let mut at = self.rewind.lock().unwrap_or_else(|p| p.into_inner());
            *at = Some(at.map_or(position, |p| p.min(position)));
        }
        self.wake();
    }

    /// The earliest position rewound to since the last call, once.
    pub(crate) fn take_rewind(&self) -> Option<FetchPosition> {
        self.rewind.lock().unwrap_or_else(|p| p.into_inner()).take()
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

    /// Registers the jobs of one claim (each with a token of its own) as running.
    pub(crate) fn register(&self, ids: impl IntoIterator<Item = JobId>) -> Arc<ClaimedBatch> {
        let jobs: Box<[(JobId, CancellationToken)]> = ids
            .into_iter()
            .map(|id| (id, CancellationToken::new()))
            .collect();
        let batch = Arc::new(ClaimedBatch {
            key: self.next_batch.fetch_add(1, Ordering::Relaxed),
            ended: jobs.iter().map(|_| AtomicBool::new(false)).collect(),
            left: AtomicUsize::new(jobs.len()),
            jobs,
        });
        if !batch.jobs.is_empty() {
            self.lock_running().insert(batch.key, Arc::clone(&batch));
        }
        batch
    }

    /// Job `i` of `batch` ended (or was given back): it is no longer running here.
    pub(crate) fn ended(&self, batch: &ClaimedBatch, i: usize) {
        if batch.ended[i].swap(true, Ordering::AcqRel) {
            return;
        }
        if batch.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.lock_running().remove(&batch.key);
        }
    }

    /// Cancels a job running in this producer, if it is.
    pub(crate) fn cancel_job(&self, id: JobId) {
        let running = self.lock_running();
        let found = running
            .values()
            .flat_map(|b| b.live())
            .find(|(job, _)| *job == id);
        if let Some((_, token)) = found {
            info!(job_id = id.0, "cancelling a running job on request");
            token.cancel();
        }
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, FastMap<u64, Arc<ClaimedBatch>>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn cancel_all_running(&self) {
        self.lock_running()
            .values()
            .flat_map(|b| b.live())
            .for_each(|(_, token)| token.cancel());
    }

    pub(crate) fn running_ids(&self) -> Vec<JobId> {
        self.lock_running()
            .values()
            .flat_map(|b| b.live())
            .map(|(id, _)| *id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_stays_registered_until_its_last_job_ends() {
        let handle = QueueHandle::default();
        let batch = handle.register([JobId(1), JobId(2)]);
        let other = handle.register([JobId(3)]);
        assert!(handle.register([]).jobs.is_empty());
        handle.ended(&batch, 0);
        handle.ended(&batch, 0); // twice counts once
        let mut ids = handle.running_ids();
        ids.sort();
        assert_eq!(ids, vec![JobId(2), JobId(3)]);
        handle.cancel_job(JobId(1)); // ended: not cancelled
        assert!(!batch.job(0).1.is_cancelled());
        handle.cancel_job(JobId(2));
        assert!(batch.job(1).1.is_cancelled());
        handle.ended(&batch, 1);
        assert_eq!(handle.lock_running().len(), 1);
        handle.cancel_all_running();
        assert!(other.job(0).1.is_cancelled());
        handle.ended(&other, 0);
        assert!(handle.lock_running().is_empty());
    }
}
