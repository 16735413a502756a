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
    /// A program some tests need besides PostgreSQL (`pgbouncer`, `chromium`, `chromedriver`)
    /// was not found ([`find_program`](crate::find_program)); the message is one line naming it
    /// and, when known, the command that installs it.
    #[error("{program} not found{looked_in}: install it{}", install_hint(*.install))]
    ProgramNotFound {
        /// The program's name, e.g. `pgbouncer`.
        program: String,
        /// Where it was looked for, when an environment variable named the path, e.g.
        /// ` at /nonexistent (PGMILL_TEST_PGBOUNCER)`; empty after a search of `PATH`.
        looked_in: String,
        /// The command installing it on Debian and Ubuntu, when known.
        install: Option<&'static str>,
    },
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

fn install_hint(install: Option<&str>) -> String {
    install.map_or_else(String::new, |c| format!(" (Debian/Ubuntu: {c})"))
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
