//! SQLSTATE codes and what they mean to pgmill, written once for every driver.
//!
//! A driver hands the code its library reports to [`DbError::server`](crate::DbError::server),
//! which tells a code that ends the session ([`ends_session`]) from an ordinary server error. A
//! library that drops the code (diesel keeps only the few behind its error kinds) rebuilds what it
//! can from the server's and libpq's English messages, with [`from_message`] and
//! [`message_ends_session`].

/// `unique_violation`.
pub const UNIQUE_VIOLATION: &str = "23505";
/// `foreign_key_violation`.
pub const FOREIGN_KEY_VIOLATION: &str = "23503";
/// `not_null_violation`.
pub const NOT_NULL_VIOLATION: &str = "23502";
/// `check_violation`.
pub const CHECK_VIOLATION: &str = "23514";
/// `restrict_violation`.
pub const RESTRICT_VIOLATION: &str = "23001";
/// `exclusion_violation`.
pub const EXCLUSION_VIOLATION: &str = "23P01";
/// `read_only_sql_transaction`: a write on a read-only server, e.g. a demoted primary.
pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
/// `serialization_failure`.
pub const SERIALIZATION_FAILURE: &str = "40001";
/// `deadlock_detected`.
pub const DEADLOCK_DETECTED: &str = "40P01";
/// `lock_not_available`.
pub const LOCK_NOT_AVAILABLE: &str = "55P03";
/// `query_canceled`: a statement timeout or a cancel request.
pub const QUERY_CANCELED: &str = "57014";
/// `admin_shutdown`: the backend was terminated, e.g. by `pg_terminate_backend`.
pub const ADMIN_SHUTDOWN: &str = "57P01";
/// `crash_shutdown`: another backend crashed and the server is resetting.
pub const CRASH_SHUTDOWN: &str = "57P02";
/// `cannot_connect_now`: the server is starting up or shutting down.
pub const CANNOT_CONNECT_NOW: &str = "57P03";

/// True when the server has closed (or is closing) the session after this SQLSTATE: 57P01, 57P02,
/// 57P03, and class 08, "connection exception".
pub fn ends_session(code: &str) -> bool {
    matches!(code, ADMIN_SHUTDOWN | CRASH_SHUTDOWN | CANNOT_CONNECT_NOW) || code.starts_with("08")
}

/// Messages, the server's or libpq's, that mean the connection is gone.
const SESSION_ENDING_MESSAGES: &[&str] = &[
    "terminating connection due to administrator command",
    "terminating connection due to idle-session timeout",
    "terminating connection due to idle-in-transaction timeout",
    "terminating connection due to conflict with recovery",
    "terminating connection because of crash of another server process",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "server closed the connection unexpectedly",
    "no connection to the server",
    "connection to server was lost",
    "could not receive data from server",
    "could not send data to server",
    "ssl connection has been closed unexpectedly",
    "connection pointer is null",
    "lost synchronization with server",
];

/// Primary-message prefixes of server errors a job queue acts on, and their SQLSTATE.
const MESSAGE_SQLSTATES: &[(&str, &str)] = &[
    ("deadlock detected", DEADLOCK_DETECTED),
    (
        "canceling statement due to statement timeout",
        QUERY_CANCELED,
    ),
    ("canceling statement due to user request", QUERY_CANCELED),
    (
        "canceling statement due to lock timeout",
        LOCK_NOT_AVAILABLE,
    ),
    ("could not obtain lock on", LOCK_NOT_AVAILABLE),
];

/// True when a message of the server or of libpq (in any case) says the connection is gone, for
/// libraries that do not keep the SQLSTATE.
pub fn message_ends_session(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    SESSION_ENDING_MESSAGES.iter().any(|m| message.contains(m))
}

/// The SQLSTATE of a server error recognised by its (English) primary message, for libraries that
/// do not keep the code: deadlock ([`DEADLOCK_DETECTED`]), statement timeout or cancel
/// ([`QUERY_CANCELED`]), lock not available ([`LOCK_NOT_AVAILABLE`]).
pub fn from_message(message: &str) -> Option<&'static str> {
    MESSAGE_SQLSTATES
        .iter()
        .find(|(prefix, _)| message.starts_with(prefix))
        .map(|(_, code)| *code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ending_sqlstates_are_recognised() {
        for code in ["57P01", "57P02", "57P03", "08006", "08P01"] {
            assert!(ends_session(code), "{code}");
        }
        for code in ["23505", "57014", "25006", "40001"] {
            assert!(!ends_session(code), "{code}");
        }
    }

    #[test]
    fn messages_give_back_what_a_library_dropped() {
        assert!(message_ends_session(
            "FATAL: Terminating connection due to administrator command"
        ));
        assert!(!message_ends_session("division by zero"));
        assert_eq!(from_message("deadlock detected"), Some("40P01"));
        assert_eq!(from_message("division by zero"), None);
    }
}
