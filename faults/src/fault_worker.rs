//! The worker the fault processes run: it records each attempt it starts and finishes in the
//! side table, sleeps a little, and completes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::TimeDelta;
use pgmill::driver::{Driver, Executor, Statement};
use pgmill::{Job, JobArgs, JobError, Schema, Worker};
use serde::{Deserialize, Serialize};

use crate::attempt_log::{AttemptStart, finished};

/// The job the fault tests insert.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FaultJob {
    /// A sequence number, for reading rows by eye.
    pub n: u64,
}

impl JobArgs for FaultJob {
    const KIND: &'static str = "fault_job";
}

/// Runs [`FaultJob`]s: records the attempt's start (job, attempt, fencing token, claim time,
/// client, pid), sleeps between `sleep_min` and `sleep_max` (spread by job id), records the
/// finish, and completes. A recording that fails (the database restarting, the connection
/// terminated) is retried until it lands or the attempt's timeout drops the work.
#[derive(Debug)]
pub struct FaultWorker<D> {
    driver: D,
    schema: Schema,
    client_id: String,
    run_prefix: String,
    next_run: AtomicU64,
    sleep_min: Duration,
    sleep_max: Duration,
    timeout: Duration,
}

/// The pause between two tries of a recording statement.
const RECORD_RETRY: Duration = Duration::from_millis(100);

impl<D: Driver> FaultWorker<D> {
    /// A worker recording through `driver` into `schema`'s side table as `client_id`.
    pub fn new(
        driver: D,
        schema: Schema,
        client_id: &str,
        sleep: (Duration, Duration),
        timeout: Duration,
    ) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        FaultWorker {
            driver,
            schema,
            client_id: client_id.to_owned(),
            run_prefix: format!("{}-{nanos:x}", std::process::id()),
            next_run: AtomicU64::new(0),
            sleep_min: sleep.0,
            sleep_max: sleep.1.max(sleep.0),
            timeout,
        }
    }

    /// How long job `id` sleeps: spread over the range by a hash of the id.
    fn sleep_for(&self, id: i64) -> Duration {
        let span = (self.sleep_max - self.sleep_min).as_millis() as u64;
        let spread = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        self.sleep_min + Duration::from_millis(spread % (span + 1))
    }

    async fn record(&self, stmt: &Statement) {
        loop {
            let result = match self.driver.acquire().await {
                Ok(mut conn) => conn.execute(stmt).await.map(|_| ()),
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "recording an attempt failed; retrying");
                    tokio::time::sleep(RECORD_RETRY).await;
                }
            }
        }
    }
}

impl<D: Driver> Worker<FaultJob> for FaultWorker<D> {
    async fn work(&self, job: &Job<FaultJob>) -> Result<(), JobError> {
        let row = job.row();
        let run_id = format!(
            "{}-{}",
            self.run_prefix,
            self.next_run.fetch_add(1, Ordering::Relaxed)
        );
        let start = AttemptStart {
            run_id: run_id.clone(),
            job_id: row.id.0,
            attempt: row.attempt,
            claim_token: row.claim_token,
            attempted_at: row.attempted_at,
            client_id: self.client_id.clone(),
            pid: i32::try_from(std::process::id()).unwrap_or(i32::MAX),
        };
        self.record(&start.statement(&self.schema)).await;
        tokio::time::sleep(self.sleep_for(row.id.0)).await;
        self.record(&finished(&self.schema, &run_id)).await;
        Ok(())
    }

    fn timeout(&self, _job: &Job<FaultJob>) -> Option<Duration> {
        Some(self.timeout)
    }

    /// A second: a failed attempt (a timeout while frozen) must not wait out the default
    /// backoff, which grows to minutes after a few rescues.
    fn next_retry(&self, _job: &Job<FaultJob>) -> Option<TimeDelta> {
        Some(TimeDelta::seconds(1))
    }
}
