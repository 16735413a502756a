//! Finding out whether a driver prepares a statement once per connection: a marked statement,
//! and the query that counts the session's prepared statements of it.

use pgmill::driver::Statement;

/// A statement marked for [`COUNT_PREPARED_MARKED`] to find, returning `n`.
pub fn marked(n: i64) -> Statement {
    Statement::new("SELECT $1::bigint AS n -- cache-marker").bind(n)
}

/// A second marked statement, for running for its count (`execute`): a text of its own, so
/// [`COUNT_PREPARED_MARKED`] counts it apart from [`marked`]'s.
pub fn marked_for_count(n: i64) -> Statement {
    Statement::new("SELECT $1::bigint AS n -- cache-marker, run for its count").bind(n)
}

/// Counts the session's prepared statements of [`marked`], as `n` (its own text does not match,
/// so preparing it counts nothing).
pub const COUNT_PREPARED_MARKED: &str = "SELECT count(*)::bigint AS n FROM pg_prepared_statements \
     WHERE statement LIKE '%cache' || '-marker%'";
