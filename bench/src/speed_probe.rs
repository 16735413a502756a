//! How fast the machine is, sampled through the whole invocation: its CPU and its disk's flush.
//!
//! On a virtual machine the same instructions can take twice as long in one minute as in the
//! next with nothing stolen (the host's other guests share its caches, memory bandwidth and
//! cores' siblings), and the disk's flush, which every commit waits for, can take three times as
//! long: two runs minutes apart then compare the machine more than the contenders. Two threads of
//! this process sample it:
//! - the **CPU probe** runs the same arithmetic every [`CPU_INTERVAL`] and times it by its own
//!   CPU clock, which leaves out any wait for a core; a run's figure is the median sample;
//! - the **flush probe** rewrites one 8 KiB block of a file in the temporary directory and waits
//!   for `fdatasync` every [`FLUSH_INTERVAL`], timed by the wall clock; a run's figure is the
//!   mean sample (the median hardly moves: a slow disk shows in its tail).
//!
//! A run whose figures differ from those of its pass's first run (the ceiling's) by more than
//! `--max-speed-spread` or `--max-flush-spread` ran on a machine of different speed, and its pass
//! (every contender once) is run again.
//!
//! The probes cost [`WORK_ITERATIONS`] steps every [`CPU_INTERVAL`] (under 2 % of one CPU) and
//! one small flush every [`FLUSH_INTERVAL`], the same for every contender.

use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Time between two CPU samples.
const CPU_INTERVAL: Duration = Duration::from_millis(200);
/// Time between two flush samples.
const FLUSH_INTERVAL: Duration = Duration::from_millis(50);
/// Steps of the fixed work: about 3.4 ms on a 2.8 GHz Xeon core.
const WORK_ITERATIONS: u64 = 1_000_000;
/// The block the flush probe rewrites.
const FLUSH_BLOCK: usize = 8192;
/// Fewer samples than this in a run give it no figure.
const MIN_SAMPLES: usize = 3;
/// Samples kept per probe (older ones are dropped): an hour of flush samples.
const MAX_SAMPLES: usize = 72_000;

/// The CPU probe's samples, once started.
static CPU: OnceLock<Mutex<Vec<Sample>>> = OnceLock::new();
/// The flush probe's samples, once started.
static FLUSH: OnceLock<Mutex<Vec<Sample>>> = OnceLock::new();

/// One timing.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When it ended.
    at: Instant,
    /// What it took, in milliseconds.
    ms: f64,
}

/// Starts both probes in threads of their own, for the rest of the process; a second call does
/// nothing. A probe that cannot time (no thread CPU clock, no writable temporary directory)
/// takes no samples, and runs then carry no figure from it.
pub(crate) fn start() {
    let mut first = false;
    CPU.get_or_init(|| {
        first = true;
        Mutex::new(Vec::new())
    });
    if !first {
        return;
    }
    FLUSH.get_or_init(|| Mutex::new(Vec::new()));
    if thread_cpu_time().is_some() {
        spawn("cpu-probe", CPU_INTERVAL, &CPU, time_work);
    }
    let path = std::env::temp_dir().join(format!("pgmill-bench-flush-{}", std::process::id()));
    if let Ok(file) = File::options()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
    {
        // The name goes at once; the open file stays the thread's until the process ends.
        let _ = std::fs::remove_file(&path);
        spawn("flush-probe", FLUSH_INTERVAL, &FLUSH, move || {
            time_flush(&file)
        });
    }
}

/// Runs `sample` every `interval` in a thread named `name`, into `into`, until it fails.
fn spawn(
    name: &str,
    interval: Duration,
    into: &'static OnceLock<Mutex<Vec<Sample>>>,
    mut sample: impl FnMut() -> Option<f64> + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            loop {
                std::thread::sleep(interval);
                let Some(ms) = sample() else { return };
                let Some(samples) = into.get() else { return };
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
    // Without the thread runs simply carry no figure from this probe.
    drop(spawned);
}

/// The samples of `probe` taken from `since` to now; `None` with fewer than [`MIN_SAMPLES`].
fn samples_since(probe: &OnceLock<Mutex<Vec<Sample>>>, since: Instant) -> Option<Vec<f64>> {
    let samples = probe.get()?.lock().unwrap_or_else(|e| e.into_inner());
    let within: Vec<f64> = samples
        .iter()
        .filter(|s| s.at >= since)
        .map(|s| s.ms)
        .collect();
    drop(samples);
    (within.len() >= MIN_SAMPLES).then_some(within)
}

/// The CPU probe's median time for its fixed work (ms) from `since` to now; `None` without
/// enough samples.
pub(crate) fn cpu_median_since(since: Instant) -> Option<f64> {
    crate::bench_result::median(&samples_since(&CPU, since)?)
}

/// The flush probe's mean time for a flush (ms) from `since` to now; `None` without enough
/// samples.
pub(crate) fn flush_mean_since(since: Instant) -> Option<f64> {
    let samples = samples_since(&FLUSH, since)?;
    Some(samples.iter().sum::<f64>() / samples.len() as f64)
}

/// The wall time of rewriting one block of `file` and waiting for it to reach the disk, in ms.
fn time_flush(file: &File) -> Option<f64> {
    let block = [0x5Au8; FLUSH_BLOCK];
    let before = Instant::now();
    file.write_all_at(&block, 0).ok()?;
    file.sync_data().ok()?;
    Some(before.elapsed().as_secs_f64() * 1e3)
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
    fn the_probes_sample_and_a_run_reads_its_own_window() {
        start();
        let since = Instant::now();
        let later = Instant::now() + Duration::from_secs(3600);
        assert_eq!(cpu_median_since(later), None);
        assert_eq!(flush_mean_since(later), None);
        let deadline = Instant::now() + Duration::from_secs(30);
        let (cpu, flush) = loop {
            if let (Some(c), Some(f)) = (cpu_median_since(since), flush_mean_since(since)) {
                break (c, f);
            }
            assert!(Instant::now() < deadline, "no samples within 30 s");
            std::thread::sleep(CPU_INTERVAL);
        };
        assert!(cpu > 0.0 && flush > 0.0);
    }
}
