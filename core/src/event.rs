//! Events about finished attempts, for subscribers (metrics, logging, tests).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::job::JobRow;

/// What happened to an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// The job completed.
    JobCompleted,
    /// The attempt failed: the job is retryable, available again, or discarded.
    JobFailed,
    /// The job was cancelled.
    JobCancelled,
    /// The job was snoozed.
    JobSnoozed,
    /// The attempt was interrupted by a hard stop; the job is available again, attempt given back.
    JobInterrupted,
}

/// One finished attempt, after its outcome was recorded.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// The job after the outcome was recorded: state, attempt, `scheduled_at` and `finalized_at`
    /// are updated and `claim_token` is `None` (the claim is over); `errors` holds the earlier
    /// attempts' errors (this attempt's is in [`Event::error`]).
    pub job: JobRow,
    /// This attempt's error message, for failed and cancelled attempts.
    pub error: Option<String>,
    /// How long the job waited from becoming due to being fetched (database clock).
    pub queue_wait: Duration,
    /// How long the worker ran.
    pub run_time: Duration,
    /// How long from the worker finishing to its outcome being committed.
    pub completion_lag: Duration,
    /// The timeout this attempt ran past, when its worker ended on its own after it: a worker
    /// that blocks its thread cannot be stopped by its timeout (run blocking work in
    /// `tokio::task::spawn_blocking`). The attempt's result stands; `run_time` says how long it
    /// ran.
    pub ran_past_timeout: Option<Duration>,
}

/// A subscription to a client's events.
///
/// Events go through a bounded buffer: a subscriber that falls behind never slows the engine; it
/// misses the oldest events instead, counted by [`Subscription::dropped`].
#[derive(Debug)]
pub struct Subscription {
    rx: broadcast::Receiver<Arc<Event>>,
    dropped: u64,
}

impl Subscription {
    pub(crate) fn new(rx: broadcast::Receiver<Arc<Event>>) -> Self {
        Subscription { rx, dropped: 0 }
    }

    /// The next event, or `None` once the client is dropped.
    pub async fn recv(&mut self) -> Option<Arc<Event>> {
        loop {
            match self.rx.recv().await {
                Ok(e) => return Some(e),
                Err(broadcast::error::RecvError::Lagged(n)) => self.dropped += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// How many events this subscriber missed because it fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Sends events to subscribers without ever waiting for them.
#[derive(Debug)]
pub(crate) struct EventSender {
    tx: broadcast::Sender<Arc<Event>>,
}

impl EventSender {
    pub(crate) fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        EventSender { tx }
    }

    pub(crate) fn has_subscribers(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    pub(crate) fn send(&self, event: Event) {
        // An error only means nobody subscribes.
        let _ = self.tx.send(Arc::new(event));
    }

    pub(crate) fn subscribe(&self) -> Subscription {
        Subscription::new(self.tx.subscribe())
    }
}
