//! Why no database could be had.

/// Why no test database could be had; the message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No PostgreSQL server binaries were found (and no `DATABASE_URL` was set).
    #[error(
        "no PostgreSQL for the tests: either set DATABASE_URL to a database where the tests may \
         create schemas, or install the PostgreSQL server binaries (initdb and pg_ctl, looked for \
         with `pg_config --bindir` and under /usr/lib/postgresql/*/bin)"
    )]
    NotInstalled,
    /// No `pgbouncer` binary was found (on `PATH` or in `/usr/sbin`).
    #[error(
        "no PgBouncer for the pooler tests: install it (the Debian package `pgbouncer`; `.ci/run` \
         installs it when missing)"
    )]
    PgBouncerNotInstalled,
    /// A PostgreSQL program (`initdb`, `pg_ctl`) or a system command failed.
    #[error("{program} failed: {message}")]
    Command {
        /// The program and its action, e.g. `pg_ctl start`.
        program: String,
        /// What it printed, or why it could not run.
        message: String,
    },
    /// Preparing the cluster's directory or port failed.
    #[error("{what}: {message}")]
    Setup {
        /// What was being prepared.
        what: String,
        /// The operating system's message.
        message: String,
    },
}

impl Error {
    pub(crate) fn command(program: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Command {
            program: program.into(),
            message: message.into(),
        }
    }

    pub(crate) fn setup(what: impl Into<String>, message: impl std::fmt::Display) -> Error {
        Error::Setup {
            what: what.into(),
            message: message.to_string(),
        }
    }
}
