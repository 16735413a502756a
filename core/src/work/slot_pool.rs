//! A producer's worker slots: the buffer of claimed jobs not started yet, and the slot tasks that
//! run them.
//!
//! A slot is a task that runs buffered jobs one after the other, in fetch order. When the buffer
//! is empty it waits, idle, for the producer's next claim instead of ending, so a claim wakes
//! waiting slots rather than spawning a task per job; new slots are spawned only while fewer than
//! the queue's concurrency exist. A slot going idle wakes the producer (a slot is free), and so
//! does the buffer falling to the refill mark.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::job::JobRow;
use crate::work::job_executor::JobExecutor;
use crate::work::queue_handle::{ClaimedBatch, QueueHandle};

/// A claimed job waiting for a slot: the job (shared from its claim on: moving it through the
/// buffer moves a pointer) and where its claim is registered.
pub(crate) struct Buffered {
    pub(crate) job: Arc<JobRow>,
    pub(crate) batch: Arc<ClaimedBatch>,
    pub(crate) index: usize,
}

/// What the slots and the producer share, under one lock.
#[derive(Default)]
struct PoolState {
    /// Claimed jobs not started yet, in fetch order.
    jobs: VecDeque<Buffered>,
    /// Slots running a job.
    busy: usize,
    /// Slots waiting for a job that nobody has woken yet.
    idle: usize,
    /// Slot tasks alive.
    spawned: usize,
    /// No more jobs come: slots end once the buffer is empty.
    closed: bool,
}

/// One queue's worker slots and their buffer.
pub(crate) struct SlotPool {
    max_workers: usize,
    /// The producer is woken to refill when the buffer falls to this many jobs.
    refill_below: usize,
    state: Mutex<PoolState>,
    /// One permit per idle slot woken to take a job (permits are never lost, unlike a `Notify`).
    wake_slots: Semaphore,
    /// Notified when the last slot ends after [`SlotPool::close_and_wait`].
    ended: Notify,
    executor: Arc<JobExecutor>,
    handle: Arc<QueueHandle>,
    kill: CancellationToken,
}

impl SlotPool {
    /// Up to `max_workers` slots running jobs through `executor`; `kill` (hard stop) interrupts
    /// them; the producer behind `handle` is woken when the buffer falls to `refill_below`.
    pub(crate) fn new(
        max_workers: usize,
        refill_below: usize,
        executor: Arc<JobExecutor>,
        handle: Arc<QueueHandle>,
        kill: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(SlotPool {
            max_workers,
            refill_below,
            state: Mutex::new(PoolState::default()),
            wake_slots: Semaphore::new(0),
            ended: Notify::new(),
            executor,
            handle,
            kill,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Slots not running a job (idle or not spawned yet), and jobs claimed and not started, read
    /// at one moment (a slot taking a buffered job between two separate reads would count it in
    /// both).
    pub(crate) fn free_and_buffered(&self) -> (usize, usize) {
        let st = self.lock();
        (self.max_workers.saturating_sub(st.busy), st.jobs.len())
    }

    /// Adds claimed jobs to the buffer and gets slots running them: idle slots are woken first,
    /// new slots spawned while fewer than the concurrency exist.
    pub(crate) fn push(self: &Arc<Self>, jobs: Vec<Buffered>) {
        let (wake, spawn) = {
            let mut st = self.lock();
            let n = jobs.len();
            st.jobs.extend(jobs);
            let wake = st.idle.min(n);
            st.idle -= wake;
            let spawn = (n - wake).min(self.max_workers.saturating_sub(st.spawned));
            st.spawned += spawn;
            (wake, spawn)
        };
        if wake > 0 {
            self.wake_slots.add_permits(wake);
        }
        for _ in 0..spawn {
            tokio::spawn(Arc::clone(self).run_slot());
        }
    }

    /// Takes every buffered job out (to give them back).
    pub(crate) fn take_all(&self) -> Vec<Buffered> {
        self.lock().jobs.drain(..).collect()
    }

    /// Ends the slots once the buffer is empty and waits for every job they run.
    pub(crate) async fn close_and_wait(&self) {
        self.lock().closed = true;
        self.wake_slots.close();
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.lock().spawned == 0 {
                return;
            }
            ended.await;
        }
    }

    /// One slot: the next buffered job, or idle until woken; ends when the pool is closed and the
    /// buffer empty.
    async fn run_slot(self: Arc<Self>) {
        let mut ran = false;
        loop {
            let next = {
                let mut st = self.lock();
                if ran {
                    st.busy -= 1;
                }
                match st.jobs.pop_front() {
                    Some(job) => {
                        st.busy += 1;
                        Some((job, st.jobs.len()))
                    }
                    None if st.closed => {
                        st.spawned -= 1;
                        let last = st.spawned == 0;
                        drop(st);
                        if last {
                            self.ended.notify_waiters();
                        }
                        return;
                    }
                    None => {
                        st.idle += 1;
                        None
                    }
                }
            };
            match next {
                Some((Buffered { job, batch, index }, left)) => {
                    ran = true;
                    if left == self.refill_below {
                        self.handle.wake();
                    }
                    let (_, cancel) = batch.job(index);
                    self.executor.execute(job, &self.kill, cancel).await;
                    self.handle.ended(&batch, index);
                }
                None => {
                    ran = false;
                    // A slot is free: the producer may claim.
                    self.handle.wake();
                    match self.wake_slots.acquire().await {
                        Ok(permit) => permit.forget(),
                        // Closed: the loop ends the slot once the buffer is empty.
                        Err(_) => {
                            let mut st = self.lock();
                            st.idle = st.idle.saturating_sub(1);
                        }
                    }
                }
            }
        }
    }
}
