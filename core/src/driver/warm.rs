//! Connections a driver's engine just released, kept for a moment for its next acquires.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Connections the engine just released clean, kept for a moment and handed out again by the
/// driver's next acquires, so that they skip the pool's own check on the way back in and out.
///
/// Pools check the connections they take back or hand out: sqlx pings every connection returned
/// to its pool (a round trip), deadpool-diesel runs its recycle check on tokio's blocking pool (a
/// thread hop). The engine runs many short statements, each on a connection of its own (a
/// `Client::insert`, a claim, a completion batch), and under load that check costs as much as the
/// statement. So a driver keeps here a connection released with nothing left on it (no
/// transaction open, no call cut off mid-way, not found lost), and its next acquire takes it
/// before asking the pool.
///
/// At most a quarter of the pool is kept, and never more than [`WarmConnections::MAX_KEPT`]. A
/// connection kept longer than [`WarmConnections::KEEP_FOR`] is dropped, which returns it to the
/// pool: the application's own checkouts wait for it at most that long, and an idle engine keeps
/// none.
pub struct WarmConnections<C> {
    /// Kept connections with the number each was kept under, most recent last.
    kept: Mutex<Vec<(u64, C)>>,
    capacity: usize,
    next: AtomicU64,
}

impl<C> fmt::Debug for WarmConnections<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarmConnections")
            .field("kept", &self.lock().len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl<C> WarmConnections<C> {
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, C)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<C: Send + 'static> WarmConnections<C> {
    /// How long a released connection is kept before it goes back to the pool.
    pub const KEEP_FOR: Duration = Duration::from_millis(50);

    /// The most connections kept, whatever the pool's size.
    pub const MAX_KEPT: usize = 2;

    /// Keeps up to a quarter of a pool of `pool_size` connections (none of a pool under four),
    /// and no more than [`WarmConnections::MAX_KEPT`].
    pub fn new(pool_size: usize) -> Self {
        WarmConnections {
            kept: Mutex::new(Vec::new()),
            capacity: (pool_size / 4).min(Self::MAX_KEPT),
            next: AtomicU64::new(0),
        }
    }

    /// The most recently kept connection, if any.
    pub fn take(&self) -> Option<C> {
        self.lock().pop().map(|(_, conn)| conn)
    }

    /// Keeps `conn`, released clean, for [`WarmConnections::KEEP_FOR`]. When full, or outside a
    /// tokio runtime (where nothing would give it back), `conn` is dropped at once: back to its
    /// pool.
    pub fn keep(self: &Arc<Self>, conn: C) {
        if self.capacity == 0 {
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
            kept.push((id, conn));
            id
        };
        let warm = Arc::clone(self);
        runtime.spawn(async move {
            tokio::time::sleep(Self::KEEP_FOR).await;
            let expired = {
                let mut kept = warm.lock();
                kept.iter()
                    .position(|(i, _)| *i == id)
                    .map(|at| kept.remove(at))
            };
            // Back to the pool, outside the lock.
            drop(expired);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_a_quarter_of_the_pool_up_to_the_most() {
        for (pool, kept) in [(1, 0), (3, 0), (4, 1), (7, 1), (8, 2), (100, 2)] {
            assert_eq!(
                WarmConnections::<u8>::new(pool).capacity,
                kept,
                "pool of {pool}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn hands_out_the_latest_and_gives_each_back_after_its_time() {
        let warm = Arc::new(WarmConnections::new(8));
        warm.keep(Arc::new(1));
        warm.keep(Arc::new(2));
        let third = Arc::new(3);
        warm.keep(Arc::clone(&third));
        assert_eq!(Arc::strong_count(&third), 1, "full: dropped at once");
        assert_eq!(warm.take().as_deref(), Some(&2));
        let first = warm.take().expect("the first is still kept");
        warm.keep(first);
        tokio::time::sleep(WarmConnections::<Arc<u8>>::KEEP_FOR / 2).await;
        let kept = Arc::new(4);
        warm.keep(Arc::clone(&kept));
        tokio::time::sleep(WarmConnections::<Arc<u8>>::KEEP_FOR / 2 + Duration::from_millis(1))
            .await;
        assert_eq!(Arc::strong_count(&kept), 2, "kept for its own time");
        assert_eq!(warm.take().as_deref(), Some(&4));
        assert!(warm.take().is_none(), "the first went back after its time");
    }

    #[test]
    fn outside_a_runtime_nothing_is_kept() {
        let warm = Arc::new(WarmConnections::new(8));
        let conn = Arc::new(1);
        warm.keep(Arc::clone(&conn));
        assert_eq!(Arc::strong_count(&conn), 1);
        assert!(warm.take().is_none());
    }
}
