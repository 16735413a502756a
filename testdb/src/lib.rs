//! A throwaway PostgreSQL for tests and examples: `DATABASE_URL` when set, otherwise a private
//! cluster started from the installed PostgreSQL binaries.
//!
//! With no `DATABASE_URL`, the first call to [`url`] in a process starts one cluster (found with
//! `pg_config --bindir`, else under `/usr/lib/postgresql/*/bin`) on a free port with a private
//! socket directory and test settings (`fsync=off` and friends). `initdb` refuses to run as root,
//! so when the process is root every PostgreSQL binary runs as the `postgres` user through
//! `runuser`. A watchdog process started beside the cluster stops and deletes it as soon as the
//! process ends, whether the tests passed, failed or the process was killed.
//!
//! [`PgBouncer`] starts a private PgBouncer in transaction mode in front of a database, for the
//! tests that run pgmill behind a pooler.
//!
//! A test that needs a program besides PostgreSQL (`pgbouncer`, or `chromium` and `chromedriver`
//! for a browser) calls [`require_program`] first: on a machine without it, the test fails at
//! once with one line naming the program and its install command, e.g.
//! `pgbouncer not found: install it (Debian/Ubuntu: apt-get install pgbouncer)`. The variable
//! `PGMILL_TEST_<NAME>` (`PGMILL_TEST_PGBOUNCER`, `PGMILL_TEST_CHROMIUM`,
//! `PGMILL_TEST_CHROMEDRIVER`) gives a program's path instead of searching `PATH`; a path that
//! does not exist shows what such a machine reports.
//!
//! For failover tests, [`Cluster::start_replica`] starts a streaming replica of a cluster
//! (promoted with [`Cluster::promote`]), and a [`Forwarder`] gives clients one address whose
//! target can be switched from the old primary to the promoted replica.
//!
//! [`eventually`] waits for a condition (a row written, a job done) instead of for a time.
//!
//! Give each test its own schema ([`fresh_schema_name`]); with `DATABASE_URL` the watchdog drops
//! the process's schemas at the end, so nothing is left behind. Tests that restart or kill
//! Postgres start a private [`Cluster`] of their own.
//!
//! # Examples
//!
//! A test that needs a database:
//!
//! ```no_run
//! let url = pgmill_testdb::url(); // DATABASE_URL, or the process's throwaway cluster
//! let schema = pgmill_testdb::fresh_schema_name(); // e.g. "pgmill_t4242_0"
//! # let _ = (url, schema);
//! ```
//!
//! A cluster of one's own, stopped and deleted when dropped:
//!
//! ```no_run
//! # fn main() -> Result<(), pgmill_testdb::Error> {
//! let cluster = pgmill_testdb::Cluster::start()?;
//! println!("connect to {}", cluster.url());
//! cluster.restart_immediate()?; // a crash restart: UNLOGGED tables come back empty
//! # Ok(())
//! # }
//! ```

mod after_exit;
mod cluster;
mod error;
mod eventually;
mod forwarder;
mod pgbouncer;
mod program;
mod shared;

pub use cluster::Cluster;
pub use error::Error;
pub use eventually::eventually;
pub use forwarder::Forwarder;
pub use pgbouncer::PgBouncer;
pub use program::{find_program, require_program};
pub use shared::{DATABASE_URL, TEST_SCHEMA_PREFIX, fresh_schema_name, try_url, url};
