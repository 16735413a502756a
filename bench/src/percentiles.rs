//! Latency percentiles by the nearest-rank method.

use std::time::Duration;

/// The p50, p95, p99 and maximum of a set of latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Percentiles {
    /// How many samples.
    pub(crate) count: usize,
    /// The median.
    pub(crate) p50: Duration,
    /// The 95th percentile.
    pub(crate) p95: Duration,
    /// The 99th percentile.
    pub(crate) p99: Duration,
    /// The largest sample.
    pub(crate) max: Duration,
}

impl Percentiles {
    /// The percentiles of `samples`; `None` when there are none.
    pub(crate) fn of(mut samples: Vec<Duration>) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        Some(Percentiles {
            count: samples.len(),
            p50: nearest_rank(&samples, 50.0),
            p95: nearest_rank(&samples, 95.0),
            p99: nearest_rank(&samples, 99.0),
            max: samples[samples.len() - 1],
        })
    }
}

/// The `p`-th percentile of sorted, non-empty `samples` by the nearest-rank method: the smallest
/// sample such that at least `p` percent of the samples are less than or equal to it (rank
/// `ceil(p / 100 * n)`, counted from 1).
pub(crate) fn nearest_rank(sorted: &[Duration], p: f64) -> Duration {
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

/// A duration in milliseconds, rounded to microseconds.
pub(crate) fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn nearest_rank_picks_the_smallest_sample_covering_the_share() {
        let sorted: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(nearest_rank(&sorted, 50.0), ms(50));
        assert_eq!(nearest_rank(&sorted, 95.0), ms(95));
        assert_eq!(nearest_rank(&sorted, 99.0), ms(99));
        assert_eq!(nearest_rank(&sorted, 100.0), ms(100));
        assert_eq!(nearest_rank(&sorted, 0.0), ms(1));
        let five = [ms(1), ms(2), ms(3), ms(4), ms(5)];
        assert_eq!(nearest_rank(&five, 50.0), ms(3));
        assert_eq!(nearest_rank(&five, 95.0), ms(5));
        assert_eq!(nearest_rank(&five, 20.0), ms(1));
        assert_eq!(nearest_rank(&five, 21.0), ms(2));
    }

    #[test]
    fn percentiles_sort_their_samples_first() {
        let p = Percentiles::of(vec![ms(9), ms(1), ms(5), ms(3), ms(7)]).unwrap();
        assert_eq!(p.count, 5);
        assert_eq!((p.p50, p.p95, p.p99, p.max), (ms(5), ms(9), ms(9), ms(9)));
        let one = Percentiles::of(vec![ms(4)]).unwrap();
        assert_eq!((one.p50, one.p99, one.max), (ms(4), ms(4), ms(4)));
        assert_eq!(Percentiles::of(Vec::new()), None);
    }

    #[test]
    fn millis_keep_microseconds() {
        assert_eq!(millis(Duration::from_micros(1_234)), 1.234);
        assert_eq!(millis(Duration::from_nanos(2_500_400)), 2.5);
        assert_eq!(millis(Duration::ZERO), 0.0);
    }
}
