//! How fast the machine runs a fixed piece of work, sampled through the whole invocation.
//!
//! On a virtual machine the same instructions can take twice as long in one minute as in the
//! next with nothing stolen (the host's other guests share its caches, memory bandwidth and
//! cores' siblings): two runs minutes apart then compare the machine's speed more than the
//! contenders'. A thread of this process runs the same arithmetic every [`INTERVAL`] and times
//! it by its own CPU clock, which leaves out any wait for a core; a run's figure is the median of
//! the samples taken during it. Runs of one round whose figures differ by more than
//! `--max-speed-spread` ran on machines of different speed (see [`crate::rounds`]).
//!
//! The probe costs [`WORK_ITERATIONS`] steps every [`INTERVAL`]: under 2 % of one CPU, the same
//! for every contender.

use std::hint::black_box;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Time between two samples.
const INTERVAL: Duration = Duration::from_millis(200);
/// Steps of the fixed work: about 3.4 ms on a 2.8 GHz Xeon core.
const WORK_ITERATIONS: u64 = 1_000_000;
/// Fewer samples than this in a run give it no figure.
const MIN_SAMPLES: usize = 3;
/// Samples kept (older ones are dropped): an hour at [`INTERVAL`].
const MAX_SAMPLES: usize = 18_000;

/// The invocation's probe, once started.
static PROBE: OnceLock<Mutex<Vec<Sample>>> = OnceLock::new();

/// One timing of the fixed work.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When the work ended.
    at: Instant,
    /// The CPU time it took, in milliseconds.
    ms: f64,
}

/// Starts sampling in a thread of its own, for the rest of the process; a second call does
/// nothing. Where the thread's CPU clock cannot be read no samples are taken.
pub(crate) fn start() {
    let mut started = false;
    PROBE.get_or_init(|| {
        started = true;
        Mutex::new(Vec::new())
    });
    if !started || thread_cpu_time().is_none() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("speed-probe".into())
        .spawn(|| {
            loop {
                std::thread::sleep(INTERVAL);
                let Some(ms) = time_work() else { return };
                let Some(samples) = PROBE.get() else { return };
                let mut samples = samples.lock().unwrap_or_else(|e| e.into_inner());
                if samples.len() >= MAX_SAMPLES {
                    samples.drain(..MAX_SAMPLES / 2);
                }
                samples.push(Sample {
                    at: Instant::now(),
                    ms,
                });
            }
        });
    // Without the thread runs simply carry no figure.
    drop(spawned);
}

/// The median time of the fixed work (ms) among the samples taken from `since` to now; `None`
/// without the probe or with fewer than [`MIN_SAMPLES`] samples.
pub(crate) fn median_since(since: Instant) -> Option<f64> {
    let samples = PROBE.get()?.lock().unwrap_or_else(|e| e.into_inner());
    let within: Vec<f64> = samples
        .iter()
        .filter(|s| s.at >= since)
        .map(|s| s.ms)
        .collect();
    drop(samples);
    if within.len() < MIN_SAMPLES {
        return None;
    }
    crate::bench_result::median(&within)
}

/// The CPU time of one run of the fixed work, in milliseconds.
fn time_work() -> Option<f64> {
    let before = thread_cpu_time()?;
    black_box(work(black_box(WORK_ITERATIONS)));
    let after = thread_cpu_time()?;
    Some(after.saturating_sub(before).as_secs_f64() * 1e3)
}

/// The fixed work: a chain of dependent multiplications and shifts, in registers only.
fn work(iterations: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D).wrapping_add(i);
    }
    x
}

/// The CPU time the calling thread has used, from `CLOCK_THREAD_CPUTIME_ID`.
#[allow(unsafe_code)]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_clock_counts_this_threads_work() {
        let before = thread_cpu_time().expect("Linux has a thread CPU clock");
        black_box(work(black_box(WORK_ITERATIONS * 5)));
        let after = thread_cpu_time().expect("Linux has a thread CPU clock");
        assert!(after > before);
    }

    #[test]
    fn the_probe_samples_and_a_run_reads_its_own_window() {
        start();
        let since = Instant::now();
        assert_eq!(
            median_since(Instant::now() + Duration::from_secs(3600)),
            None
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        let median = loop {
            if let Some(m) = median_since(since) {
                break m;
            }
            assert!(Instant::now() < deadline, "no samples within 30 s");
            std::thread::sleep(INTERVAL);
        };
        assert!(median > 0.0);
    }
}
