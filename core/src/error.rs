//! The crate's error type.

use std::error::Error as StdError;
use std::fmt;

use crate::driver::sqlstate;

/// A `Result` whose error is pgmill's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// SQLSTATE of a unique violation.
pub(crate) const SQLSTATE_UNIQUE_VIOLATION: &str = sqlstate::UNIQUE_VIOLATION;
/// SQLSTATE of a write attempted in a read-only transaction (e.g. on a demoted primary).
pub(crate) const SQLSTATE_READ_ONLY_SQL_TRANSACTION: &str = sqlstate::READ_ONLY_SQL_TRANSACTION;

/// Everything that can go wrong in pgmill.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A database call failed; see [`DbError`] for the SQLSTATE and whether the connection was lost.
    #[error(transparent)]
    Database(Box<DbError>),
    /// A row or value read from the database did not have the expected shape.
    #[error("cannot decode {what}: {message}")]
    Decode {
        /// What was being decoded (a column, a row shape).
        what: String,
        /// Why it failed.
        message: String,
    },
    /// A name that reaches SQL (schema, queue, kind) was rejected.
    #[error("invalid {kind} name {name:?}: {reason}")]
    InvalidName {
        /// Which kind of name (`schema`, `queue`, `kind`).
        kind: &'static str,
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A configuration value was out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A migration could not be planned or applied.
    #[error("migration failed: {0}")]
    Migration(String),
    /// A concurrent change got in the way; retrying later is safe.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The driver does not offer this operation.
    #[error("{0} is not supported by this driver")]
    Unsupported(&'static str),
    /// No worker of this client handles the kind being inserted.
    #[error(
        "no worker handles kind {0:?}; register one, or turn the check off with reject_unknown_kinds(false)"
    )]
    UnknownKind(String),
    /// An operator action named a queue that does not exist: no producer registered it and it
    /// holds no live jobs (see [`Client::queue_pause_or_create`](crate::Client::queue_pause_or_create)).
    #[error(
        "no queue {0:?}: no client registered it and it holds no live jobs; check the name, or create it paused"
    )]
    UnknownQueue(String),
    /// A database call did not finish within its timeout.
    #[error("{0} timed out")]
    Timeout(&'static str),
    /// An operator call's arguments were refused, and nothing was changed (an action over the
    /// dead-letter queue with no filter that did not ask for every job).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// How long the engine's loops wait for one database call before giving up on it.
pub(crate) const DB_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `fut` with [`DB_CALL_TIMEOUT`]; `what` names it in the timeout error.
pub(crate) async fn with_timeout<T>(
    what: &'static str,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::time::timeout(DB_CALL_TIMEOUT, fut)
        .await
        .map_err(|_| Error::Timeout(what))?
}

impl Error {
    /// Builds a decode error.
    pub fn decode(what: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Decode {
            what: what.into(),
            message: message.into(),
        }
    }

    /// The database error, if this is one.
    pub fn as_database(&self) -> Option<&DbError> {
        match self {
            Error::Database(e) => Some(e),
            _ => None,
        }
    }

    /// The five-character SQLSTATE the server reported, if any.
    pub fn sqlstate(&self) -> Option<&str> {
        self.as_database().and_then(DbError::sqlstate)
    }

    /// True when the connection to Postgres was lost (closed, reset, backend terminated).
    pub fn is_connection_lost(&self) -> bool {
        self.as_database().is_some_and(DbError::is_connection_lost)
    }

    /// True for a unique-constraint violation (SQLSTATE 23505).
    pub fn is_unique_violation(&self) -> bool {
        self.sqlstate() == Some(SQLSTATE_UNIQUE_VIOLATION)
    }

    /// True when a write hit a read-only transaction (SQLSTATE 25006), as on a demoted primary.
    pub fn is_read_only(&self) -> bool {
        self.sqlstate() == Some(SQLSTATE_READ_ONLY_SQL_TRANSACTION)
    }

    /// True when a lock was not granted in time (SQLSTATE 55P03): `lock_timeout` passed, or
    /// `NOWAIT` found it taken.
    pub(crate) fn is_lock_not_available(&self) -> bool {
        self.sqlstate() == Some(sqlstate::LOCK_NOT_AVAILABLE)
    }
}

impl From<DbError> for Error {
    fn from(e: DbError) -> Self {
        Error::Database(Box::new(e))
    }
}

/// What kind of failure a [`DbError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DbErrorKind {
    /// The server answered with an error; the SQLSTATE is set when the library exposes it.
    Server,
    /// The connection was closed, reset or its backend terminated; the next call may succeed.
    ConnectionLost,
    /// No connection could be had from the pool in time.
    PoolTimeout,
    /// A value could not be encoded or decoded by the driver.
    Codec,
    /// Anything else the driver reported.
    Other,
}

