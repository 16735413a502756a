//! Wake-ups for in-transaction inserts whose notification was debounced.
//!
//! Inside the application's transaction an insert notification travels with the transaction: it
//! is delivered at commit, and lost on rollback. The inserter sends at most one per queue per
//! cooldown, so a later insert into that queue, in another transaction, sends none; but the
//! transaction that did notify may roll back, or commit before the later one does (and the
//! producers it woke have fetched by then). Either way the later job would wait for a poll. So the
//! inserter hands each such job to the commit watcher instead, which looks for it from a pool
//! connection until it is visible (its transaction committed) and then notifies its queue, from
//! its own transaction, which therefore follows that commit. Every committed insert is so
//! announced after its commit: by its own transaction's notification or by the watcher.
//!
//! Jobs are looked for first a few milliseconds after their insert, then at doubling intervals up
//! to [`MAX_DELAY`], and looks are at least [`MIN_LOOK_INTERVAL`] apart. A look at one job of a
//! queue looks at every job watched in that queue, so one statement finds all the jobs of a
//! transaction (or of many) and notifies their queue once.
//! A job not seen within [`GIVE_UP_AFTER`] (rolled back, or still in a transaction that long) is
//! no longer looked for: the producers' poll finds it if it ever commits.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::debug;

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::with_timeout;
use crate::job::JobId;
use crate::query::{IdRow, job_notify_committed};
use crate::schema::Schema;

/// The first look for a job, after its insert.
const FIRST_DELAY: Duration = Duration::from_millis(5);
/// The least time between two looks: under a steady stream of inserts one look (and at most one
/// notification per queue) every this long covers every job inserted meanwhile, instead of one
/// every [`FIRST_DELAY`].
const MIN_LOOK_INTERVAL: Duration = Duration::from_millis(20);
/// The longest interval between two looks for one job.
const MAX_DELAY: Duration = Duration::from_secs(1);
/// A job not seen for this long is no longer looked for.
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);
/// Most jobs looked for at once; beyond it the oldest are dropped (the poll finds them).
const MAX_WATCHED: usize = 10_000;

/// Follows the commit of inserted jobs and announces them; what the [`Inserter`](crate::Inserter)
/// sees of a [`CommitWatcher`].
pub(crate) trait CommitFollower: Send + Sync {
    /// Announces `queue` once job `id` (in it) is committed. False when it cannot (no tokio
    /// runtime here, or the watcher's task is gone): the caller must notify itself.
    fn follow(&self, id: JobId, queue: &str) -> bool;
}

/// Looks for jobs until they are committed, then notifies their queues (one task, started on
/// first use, ended when this is dropped).
pub(crate) struct CommitWatcher<D: Driver> {
    driver: D,
    schema: Schema,
    tx: OnceLock<mpsc::UnboundedSender<(JobId, String)>>,
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
    fn follow(&self, id: JobId, queue: &str) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let tx = self.tx.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            runtime.spawn(watch_loop(self.driver.clone(), self.schema.clone(), rx));
            tx
        });
        tx.send((id, queue.to_owned())).is_ok()
    }
}

/// One job looked for.
struct Watched {
    id: JobId,
    queue: String,
    since: Instant,
    next: Instant,
    delay: Duration,
}

impl Watched {
    fn new((id, queue): (JobId, String), now: Instant) -> Self {
        Watched {
            id,
            queue,
            since: now,
            next: now + FIRST_DELAY,
            delay: FIRST_DELAY,
        }
    }

    /// Not seen this time: the next look after twice the delay.
    fn back_off(&mut self, now: Instant) {
        self.delay = (self.delay * 2).min(MAX_DELAY);
        self.next = now + self.delay;
    }
}

async fn watch_loop<D: Driver>(
    driver: D,
    schema: Schema,
    mut rx: mpsc::UnboundedReceiver<(JobId, String)>,
) {
    let mut watched: Vec<Watched> = Vec::new();
    let mut last_look: Option<Instant> = None;
    loop {
        let next = watched
            .iter()
            .map(|w| w.next)
            .min()
            .map(|at| last_look.map_or(at, |l| at.max(l + MIN_LOOK_INTERVAL)));
        // The earliest a job sent from now on could be looked for: FIRST_DELAY after it arrives,
        // and never sooner than MIN_LOOK_INTERVAL after the last look.
        let first_look = Instant::now() + FIRST_DELAY;
        let earliest_arrival_look =
            last_look.map_or(first_look, |l| first_look.max(l + MIN_LOOK_INTERVAL));
        match next {
            // While the next look is due no later than any job sent meanwhile could be looked
            // for, arrivals wait in the channel until then: one wake-up per look, not one per
            // insert (between two looks, every insert would otherwise wake this task).
            Some(at) if at <= earliest_arrival_look => tokio::time::sleep_until(at).await,
            _ => tokio::select! {
                id = rx.recv() => match id {
                    Some(id) => watched.push(Watched::new(id, Instant::now())),
                    None => return,
                },
                () = sleep_until(next), if next.is_some() => {}
            },
        }
        let now = Instant::now();
        while let Ok(id) = rx.try_recv() {
            watched.push(Watched::new(id, now));
        }
        if last_look.is_some_and(|l| now < l + MIN_LOOK_INTERVAL) {
            // Woken by an arrival before the next look may run.
            continue;
        }
        if watched.len() > MAX_WATCHED {
            let drop = watched.len() - MAX_WATCHED;
            watched.drain(..drop);
        }
        let queues: HashSet<&str> = watched
            .iter()
            .filter(|w| w.next <= now)
            .map(|w| w.queue.as_str())
            .collect();
        if queues.is_empty() {
            continue;
        }
        let due: Vec<JobId> = watched
            .iter()
            .filter(|w| queues.contains(w.queue.as_str()))
            .map(|w| w.id)
            .collect();
        last_look = Some(now);
        let stmt = job_notify_committed(&schema, &due);
        let seen = with_timeout("commit watch", async {
            ConnectionLease::acquire(&driver)
                .await?
                .query_as::<IdRow>(&stmt)
                .await
        })
        .await;
        let seen: HashSet<JobId> = match seen {
            Ok(rows) => rows.into_iter().map(|IdRow(id)| id).collect(),
            Err(e) => {
                // Looked for again later; meanwhile the poll still finds the jobs.
                debug!(error = %e, "cannot look for committed inserts");
                HashSet::new()
            }
        };
        let due: HashSet<JobId> = due.into_iter().collect();
        let now = Instant::now();
        watched.retain_mut(|w| {
            if !due.contains(&w.id) {
                return true;
            }
            if seen.contains(&w.id) || now.duration_since(w.since) >= GIVE_UP_AFTER {
                return false;
            }
            if w.next <= now {
                w.back_off(now);
            }
            true
        });
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}
