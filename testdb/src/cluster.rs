//! A private PostgreSQL cluster started from the installed binaries.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::after_exit::{sh_quote, spawn_after_exit};
use crate::error::Error;

/// A private PostgreSQL cluster, stopped and deleted on drop (or by its watchdog if the process
/// dies first).
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
    /// Test settings (fsync off and friends) instead of the defaults `initdb` writes.
    tuned_for_tests: bool,
}

impl Cluster {
    /// Initialises and starts a new cluster from the installed PostgreSQL binaries.
    ///
    /// # Errors
    ///
    /// When no binaries are installed or the cluster does not start; the message says why.
    pub fn start() -> Result<Cluster, Error> {
        Self::start_with(true)
    }

    /// Like [`Cluster::start`], but with the `postgresql.conf` defaults `initdb` writes (fsync and
    /// synchronous commit on), as benchmarks want.
    ///
    /// # Errors
    ///
    /// As [`Cluster::start`].
    pub fn start_with_defaults() -> Result<Cluster, Error> {
        Self::start_with(false)
    }

    fn start_with(tuned_for_tests: bool) -> Result<Cluster, Error> {
        Self::create(tuned_for_tests, |c| c.init())
    }

    /// Starts a streaming replica of this cluster: a base backup taken with `pg_basebackup -R`
    /// into a data directory of its own, started on a free port as a hot standby that streams WAL
    /// from this cluster over TCP. Stopped and deleted on drop, as any [`Cluster`]; promote it
    /// with [`Cluster::promote`].
    ///
    /// The replica has the same settings as this cluster. Replication is asynchronous: a commit
    /// acknowledged by this cluster may not have reached the replica yet.
    ///
    /// # Errors
    ///
    /// When the base backup fails or the replica does not start.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn main() -> Result<(), pgmill_testdb::Error> {
    /// let primary = pgmill_testdb::Cluster::start()?;
    /// let replica = primary.start_replica()?;
    /// replica.stop_streaming()?; // receives nothing more: later commits on the primary are lost
    /// primary.stop()?;
    /// replica.promote()?; // now a primary of its own
    /// # Ok(())
    /// # }
    /// ```
    pub fn start_replica(&self) -> Result<Cluster, Error> {
        let primary_port = self.port;
        Self::create(self.tuned_for_tests, |c| c.base_backup(primary_port))
    }

    /// Promotes a replica ([`Cluster::start_replica`]) to a primary and waits until it accepts
    /// writes. What it received before is replayed first; what it did not receive is lost.
    ///
    /// # Errors
    ///
    /// When `pg_ctl promote` fails, for example because the cluster is not a replica.
    pub fn promote(&self) -> Result<(), Error> {
        self.pg_ctl(&["-w", "-t", "60", "promote"])
    }

