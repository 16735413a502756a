//! Rounds of one scenario: every contender once, the references first. A round is run again when
//! the machine did not give its contenders the same conditions: the hypervisor took more than
//! `--max-stolen` of the machine's CPU (steal time) from one of its runs, or the probes (see
//! [`crate::speed_probe`]) found one of its runs on a CPU slower than another's by more than
//! `--max-speed-spread`, or with a disk slower to flush by more than `--max-flush-spread`. So one
//! contender's figure is neither the neighbour's load nor the minute it ran in; the rounds set
//! aside are reported.

use crate::bench_result::Measurement;

/// One run of each contender, in the order they ran.
pub(crate) type Round = Vec<Measurement>;

/// What a round may see and still count as undisturbed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// The most of the machine's CPU (a share, 0 to 1) stolen during any run.
    pub(crate) max_stolen: f64,
    /// The most the speed probe's time in the round's slowest run may exceed that in its fastest
    /// (a share: 0.15 is 15 % slower).
    pub(crate) max_speed_spread: f64,
    /// The most the flush probe's mean in the round's slowest run may exceed that in its fastest
    /// (a share).
    pub(crate) max_flush_spread: f64,
}

/// The most of the machine's CPU stolen during any run of `round` (0 where none could be read).
pub(crate) fn most_stolen(round: &[Measurement]) -> f64 {
    round
        .iter()
        .filter_map(Measurement::stolen)
        .fold(0.0, f64::max)
}

/// How much slower the machine was in the slowest run of `round` than in its fastest, by the
/// speed probe (a share; 0 where fewer than two runs could read it).
pub(crate) fn speed_spread(round: &[Measurement]) -> f64 {
    spread(round.iter().filter_map(Measurement::probe_ms).collect())
}

/// How much slower the disk flushed in the slowest run of `round` than in its fastest, by the
/// flush probe (a share; 0 where fewer than two runs could read it).
pub(crate) fn flush_spread(round: &[Measurement]) -> f64 {
    spread(round.iter().filter_map(Measurement::flush_ms).collect())
}

/// The largest of `probes` over the smallest, less one (0 for fewer than two).
fn spread(probes: Vec<f64>) -> f64 {
    let fastest = probes.iter().copied().fold(f64::INFINITY, f64::min);
    let slowest = probes.iter().copied().fold(0.0, f64::max);
    if probes.len() < 2 || fastest <= 0.0 {
        return 0.0;
    }
    slowest / fastest - 1.0
}

/// How far `round` went past `limits` (0 when within them): the largest of its excess stolen
/// share and its excess spreads.
fn excess(round: &[Measurement], limits: Limits) -> f64 {
    let stolen = most_stolen(round) - limits.max_stolen;
    let speed = speed_spread(round) - limits.max_speed_spread;
    let flush = flush_spread(round) - limits.max_flush_spread;
    stolen.max(speed).max(flush).max(0.0)
}

/// Whether `round` went past `limits` in any run.
pub(crate) fn disturbed(round: &[Measurement], limits: Limits) -> bool {
    excess(round, limits) > 0.0
}

/// Whether to run another round after `ran`, for `repeat` rounds within `limits`: until that
/// many are, and at most `repeat` rounds more than that.
pub(crate) fn another(ran: &[Round], repeat: usize, limits: Limits) -> bool {
    let quiet = ran.iter().filter(|r| !disturbed(r, limits)).count();
    quiet < repeat && ran.len() < repeat.saturating_mul(2)
}

/// The rounds to report out of `rounds` run for `repeat` wanted: those within `limits`, in the
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
            stolen,
            probe_ms,
            flush_ms,
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
