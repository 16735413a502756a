//! Times a measured phase: wall time, the CPU time this process spent in it, the machine
//! meanwhile (the share of its CPU time the hypervisor took, and the speed and flush probes'
//! readings), and the WAL and write transactions the database spent on it.

use std::time::{Duration, Instant};

use crate::bench_database::{BenchDatabase, DbMark};
use crate::bench_result::{DbCost, MachineReadings, Measurement};

/// Clock ticks per second of `/proc/self/stat` (`USER_HZ`, 100 on Linux).
const USER_HZ: u64 = 100;

/// Started at the beginning of a measured phase.
#[derive(Debug)]
pub(crate) struct Stopwatch<'a> {
    db: &'a BenchDatabase,
    mark: Option<DbMark>,
    wall: Instant,
    cpu: Option<Duration>,
    machine: MachineMeter,
}

impl<'a> Stopwatch<'a> {
    /// Starts timing now (after reading the database's WAL position and transaction counter).
    pub(crate) async fn start(db: &'a BenchDatabase) -> Stopwatch<'a> {
        let mark = db.mark().await.ok();
        Stopwatch {
            db,
            mark,
            wall: Instant::now(),
            cpu: process_cpu_time(),
            machine: MachineMeter::start(),
        }
    }

    /// Ends the phase, in which `jobs` jobs were handled.
    pub(crate) async fn stop(&self, jobs: u64) -> Measurement {
        let elapsed = self.wall.elapsed();
        let client_cpu = match (self.cpu, process_cpu_time()) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        };
        let machine = self.machine.readings();
        let db_cost = match (&self.mark, self.db.mark().await.ok()) {
            (Some(before), Some(after)) => Some(DbCost::between(before, &after, jobs)),
            _ => None,
        };
        Measurement::Throughput {
            jobs,
            elapsed,
            client_cpu,
            machine,
            db_cost,
        }
    }
}

/// Reads the machine over a phase: the share of its CPU time the hypervisor takes (steal time)
/// and what the probes (see [`crate::speed_probe`]) find meanwhile.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MachineMeter {
    ticks: Option<MachineTicks>,
    since: Instant,
}

impl MachineMeter {
    /// Starts the phase now.
    pub(crate) fn start() -> Self {
        MachineMeter {
            ticks: machine_ticks(),
            since: Instant::now(),
        }
    }

    /// The machine since the start: the share (0 to 1) stolen (`None` where `/proc/stat` cannot
    /// tell), the speed probe's median time (ms) for its fixed work and the flush probe's mean
    /// time (ms) for a flush (each `None` without enough samples).
    pub(crate) fn readings(&self) -> MachineReadings {
        MachineReadings {
            stolen: self.stolen(),
            probe_ms: crate::speed_probe::cpu_median_since(self.since),
            flush_ms: crate::speed_probe::flush_mean_since(self.since),
        }
    }

    /// The share (0 to 1) stolen since the start; `None` where `/proc/stat` cannot tell.
    fn stolen(&self) -> Option<f64> {
        self.ticks?.stolen_share_until(machine_ticks()?)
    }
}

/// The whole machine's CPU time so far, in clock ticks, from the `cpu` line of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MachineTicks {
    /// Every state: user, nice, system, idle, iowait, irq, softirq and steal (guest time is
    /// already in user and nice).
    total: u64,
    /// Time a virtual machine's CPUs were ready to run while the hypervisor ran something else.
    steal: u64,
}

impl MachineTicks {
    /// The share of the machine's CPU time stolen from these ticks to `later` (0 to 1); `None`
    /// when no time passed.
    fn stolen_share_until(self, later: MachineTicks) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        let steal = later.steal.checked_sub(self.steal)?;
        (total > 0).then(|| steal as f64 / total as f64)
    }
}

/// The machine's CPU ticks so far; `None` where there is no `/proc/stat`.
fn machine_ticks() -> Option<MachineTicks> {
    parse_machine_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The `cpu` line of `/proc/stat`: `cpu user nice system idle iowait irq softirq steal guest
/// guest_nice`. Kernels that list fewer states have no steal to report.
fn parse_machine_ticks(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if ticks.len() < 8 {
        return None;
    }
    Some(MachineTicks {
        total: ticks.iter().sum(),
        steal: ticks[7],
    })
}

/// User plus system CPU time of this process so far, from `/proc/self/stat` (10 ms resolution);
/// `None` where there is no such file.
pub(crate) fn process_cpu_time() -> Option<Duration> {
    parse_cpu_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)
        .map(|ticks| Duration::from_millis(ticks * 1000 / USER_HZ))
}