/// A failed database call, as every driver reports it across the seam.
///
/// The SQLSTATE is kept, and a lost connection is told apart, so the engine can decide what to do
/// without knowing which library produced the error.
#[derive(Debug)]
pub struct DbError {
    kind: DbErrorKind,
    code: Option<String>,
    message: String,
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl DbError {
    /// Builds an error of `kind` with a message.
    pub fn new(kind: DbErrorKind, message: impl Into<String>) -> Self {
        DbError {
            kind,
            code: None,
            message: message.into(),
            source: None,
        }
    }

    /// Builds a server error carrying its SQLSTATE.
    ///
    /// A code after which the server has closed the session ([`sqlstate::ends_session`]: 57P01
    /// `admin_shutdown`, as after `pg_terminate_backend`, 57P02, 57P03 and class 08) makes it a
    /// [`DbErrorKind::ConnectionLost`] that keeps its code, like the I/O error the same event
    /// gives when the socket is read first.
    pub fn server(code: impl Into<String>, message: impl Into<String>) -> Self {
        let code = code.into();
        let kind = if sqlstate::ends_session(&code) {
            DbErrorKind::ConnectionLost
        } else {
            DbErrorKind::Server
        };
        DbError {
            kind,
            code: Some(code),
            message: message.into(),
            source: None,
        }
    }

    /// Sets the SQLSTATE, keeping the kind (e.g. a lost connection reported as 57P01).
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Attaches the library's own error as the source.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> DbErrorKind {
        self.kind
    }

    /// The SQLSTATE, for server errors.
    pub fn sqlstate(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// The message as the driver or server gave it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True when the connection was lost.
    pub fn is_connection_lost(&self) -> bool {
        self.kind == DbErrorKind::ConnectionLost
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.kind, &self.code) {
            (_, Some(code)) => write!(f, "database error {code}: {}", self.message),
            (DbErrorKind::ConnectionLost, None) => write!(f, "connection lost: {}", self.message),
            (DbErrorKind::PoolTimeout, None) => write!(f, "pool timeout: {}", self.message),
            (_, None) => write!(f, "database error: {}", self.message),
        }
    }
}

impl StdError for DbError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_read_the_sqlstate_and_kind() {
        let e: Error = DbError::server("23505", "duplicate key").into();
        assert!(e.is_unique_violation());
        assert!(!e.is_connection_lost());
        assert_eq!(e.sqlstate(), Some("23505"));
        let lost: Error = DbError::new(DbErrorKind::ConnectionLost, "eof").into();
        assert!(lost.is_connection_lost());
        assert_eq!(lost.sqlstate(), None);
        assert_eq!(lost.to_string(), "connection lost: eof");
    }

    #[test]
    fn server_errors_that_end_the_session_are_lost_connections() {
        for code in ["57P01", "57P02", "57P03", "08006", "08P01"] {
            let e: Error = DbError::server(code, "terminating connection").into();
            assert!(e.is_connection_lost(), "{code}");
            assert_eq!(e.sqlstate(), Some(code));
        }
        for code in ["23505", "57014", "25006", "40001"] {
            let e = DbError::server(code, "an ordinary error");
            assert_eq!(e.kind(), DbErrorKind::Server, "{code}");
        }
    }
}
