//! Passes of one scenario: every contender once, the references first. A pass is run again when
//! the machine did not give its contenders the same conditions: the hypervisor took more than
//! `--max-stolen` of the machine's CPU (steal time) from one of its runs, or the probes (see
//! [`crate::speed_probe`]) found one of its runs on a CPU slower or faster than the pass's first
//! run by more than `--max-speed-spread`, or with a disk slower or faster to flush by more than
//! `--max-flush-spread`. The first run is the ceiling's whenever there is one, and each figure is
//! reported as a ratio to the ceiling's: so each contender's run is held to the run it is
//! compared with, not to every other contender's (runs 40 % faster and 40 % slower than the
//! ceiling's are each within 50 % of it, though 2.3 times apart). So one contender's figure is
//! neither the neighbour's load nor the minute it ran in; the passes set aside are reported.

use crate::bench_result::Measurement;

/// A pass: one run of each contender, in the order they ran.
pub(crate) type Round = Vec<Measurement>;

/// What a pass may see and still count as undisturbed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// The most of the machine's CPU (a share, 0 to 1) stolen during any run.
    pub(crate) max_stolen: f64,
    /// The most the speed probe's time in any run may differ from that in the pass's first run
    /// (a share of the smaller: 0.15 is 15 % slower or faster).
    pub(crate) max_speed_spread: f64,
    /// The most the flush probe's mean in any run may differ from that in the pass's first run
    /// (a share of the smaller).
    pub(crate) max_flush_spread: f64,
}

/// The most of the machine's CPU stolen during any run of the pass (0 where none could be read).
pub(crate) fn most_stolen(round: &[Measurement]) -> f64 {
    round
        .iter()
        .filter_map(|m| m.machine().stolen)
        .fold(0.0, f64::max)
}

/// How much slower or faster the CPU was in the pass's run farthest from its first run, by the
/// speed probe (a share; 0 where fewer than two runs could read it).
pub(crate) fn speed_spread(round: &[Measurement]) -> f64 {
    off_the_first(round.iter().map(|m| m.machine().probe_ms))
}

/// How much slower or faster the disk flushed in the pass's run farthest from its first run, by
/// the flush probe (a share; 0 where fewer than two runs could read it).
pub(crate) fn flush_spread(round: &[Measurement]) -> f64 {
    off_the_first(round.iter().map(|m| m.machine().flush_ms))
}

/// The largest of each reading over the first (or the first over it, whichever is larger), less
/// one; readings missing or not positive are skipped (0 for fewer than two).
fn off_the_first(readings: impl Iterator<Item = Option<f64>>) -> f64 {
    let mut readings = readings.flatten().filter(|r| *r > 0.0);
    let Some(first) = readings.next() else {
        return 0.0;
    };
    readings
        .map(|r| r.max(first) / r.min(first) - 1.0)
        .fold(0.0, f64::max)
}

/// How far the pass went past `limits` (0 when within them): the largest of its excess stolen
/// share and its excess spreads.
fn excess(round: &[Measurement], limits: Limits) -> f64 {
    let stolen = most_stolen(round) - limits.max_stolen;
    let speed = speed_spread(round) - limits.max_speed_spread;
    let flush = flush_spread(round) - limits.max_flush_spread;
    stolen.max(speed).max(flush).max(0.0)
}

/// Whether the pass went past `limits` in any run.
pub(crate) fn disturbed(round: &[Measurement], limits: Limits) -> bool {
    excess(round, limits) > 0.0
}

/// Whether to run another pass after `ran`, for `repeat` passes within `limits`: until that
/// many are, and at most `repeat` passes more than that.
pub(crate) fn another(ran: &[Round], repeat: usize, limits: Limits) -> bool {
    let quiet = ran.iter().filter(|r| !disturbed(r, limits)).count();
    quiet < repeat && ran.len() < repeat.saturating_mul(2)
}

