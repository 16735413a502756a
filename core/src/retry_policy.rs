//! When a failed job runs again.

use std::fmt;

use chrono::TimeDelta;
use rand::Rng;

/// Decides how long a job waits after a failed attempt.
///
/// # Examples
///
/// ```
/// use chrono::TimeDelta;
/// use pgmill::RetryPolicy;
///
/// /// Retries every job after a fixed 30 seconds.
/// #[derive(Debug)]
/// struct Fixed;
///
/// impl RetryPolicy for Fixed {
///     fn next_retry(&self, _attempt: i16) -> TimeDelta {
///         TimeDelta::seconds(30)
///     }
/// }
/// assert_eq!(Fixed.next_retry(3), TimeDelta::seconds(30));
/// ```
pub trait RetryPolicy: Send + Sync + fmt::Debug + 'static {
    /// The delay before the next attempt, after attempt `attempt` (from 1) failed.
    fn next_retry(&self, attempt: i16) -> TimeDelta;
}

/// The default backoff: `attempt⁴` seconds plus up to 10 % random jitter.
///
/// Attempt 1 waits about 1 s, attempt 5 about 10 min, attempt 10 about 2.8 h, and the 24 waits
/// before the default 25th attempt add up to about 3 weeks. Jitter spreads out jobs that failed
/// together so they do not retry in lockstep.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRetryPolicy;

impl RetryPolicy for DefaultRetryPolicy {
    fn next_retry(&self, attempt: i16) -> TimeDelta {
        let base = f64::from(attempt.max(1)).powi(4);
        let jitter = rand::rng().random_range(0.0..=base * 0.1);
        TimeDelta::microseconds(((base + jitter) * 1e6) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_backoff_grows_as_the_fourth_power_with_bounded_jitter() {
        for attempt in [1_i16, 2, 5, 10, 25] {
            let base = i64::from(attempt).pow(4);
            for _ in 0..50 {
                let d = DefaultRetryPolicy.next_retry(attempt).num_milliseconds();
                assert!(
                    d >= base * 1000 && d <= base * 1100,
                    "attempt {attempt}: {d} ms"
                );
            }
        }
    }
}
