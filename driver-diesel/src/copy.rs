//! `COPY ... FROM STDIN` through diesel's `copy_from`.
//!
//! diesel streams COPY data with `copy_from(table).from_raw_data(target, callback)`, but it
//! renders the statement's target (`table (columns)`) from a [`CopyTarget`], whose
//! `walk_target` is an associated function: it has no `self` to carry the engine's target, which
//! names a schema chosen at run time. So the target is handed over through a thread-local set
//! around the call: diesel renders the statement synchronously, on the thread that runs the
//! call, before any data is sent. The `table!` below only fills diesel's type parameter; its
//! name never reaches SQL.
//!
//! Only the form the engine writes is accepted: `COPY <target> FROM STDIN`, text format, no
//! options ([`pgmill::driver::copy_target`]).

use std::cell::RefCell;
use std::io::Write;

use diesel::PgConnection;
use diesel::pg::CopyTarget;
use diesel::prelude::*;
use diesel::query_builder::AstPass;
use pgmill::driver::copy_target;
use pgmill::{Error, Result};

use crate::error::query_error;

diesel::table! {
    /// diesel's `copy_from` wants a table type; [`EngineCopyTarget`] renders the real target.
    pgmill_copy_placeholder (id) {
        id -> Int8,
    }
}

thread_local! {
    /// The target of the COPY being run on this thread, e.g. `"s".pgmill_job (state, queue)`.
    static TARGET: RefCell<String> = const { RefCell::new(String::new()) };
}

/// A COPY target rendered from [`TARGET`].
struct EngineCopyTarget;

impl CopyTarget for EngineCopyTarget {
    type Table = pgmill_copy_placeholder::table;
    type SqlType = diesel::sql_types::Int8;

    fn walk_target(mut pass: AstPass<'_, '_, diesel::pg::Pg>) -> QueryResult<()> {
        TARGET.with_borrow(|target| pass.push_sql(target));
        Ok(())
    }
}

/// Sets [`TARGET`] for the lifetime of the guard, and clears it on drop (also on unwind).
struct TargetGuard;

impl TargetGuard {
    fn set(target: &str) -> Self {
        TARGET.with_borrow_mut(|t| {
            t.clear();
            t.push_str(target);
        });
        TargetGuard
    }
}

impl Drop for TargetGuard {
    fn drop(&mut self) {
        TARGET.with_borrow_mut(String::clear);
    }
}

/// Runs `COPY <target> FROM STDIN`, writing the text-format data `feed` produces, and returns
/// the number of rows copied.
///
/// `feed` writes every chunk of data; an error it returns aborts the COPY (the server discards
/// what it received) and is reported unless the server's own error comes first.
pub(crate) fn copy_in(
    conn: &mut PgConnection,
    sql: &str,
    feed: impl Fn(&mut dyn Write) -> std::io::Result<()>,
) -> Result<u64> {
    let target = copy_target(sql).ok_or(Error::Unsupported(
        "a COPY other than `COPY <table> (<columns>) FROM STDIN` on the diesel driver",
    ))?;
    let _guard = TargetGuard::set(target);
    let copied = diesel::copy_from(pgmill_copy_placeholder::table)
        .from_raw_data(EngineCopyTarget, |out: &mut dyn Write| {
            feed(out).map_err(io_to_diesel)
        })
        .execute(conn)
        .map_err(query_error)?;
    Ok(u64::try_from(copied).unwrap_or(u64::MAX))
}

/// Gives back the diesel error diesel's COPY sink wrapped into an `io::Error`, if it was one.
fn io_to_diesel(e: std::io::Error) -> diesel::result::Error {
    use diesel::result::Error as DieselError;
    if !e.get_ref().is_some_and(|inner| inner.is::<DieselError>()) {
        return DieselError::SerializationError(Box::new(e));
    }
    match e.into_inner().map(|inner| inner.downcast::<DieselError>()) {
        Some(Ok(diesel)) => *diesel,
        Some(Err(other)) => DieselError::SerializationError(other),
        None => DieselError::SerializationError("writing COPY data failed".into()),
    }
}
