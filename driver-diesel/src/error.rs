//! Mapping diesel's and deadpool-diesel's errors to pgmill's [`Error`].
//!
//! diesel does not expose the SQLSTATE of a server error: libpq's `PG_DIAG_SQLSTATE` is read
//! inside diesel only to pick a [`DatabaseErrorKind`], and the error information object
//! ([`DatabaseErrorInformation`]) offers the message, detail, hint, table, column, constraint
//! and position, but not the code. So the SQLSTATE is rebuilt from what survives:
//!
//! - the kinds diesel tells apart map back to their codes (unique, foreign key, not null, check,
//!   restrict and exclusion violations, serialization failure, read-only transaction);
//! - a few codes a job queue acts on are recognised from the server's (English) primary message
//!   ([`sqlstate::from_message`]): deadlock (`40P01`), statement timeout or cancel (`57014`), lock
//!   not available (`55P03`);
//! - every other server error is reported as [`DbErrorKind::Server`] **without** a SQLSTATE.
//!
//! A lost connection is [`DbErrorKind::ConnectionLost`]: diesel's `ClosedConnection` and
//! `UnableToSendCommand` kinds (after `pg_terminate_backend`, the next query gets
//! `ClosedConnection` "terminating connection due to administrator command", the one after
//! `UnableToSendCommand` "no connection to the server"), the messages libpq and the server give
//! when a backend is terminated or the socket closes ([`sqlstate::message_ends_session`]), and a
//! broken transaction manager.

use deadpool_diesel::InteractError;
use deadpool_diesel::postgres::PoolError;
use diesel::ConnectionError;
use diesel::result::{DatabaseErrorInformation, DatabaseErrorKind, Error as DieselError};
use pgmill::driver::sqlstate;
use pgmill::{DbError, DbErrorKind, Error};

/// The SQLSTATE of a diesel error kind, when diesel derived the kind from one.
fn kind_sqlstate(kind: DatabaseErrorKind) -> Option<&'static str> {
    Some(match kind {
        DatabaseErrorKind::UniqueViolation => sqlstate::UNIQUE_VIOLATION,
        DatabaseErrorKind::ForeignKeyViolation => sqlstate::FOREIGN_KEY_VIOLATION,
        DatabaseErrorKind::NotNullViolation => sqlstate::NOT_NULL_VIOLATION,
        DatabaseErrorKind::CheckViolation => sqlstate::CHECK_VIOLATION,
        DatabaseErrorKind::RestrictViolation => sqlstate::RESTRICT_VIOLATION,
        DatabaseErrorKind::ExclusionViolation => sqlstate::EXCLUSION_VIOLATION,
        DatabaseErrorKind::SerializationFailure => sqlstate::SERIALIZATION_FAILURE,
        DatabaseErrorKind::ReadOnlyTransaction => sqlstate::READ_ONLY_SQL_TRANSACTION,
        _ => return None,
    })
}

/// The full message of a server error: primary message, then detail and hint when present.
fn full_message(info: &(dyn DatabaseErrorInformation + Send + Sync)) -> String {
    let mut message = info.message().trim_end().to_owned();
    if let Some(detail) = info.details() {
        message.push_str(": ");
        message.push_str(detail);
    }
    if let Some(hint) = info.hint() {
        message.push_str(" (hint: ");
        message.push_str(hint);
        message.push(')');
    }
    message
}

/// Maps a diesel query error to pgmill's error, keeping what diesel keeps of the SQLSTATE.
pub(crate) fn query_error(e: DieselError) -> Error {
    db_error(e).into()
}

