//! A leading-edge debouncer: the first event for a key fires at once, later ones within the
//! cooldown are swallowed. Used so a client sends at most one insert notification per queue per
//! cooldown, however many jobs it inserts.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::fast_hash::FastMap;

/// Default cooldown of insert notifications.
pub(crate) const DEFAULT_INSERT_NOTIFY_COOLDOWN: Duration = Duration::from_millis(100);

/// Leading-edge debouncer per key, on tokio's clock (so tests can pause time).
#[derive(Debug)]
pub(crate) struct Debouncer {
    cooldown: Duration,
    last: Mutex<FastMap<String, Instant>>,
}

impl Debouncer {
    pub(crate) fn new(cooldown: Duration) -> Self {
        Debouncer {
            cooldown,
            last: Mutex::new(FastMap::default()),
        }
    }

    /// True when `key` may fire now (and records that it did).
    pub(crate) fn try_fire(&self, key: &str) -> bool {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match last.get(key) {
            Some(t) if now.duration_since(*t) < self.cooldown => false,
            _ => {
                last.insert(key.to_owned(), now);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn fires_once_per_key_per_cooldown() {
        let d = Debouncer::new(Duration::from_millis(100));
        assert!(d.try_fire("a"));
        assert!(!d.try_fire("a"));
        assert!(d.try_fire("b"));
        tokio::time::advance(Duration::from_millis(99)).await;
        assert!(!d.try_fire("a"));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(d.try_fire("a"));
    }
}