    /// Makes a replica stop receiving WAL from its primary: its `primary_conninfo` is emptied and
    /// its configuration reloaded, so its WAL receiver exits and does not start again. WAL it has
    /// received is kept (and replayed, also at promotion); nothing committed on the primary after
    /// this reaches it. The primary's `pg_stat_replication` loses its row once the receiver is
    /// gone.
    ///
    /// # Errors
    ///
    /// When the configuration cannot be written or reloaded.
    pub fn stop_streaming(&self) -> Result<(), Error> {
        use std::io::Write;
        let conf = self.data().join("postgresql.auto.conf");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&conf)
            .map_err(|e| Error::setup(format!("opening {}", conf.display()), e))?;
        // The last setting in the file wins.
        file.write_all(b"primary_conninfo = ''\n")
            .map_err(|e| Error::setup(format!("writing {}", conf.display()), e))?;
        self.pg_ctl(&["reload"])
    }

    /// Creates the cluster's directory and watchdog, fills its data directory with `fill`, and
    /// starts it on a free port.
    fn create(
        tuned_for_tests: bool,
        fill: impl FnOnce(&Cluster) -> Result<(), Error>,
    ) -> Result<Cluster, Error> {
        let bin = find_bin_dir()?;
        let as_postgres = running_as_root();
        let base = std::env::temp_dir().join(format!(
            "pgmill-test-{}-{}",
            std::process::id(),
            unique_suffix()
        ));
        std::fs::create_dir_all(&base)
            .map_err(|e| Error::setup(format!("creating {}", base.display()), e))?;
        let mut cluster = Cluster {
            bin,
            dir: base,
            port: 0,
            as_postgres,
            tuned_for_tests,
        };
        if as_postgres {
            chown_postgres(&cluster.dir)?;
        }
        spawn_watchdog(&cluster);
        fill(&cluster)?;
        let mut last = None;
        for _ in 0..5 {
            cluster.port = free_port()?;
            match cluster.pg_ctl_start() {
                Ok(()) => return Ok(cluster),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::command("pg_ctl start", "the cluster did not start")))
    }

    /// A URL connecting to the cluster's `postgres` database as superuser over TCP.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// The TCP port the cluster listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Restarts the cluster in immediate mode: a crash restart, so UNLOGGED tables come back
    /// empty and every connection is dropped.
    ///
    /// # Errors
    ///
    /// When `pg_ctl` fails.
    pub fn restart_immediate(&self) -> Result<(), Error> {
        self.pg_ctl(&["-m", "immediate", "stop"])?;
        self.pg_ctl_start()
    }

    /// Stops the cluster in immediate mode, leaving its files (start again with [`Cluster::resume`]).
    ///
    /// # Errors
    ///
    /// When `pg_ctl` fails.
    pub fn stop(&self) -> Result<(), Error> {
        self.pg_ctl(&["-m", "immediate", "stop"])
    }

    /// Starts a stopped cluster again on the same port.
    ///
    /// # Errors
    ///
    /// When `pg_ctl` fails.
    pub fn resume(&self) -> Result<(), Error> {
        self.pg_ctl_start()
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    /// Fills the data directory with a base backup of the cluster on `primary_port`, configured
    /// (`-R`) to stream from it.
    fn base_backup(&self, primary_port: u16) -> Result<(), Error> {
        let out = self
            .command("pg_basebackup")
            .arg("-D")
            .arg(self.data())
            .args(["-h", "127.0.0.1", "-p", &primary_port.to_string()])
            .args(["-U", "postgres", "-R", "-X", "stream", "-c", "fast", "-w"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::command("pg_basebackup", e.to_string()))?;
        if !out.status.success() {
            return Err(Error::command(
                "pg_basebackup",
                String::from_utf8_lossy(&out.stderr).trim(),
            ));
        }
        Ok(())
    }

    fn init(&self) -> Result<(), Error> {
        let out = self
            .command("initdb")
            .arg("-D")
            .arg(self.data())
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::command("initdb", e.to_string()))?;
        if !out.status.success() {
            return Err(Error::command(
                "initdb",
                String::from_utf8_lossy(&out.stderr).trim(),
            ));
        }
        Ok(())
    }

    fn pg_ctl_start(&self) -> Result<(), Error> {
        let tuning = if self.tuned_for_tests {
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
             -c max_connections=300 -c shared_buffers=64MB"
        } else {
            ""
        };
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1{tuning}",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("postgres.log");
        self.pg_ctl(&[
            "-w",
            "-t",
            "60",
            "-l",
            log.to_str().unwrap(),
            "-o",
            &opts,
            "start",
        ])
        .map_err(|e| {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(5).collect();
            Error::command("pg_ctl start", format!("{e}; log: {}", tail.join(" | ")))
        })
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), Error> {
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::command("pg_ctl", e.to_string()))?;
        if !out.status.success() {
            return Err(Error::command(
                format!("pg_ctl {}", args.last().unwrap_or(&"")),
                String::from_utf8_lossy(&out.stderr).trim(),
            ));
        }
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn find_bin_dir() -> Result<PathBuf, Error> {
    let has_initdb = |p: &Path| p.join("initdb").is_file() && p.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_initdb(&dir) {
            return Ok(dir);
        }
    }
    let mut candidates: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, p)| has_initdb(p))
        .collect();
    candidates.sort();
    candidates.pop().map(|(_, p)| p).ok_or(Error::NotInstalled)
}

pub(crate) fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

pub(crate) fn chown_postgres(dir: &Path) -> Result<(), Error> {
    let status = Command::new("chown")
        .arg("postgres:postgres")
        .arg(dir)
        .status()
        .map_err(|e| Error::command("chown", e.to_string()))?;
    if !status.success() {
        return Err(Error::command(
            "chown",
            format!("cannot give {} to postgres", dir.display()),
        ));
    }
    Ok(())
}

fn free_port() -> Result<u16, Error> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| Error::setup("finding a port", e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::setup("finding a port", e))
}

fn spawn_watchdog(c: &Cluster) {
    let pg_ctl = c.bin.join("pg_ctl");
    let stop = format!(
        "{} {} -D {} -m immediate stop",
        if c.as_postgres {
            "runuser -u postgres --"
        } else {
            ""
        },
        sh_quote(pg_ctl.to_str().unwrap_or_default()),
        sh_quote(c.data().to_str().unwrap_or_default())
    );
    spawn_after_exit(&format!(
        "if [ -d {data} ]; then {stop} >/dev/null 2>&1; fi; rm -rf {dir}",
        data = sh_quote(c.data().to_str().unwrap_or_default()),
        dir = sh_quote(c.dir.to_str().unwrap_or_default()),
    ));
}

/// A suffix no other cluster of this process (or, by the clock, of another) uses.
pub(crate) fn unique_suffix() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{nanos:08x}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}