fn db_error(e: DieselError) -> DbError {
    match e {
        DieselError::DatabaseError(kind, ref info) => {
            let message = full_message(info.as_ref());
            let lost = matches!(
                kind,
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand
            ) || sqlstate::message_ends_session(info.message());
            let error = if lost {
                DbError::new(DbErrorKind::ConnectionLost, message)
            } else if let Some(code) =
                kind_sqlstate(kind).or_else(|| sqlstate::from_message(info.message()))
            {
                DbError::server(code, message)
            } else {
                DbError::new(DbErrorKind::Server, message)
            };
            error.with_source(e)
        }
        DieselError::RollbackErrorOnCommit {
            ref rollback_error,
            ref commit_error,
        } => {
            // The connection is unusable after this; say lost when either half was.
            let lost = is_lost(rollback_error) || is_lost(commit_error);
            let kind = if lost {
                DbErrorKind::ConnectionLost
            } else {
                DbErrorKind::Other
            };
            DbError::new(kind, e.to_string()).with_source(e)
        }
        // diesel's transaction manager breaks when the connection died mid-transaction or a
        // rollback failed: the connection is unusable (the pool discards it), a new one may work.
        DieselError::BrokenTransactionManager => {
            DbError::new(DbErrorKind::ConnectionLost, e.to_string()).with_source(e)
        }
        DieselError::DeserializationError(_) | DieselError::SerializationError(_) => {
            DbError::new(DbErrorKind::Codec, e.to_string()).with_source(e)
        }
        other => DbError::new(DbErrorKind::Other, other.to_string()).with_source(other),
    }
}

fn is_lost(e: &DieselError) -> bool {
    match e {
        DieselError::DatabaseError(kind, info) => {
            matches!(
                kind,
                DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand
            ) || sqlstate::message_ends_session(info.message())
        }
        _ => false,
    }
}

/// Maps a failure to open a connection; failing to reach the server counts as a lost connection.
pub(crate) fn connection_error(e: ConnectionError) -> Error {
    match e {
        ConnectionError::BadConnection(ref message) => {
            DbError::new(DbErrorKind::ConnectionLost, message.trim_end().to_owned())
                .with_source(e)
                .into()
        }
        ConnectionError::CouldntSetupConfiguration(inner) => query_error(inner),
        other => DbError::new(DbErrorKind::Other, other.to_string())
            .with_source(other)
            .into(),
    }
}

/// Maps a failure to check a connection out of the deadpool-diesel pool.
pub(crate) fn pool_error(e: PoolError) -> Error {
    match e {
        PoolError::Timeout(_) => DbError::new(DbErrorKind::PoolTimeout, e.to_string())
            .with_source(e)
            .into(),
        PoolError::Backend(deadpool_diesel::Error::Connection(inner)) => connection_error(inner),
        PoolError::Backend(deadpool_diesel::Error::Ping(inner)) => query_error(inner),
        other => DbError::new(DbErrorKind::Other, other.to_string())
            .with_source(other)
            .into(),
    }
}

/// Maps a failed `interact` (the closure panicked, or its blocking task was cancelled).
pub(crate) fn interact_error(e: InteractError) -> Error {
    let message = match &e {
        InteractError::Panic(payload) => {
            let reason = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            format!("diesel connection task panicked: {reason}")
        }
        InteractError::Cancelled => "diesel connection task was cancelled".to_owned(),
    };
    DbError::new(DbErrorKind::Other, message).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(kind: DatabaseErrorKind, message: &str) -> Error {
        query_error(DieselError::DatabaseError(
            kind,
            Box::new(message.to_owned()),
        ))
    }

    #[test]
    fn known_kinds_keep_their_sqlstate() {
        let e = server_error(DatabaseErrorKind::UniqueViolation, "duplicate key value");
        assert!(e.is_unique_violation());
        let e = server_error(DatabaseErrorKind::ReadOnlyTransaction, "read-only");
        assert!(e.is_read_only());
        let e = server_error(
            DatabaseErrorKind::SerializationFailure,
            "could not serialize",
        );
        assert_eq!(e.sqlstate(), Some("40001"));
    }

    #[test]
    fn terminated_backends_are_connection_lost() {
        let e = server_error(
            DatabaseErrorKind::Unknown,
            "terminating connection due to administrator command",
        );
        assert!(e.is_connection_lost());
        let e = server_error(DatabaseErrorKind::ClosedConnection, "whatever");
        assert!(e.is_connection_lost());
        let e = connection_error(ConnectionError::BadConnection(
            "connection to server failed: Connection refused\n".into(),
        ));
        assert!(e.is_connection_lost());
    }

    #[test]
    fn unknown_server_errors_have_no_sqlstate_unless_recognised() {
        let e = server_error(DatabaseErrorKind::Unknown, "division by zero");
        assert_eq!(e.sqlstate(), None);
        assert_eq!(
            e.as_database().map(DbError::kind),
            Some(DbErrorKind::Server)
        );
        let e = server_error(DatabaseErrorKind::Unknown, "deadlock detected");
        assert_eq!(e.sqlstate(), Some("40P01"));
    }
}
