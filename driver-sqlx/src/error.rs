//! How sqlx's errors cross the seam: as pgmill's [`DbError`], SQLSTATE kept, lost connections told
//! apart.

use pgmill::{DbError, DbErrorKind};

/// Maps a sqlx error to pgmill's error, keeping the sqlx error as its source.
///
/// - A server error keeps its SQLSTATE ([`DbError::server`], which also tells a code that ends
///   the session, as after `pg_terminate_backend`, for a lost connection).
/// - I/O and TLS errors, a closed pool, a crashed worker and a protocol EOF are lost connections.
/// - A pool timeout is [`DbErrorKind::PoolTimeout`]; encode and decode failures are
///   [`DbErrorKind::Codec`].
pub(crate) fn db_error(err: sqlx::Error) -> pgmill::Error {
    let db = match &err {
        sqlx::Error::Database(e) => match e.code() {
            Some(code) => DbError::server(code.into_owned(), e.message()),
            None => DbError::new(DbErrorKind::Other, e.message()),
        },
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => DbError::new(DbErrorKind::ConnectionLost, err.to_string()),
        sqlx::Error::Protocol(message) if is_eof(message) => {
            DbError::new(DbErrorKind::ConnectionLost, err.to_string())
        }
        sqlx::Error::PoolTimedOut => DbError::new(DbErrorKind::PoolTimeout, err.to_string()),
        sqlx::Error::Encode(_)
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::TypeNotFound { .. } => DbError::new(DbErrorKind::Codec, err.to_string()),
        _ => DbError::new(DbErrorKind::Other, err.to_string()),
    };
    db.with_source(err).into()
}

/// A codec error about one column, naming it and its type.
pub(crate) fn column_error(
    column: &str,
    type_name: &str,
    source: sqlx::error::BoxDynError,
) -> pgmill::Error {
    let message = format!("cannot decode column {column:?} of type {type_name}: {source}");
    DbError::new(DbErrorKind::Codec, message)
        .with_source(sqlx::Error::ColumnDecode {
            index: format!("{column:?}"),
            source,
        })
        .into()
}

/// A codec error about one bound parameter (`$n`, counted from 1).
pub(crate) fn param_error(n: usize, source: sqlx::error::BoxDynError) -> pgmill::Error {
    let message = format!("cannot encode parameter ${n}: {source}");
    DbError::new(DbErrorKind::Codec, message)
        .with_source(sqlx::Error::Encode(source))
        .into()
}

fn is_eof(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("eof") || message.contains("connection closed")
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    #[test]
    fn io_errors_and_a_closed_pool_are_lost_connections() {
        let io = sqlx::Error::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "eof"));
        assert!(db_error(io).is_connection_lost());
        assert!(db_error(sqlx::Error::PoolClosed).is_connection_lost());
        let eof = sqlx::Error::Protocol("expected 5 bytes, got 0 bytes at EOF".into());
        assert!(db_error(eof).is_connection_lost());
    }

    #[test]
    fn a_pool_timeout_and_a_decode_failure_have_their_kinds() {
        let e = db_error(sqlx::Error::PoolTimedOut);
        assert_eq!(
            e.as_database().map(DbError::kind),
            Some(DbErrorKind::PoolTimeout)
        );
        let e = db_error(sqlx::Error::Decode("bad".into()));
        assert_eq!(e.as_database().map(DbError::kind), Some(DbErrorKind::Codec));
        assert!(!e.is_connection_lost());
    }

    #[test]
    fn column_errors_name_the_column_and_type() {
        let e = column_error("n", "NUMERIC", "unsupported".into());
        assert!(e.to_string().contains("\"n\""), "{e}");
        assert!(e.to_string().contains("NUMERIC"), "{e}");
        assert_eq!(e.as_database().map(DbError::kind), Some(DbErrorKind::Codec));
    }
}
