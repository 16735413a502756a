//! The database tests run against: `DATABASE_URL` when set, otherwise a throwaway cluster.
//!
//! With no `DATABASE_URL`, the first test of a process starts one PostgreSQL cluster from the
//! installed binaries (found with `pg_config --bindir`, else under `/usr/lib/postgresql/*/bin`),
//! on a free port with a private socket directory and `fsync=off`. `initdb` refuses to run as
//! root, so when the process is root every PostgreSQL binary runs as the `postgres` user through
//! `runuser`. A watchdog process started beside the cluster stops and deletes it as soon as the
//! test process ends, whether the tests passed, failed or the process was killed.
//!
//! Each test gets a fresh schema ([`fresh_schema_name`]); with `DATABASE_URL` the watchdog drops
//! the process's schemas at the end, so nothing is left behind. Tests that restart or kill
//! Postgres start a private [`Cluster`] of their own.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The environment variable naming an existing database to test against.
pub const DATABASE_URL: &str = "DATABASE_URL";

/// The prefix of every schema tests create; followed by the process id.
pub const TEST_SCHEMA_PREFIX: &str = "pgmill_t";

/// Why no test database could be had.
#[derive(Debug, Clone)]
pub struct TestDbError(String);

impl std::fmt::Display for TestDbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TestDbError {}

fn err(msg: impl Into<String>) -> TestDbError {
    TestDbError(msg.into())
}

enum Source {
    External(String),
    Cluster(Cluster),
}

static SHARED: OnceLock<Result<Source, TestDbError>> = OnceLock::new();

/// The URL of this process's test database, starting the throwaway cluster on first use.
///
/// # Errors
///
/// A message naming both options (`DATABASE_URL`, or installing PostgreSQL) when neither works.
pub fn try_url() -> Result<String, TestDbError> {
    let source = SHARED.get_or_init(|| match std::env::var(DATABASE_URL) {
        Ok(url) if !url.is_empty() => {
            spawn_schema_dropper(&url);
            Ok(Source::External(url))
        }
        _ => Cluster::start().map(Source::Cluster),
    });
    match source {
        Ok(Source::External(url)) => Ok(url.clone()),
        Ok(Source::Cluster(c)) => Ok(c.url()),
        Err(e) => Err(e.clone()),
    }
}

/// The URL of this process's test database.
///
/// # Panics
///
/// When no database can be had; the message says how to provide one.
pub fn url() -> String {
    try_url().unwrap_or_else(|e| panic!("{e}"))
}

/// A schema name no other test (in this or another process) uses: `pgmill_t<pid>_<n>`.
pub fn fresh_schema_name() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{TEST_SCHEMA_PREFIX}{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

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
    pub fn start() -> Result<Cluster, TestDbError> {
        Self::start_with(true)
    }

    /// Like [`Cluster::start`], but with the `postgresql.conf` defaults `initdb` writes (fsync and
    /// synchronous commit on), as benchmarks want.
    ///
    /// # Errors
    ///
    /// As [`Cluster::start`].
    pub fn start_with_defaults() -> Result<Cluster, TestDbError> {
        Self::start_with(false)
    }

    fn start_with(tuned_for_tests: bool) -> Result<Cluster, TestDbError> {
        let bin = find_bin_dir()?;
        let as_postgres = running_as_root();
        let base = std::env::temp_dir().join(format!(
            "pgmill-test-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&base).map_err(|e| err(format!("creating {base:?}: {e}")))?;
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
        cluster.init()?;
        let mut last = None;
        for _ in 0..5 {
            cluster.port = free_port()?;
            match cluster.pg_ctl_start() {
                Ok(()) => return Ok(cluster),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| err("cluster did not start")))
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
    pub fn restart_immediate(&self) -> Result<(), TestDbError> {
        self.pg_ctl(&["-m", "immediate", "stop"])?;
        self.pg_ctl_start()
    }

    /// Stops the cluster in immediate mode, leaving its files (start again with [`Cluster::resume`]).
    ///
    /// # Errors
    ///
    /// When `pg_ctl` fails.
    pub fn stop(&self) -> Result<(), TestDbError> {
        self.pg_ctl(&["-m", "immediate", "stop"])
    }

    /// Starts a stopped cluster again on the same port.
    ///
    /// # Errors
    ///
    /// When `pg_ctl` fails.
    pub fn resume(&self) -> Result<(), TestDbError> {
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

    fn init(&self) -> Result<(), TestDbError> {
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
            .map_err(|e| err(format!("running initdb: {e}")))?;
        if !out.status.success() {
            return Err(err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    }

    fn pg_ctl_start(&self) -> Result<(), TestDbError> {
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
            err(format!("{e}; log: {}", tail.join(" | ")))
        })
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), TestDbError> {
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| err(format!("running pg_ctl: {e}")))?;
        if !out.status.success() {
            return Err(err(format!(
                "pg_ctl {} failed: {}",
                args.last().unwrap_or(&""),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
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

fn find_bin_dir() -> Result<PathBuf, TestDbError> {
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
    candidates.pop().map(|(_, p)| p).ok_or_else(|| {
        err(
            "no PostgreSQL for the tests: either set DATABASE_URL to a database where the tests may \
             create schemas, or install the PostgreSQL server binaries (initdb and pg_ctl, looked \
             for with `pg_config --bindir` and under /usr/lib/postgresql/*/bin)",
        )
    })
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

fn chown_postgres(dir: &Path) -> Result<(), TestDbError> {
    let status = Command::new("chown")
        .arg("postgres:postgres")
        .arg(dir)
        .status()
        .map_err(|e| err(format!("running chown: {e}")))?;
    if !status.success() {
        return Err(err(format!("chown postgres {dir:?} failed")));
    }
    Ok(())
}

fn free_port() -> Result<u16, TestDbError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| err(format!("finding a port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| err(format!("finding a port: {e}")))
}

/// Quotes a string for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Starts `script` in its own process group so it outlives a killed test process; it runs
/// after this process exits.
fn spawn_after_exit(script: &str) {
    use std::os::unix::process::CommandExt;
    let full = format!(
        "while kill -0 {} 2>/dev/null; do sleep 0.2; done; {script}",
        std::process::id()
    );
    let _ = Command::new("sh")
        .args(["-c", &full])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    // The child is not waited for on purpose: it must outlive this process.
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

/// With an external database, drops this process's test schemas after it exits.
fn spawn_schema_dropper(url: &str) {
    let sql = format!(
        "DO $$ DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace \
         WHERE nspname LIKE '{TEST_SCHEMA_PREFIX}{}\\_%' LOOP \
         EXECUTE format('DROP SCHEMA %I CASCADE', s); END LOOP; END $$;",
        std::process::id()
    );
    spawn_after_exit(&format!(
        "psql {} -q -v ON_ERROR_STOP=1 -c {} >/dev/null 2>&1",
        sh_quote(url),
        sh_quote(&sql)
    ));
}

/// Waits up to `timeout` for `check` to become true, polling every 10 ms.
pub async fn eventually(timeout: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
