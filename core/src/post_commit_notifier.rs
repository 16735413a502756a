//! Insert notifications for inserts pgmill commits itself ([`Client::insert`](crate::Client) and
//! friends), sent right after the commit by a background task.
//!
//! Inside the application's own transaction a NOTIFY must travel with the transaction (so a
//! rollback sends nothing) and is debounced, because Postgres serialises the commits of notifying
//! transactions. When pgmill commits the insert itself, the notification can follow the commit as
//! a separate statement instead, which never holds back the insert's commit. Queues to announce
//! are handed to one task per client that sends them in one statement and coalesces whatever
//! arrives meanwhile: at most one notification statement is in flight per client, and one starts
//! no sooner than [`MIN_INTERVAL`] after the last one started. An insert after a quiet moment is
//! announced at once (idle workers start it within milliseconds); during a burst the inserts
//! committed meanwhile are announced together, at most [`MIN_INTERVAL`] after their commit, so a
//! client inserting thousands of jobs a second sends a couple of hundred notifications, not one
//! per round trip (each is a statement and a commit that take a connection, and on diesel two
//! hops to the blocking pool). The inserting call never waits for them.

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::debug;

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::with_timeout;
use crate::query::job_notify_insert;
use crate::schema::Schema;

/// The least time between the starts of two notification statements of one client.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(5);

/// Sends insert notifications after commits, coalesced, from a task started on first use.
pub(crate) struct PostCommitNotifier<D: Driver> {
    driver: D,
    schema: Schema,
    tx: OnceLock<mpsc::UnboundedSender<String>>,
}

impl<D: Driver> PostCommitNotifier<D> {
    pub(crate) fn new(driver: D, schema: Schema) -> Self {
        PostCommitNotifier {
            driver,
            schema,
            tx: OnceLock::new(),
        }
    }

    /// Announces `queues` (already committed, due now). The task ends when this is dropped.
    pub(crate) fn notify(&self, queues: impl IntoIterator<Item = String>) {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(send_loop(self.driver.clone(), self.schema.clone(), rx));
            tx
        });
        for q in queues {
            let _ = tx.send(q);
        }
    }
}

async fn send_loop<D: Driver>(driver: D, schema: Schema, mut rx: mpsc::UnboundedReceiver<String>) {
    let mut last_sent: Option<tokio::time::Instant> = None;
    while let Some(first) = rx.recv().await {
        if let Some(last) = last_sent {
            // Whatever else commits meanwhile goes out with this one.
            tokio::time::sleep_until(last + MIN_INTERVAL).await;
        }
        last_sent = Some(tokio::time::Instant::now());
        let mut queues = BTreeSet::from([first]);
        while let Ok(q) = rx.try_recv() {
            queues.insert(q);
        }
        let stmt = job_notify_insert(&schema, queues.into_iter().collect());
        let sent = with_timeout("insert notification", async {
            ConnectionLease::acquire(&driver)
                .await?
                .execute(&stmt)
                .await
        })
        .await;
        if let Err(e) = sent {
            // A lost notification only costs latency: the poll finds the jobs.
            debug!(error = %e, "insert notification not sent");
        }
    }
}
