//! Connections the engine just released, kept for a moment to be handed out again.
//!
//! deadpool-diesel checks every connection it hands out with its recycle check, which it runs
//! inside `interact`, like a statement: one more hop to tokio's blocking pool and back, whatever
//! the check is (this driver's own pool checks nothing). Under load that doubled the hops of each
//! of the engine's statements on a connection of its own (a `Client::insert`, a claim): the
//! thread wake-ups, not the statements, were most of the client's time.
//!
//! So a connection the engine releases clean (no transaction open, no call in flight, not found
//! lost) is kept here, up to [`WarmConnections::new`]'s few, and the next acquire takes it without
//! the check. One kept longer than [`KEEP_FOR`] goes back to the pool, so the application's own
//! checkouts wait for it at most that long, and an idle engine holds none.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_diesel::postgres::Object;

/// How long a released connection is kept before it goes back to the pool.
pub(crate) const KEEP_FOR: Duration = Duration::from_millis(50);

/// The most connections kept: a quarter of the pool, and never more than this.
const MAX_KEPT: usize = 2;

/// Released connections kept for the driver's next acquires, most recent last.
pub(crate) struct WarmConnections {
    kept: Mutex<Vec<(u64, Object)>>,
    capacity: usize,
    next: AtomicU64,
}

impl fmt::Debug for WarmConnections {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarmConnections")
            .field("kept", &self.lock().len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl WarmConnections {
    /// Keeps up to a quarter of a pool of `pool_size` connections (none of a pool under four),
    /// and no more than [`MAX_KEPT`].
    pub(crate) fn new(pool_size: usize) -> Self {
        WarmConnections {
            kept: Mutex::new(Vec::new()),
            capacity: (pool_size / 4).min(MAX_KEPT),
            next: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Object)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most recently kept connection, if any.
    pub(crate) fn take(&self) -> Option<Object> {
        self.lock().pop().map(|(_, object)| object)
    }

    /// Keeps `object`, released clean, for [`KEEP_FOR`]; when full (or outside a tokio runtime,
    /// where nothing would give it back), it goes back to the pool at once.
    pub(crate) fn keep(self: &std::sync::Arc<Self>, object: Object) {
        if self.capacity == 0 || object.is_mutex_poisoned() {
            // Straight back to the pool (where deadpool's check discards it if a call panicked).
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let id = {
            let mut kept = self.lock();
            if kept.len() >= self.capacity {
                return;
            }
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            kept.push((id, object));
            id
        };
        let warm = std::sync::Arc::clone(self);
        runtime.spawn(async move {
            tokio::time::sleep(KEEP_FOR).await;
            let expired = {
                let mut kept = warm.lock();
                kept.iter()
                    .position(|(i, _)| *i == id)
                    .map(|at| kept.remove(at))
            };
            // Back to the pool (outside the lock).
            drop(expired);
        });
    }
}
