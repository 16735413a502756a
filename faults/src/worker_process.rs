//! One fault-worker process: spawned so that it dies with the test, signalled by pid, killed and
//! reaped on drop.

#![allow(unsafe_code)]

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::driver_kind::DriverKind;
use crate::error::Error;

/// How to start a worker process.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    /// The `fault-worker` binary.
    pub bin: PathBuf,
    /// The driver it runs on.
    pub driver: DriverKind,
    /// The database URL (without `application_name`: the worker adds its own).
    pub url: String,
    /// pgmill's schema.
    pub schema: String,
    /// The `application_name` its connections carry.
    pub application_name: String,
    /// Worker slots.
    pub concurrency: usize,
    /// Shortest and longest job sleep, in milliseconds.
    pub sleep_ms: (u64, u64),
    /// The job timeout.
    pub job_timeout: Duration,
    /// Where its output goes (one file per process).
    pub log_dir: PathBuf,
}

/// A running (or exited) worker process. Dropping it kills it with SIGKILL and reaps it; its
/// parent-death signal kills it too if the test process dies first.
#[derive(Debug)]
pub struct WorkerProcess {
    child: Child,
    client_id: String,
    exit: Option<ExitStatus>,
    stopped: bool,
}

impl WorkerProcess {
    /// Spawns a worker with client id `client_id`.
    ///
    /// # Errors
    ///
    /// When the log file cannot be created or the process cannot be spawned.
    pub fn spawn(spec: &WorkerSpec, client_id: &str) -> Result<Self, Error> {
        let log_path = spec.log_dir.join(format!("{client_id}.log"));
        let log = File::create(&log_path)
            .map_err(|e| Error::io(format!("creating {}", log_path.display()), e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| Error::io("duplicating a log file", e))?;
        let mut cmd = Command::new(&spec.bin);
        cmd.arg("--driver")
            .arg(spec.driver.name())
            .arg("--url")
            .arg(&spec.url)
            .arg("--schema")
            .arg(&spec.schema)
            .arg("--id")
            .arg(client_id)
            .arg("--application-name")
            .arg(&spec.application_name)
            .arg("--concurrency")
            .arg(spec.concurrency.to_string())
            .arg("--sleep-min-ms")
            .arg(spec.sleep_ms.0.to_string())
            .arg("--sleep-max-ms")
            .arg(spec.sleep_ms.1.to_string())
            .arg("--job-timeout-ms")
            .arg(spec.job_timeout.as_millis().to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "warn");
        }
        die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("spawning {}", spec.bin.display()), e))?;
        Ok(WorkerProcess {
            child,
            client_id: client_id.to_owned(),
            exit: None,
            stopped: false,
        })
    }

    /// The client id it runs under.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while frozen by [`WorkerProcess::freeze`].
    pub fn is_frozen(&self) -> bool {
        self.stopped
    }

    /// kill -9, and reaps it.
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent or the process not reaped.
    pub fn kill(&mut self) -> Result<(), Error> {
        if self.exit.is_some() {
            return Ok(());
        }
        self.child
            .kill()
            .map_err(|e| Error::io(format!("killing {}", self.client_id), e))?;
        let status = self
            .child
            .wait()
            .map_err(|e| Error::io(format!("reaping {}", self.client_id), e))?;
        self.exit = Some(status);
        Ok(())
    }

    /// SIGSTOP: the process freezes, its connections stay open.
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent.
    pub fn freeze(&mut self) -> Result<(), Error> {
        self.signal(libc::SIGSTOP)?;
        self.stopped = true;
        Ok(())
    }

    /// SIGCONT after [`WorkerProcess::freeze`].
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent.
    pub fn thaw(&mut self) -> Result<(), Error> {
        self.signal(libc::SIGCONT)?;
        self.stopped = false;
        Ok(())
    }

    /// SIGTERM (a soft stop), then waits up to `within` for the process to exit; returns its exit
    /// status, or `None` if it did not exit in time (it is then killed).
    ///
    /// # Errors
    ///
    /// When the signal cannot be sent or the process not reaped.
    pub async fn terminate(&mut self, within: Duration) -> Result<Option<ExitStatus>, Error> {
        if let Some(status) = self.exit {
            return Ok(Some(status));
        }
        if self.stopped {
            self.thaw()?;
        }
        self.signal(libc::SIGTERM)?;
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self
                .child
                .try_wait()
                .map_err(|e| Error::io(format!("waiting for {}", self.client_id), e))?
            {
                self.exit = Some(status);
                return Ok(Some(status));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.kill()?;
        Ok(None)
    }

    fn signal(&self, signal: libc::c_int) -> Result<(), Error> {
        if self.exit.is_some() {
            return Err(Error::Scenario(format!(
                "{} already exited",
                self.client_id
            )));
        }
        let pid = libc::pid_t::try_from(self.child.id())
            .map_err(|_| Error::Scenario(format!("pid of {} out of range", self.client_id)))?;
        // SAFETY: kill(2) takes plain integers and touches no memory of ours. The pid is our own
        // child's, not yet reaped (`exit` is None), so it cannot have been reused.
        if unsafe { libc::kill(pid, signal) } != 0 {
            return Err(Error::io(
                format!("signalling {}", self.client_id),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if self.exit.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Makes the spawned process receive SIGKILL when the thread that spawned it ends (the test's
/// thread, which lives until the test ends), so a test binary that dies leaves no orphan.
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec, and calls only prctl(2) and
    // getppid(2), which are async-signal-safe and touch no memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect (no allocation here: the error
            // is built from a raw code).
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// The last `lines` lines of the log of `client_id` in `dir`.
pub fn log_tail(dir: &Path, client_id: &str, lines: usize) -> String {
    let text = std::fs::read_to_string(dir.join(format!("{client_id}.log"))).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
