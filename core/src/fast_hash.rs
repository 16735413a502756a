//! A hasher for the maps the engine looks up on the path of every job: by job id and claim token,
//! by job kind (the worker and middleware registries), and by queue and inserting transaction
//! (the insert notifications' debouncer and commit watcher).
//!
//! The standard library's SipHash resists keys chosen to make one map's entries collide, and
//! costs one to two hundred instructions per key. These maps need no such defence: ids come from
//! the database's sequence and the client's token counter, inserting transactions' ids from the
//! database, the kind registries hold only what the application registered (a job of any other
//! kind is one failed lookup), and queue names are the application's. This is one multiply per
//! 64-bit word, as rustc's own `FxHasher`.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A map hashed with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A set hashed with [`FastHasher`].
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

/// Hashes keys with a rotate, a xor and a multiply per 64-bit word.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

/// An odd constant with well-spread bits (the one `FxHasher` uses).
const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;
    use crate::job::JobId;

    #[test]
    fn neighbouring_ids_spread_over_the_table() {
        let build = BuildHasherDefault::<FastHasher>::default();
        // hashbrown picks a bucket from the low bits and a tag from the top seven.
        let low: std::collections::HashSet<u64> =
            (0..1024).map(|i| build.hash_one(JobId(i)) & 1023).collect();
        let top: std::collections::HashSet<u64> =
            (0..1024).map(|i| build.hash_one(JobId(i)) >> 57).collect();
        assert_eq!(low.len(), 1024, "sequential ids take distinct buckets");
        assert!(top.len() > 100, "and varied tags: {}", top.len());
        assert_ne!(
            build.hash_one((JobId(1), 2_i64)),
            build.hash_one((JobId(2), 1_i64)),
            "a pair's order counts"
        );
        let mut map = FastMap::default();
        map.insert((JobId(7), 10_i64), "first");
        map.insert((JobId(7), 11_i64), "second");
        assert_eq!(map.remove(&(JobId(7), 10)), Some("first"));
        assert_eq!(map.len(), 1);
    }
}
