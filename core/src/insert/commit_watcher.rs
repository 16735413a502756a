//! Wake-ups for in-transaction inserts whose notification was debounced.
//!
//! Inside the application's transaction an insert notification travels with the transaction: it
//! is delivered at commit, and lost on rollback. The inserter sends at most one per queue per
//! cooldown, so a later insert into that queue, in another transaction, sends none; but the
//! transaction that did notify may roll back, or commit before the later one does (and the
//! producers it woke have fetched by then). Either way the later job would wait for a poll. So the
//! inserter hands each such inserting transaction (its id, which every insert statement returns,
//! and the queue) to the commit watcher instead, which asks the database from a pool connection
//! whether that transaction has ended, and once it has committed (completed before the asking
//! statement's snapshot, so every later snapshot sees its rows) notifies its queue, from its own
//! transaction, which therefore follows that commit. Every committed insert is so announced after
//! its commit: by its own transaction's notification or by the watcher. A rolled-back transaction
//! is dropped at the first look that sees it ended. The look reads only the transactions' status,
//! no table, so it costs the same however large the job table is.
//!
//! Transactions are looked at first a few milliseconds after their insert, then at doubling
//! intervals up to [`MAX_DELAY`], and looks are at least [`MIN_LOOK_INTERVAL`] apart. A look at
//! one transaction of a queue looks at every transaction watched in that queue, so one statement
//! settles them all and notifies their queue once. A transaction's later inserts may reach the
//! watcher only after the look that settled it was sent (they were handed over while it was on
//! its way, before the transaction ended); they are dropped, so each queue a transaction inserted
//! into is announced once.
//! A transaction still open after [`GIVE_UP_AFTER`] is no longer looked at: the producers' poll
//! finds its jobs if it ever commits.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::debug;

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::with_timeout;
use crate::fast_hash::FastSet;
use crate::query::{InProgressRow, job_notify_committed};
use crate::schema::Schema;

/// The first look at a transaction, after its insert.
const FIRST_DELAY: Duration = Duration::from_millis(5);
/// The least time between two looks: under a steady stream of inserts one look (and at most one
/// notification per queue) every this long covers every job inserted meanwhile, instead of one
/// every [`FIRST_DELAY`].
const MIN_LOOK_INTERVAL: Duration = Duration::from_millis(20);
/// The longest interval between two looks at one transaction.
const MAX_DELAY: Duration = Duration::from_secs(1);
/// A transaction still open after this long is no longer looked at.
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);
/// Most transactions (with their queue) looked at at once; beyond it the oldest are dropped (the
/// poll finds their jobs).
const MAX_WATCHED: usize = 10_000;

/// Follows the commit of inserted jobs and announces them; what the [`Inserter`](crate::Inserter)
/// sees of a [`CommitWatcher`].
pub(crate) trait CommitFollower: Send + Sync {
    /// Announces `queue` once transaction `xact_id`, which inserted jobs due now in it, has
    /// committed. False when it cannot (no tokio runtime here, or the watcher's task is gone):
    /// the caller must notify itself.
    fn follow(&self, xact_id: i64, queue: &str) -> bool;
}

/// Looks at inserting transactions until they have ended, then notifies the queues of those that
/// committed (one task, started on first use, ended when this is dropped).
pub(crate) struct CommitWatcher<D: Driver> {
    driver: D,
    schema: Schema,
    tx: OnceLock<mpsc::UnboundedSender<(i64, String)>>,
}

impl<D: Driver> CommitWatcher<D> {
    pub(crate) fn new(driver: D, schema: Schema) -> Arc<Self> {
        Arc::new(CommitWatcher {
            driver,
            schema,
            tx: OnceLock::new(),
        })
    }
}

impl<D: Driver> CommitFollower for CommitWatcher<D> {
    fn follow(&self, xact_id: i64, queue: &str) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            runtime.spawn(watch_loop(self.driver.clone(), self.schema.clone(), rx));
            tx
        });
        tx.send((xact_id, queue.to_owned())).is_ok()
    }
}

/// One inserting transaction looked at, with a queue it inserted into.
struct Watched {
    xact_id: i64,
    queue: String,
    since: Instant,
    next: Instant,
    delay: Duration,
}

impl Watched {
    fn new((xact_id, queue): (i64, String), now: Instant) -> Self {
        Watched {
            xact_id,
            queue,
            since: now,
            next: now + FIRST_DELAY,
            delay: FIRST_DELAY,
        }
    }

    /// Still open this time: the next look after twice the delay.
    fn back_off(&mut self, now: Instant) {
        self.delay = (self.delay * 2).min(MAX_DELAY);
        self.next = now + self.delay;
    }
}

