//! One producer per queue: fetches jobs into free worker slots and runs them.
//!
//! A fetch claims `min(free slots, fetch limit)` jobs in one statement. The producer fetches when
//! woken (an insert by this process, a finished job freeing a slot) or when the poll timer fires
//! (with jitter), and again at once after a full batch. It never abandons a fetch midway: stop
//! signals are only looked at between fetches, so no claimed row is left stranded.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::driver::Driver;
use crate::job_executor::JobExecutor;
use crate::query::job_get_available;

pub(crate) struct Producer<D: Driver> {
    pub(crate) driver: D,
    pub(crate) queue: String,
    pub(crate) client_id: String,
    pub(crate) max_workers: usize,
    pub(crate) fetch_limit: usize,
    pub(crate) poll_interval: Duration,
    pub(crate) executor: JobExecutor,
    pub(crate) wake: Arc<Notify>,
}

impl<D: Driver> Producer<D> {
    /// Fetches and runs jobs until `stop` (soft: fetch nothing more), then waits for the jobs it
    /// started. `kill` (hard stop) interrupts running jobs.
    pub(crate) async fn run(self, stop: CancellationToken, kill: CancellationToken) {
        let span = info_span!("producer", queue = %self.queue);
        async move {
            let slots = Arc::new(Semaphore::new(self.max_workers));
            let mut backoff = Duration::from_millis(100);
            while !stop.is_cancelled() {
                match self.fill_slots(&slots, &kill).await {
                    Ok(()) => backoff = Duration::from_millis(100),
                    Err(e) => {
                        warn!(error = %e, "fetch failed; backing off");
                        tokio::select! {
                            () = stop.cancelled() => break,
                            () = tokio::time::sleep(backoff) => {}
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                }
                let jitter = rand::rng().random_range(0.0..0.1) * self.poll_interval.as_secs_f64();
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = self.wake.notified() => {}
                    () = tokio::time::sleep(self.poll_interval + Duration::from_secs_f64(jitter)) => {}
                }
            }
            // Wait for every job this producer started.
            let all = u32::try_from(self.max_workers).unwrap_or(u32::MAX);
            let _ = slots.acquire_many(all).await;
            debug!("producer stopped");
        }
        .instrument(span)
        .await
    }

    /// Fetches into free slots until the queue runs dry or no slot is free.
    async fn fill_slots(
        &self,
        slots: &Arc<Semaphore>,
        kill: &CancellationToken,
    ) -> crate::Result<()> {
        loop {
            let free = slots.available_permits();
            if free == 0 {
                return Ok(());
            }
            let limit = free.min(self.fetch_limit);
            let jobs = {
                let mut conn = self.driver.acquire().await?;
                job_get_available(
                    &mut conn,
                    self.executor.schema_ref(),
                    &self.queue,
                    limit,
                    &self.client_id,
                )
                .await?
            };
            let fetched = jobs.len();
            for job in jobs {
                let permit = Arc::clone(slots)
                    .try_acquire_owned()
                    .expect("a slot is free for every fetched job");
                let executor = self.executor.clone();
                let kill = kill.clone();
                let wake = Arc::clone(&self.wake);
                tokio::spawn(async move {
                    executor.execute(job, &kill).await;
                    drop(permit);
                    wake.notify_one();
                });
            }
            if fetched < limit {
                return Ok(());
            }
        }
    }
}
