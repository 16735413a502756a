//! Validation and quoting of names that reach SQL text or channel names.

use crate::error::{Error, Result};

/// The longest schema name accepted, in bytes.
///
/// Channel names are `<schema>.<topic>` and Postgres limits them to 63 bytes; the longest topic
/// (`.pgmill_leadership`) takes 18 of those.
pub(crate) const MAX_SCHEMA_LEN: usize = 45;

/// The longest queue or job kind name accepted, in bytes.
pub(crate) const MAX_NAME_LEN: usize = 128;

/// Quotes an identifier for SQL text: wraps it in double quotes and doubles inner ones.
pub(crate) fn quote_ident(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 2);
    s.push('"');
    for c in name.chars() {
        if c == '"' {
            s.push('"');
        }
        s.push(c);
    }
    s.push('"');
    s
}

fn invalid(kind: &'static str, name: &str, reason: &'static str) -> Error {
    Error::InvalidName {
        kind,
        name: name.to_owned(),
        reason,
    }
}

/// Checks a schema name: 1 to [`MAX_SCHEMA_LEN`] bytes of ASCII letters, digits and `_`, not
/// starting with a digit.
///
/// # Errors
///
/// [`Error::InvalidName`] saying what is wrong.
pub(crate) fn validate_schema_name(name: &str) -> Result<()> {
    const KIND: &str = "schema";
    if name.is_empty() {
        return Err(invalid(KIND, name, "is empty"));
    }
    if name.len() > MAX_SCHEMA_LEN {
        return Err(invalid(KIND, name, "is longer than 45 bytes"));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(invalid(
            KIND,
            name,
            "may contain only ASCII letters, digits and '_'",
        ));
    }
    if name.as_bytes()[0].is_ascii_digit() {
        return Err(invalid(KIND, name, "must not start with a digit"));
    }
    Ok(())
}

/// Checks a queue or job kind name: 1 to [`MAX_NAME_LEN`] bytes of ASCII letters, digits and
/// `_ - . : /`.
///
/// # Errors
///
/// [`Error::InvalidName`] saying what is wrong.
pub(crate) fn validate_name(kind: &'static str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(invalid(kind, name, "is empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(kind, name, "is longer than 128 bytes"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'/'))
    {
        return Err(invalid(
            kind,
            name,
            "may contain only ASCII letters, digits and '_', '-', '.', ':', '/'",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_doubles_inner_quotes() {
        assert_eq!(quote_ident("public"), "\"public\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn schema_names_are_checked() {
        assert!(validate_schema_name("public").is_ok());
        assert!(validate_schema_name("Tenant_1").is_ok());
        for bad in ["", "1abc", "a-b", "a\"b", "a b", &"x".repeat(46)] {
            let err = validate_schema_name(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidName { kind: "schema", .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn queue_names_are_checked() {
        assert!(validate_name("queue", "mailers.high-priority").is_ok());
        assert!(validate_name("queue", "").is_err());
        assert!(validate_name("queue", "a b").is_err());
        assert!(validate_name("queue", "é").is_err());
        assert!(validate_name("queue", &"q".repeat(129)).is_err());
    }
}
