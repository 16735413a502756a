//! A private PgBouncer in transaction mode, in front of a test database.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::after_exit::{sh_quote, spawn_after_exit};
use crate::error::Error;
use crate::program::find_program;

/// A PgBouncer in `pool_mode = transaction` on a free port of 127.0.0.1, in front of one
/// database; stopped and its directory deleted on drop (or by its watchdog if the process dies
/// first).
///
/// Its configuration lives in a private temporary directory: trust authentication, the upstream
/// user as the only user, up to 1,000 clients sharing at most 60 server connections per database
/// and user, and `extra_float_digits` ignored as a startup parameter (sqlx sends it; PgBouncer
/// refuses parameters it does not track). PgBouncer refuses to run as root, so when the process
/// is root it runs as the `postgres` user.
///
/// # Examples
///
/// ```no_run
/// # fn main() -> Result<(), pgmill_testdb::Error> {
/// let bouncer = pgmill_testdb::PgBouncer::start(&pgmill_testdb::url())?;
/// println!("pooled: {}", bouncer.url());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct PgBouncer {
    child: Child,
    dir: PathBuf,
    url: String,
}

/// How long PgBouncer gets to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(20);

impl PgBouncer {
    /// Starts a PgBouncer in front of the database at `upstream` (a `postgres://user@host:port/db`
    /// URL, as [`url`](crate::url) and [`Cluster::url`](crate::Cluster::url) give) and waits until
    /// it accepts connections.
    ///
    /// # Errors
    ///
    /// [`Error::ProgramNotFound`] when no `pgbouncer` binary is found (looked for as
    /// [`require_program`](crate::require_program) does, before anything else is done); otherwise
    /// why it did not start (its log's last lines).
    pub fn start(upstream: &str) -> Result<PgBouncer, Error> {
        let program = find_program("pgbouncer")?;
        let upstream = Upstream::parse(upstream)?;
        let dir = std::env::temp_dir().join(format!(
            "pgmill-pgbouncer-{}-{}",
            std::process::id(),
            crate::cluster::unique_suffix()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::setup(format!("creating {}", dir.display()), e))?;
        let owner = if crate::cluster::running_as_root() {
            crate::cluster::chown_postgres(&dir)?;
            Some(postgres_ids()?)
        } else {
            None
        };
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").map_err(|e| Error::setup("a port", e))?;
            l.local_addr()
                .map_err(|e| Error::setup("a port", e))?
                .port()
        };
        let ini = dir.join("pgbouncer.ini");
        let users = dir.join("userlist.txt");
        let log = dir.join("pgbouncer.log");
        write(&users, &format!("\"{}\" \"\"\n", upstream.user))?;
        write(
            &ini,
            &format!(
                "[databases]\n\
                 * = host={host} port={uport}\n\
                 [pgbouncer]\n\
                 listen_addr = 127.0.0.1\n\
                 listen_port = {port}\n\
                 unix_socket_dir =\n\
                 auth_type = trust\n\
                 auth_file = {users}\n\
                 pool_mode = transaction\n\
                 max_client_conn = 1000\n\
                 default_pool_size = 60\n\
                 ignore_startup_parameters = extra_float_digits\n\
                 logfile = {log}\n\
                 admin_users = {user}\n",
                host = upstream.host,
                uport = upstream.port,
                users = users.display(),
                log = log.display(),
                user = upstream.user,
            ),
        )?;
        let mut command = Command::new(program);
        command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = owner {
            command.uid(uid).gid(gid);
        }
        let child = command
            .spawn()
            .map_err(|e| Error::command("pgbouncer", e.to_string()))?;
        spawn_after_exit(&format!(
            "kill -9 {} 2>/dev/null; rm -rf {}",
            child.id(),
            sh_quote(dir.to_str().unwrap_or_default())
        ));
        let mut bouncer = PgBouncer {
            child,
            dir,
            url: format!(
                "postgres://{}@127.0.0.1:{port}/{}?sslmode=disable",
                upstream.user, upstream.database
            ),
        };
        bouncer.wait_listening(port, &log)?;
        Ok(bouncer)
    }

    /// A URL connecting through the pooler to the upstream database, as the upstream user.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn wait_listening(&mut self, port: u16, log: &Path) -> Result<(), Error> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                let tail = std::fs::read_to_string(log).unwrap_or_default();
                let tail: Vec<&str> = tail.lines().rev().take(5).collect();
                return Err(Error::command(
                    "pgbouncer",
                    format!(
                        "{}; log: {}",
                        match exited {
                            Some(status) => format!("exited with {status}"),
                            None => "not listening after 20 s".to_owned(),
                        },
                        tail.join(" | ")
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The parts of a `postgres://` URL the pooler's configuration needs.
struct Upstream {
    user: String,
    host: String,
    port: u16,
    database: String,
}

impl Upstream {
    fn parse(url: &str) -> Result<Upstream, Error> {
        let bad = || Error::command("pgbouncer", format!("cannot read the upstream URL {url}"));
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(bad)?;
        let rest = rest.split('?').next().unwrap_or_default();
        let (auth, rest) = rest.split_once('@').ok_or_else(bad)?;
        if auth.contains(':') {
            // A password would need an auth_file entry of its own; the test databases have none.
            return Err(bad());
        }
        let (hostport, database) = rest.split_once('/').ok_or_else(bad)?;
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| bad())?),
            None => (hostport, 5432),
        };
        Ok(Upstream {
            user: auth.to_owned(),
            host: host.to_owned(),
            port,
            database: if database.is_empty() {
                auth.to_owned()
            } else {
                database.to_owned()
            },
        })
    }
}

/// The uid and gid of the `postgres` user.
fn postgres_ids() -> Result<(u32, u32), Error> {
    let id = |flag: &str| -> Result<u32, Error> {
        let out = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .map_err(|e| Error::command("id", e.to_string()))?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| Error::command("id", "no postgres user"))
    };
    Ok((id("-u")?, id("-g")?))
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::setup(format!("writing {}", path.display()), e))
}
