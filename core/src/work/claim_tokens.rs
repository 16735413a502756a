//! Fencing tokens: one per claim, never used twice.
//!
//! Every claim (one fetch statement) records a token on the rows it claims, and every outcome of
//! that claim names it: an outcome lands only while the row still carries its claim's token
//! (`job_set_state_if_running_many`). The attempt number alone cannot fence, because it is given
//! back when a claim is released (interrupted or snoozed attempts, orphans released by the
//! heartbeat), so the next claim reuses it.
//!
//! Tokens come from the client, not from the database: a database sequence would hand the same
//! values out again after a failover that lost the commits which used them, to the same jobs
//! (fetch order is deterministic). Each client starts at a random 63-bit origin and steps by one
//! per claim, so its own tokens never repeat (until 2⁶³ claims) and two clients' tokens meet only
//! if their random origins fall within a few million of each other (odds about 10⁻¹² per pair of
//! clients).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The token an outcome carries when its job was never claimed by this client (say, a
/// [`JobRow`](crate::JobRow) read by an operator): tokens are never negative, so it matches no
/// claim.
pub(crate) const NO_CLAIM: i64 = -1;

/// Hands out one client's fencing tokens.
pub(crate) struct ClaimTokens {
    next: AtomicU64,
}

impl fmt::Debug for ClaimTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaimTokens").finish_non_exhaustive()
    }
}

impl ClaimTokens {
    /// A generator starting at a random origin.
    pub(crate) fn new() -> Self {
        Self::starting_at(rand::random::<u64>())
    }

    fn starting_at(origin: u64) -> Self {
        ClaimTokens {
            next: AtomicU64::new(origin),
        }
    }

    /// The token of a new claim: non-negative, and different from every token this generator
    /// handed out before.
    pub(crate) fn next(&self) -> i64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed) & (i64::MAX as u64);
        i64::try_from(n).expect("masked to 63 bits")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_distinct_and_never_negative_even_across_the_wrap() {
        let tokens = ClaimTokens::starting_at(u64::MAX - 2);
        let drawn: Vec<i64> = (0..6).map(|_| tokens.next()).collect();
        assert_eq!(drawn, vec![i64::MAX - 2, i64::MAX - 1, i64::MAX, 0, 1, 2]);
        let tokens = ClaimTokens::new();
        let mut seen = std::collections::HashSet::new();
        assert!((0..10_000).all(|_| seen.insert(tokens.next())));
        assert!(seen.iter().all(|t| *t >= 0 && *t != NO_CLAIM));
    }
}