/// The passes to report out of those run for `repeat` wanted: those within `limits`, in the
/// order they ran, then, if fewer than `repeat`, the least disturbed of the others. Returns them
/// with how many were set aside.
pub(crate) fn keep(rounds: Vec<Round>, repeat: usize, limits: Limits) -> (Vec<Round>, usize) {
    let total = rounds.len();
    let (mut kept, mut others): (Vec<Round>, Vec<Round>) =
        rounds.into_iter().partition(|r| !disturbed(r, limits));
    kept.truncate(repeat);
    others.sort_by(|a, b| excess(a, limits).total_cmp(&excess(b, limits)));
    let missing = repeat.saturating_sub(kept.len());
    kept.extend(others.into_iter().take(missing));
    let set_aside = total - kept.len();
    (kept, set_aside)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench_result::MachineReadings;

    const LIMITS: Limits = Limits {
        max_stolen: 0.05,
        max_speed_spread: 0.15,
        max_flush_spread: 0.5,
    };

    fn run(jobs: u64, stolen: Option<f64>) -> Measurement {
        probed(jobs, stolen, None)
    }

    fn probed(jobs: u64, stolen: Option<f64>, probe_ms: Option<f64>) -> Measurement {
        flushed(jobs, stolen, probe_ms, None)
    }

    fn flushed(
        jobs: u64,
        stolen: Option<f64>,
        probe_ms: Option<f64>,
        flush_ms: Option<f64>,
    ) -> Measurement {
        Measurement::Throughput {
            jobs,
            elapsed: Duration::from_secs(1),
            client_cpu: None,
            machine: MachineReadings {
                stolen,
                probe_ms,
                flush_ms,
            },
            db_cost: None,
        }
    }

    fn jobs(rounds: &[Round]) -> Vec<u64> {
        rounds
            .iter()
            .map(|r| match r[0] {
                Measurement::Throughput { jobs, .. } => jobs,
                Measurement::Latency { .. } => 0,
            })
            .collect()
    }

    #[test]
    fn a_round_with_one_disturbed_run_is_set_aside() {
        let rounds = vec![
            vec![run(1, Some(0.01)), run(1, Some(0.0))],
            vec![run(2, Some(0.0)), run(2, Some(0.20))],
            vec![run(3, None), run(3, Some(0.05))],
            vec![run(4, Some(0.02)), run(4, None)],
        ];
        let (kept, set_aside) = keep(rounds, 3, LIMITS);
        assert_eq!(jobs(&kept), [1, 3, 4]);
        assert_eq!(set_aside, 1);
    }

    #[test]
    fn a_round_whose_runs_met_machines_of_different_speed_is_set_aside() {
        let rounds = vec![
            vec![
                probed(1, Some(0.0), Some(1.0)),
                probed(1, Some(0.0), Some(1.3)),
            ],
            vec![
                probed(2, Some(0.0), Some(1.3)),
                probed(2, Some(0.0), Some(1.4)),
            ],
            vec![probed(3, Some(0.0), Some(1.0)), probed(3, Some(0.0), None)],
        ];
        assert!((speed_spread(&rounds[0]) - 0.3).abs() < 1e-9);
        assert_eq!(speed_spread(&rounds[2]), 0.0);
        assert!(disturbed(&rounds[0], LIMITS));
        assert!(!disturbed(&rounds[1], LIMITS));
        let (kept, set_aside) = keep(rounds, 2, LIMITS);
        assert_eq!(jobs(&kept), [2, 3]);
        assert_eq!(set_aside, 1);
    }

    #[test]
    fn a_round_whose_runs_met_a_disk_of_different_speed_is_set_aside() {
        let rounds = vec![
            vec![
                flushed(1, Some(0.0), Some(1.0), Some(0.4)),
                flushed(1, Some(0.0), Some(1.0), Some(1.2)),
            ],
            vec![
                flushed(2, Some(0.0), Some(1.0), Some(0.4)),
                flushed(2, Some(0.0), Some(1.0), Some(0.5)),
            ],
        ];
        assert!((flush_spread(&rounds[0]) - 2.0).abs() < 1e-9);
        assert!(disturbed(&rounds[0], LIMITS));
        assert!(!disturbed(&rounds[1], LIMITS));
        let (kept, set_aside) = keep(rounds, 1, LIMITS);
        assert_eq!(jobs(&kept), [2]);
        assert_eq!(set_aside, 1);
    }

    #[test]
    fn each_run_is_held_to_the_first_run_not_to_every_other() {
        let flush = |ms: f64| flushed(1, Some(0.0), Some(1.0), Some(ms));
        // The first run (the ceiling's) at 1.0 ms a flush, the others 40 % faster and 40 %
        // slower: within 50 % of the first, though the slowest is 2.33 times the fastest.
        let scattered = vec![flush(1.0), flush(1.0 / 1.4), flush(1.4)];
        assert!((flush_spread(&scattered) - 0.4).abs() < 1e-9);
        assert!(!disturbed(&scattered, LIMITS));
        // Faster than the first by more than the limit counts as much as slower.
        let faster = vec![flush(1.0), flush(1.0 / 1.6)];
        assert!((flush_spread(&faster) - 0.6).abs() < 1e-9);
        assert!(disturbed(&faster, LIMITS));
        // A first run without a reading: the first run that has one is the reference.
        let unread = vec![
            flushed(1, Some(0.0), None, None),
            flushed(1, Some(0.0), Some(1.0), Some(1.0)),
            flushed(1, Some(0.0), Some(1.2), Some(1.2)),
        ];
        assert!((speed_spread(&unread) - 0.2).abs() < 1e-9);
        assert!((flush_spread(&unread) - 0.2).abs() < 1e-9);
        assert_eq!(flush_spread(&[flush(1.0)]), 0.0);
    }

    #[test]
    fn without_enough_quiet_rounds_the_least_disturbed_fill_in() {
        let rounds = vec![
            vec![run(1, Some(0.30))],
            vec![run(2, Some(0.0))],
            vec![run(3, Some(0.10))],
            vec![run(4, Some(0.50))],
        ];
        let (kept, set_aside) = keep(rounds, 3, LIMITS);
        assert_eq!(jobs(&kept), [2, 3, 1]);
        assert_eq!(set_aside, 1);
        let uneven = vec![
            vec![
                probed(1, Some(0.0), Some(1.0)),
                probed(1, Some(0.0), Some(2.0)),
            ],
            vec![probed(2, Some(0.07), Some(1.0))],
        ];
        let (kept, _) = keep(uneven, 1, LIMITS);
        assert_eq!(jobs(&kept), [2]);
    }

    #[test]
    fn rounds_run_until_enough_are_quiet_or_twice_the_repeat_ran() {
        let quiet = || vec![run(1, Some(0.0))];
        let loud = || vec![run(1, Some(0.5))];
        assert!(another(&[], 2, LIMITS));
        assert!(another(&[quiet(), loud()], 2, LIMITS));
        assert!(!another(&[quiet(), loud(), quiet()], 2, LIMITS));
        assert!(another(&[loud(), loud(), loud()], 2, LIMITS));
        assert!(!another(&[loud(), loud(), loud(), loud()], 2, LIMITS));
    }

    #[test]
    fn quiet_rounds_beyond_the_repeat_are_not_kept() {
        let rounds = vec![vec![run(1, None)], vec![run(2, Some(0.0))]];
        let (kept, set_aside) = keep(rounds, 1, LIMITS);
        assert_eq!(jobs(&kept), [1]);
        assert_eq!(set_aside, 1);
    }
}
