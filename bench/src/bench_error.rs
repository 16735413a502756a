//! The benchmark's one error type.

use std::error::Error as StdError;
use std::fmt;

/// Why a benchmark failed: a run, an exactly-once check, or the database.
///
/// Messages never carry the database URL, so no password reaches the terminal.
#[derive(Debug)]
pub(crate) struct BenchError {
    message: String,
}

impl BenchError {
    /// An error with `message`.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        BenchError {
            message: message.into(),
        }
    }

    /// An error whose message is `context: cause`, the cause's own sources included.
    pub(crate) fn context(context: impl fmt::Display, cause: impl fmt::Display) -> Self {
        BenchError::new(format!("{context}: {cause}"))
    }

    fn with_sources(e: &(dyn StdError + 'static)) -> Self {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            let text = s.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = s.source();
        }
        BenchError::new(message)
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for BenchError {}

impl From<pgmill::Error> for BenchError {
    fn from(e: pgmill::Error) -> Self {
        BenchError::with_sources(&e)
    }
}

impl From<tokio_postgres::Error> for BenchError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => BenchError::new(format!(
                "database error {}: {}",
                db.code().code(),
                db.message()
            )),
            None => BenchError::with_sources(&e),
        }
    }
}

impl From<pgmill_testdb::Error> for BenchError {
    fn from(e: pgmill_testdb::Error) -> Self {
        BenchError::context("cannot start a throwaway cluster", e)
    }
}