async fn watch_loop<D: Driver>(
    driver: D,
    schema: Schema,
    mut rx: mpsc::UnboundedReceiver<(i64, String)>,
) {
    let mut watched: Vec<Watched> = Vec::new();
    // The (transaction, queue) pairs in `watched`: a transaction inserting many jobs into a queue
    // is looked at once.
    let mut keys: FastSet<(i64, String)> = FastSet::default();
    // The pairs the last look settled. A transaction's inserts all hand it over before it ends,
    // and a look settles it only after it ended, so every pair it sent is in the channel by the
    // time that look returns; one that was not taken in before the look (sent while the look was
    // on its way) arrives at the next receive, and is dropped here instead of being watched and
    // announced a second time.
    let mut just_settled: FastSet<(i64, String)> = FastSet::default();
    let mut last_look: Option<Instant> = None;
    loop {
        let next = watched
            .iter()
            .map(|w| w.next)
            .min()
            .map(|at| last_look.map_or(at, |l| at.max(l + MIN_LOOK_INTERVAL)));
        // The earliest a transaction sent from now on could be looked at: FIRST_DELAY after it
        // arrives, and never sooner than MIN_LOOK_INTERVAL after the last look.
        let first_look = Instant::now() + FIRST_DELAY;
        let earliest_arrival_look =
            last_look.map_or(first_look, |l| first_look.max(l + MIN_LOOK_INTERVAL));
        match next {
            // While the next look is due no later than any transaction sent meanwhile could be
            // looked at, arrivals wait in the channel until then: one wake-up per look, not one
            // per insert (between two looks, every insert would otherwise wake this task).
            Some(at) if at <= earliest_arrival_look => tokio::time::sleep_until(at).await,
            _ => tokio::select! {
                sent = rx.recv() => match sent {
                    Some(sent) => {
                        arrive(&mut watched, &mut keys, &just_settled, sent, Instant::now());
                    }
                    None => return,
                },
                () = sleep_until(next), if next.is_some() => {}
            },
        }
        let now = Instant::now();
        while let Ok(sent) = rx.try_recv() {
            arrive(&mut watched, &mut keys, &just_settled, sent, now);
        }
        just_settled.clear();
        if last_look.is_some_and(|l| now < l + MIN_LOOK_INTERVAL) {
            // Woken by an arrival before the next look may run.
            continue;
        }
        if watched.len() > MAX_WATCHED {
            let drop = watched.len() - MAX_WATCHED;
            for w in watched.drain(..drop) {
                keys.remove(&(w.xact_id, w.queue));
            }
        }
        let queues: FastSet<&str> = watched
            .iter()
            .filter(|w| w.next <= now)
            .map(|w| w.queue.as_str())
            .collect();
        if queues.is_empty() {
            continue;
        }
        let due: Vec<(i64, &str)> = watched
            .iter()
            .filter(|w| queues.contains(w.queue.as_str()))
            .map(|w| (w.xact_id, w.queue.as_str()))
            .collect();
        last_look = Some(now);
        let stmt = job_notify_committed(&schema, &due);
        let due: FastSet<String> = queues.into_iter().map(str::to_owned).collect();
        let looked = with_timeout("commit watch", async {
            ConnectionLease::acquire(&driver)
                .await?
                .query_opt::<InProgressRow>(&stmt)
                .await
        })
        .await;
        // The transactions still in progress; every other one looked at is settled. `None` when
        // the look failed: all are looked at again later (meanwhile the poll finds the jobs).
        let in_progress: Option<FastSet<i64>> = match looked {
            Ok(row) => {
                Some(row.map_or_else(FastSet::default, |InProgressRow(x)| x.into_iter().collect()))
            }
            Err(e) => {
                debug!(error = %e, "cannot look at inserting transactions");
                None
            }
        };
        let now = Instant::now();
        watched.retain_mut(|w| {
            if !due.contains(&w.queue) {
                return true;
            }
            let settled = in_progress
                .as_ref()
                .is_some_and(|open| !open.contains(&w.xact_id));
            if settled || now.duration_since(w.since) >= GIVE_UP_AFTER {
                let key = (w.xact_id, std::mem::take(&mut w.queue));
                keys.remove(&key);
                if settled {
                    just_settled.insert(key);
                }
                return false;
            }
            if w.next <= now {
                w.back_off(now);
            }
            true
        });
    }
}

/// Watches `sent` (a transaction and a queue it inserted into) unless it is watched already or
/// the last look settled it.
fn arrive(
    watched: &mut Vec<Watched>,
    keys: &mut FastSet<(i64, String)>,
    just_settled: &FastSet<(i64, String)>,
    sent: (i64, String),
    now: Instant,
) {
    if !just_settled.contains(&sent) && keys.insert(sent.clone()) {
        watched.push(Watched::new(sent, now));
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_the_last_look_settled_is_not_watched_again() {
        let now = Instant::now();
        let mut watched = Vec::new();
        let mut keys = FastSet::default();
        let mut just_settled = FastSet::default();
        just_settled.insert((7, "default".to_owned()));
        let mut send = |sent: (i64, &str), just_settled: &FastSet<(i64, String)>| {
            arrive(
                &mut watched,
                &mut keys,
                just_settled,
                (sent.0, sent.1.to_owned()),
                now,
            );
        };
        // Settled by the last look: its queue was notified, or its transaction rolled back.
        send((7, "default"), &just_settled);
        // The same transaction's insert into a queue that look did not settle, and another
        // transaction: both watched, each once.
        send((7, "other"), &just_settled);
        send((8, "default"), &just_settled);
        send((8, "default"), &just_settled);
        // After the receive that follows the look, the pair is an ordinary arrival again.
        send((7, "default"), &FastSet::default());
        let pairs: Vec<(i64, &str)> = watched
            .iter()
            .map(|w| (w.xact_id, w.queue.as_str()))
            .collect();
        assert_eq!(pairs, [(7, "other"), (8, "default"), (7, "default")]);
    }
}
