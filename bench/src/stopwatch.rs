//! Times a measured phase: wall time, the CPU time this process spent in it, and the WAL and
//! write transactions the database spent on it.

use std::time::{Duration, Instant};

use crate::bench_database::{BenchDatabase, DbMark};
use crate::bench_result::{DbCost, Measurement};

/// Clock ticks per second of `/proc/self/stat` (`USER_HZ`, 100 on Linux).
const USER_HZ: u64 = 100;

/// Started at the beginning of a measured phase.
#[derive(Debug)]
pub(crate) struct Stopwatch<'a> {
    db: &'a BenchDatabase,
    mark: Option<DbMark>,
    wall: Instant,
    cpu: Option<Duration>,
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
        }
    }

    /// Ends the phase, in which `jobs` jobs were handled.
    pub(crate) async fn stop(&self, jobs: u64) -> Measurement {
        let elapsed = self.wall.elapsed();
        let client_cpu = match (self.cpu, process_cpu_time()) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        };
        let db_cost = match (&self.mark, self.db.mark().await.ok()) {
            (Some(before), Some(after)) => Some(DbCost::between(before, &after, jobs)),
            _ => None,
        };
        Measurement::Throughput {
            jobs,
            elapsed,
            client_cpu,
            db_cost,
        }
    }
}

/// User plus system CPU time of this process so far, from `/proc/self/stat` (10 ms resolution);
/// `None` where there is no such file.
pub(crate) fn process_cpu_time() -> Option<Duration> {
    parse_cpu_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)
        .map(|ticks| Duration::from_millis(ticks * 1000 / USER_HZ))
}

/// utime + stime (fields 14 and 15) of a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may hold spaces, so fields are counted after its closing parenthesis.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name, field 3 (state) is at index 0, so field k is at index k - 3.
    let utime: u64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.get(15 - 3)?.parse().ok()?;
    Some(utime + stime)
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
    fn this_process_has_a_cpu_time_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_time().is_some());
        }
    }
}
