//! Fault-injection tests for pgmill with real worker processes.
//!
//! Each test starts a private PostgreSQL cluster, migrates a fresh schema, starts four
//! `fault-worker` processes (this crate's binary: a pgmill client on one driver whose worker
//! records every attempt it starts and finishes in a side table), keeps a backlog of jobs
//! available, and injects faults from outside:
//!
//! - `kill -9` of the leader and of random workers, each respawned at once as a supervisor would;
//! - SIGSTOP of a worker for longer than the client timeout (15 s) and the job timeout, then
//!   SIGCONT;
//! - `pg_ctl restart -m immediate`, a crash restart;
//! - `pg_terminate_backend` of every backend of the workers' `application_name`;
//! - SIGTERM of a worker under load (a soft stop), respawned once it exited.
//!
//! When the faults are over and every job has finished, the workers are stopped with SIGTERM
//! and waited for, and the [`Report`] checks in SQL that no job was lost or left unfinished, that
//! no claim (job and fencing token) ran its work twice, that every completed job was completed by
//! its latest claim (an older claim's late outcome never landed), that the jobs a killed or
//! frozen process held were rescued and ran again within the 30 s rescue bound (by the database
//! clock, from a `now()` taken at the moment of the fault), and that every worker exited
//! cleanly. Jobs that run twice after a kill are allowed (at least once) and counted. It also
//! replays the run's trace (every change of a job's state, attempt and token, every row written
//! to or deleted from the job table, the history and the dead-letter queue, and every change of
//! the lease, recorded by triggers on the test schema: see [`attempt_log`]) through the models'
//! statement functions (`pgmill_models::trace`), and fails on any step the models do not allow.
//!
//! # Running
//!
//! ```sh
//! cargo test -p pgmill-faults -- --nocapture            # one combined scenario per driver
//! PGMILL_FAULTS_LONG=1 cargo test -p pgmill-faults -- --nocapture   # the long plan
//! PGMILL_FAULTS_SEED=42 cargo test -p pgmill-faults     # repeat a run's choice of victims
//! ```
//!
//! The three drivers' scenarios are separate tests and run in parallel, each on its own cluster.
//! `cargo test` runs them as many at a time as there are cores (two at a time on a 2-core
//! machine: about 80 s each, 2.6 minutes for the three). The combined plan ([`Plan::combined`])
//! runs 66 s of faults with 4 workers of 4 slots and jobs of 10 to 100 ms: the leader killed at
//! 4 s, a worker frozen from 6 s to 28 s (its 10 s job timeout and the 15 s client timeout pass
//! while it is frozen), other workers killed at 12 s and 20 s, three sweeps of backend
//! terminations from 30 s, a soft stop at 44 s, a crash restart at 52 s and the leader killed
//! again at 62 s. The long
//! plan ([`Plan::long`], `PGMILL_FAULTS_LONG=1`) runs three minutes with 4 workers of 16 slots, a
//! kill every 5 s, terminations every 10 s, the leader frozen for 40 s and two crash restarts.
//! With `DATABASE_URL` set the scenarios run on that server in a fresh schema, without the crash
//! restarts, and drop the schema at the end. Each test prints its figures to stderr (see them
//! with `--nocapture`); `PGMILL_FAULTS_KEEP_LOGS=1` keeps the workers' logs (their directory is
//! printed; `RUST_LOG` is passed on to the workers).
//!
//! The rescue bound is promised for one death at a time, so it is checked for every kill and
//! freeze that is not followed within 30 s by a crash restart (which empties the client table;
//! the rescuer then waits a grace period) or by the leader's death (rescue then waits until
//! another client takes the lease over): see [`Plan::bounded`]. A random victim is never the
//! leader; only the faults that name the leader hit it. The other faults' jobs are checked to
//! finish like every job. A rescued job whose next holder is itself killed before it starts the
//! job is rescued a second time, so its next start measures two faults: the time to the rescue
//! is checked for every held job, the time to the next start for those rescued once.
//!
//! The private cluster runs with `synchronous_commit = on` (test clusters otherwise turn it off):
//! without it a crash restart loses the last commits, acknowledged or not, as an asynchronous
//! failover does. A first run without it found completed jobs whose attempt records the crash had
//! lost (pgmill itself lost nothing: every job still completed).
//!
//! # Figures of a run
//!
//! The combined plan on sqlx, two drivers at a time on a 2-core machine (times from the fault,
//! by the database clock, to the rescue and to the next start of the jobs the process held; min /
//! median / max over those jobs):
//!
//! ```text
//! fault scenario combined on sqlx: 66 s of faults, drained 9.7 s later
//!   jobs: 17677 inserted, states [("completed", 17677)], lost 0, never run 0
//!   attempts: 17759 started; jobs started twice 82, finished twice 66; failed attempts 354
//!   fence: claims run twice 0, attempts without token 0, stale outcomes landed 0; work finished
//!     under a superseded claim 66, late outcomes dropped 66 (by workers that exited)
//!   kill sqlx-w0-g0 (leader) at 4.1 s: held 57 running; 57 rescued after 13.8 s,
//!     57 ran again after 15.2 / 15.5 / 16.0 s
//!   freeze sqlx-w1-g0 at 6.2 s: held 66 running; 66 rescued after 14.8 s,
//!     66 ran again after 15.5 / 16.0 / 16.3 s
//!   kill sqlx-w2-g0 at 12.0 s: held 61 running; 61 rescued after 14.9 s,
//!     61 ran again after 15.9 / 16.2 / 16.6 s
//!   kill sqlx-w2-g1 at 20.2 s: held 94 running; 94 rescued after 13.0 s,
//!     94 ran again after 14.0 / 14.4 / 14.8 s
//!   stop sqlx-w2-g2 at 44.1 s: held 59 running; 55 ran again after 0.2 / 0.6 / 0.9 s,
//!     4 finished before the fault took hold
//!   kill sqlx-w2-g3 (leader) at 62.1 s: held 76 running; 76 rescued after 12.3 s,
//!     76 ran again after 12.3 / 12.9 / 13.4 s
//!   soft stop of sqlx-w2-g2 under load: exited cleanly after 0.1 s
//!   backends terminated per sweep: [..]; crash restarts took: [..] s (under a second)
//!   workers at the end: 4 of 4 exited cleanly on SIGTERM
//! ```
//!
//! tokio-postgres and diesel in the same run: the same checks all clean, 17,916 and 18,461 jobs,
//! rescues 12.3 to 15.0 s after their fault, the slowest next start 16.7 s. Jobs that ran twice
//! are those a killed or frozen process held (its completions not yet flushed, or its work
//! resumed after the freeze); the work finished under a superseded claim is what the fence had
//! to drop.
//!
//! The long plan on sqlx, alone: 190,858 jobs, all completed and none lost, every check clean; the
//! 16 kills the bound applies to rescued 9.2 to 14.8 s after the kill (running again 9.4 to
//! 15.2 s after it), the frozen leader's jobs rescued after 14.1 s; the kills followed by a crash
//! restart or the leader's death rescued within 26.8 s, running again within 27.2 s.
//!
//! # Processes
//!
//! Every worker process is spawned with a parent-death signal (SIGKILL when the test's thread
//! ends) and is killed and reaped when its [`WorkerProcess`] is dropped, so a failing or killed
//! test leaves no process behind; the cluster stops with its [`pgmill_testdb::Cluster`].

pub mod attempt_log;
mod driver_kind;
mod error;
mod fault_worker;
mod plan;
mod probe;
mod report;
mod scenario;
mod worker_process;

pub use driver_kind::DriverKind;
pub use error::Error;
pub use fault_worker::{FaultJob, FaultWorker};
pub use plan::{Fault, Plan, RESCUE_BOUND, Step, Target};
pub use report::{FaultFigures, Report};
pub use scenario::Scenario;
pub use worker_process::{WorkerProcess, WorkerSpec, log_tail};
