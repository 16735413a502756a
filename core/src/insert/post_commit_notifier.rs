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
//!
//! An insert after a quiet moment need not wait for a statement of its own: when no
//! notification of this client started within [`MIN_INTERVAL`], the insert carries its
//! notification in its own statement ([`PostCommitNotifier::take_quiet`]), which leaves with its
//! commit, one round trip sooner, and counts as this client's notification for the interval. So
//! the rule holds across both ways: at most one notifying commit per client per interval, except
//! that a carried one may overlap a statement already on its way.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::debug;

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::with_timeout;
use crate::query::job_notify_insert;
use crate::schema::Schema;

/// The least time between the starts of two notification statements of one client.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(5);

/// When this client's last notification started (a statement of the send loop, or an insert that
/// carried its own), shared by the loop and [`PostCommitNotifier::take_quiet`].
type LastStart = Arc<Mutex<Option<Instant>>>;

/// Sends insert notifications after commits, coalesced, from a task started on first use.
pub(crate) struct PostCommitNotifier<D: Driver> {
    driver: D,
    schema: Schema,
    tx: OnceLock<mpsc::UnboundedSender<String>>,
    last_start: LastStart,
    /// Notification statements the send loop ran.
    statements: Arc<AtomicU64>,
}

impl<D: Driver> PostCommitNotifier<D> {
    pub(crate) fn new(driver: D, schema: Schema) -> Self {
        PostCommitNotifier {
            driver,
            schema,
            tx: OnceLock::new(),
            last_start: LastStart::default(),
            statements: Arc::default(),
        }
    }

    /// True when no notification of this client started within [`MIN_INTERVAL`]: the caller's
    /// insert then carries its own notification, which counts as this client's latest.
    pub(crate) fn take_quiet(&self) -> bool {
        start_if_quiet(&self.last_start).is_ok()
    }

    /// How many notification statements this client sent after its inserts' commits.
    pub(crate) fn statements(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// Announces `queues` (already committed, due now). The task ends when this is dropped.
    pub(crate) fn notify(&self, queues: impl IntoIterator<Item = String>) {
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(send_loop(
                self.driver.clone(),
                self.schema.clone(),
                rx,
                Arc::clone(&self.last_start),
                Arc::clone(&self.statements),
            ));
            tx
        });
        for q in queues {
            let _ = tx.send(q);
        }
    }
}

/// Records a notification starting now when none started within [`MIN_INTERVAL`]; otherwise
/// tells when the interval ends.
fn start_if_quiet(last_start: &Mutex<Option<Instant>>) -> Result<(), Instant> {
    let mut last = last_start.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    match *last {
        Some(at) if now < at + MIN_INTERVAL => Err(at + MIN_INTERVAL),
        _ => {
            *last = Some(now);
            Ok(())
        }
    }
}

async fn send_loop<D: Driver>(
    driver: D,
    schema: Schema,
    mut rx: mpsc::UnboundedReceiver<String>,
    last_start: LastStart,
    statements: Arc<AtomicU64>,
) {
    while let Some(first) = rx.recv().await {
        // Whatever else commits meanwhile goes out with this one. An insert that carried its
        // own notification meanwhile pushes the start back.
        while let Err(due) = start_if_quiet(&last_start) {
            tokio::time::sleep_until(due).await;
        }
        statements.fetch_add(1, Ordering::Relaxed);
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
