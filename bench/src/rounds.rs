//! Rounds of one scenario: every contender once, the references first. A round during which the
//! hypervisor took more than `--max-stolen` of the machine's CPU (steal time) from any of its runs
//! is run again, so one contender's figure is not the neighbour's load; the rounds set aside are
//! reported.

use crate::bench_result::Measurement;

/// One run of each contender, in the order they ran.
pub(crate) type Round = Vec<Measurement>;

/// The most of the machine's CPU stolen during any run of `round` (0 where none could be read).
pub(crate) fn most_stolen(round: &[Measurement]) -> f64 {
    round
        .iter()
        .filter_map(Measurement::stolen)
        .fold(0.0, f64::max)
}

/// Whether `round` had more of the CPU stolen than `max_stolen` (a share, 0 to 1) in any run.
pub(crate) fn disturbed(round: &[Measurement], max_stolen: f64) -> bool {
    most_stolen(round) > max_stolen
}

/// Whether to run another round after `ran`, for `repeat` rounds within `max_stolen`: until that
/// many are, and at most `repeat` rounds more than that.
pub(crate) fn another(ran: &[Round], repeat: usize, max_stolen: f64) -> bool {
    let quiet = ran.iter().filter(|r| !disturbed(r, max_stolen)).count();
    quiet < repeat && ran.len() < repeat.saturating_mul(2)
}

/// The rounds to report out of `rounds` run for `repeat` wanted: those within `max_stolen`, in
/// the order they ran, then, if fewer than `repeat`, the least disturbed of the others. Returns
/// them with how many were set aside.
pub(crate) fn keep(rounds: Vec<Round>, repeat: usize, max_stolen: f64) -> (Vec<Round>, usize) {
    let total = rounds.len();
    let (mut kept, mut others): (Vec<Round>, Vec<Round>) =
        rounds.into_iter().partition(|r| !disturbed(r, max_stolen));
    kept.truncate(repeat);
    others.sort_by(|a, b| most_stolen(a).total_cmp(&most_stolen(b)));
    let missing = repeat.saturating_sub(kept.len());
    kept.extend(others.into_iter().take(missing));
    let set_aside = total - kept.len();
    (kept, set_aside)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn run(jobs: u64, stolen: Option<f64>) -> Measurement {
        Measurement::Throughput {
            jobs,
            elapsed: Duration::from_secs(1),
            client_cpu: None,
            stolen,
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
        let (kept, set_aside) = keep(rounds, 3, 0.05);
        assert_eq!(jobs(&kept), [1, 3, 4]);
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
        let (kept, set_aside) = keep(rounds, 3, 0.05);
        assert_eq!(jobs(&kept), [2, 3, 1]);
        assert_eq!(set_aside, 1);
    }

    #[test]
    fn rounds_run_until_enough_are_quiet_or_twice_the_repeat_ran() {
        let quiet = || vec![run(1, Some(0.0))];
        let loud = || vec![run(1, Some(0.5))];
        assert!(another(&[], 2, 0.05));
        assert!(another(&[quiet(), loud()], 2, 0.05));
        assert!(!another(&[quiet(), loud(), quiet()], 2, 0.05));
        assert!(another(&[loud(), loud(), loud()], 2, 0.05));
        assert!(!another(&[loud(), loud(), loud(), loud()], 2, 0.05));
    }

    #[test]
    fn quiet_rounds_beyond_the_repeat_are_not_kept() {
        let rounds = vec![vec![run(1, None)], vec![run(2, Some(0.0))]];
        let (kept, set_aside) = keep(rounds, 1, 0.05);
        assert_eq!(jobs(&kept), [1]);
        assert_eq!(set_aside, 1);
    }
}
