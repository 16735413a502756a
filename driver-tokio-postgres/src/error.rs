//! Maps tokio-postgres and deadpool errors to pgmill's error, keeping the SQLSTATE.

use std::error::Error as StdError;

use deadpool_postgres::PoolError;
use pgmill::{DbError, DbErrorKind, Error};

/// SQLSTATEs that mean the server ended the session: `admin_shutdown` (also sent by
/// `pg_terminate_backend`), `crash_shutdown` and `cannot_connect_now`. Class `08` (connection
/// exception) is checked separately.
const CONNECTION_ENDING_SQLSTATES: [&str; 3] = ["57P01", "57P02", "57P03"];

/// True when a SQLSTATE means the connection is gone (the next call needs a new one).
fn sqlstate_ends_connection(code: &str) -> bool {
    code.starts_with("08") || CONNECTION_ENDING_SQLSTATES.contains(&code)
}

/// Converts a tokio-postgres error into pgmill's error.
///
/// Server errors keep their SQLSTATE; a closed connection, an I/O failure or a server error that
/// ends the session (`57P01` from `pg_terminate_backend`, `57P02`, `57P03`, class `08`) is
/// [`DbErrorKind::ConnectionLost`]; a value the library could not encode or decode is
/// [`DbErrorKind::Codec`]. The original error is attached as the source.
pub(crate) fn db_error(e: tokio_postgres::Error) -> Error {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code().to_owned();
        let mut message = db.message().to_owned();
        if let Some(detail) = db.detail() {
            message.push_str(": ");
            message.push_str(detail);
        }
        let err = if sqlstate_ends_connection(&code) {
            DbError::new(DbErrorKind::ConnectionLost, message).with_code(code)
        } else {
            DbError::server(code, message)
        };
        return err.with_source(e).into();
    }
    let kind = classify(&e);
    let message = match e.source() {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    };
    DbError::new(kind, message).with_source(e).into()
}

/// The kind of a tokio-postgres error that carries no server error.
///
/// tokio-postgres keeps its error kind private; besides [`tokio_postgres::Error::is_closed`], the
/// kind shows only in the error's cause and its fixed `Display` text.
fn classify(e: &tokio_postgres::Error) -> DbErrorKind {
    let text = e.to_string();
    let io_cause = e
        .source()
        .is_some_and(|cause| cause.downcast_ref::<std::io::Error>().is_some());
    if e.is_closed()
        || (io_cause && !text.starts_with("error encoding"))
        || text == "timeout waiting for server"
    {
        DbErrorKind::ConnectionLost
    } else if text.starts_with("error serializing parameter")
        || text.starts_with("error deserializing column")
        || text.starts_with("invalid column")
    {
        DbErrorKind::Codec
    } else {
        DbErrorKind::Other
    }
}

/// Converts a pool checkout error into pgmill's error.
///
/// A wait, create or recycle timeout is [`DbErrorKind::PoolTimeout`]; a failure to connect is
/// mapped like any tokio-postgres error (usually [`DbErrorKind::ConnectionLost`]).
pub(crate) fn pool_error(e: PoolError) -> Error {
    match e {
        PoolError::Backend(e) => db_error(e),
        PoolError::Timeout(_) => DbError::new(DbErrorKind::PoolTimeout, e.to_string())
            .with_source(e)
            .into(),
        e => DbError::new(DbErrorKind::Other, e.to_string())
            .with_source(e)
            .into(),
    }
}

/// A codec error: a value pgmill cannot bind or a column it cannot decode.
pub(crate) fn codec_error(message: impl Into<String>) -> Error {
    DbError::new(DbErrorKind::Codec, message).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ending_sqlstates_are_told_apart() {
        for code in ["57P01", "57P02", "57P03", "08006", "08P01"] {
            assert!(sqlstate_ends_connection(code), "{code}");
        }
        for code in ["57014", "23505", "25006", "40001"] {
            assert!(!sqlstate_ends_connection(code), "{code}");
        }
    }

    #[test]
    fn codec_errors_are_codec() {
        let e = codec_error("column \"x\" has unsupported type point");
        assert_eq!(e.as_database().map(DbError::kind), Some(DbErrorKind::Codec));
        assert!(!e.is_connection_lost());
    }
}
