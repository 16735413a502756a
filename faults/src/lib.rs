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
//! - `pg_terminate_backend` of every backend of the workers' `application_name`.
//!
//! When the faults are over and every job has finished, the workers are stopped with SIGTERM
//! and waited for, and the [`Report`] checks in SQL that no job was lost or left unfinished, that
//! no claim (job and fencing token) ran its work twice, that every completed job was completed by
//! its latest claim (an older claim's late outcome never landed), that the jobs a killed or
//! frozen process held ran again within the 30 s rescue bound (by the database clock, from a
//! `now()` taken at the moment of the fault), and that every worker exited cleanly. Jobs that run
//! twice after a kill are allowed (at least once) and counted.
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
//! while it is frozen), other workers killed at 12 s and 20 s, three rounds of backend
//! terminations from 30 s, a crash restart at 52 s and the leader killed again at 62 s. The long
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
//! finish like every job.
//!
//! The private cluster runs with `synchronous_commit = on` (test clusters otherwise turn it off):
//! without it a crash restart loses the last commits, acknowledged or not, as an asynchronous
//! failover does. A first run without it found completed jobs whose attempt records the crash had
//! lost (pgmill itself lost nothing: every job still completed).
//!
//! # Figures of a run
//!
//! The combined plan on the three drivers, two at a time on a 2-core machine (the time from the
//! fault to the next start of the jobs the process held, by the database clock; min / median /
//! max over those jobs):
//!
//! ```text
//! fault scenario combined on sqlx: 66 s of faults, drained 10.2 s later
//!   jobs: 18266 inserted, states [("completed", 18266)], lost 0, never run 0
//!   attempts: 18345 started; jobs started twice 79, finished twice 64; failed attempts 381
//!   fence: claims run twice 0, attempts without token 0, stale outcomes landed 0, late outcomes dropped 63
//!   kill sqlx-w0-g0 (leader) at 4 s: held 57 running, 57 ran again after 15.0 / 15.3 / 15.8 s
//!   freeze sqlx-w1-g0 at 6 s: held 63 running, 63 ran again after 15.9 / 16.2 / 16.6 s
//!   kill sqlx-w2-g0 at 12 s: held 99 running, 97 ran again after 15.7 / 16.1 / 16.4 s
//!   kill sqlx-w0-g1 at 20 s: held 82 running, 82 ran again after 15.0 / 15.3 / 15.7 s
//!   kill sqlx-w2-g1 (leader) at 62 s: held 82 running, 82 ran again after 13.1 / 13.3 / 13.8 s
//!   backends terminated per round: [30, 28, 28]
//!   crash restarts took: [0.5] s
//!   workers at the end: 4 of 4 exited cleanly on SIGTERM
//! ```
//!
//! tokio-postgres and diesel: the same checks all clean, 17,679 to 18,428 jobs, slowest rerun
//! after a bounded fault 16.3 s (tokio-postgres) and 16.8 s (diesel). Jobs that ran twice are
//! those a killed or frozen process held (its completions not yet flushed, or its work resumed
//! after the freeze); the frozen worker's late outcomes are the ones the fence dropped.
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
