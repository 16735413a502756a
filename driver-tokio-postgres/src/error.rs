//! Maps tokio-postgres and deadpool errors to pgmill's error, keeping the SQLSTATE.

use std::error::Error as StdError;

use deadpool_postgres::PoolError;
use pgmill::{DbError, DbErrorKind, Error};

/// Converts a tokio-postgres error into pgmill's error.
///
/// Server errors keep their SQLSTATE ([`DbError::server`], which also tells a code that ends the
/// session, as after `pg_terminate_backend`, for a lost connection); a closed connection or an I/O
/// failure is [`DbErrorKind::ConnectionLost`]; a value the library could not encode or decode is
/// [`DbErrorKind::Codec`]. The original error is attached as the source.
pub(crate) fn db_error(e: tokio_postgres::Error) -> Error {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code().to_owned();
        let mut message = db.message().to_owned();
        if let Some(detail) = db.detail() {
            message.push_str(": ");
            message.push_str(detail);
        }
        return DbError::server(code, message).with_source(e).into();
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
    fn codec_errors_are_codec() {
        let e = codec_error("column \"x\" has unsupported type point");
        assert_eq!(e.as_database().map(DbError::kind), Some(DbErrorKind::Codec));
        assert!(!e.is_connection_lost());
    }
}
