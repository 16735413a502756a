//! Running what was enqueued to completion: [`drain`].

use std::time::Duration;

use pgmill::admin::JobListParams;
use pgmill::driver::Driver;
use pgmill::{Client, EventKind, JobState};

/// How long [`drain`] waits for the jobs by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// What a [`drain`] ran: attempts by how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Attempts that completed their job.
    pub completed: usize,
    /// Attempts that failed (their job retryable, or discarded).
    pub failed: usize,
    /// Attempts whose job was cancelled.
    pub cancelled: usize,
    /// Attempts that snoozed their job.
    pub snoozed: usize,
}

/// Runs the jobs due so far to completion with `client`, then stops it: starts the client (which
/// must not be running), waits until its schema has no available and no running job left, and
/// stops it. A retry made available again (one due within the completer's
/// [`available_within`](pgmill::CompleterConfig::available_within), 5 s by default) is waited
/// for and runs too; jobs scheduled further ahead stay for later. Waits at most
/// [`DEFAULT_DRAIN_TIMEOUT`]; see [`drain_within`].
///
/// # Errors
///
/// The client's start or database error; [`pgmill::Error::Timeout`] when jobs were still
/// available or running at the deadline (the client is stopped then too).
pub async fn drain<D: Driver>(client: &Client<D>) -> pgmill::Result<Drained> {
    drain_within(client, DEFAULT_DRAIN_TIMEOUT).await
}

/// [`drain`], waiting at most `timeout`.
///
/// # Errors
///
/// As [`drain`].
pub async fn drain_within<D: Driver>(
    client: &Client<D>,
    timeout: Duration,
) -> pgmill::Result<Drained> {
    let mut events = client.subscribe();
    client.start().await?;
    let waited = tokio::time::timeout(timeout, until_idle(client)).await;
    client.stop().await;
    match waited {
        Ok(result) => result?,
        Err(_) => return Err(pgmill::Error::Timeout("draining the enqueued jobs")),
    }
    let mut drained = Drained::default();
    // The client stopped: every outcome was recorded and its event sent.
    while let Ok(Some(event)) = tokio::time::timeout(Duration::ZERO, events.recv()).await {
        match event.kind {
            EventKind::JobCompleted => drained.completed += 1,
            EventKind::JobFailed => drained.failed += 1,
            EventKind::JobCancelled => drained.cancelled += 1,
            EventKind::JobSnoozed => drained.snoozed += 1,
            _ => {}
        }
    }
    Ok(drained)
}

/// Resolves once no job of the client's schema is available or running.
async fn until_idle<D: Driver>(client: &Client<D>) -> pgmill::Result<()> {
    let busy = JobListParams::new()
        .states([JobState::Available, JobState::Running])
        .limit(1);
    loop {
        if client.job_list(&busy).await?.jobs.is_empty() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
