//! What a scenario does and when: the workers it runs, the load it keeps up, and its faults.

use std::time::Duration;

/// The rescue bound pgmill promises, from a process's death to its jobs running again.
pub const RESCUE_BOUND: Duration = Duration::from_secs(30);

/// Which worker a kill or a freeze hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The current leader (a random worker when no live, unfrozen one leads).
    Leader,
    /// A random live worker that is neither frozen nor the leader. Only faults that name the
    /// leader hit it, so the plan knows which faults delay the rescue of others (see
    /// [`Plan::bounded`]).
    Random,
}

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `kill -9` of a worker, which is respawned at once under a new client id, as a supervisor
    /// would.
    Kill(Target),
    /// SIGSTOP of a worker (at most one at a time).
    Freeze(Target),
    /// SIGCONT of the frozen worker.
    Thaw,
    /// SIGTERM of a worker under load (a soft stop: its running jobs finish, its buffered ones
    /// are given back), waited for, then respawned.
    Stop(Target),
    /// `pg_ctl restart -m immediate` (a crash restart). Left out when the scenario runs on
    /// `DATABASE_URL`'s server, which it cannot restart.
    RestartImmediate,
    /// `pg_terminate_backend` of every backend of the workers' application.
    TerminateBackends,
}

/// A fault at a time from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// When, from the start of the faults.
    pub at: Duration,
    /// What.
    pub fault: Fault,
}

/// A scenario's shape.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Its name in the report.
    pub name: &'static str,
    /// Worker processes.
    pub workers: usize,
    /// Slots of each.
    pub concurrency: usize,
    /// Shortest and longest job sleep, in milliseconds.
    pub sleep_ms: (u64, u64),
    /// The workers' job timeout (shorter than a freeze, so frozen attempts time out).
    pub job_timeout: Duration,
    /// Jobs kept available while the faults run: topped up to this whenever half are gone.
    pub backlog: u64,
    /// How long the faults run (at least until the last step).
    pub duration: Duration,
    /// The faults, in time order.
    pub steps: Vec<Step>,
}

fn step(secs: u64, fault: Fault) -> Step {
    Step {
        at: Duration::from_secs(secs),
        fault,
    }
}

impl Plan {
    /// The plan CI runs on every driver, about 70 s of faults: kills of the leader and of random
    /// workers, one worker frozen for 22 s (longer than the 15 s client timeout and the 10 s job
    /// timeout), three sweeps of backend terminations, one crash restart, and the leader killed
    /// after it.
    pub fn combined() -> Plan {
        use Fault::*;
        Plan {
            name: "combined",
            workers: 4,
            concurrency: 4,
            sleep_ms: (10, 100),
            job_timeout: Duration::from_secs(10),
            backlog: 1_500,
            duration: Duration::from_secs(66),
            steps: vec![
                step(4, Kill(Target::Leader)),
                step(6, Freeze(Target::Random)),
                step(12, Kill(Target::Random)),
                step(20, Kill(Target::Random)),
                step(28, Thaw),
                step(30, TerminateBackends),
                step(33, TerminateBackends),
                step(36, TerminateBackends),
                step(44, Stop(Target::Random)),
                step(52, RestartImmediate),
                step(62, Kill(Target::Leader)),
            ],
        }
    }

    /// The long plan (`PGMILL_FAULTS_LONG=1`), heavier and closer to a busy deployment: 4 workers
    /// of 16 slots for 3 minutes, a kill every 5 s (the leader at 5 s and 100 s), backends
    /// terminated every 10 s, the leader frozen for 40 s, two crash restarts.
    pub fn long() -> Plan {
        use Fault::*;
        let mut steps = Vec::new();
        for secs in (5..=175).step_by(5) {
            if secs == 75 || secs == 150 {
                continue; // the restarts
            }
            let target = if secs == 5 || secs == 100 {
                Target::Leader
            } else {
                Target::Random
            };
            steps.push(step(secs, Kill(target)));
        }
        for secs in (12..=172).step_by(10) {
            steps.push(step(secs, TerminateBackends));
        }
        steps.push(step(20, Freeze(Target::Leader)));
        steps.push(step(133, Stop(Target::Random)));
        steps.push(step(60, Thaw));
        steps.push(step(75, RestartImmediate));
        steps.push(step(150, RestartImmediate));
        steps.sort_by_key(|s| s.at);
        Plan {
            name: "long",
            workers: 4,
            concurrency: 16,
            sleep_ms: (5, 100),
            job_timeout: Duration::from_secs(20),
            backlog: 4_000,
            duration: Duration::from_secs(180),
            steps,
        }
    }

    /// [`Plan::long`] when `PGMILL_FAULTS_LONG` is set (to anything but `0`), else
    /// [`Plan::combined`].
    pub fn from_env() -> Plan {
        match std::env::var("PGMILL_FAULTS_LONG") {
            Ok(v) if v != "0" && !v.is_empty() => Plan::long(),
            _ => Plan::combined(),
        }
    }

    /// The plan without its crash restarts (for a server the harness cannot restart).
    pub fn without_restarts(mut self) -> Plan {
        self.steps.retain(|s| s.fault != Fault::RestartImmediate);
        self
    }

    /// True when the rescue bound applies to a process killed or frozen at `at`: nothing else
    /// that stops rescue falls within the bound after it. A crash restart empties the client
    /// table, and the rescuer then waits a grace period before it rescues anything; a leader
    /// killed or frozen leaves rescue waiting until another client takes the lease over (up to
    /// the client timeout). The bound is promised for one death, not for two in a row.
    ///
    /// A soft stop needs no rescue (its buffered jobs are given back at once), so the bound
    /// always applies to it.
    pub fn bounded(&self, at: Duration) -> bool {
        let soft_stop = |s: &Step| s.at == at && matches!(s.fault, Fault::Stop(_));
        if self.steps.iter().any(soft_stop) {
            return true;
        }
        !self.steps.iter().any(|s| {
            let stops_rescue = matches!(
                s.fault,
                Fault::RestartImmediate
                    | Fault::Kill(Target::Leader)
                    | Fault::Freeze(Target::Leader)
            );
            stops_rescue && s.at > at && s.at <= at + RESCUE_BOUND
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_freeze_is_thawed_and_kills_near_a_restart_are_not_bounded() {
        for plan in [Plan::combined(), Plan::long()] {
            let freezes = plan
                .steps
                .iter()
                .filter(|s| matches!(s.fault, Fault::Freeze(_)))
                .count();
            let thaws = plan.steps.iter().filter(|s| s.fault == Fault::Thaw).count();
            assert_eq!(freezes, thaws, "{}", plan.name);
            assert!(plan.steps.is_sorted_by_key(|s| s.at), "{}", plan.name);
            assert!(
                plan.steps.iter().all(|s| s.at <= plan.duration),
                "{}",
                plan.name
            );
        }
        let plan = Plan::combined();
        assert!(plan.bounded(Duration::from_secs(20)));
        assert!(
            !plan.bounded(Duration::from_secs(30)),
            "the restart at 52 s"
        );
        assert!(
            !plan.bounded(Duration::from_secs(40)),
            "the leader killed at 62 s"
        );
        assert!(
            plan.bounded(Duration::from_secs(62)),
            "a fault does not unbound itself"
        );
        assert!(
            plan.bounded(Duration::from_secs(44)),
            "a soft stop needs no rescue"
        );
        let plan = plan.without_restarts();
        assert!(plan.bounded(Duration::from_secs(30)));
    }
}