/// CPU time the PostgreSQL server whose postmaster is `postmaster` has spent so far: the
/// postmaster's own, that of its children that have exited (its `cutime` and `cstime`: backends of
/// closed connections, finished autovacuum workers), and that of every child still running
/// (backends, WAL writer, checkpointer, autovacuum). `None` where `/proc` cannot tell (a server
/// on another machine).
pub(crate) fn server_cpu_time(postmaster: i32) -> Option<Duration> {
    let own = proc_stat(postmaster)?;
    let mut ticks = own.utime + own.stime + own.cutime + own.cstime;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // A child may exit between the listing and the read: its time is then in cutime.
        if let Some(child) = proc_stat(pid)
            && child.ppid == postmaster
        {
            ticks += child.utime + child.stime;
        }
    }
    Some(Duration::from_millis(ticks * 1000 / USER_HZ))
}

/// The parent of process `pid`, from `/proc/<pid>/stat`.
pub(crate) fn parent_pid(pid: i32) -> Option<i32> {
    proc_stat(pid).map(|s| s.ppid)
}

/// The fields of a `/proc/<pid>/stat` line this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProcStat {
    ppid: i32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

fn proc_stat(pid: i32) -> Option<ProcStat> {
    parse_proc_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Fields 4 (ppid), 14-17 (utime, stime, cutime, cstime) of a `/proc/<pid>/stat` line. The
/// command name (field 2) is in parentheses and may hold spaces, so fields are counted after its
/// closing parenthesis.
fn parse_proc_stat(stat: &str) -> Option<ProcStat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name, field 3 (state) is at index 0, so field k is at index k - 3.
    let field = |k: usize| fields.get(k - 3)?.parse::<i64>().ok();
    let ticks = |k: usize| field(k).and_then(|v| u64::try_from(v).ok());
    Some(ProcStat {
        ppid: i32::try_from(field(4)?).ok()?,
        utime: ticks(14)?,
        stime: ticks(15)?,
        cutime: ticks(16)?,
        cstime: ticks(17)?,
    })
}

/// utime + stime of a `/proc/<pid>/stat` line.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    parse_proc_stat(stat).map(|s| s.utime + s.stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        let stat = "4242 (pg mill) S 1 4242 4242 0 -1 4194560 500 0 0 0 123 45 0 0 20 0 4 0";
        assert_eq!(parse_cpu_ticks(stat), Some(168));
        assert_eq!(parse_cpu_ticks("garbage"), None);
    }

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let stat = "4242 (post (gres)) S 17 4242 4242 0 -1 4194560 500 0 0 0 123 45 6 7 20 0 4 0";
        assert_eq!(
            parse_proc_stat(stat),
            Some(ProcStat {
                ppid: 17,
                utime: 123,
                stime: 45,
                cutime: 6,
                cstime: 7,
            })
        );
    }

    #[test]
    fn stolen_time_is_the_steal_column_of_the_cpu_line() {
        let before = parse_machine_ticks(
            "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\nintr 1 2\n",
        )
        .unwrap();
        assert_eq!(
            before,
            MachineTicks {
                total: 1000,
                steal: 40
            }
        );
        let after = parse_machine_ticks("cpu  200 0 100 1500 10 0 0 190 0 0\n").unwrap();
        assert_eq!(before.stolen_share_until(after), Some(0.15));
        assert_eq!(before.stolen_share_until(before), None);
        assert_eq!(parse_machine_ticks("cpu  1 2 3 4\n"), None);
        assert_eq!(parse_machine_ticks("intr 1 2\n"), None);
    }

    #[test]
    fn this_machine_has_cpu_ticks_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(machine_ticks().is_some());
            let meter = MachineMeter::start();
            std::thread::sleep(Duration::from_millis(30));
            let stolen = meter.stolen().expect("a share after 30 ms");
            assert!((0.0..=1.0).contains(&stolen), "{stolen}");
        }
    }

    #[test]
    fn this_process_has_a_cpu_time_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_time().is_some());
        }
    }
}
