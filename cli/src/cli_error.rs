//! The one error type of the binary: a single line for the user, passwords already masked.

use std::error::Error as StdError;
use std::fmt;

use crate::database_url::redact;

/// Why a command failed, as one line with every password masked.
///
/// `main` prints it as `pgmill: <message>` on stderr and exits non-zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    message: String,
}

impl CliError {
    /// An error with `message`; passwords in it are masked and line breaks folded.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        let message: String = message.into();
        let one_line = message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        CliError {
            message: redact(&one_line),
        }
    }

    /// Wraps any error, following its chain of sources into one line (skipping causes whose text
    /// the message already holds).
    pub(crate) fn chain(e: &(dyn StdError + 'static)) -> Self {
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
        CliError::new(message)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// SQLSTATEs of a missing table or schema: pgmill's tables are not there.
const MISSING_RELATION: [&str; 2] = ["42P01", "3F000"];

impl From<pgmill::Error> for CliError {
    fn from(e: pgmill::Error) -> Self {
        let mut error = CliError::chain(&e);
        if e.sqlstate()
            .is_some_and(|code| MISSING_RELATION.contains(&code))
        {
            error.message.push_str(
                " (pgmill's tables are not in this schema: run `pgmill migrate up`, with the same --schema)",
            );
        }
        error
    }
}

impl From<tokio_postgres::Error> for CliError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => CliError::new(format!(
                "database error {}: {}",
                db.code().code(),
                db.message()
            )),
            None => CliError::chain(&e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_without_passwords() {
        let e = CliError::new("cannot connect to\npostgres://u:secret@h/db\n  refused");
        assert_eq!(
            e.to_string(),
            "cannot connect to postgres://u:***@h/db refused"
        );
    }

    #[test]
    fn chains_name_each_cause_once() {
        let io = std::io::Error::other("connection refused");
        let e = CliError::chain(&io);
        assert_eq!(e.to_string(), "connection refused");
        let pg: pgmill::Error = pgmill::DbError::new(pgmill::DbErrorKind::Other, "boom")
            .with_source(std::io::Error::other("boom"))
            .into();
        assert_eq!(CliError::from(pg).to_string(), "database error: boom");
    }
}
