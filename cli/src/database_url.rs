//! Where the database is, and keeping its password out of everything printed.
//!
//! The URL comes from `--database-url`, else `DATABASE_URL`, else the libpq variables (`PGHOST`,
//! `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`) assembled into a URL with libpq's defaults for
//! the ones not set. A [`DatabaseUrl`] displays (and debugs) with its password masked; only
//! [`DatabaseUrl::expose`] hands out the real string, to the code that connects.

use std::fmt;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::cli_error::CliError;

/// Bytes escaped in the user, password, host and database parts of an assembled URL: everything
/// but the URL's unreserved characters.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The environment variable holding a database URL.
pub(crate) const DATABASE_URL: &str = "DATABASE_URL";

/// The libpq variables a URL is assembled from, in the order the error message names them.
pub(crate) const PG_VARIABLES: [&str; 5] =
    ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"];

/// What replaces a password in anything printed.
pub(crate) const MASK: &str = "***";

/// A Postgres connection URL whose `Display` and `Debug` never show the password.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct DatabaseUrl(String);

impl DatabaseUrl {
    /// Wraps a URL given as is.
    pub(crate) fn new(url: impl Into<String>) -> Self {
        DatabaseUrl(url.into())
    }

    /// Resolves the URL from the `--database-url` flag, else `DATABASE_URL`, else the `PG*`
    /// variables, reading the environment through `env`.
    ///
    /// # Errors
    ///
    /// When none of them is set, a message naming all three ways.
    pub(crate) fn resolve(
        flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, CliError> {
        if let Some(url) = flag.filter(|u| !u.is_empty()) {
            return Ok(DatabaseUrl::new(url));
        }
        if let Some(url) = env(DATABASE_URL).filter(|u| !u.is_empty()) {
            return Ok(DatabaseUrl::new(url));
        }
        Self::from_pg_env(&env).ok_or_else(|| {
            CliError::new(format!(
                "no database given: pass --database-url, set {DATABASE_URL}, or set the libpq \
                 variables ({})",
                PG_VARIABLES.join(", ")
            ))
        })
    }

    /// Assembles a URL from the `PG*` variables, `None` when none of them is set. Unset parts take
    /// libpq's defaults: host `localhost`, port 5432, user `$USER`, database named after the user.
    /// A host starting with `/` is a Unix socket directory.
    pub(crate) fn from_pg_env(env: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let get = |k: &str| env(k).filter(|v| !v.is_empty());
        if PG_VARIABLES.iter().all(|k| get(k).is_none()) {
            return None;
        }
        let enc = |s: &str| utf8_percent_encode(s, COMPONENT).to_string();
        let host = get("PGHOST").unwrap_or_else(|| "localhost".to_owned());
        let host = if host.contains(':') && !host.starts_with('[') && !host.starts_with('/') {
            format!("[{host}]")
        } else if host.starts_with('/') {
            enc(&host)
        } else {
            host
        };
        let port = get("PGPORT").unwrap_or_else(|| "5432".to_owned());
        let user = get("PGUSER")
            .or_else(|| get("USER"))
            .unwrap_or_else(|| "postgres".to_owned());
        let database = get("PGDATABASE").unwrap_or_else(|| user.clone());
        let password = get("PGPASSWORD")
            .map(|p| format!(":{}", enc(&p)))
            .unwrap_or_default();
        Some(DatabaseUrl(format!(
            "postgres://{}{password}@{host}:{}/{}",
            enc(&user),
            enc(&port),
            enc(&database)
        )))
    }

    /// The URL with its password, for connecting only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Masks this URL's password (and the URL itself) wherever it appears in `text`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let text = text.replace(&self.0, &redact(&self.0));
        let text = match password_of(&self.0) {
            // A very short password would mask unrelated words; the URL forms are redacted anyway.
            Some(p) if p.len() >= 4 => text.replace(&p, MASK),
            _ => text,
        };
        redact(&text)
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({:?})", redact(&self.0))
    }
}

/// The password in a URL's user info, percent-decoded, if it has one.
fn password_of(url: &str) -> Option<String> {
    let start = url.find("://")? + 3;
    let authority = &url[start..authority_end(url, start)];
    let userinfo = &authority[..authority.rfind('@')?];
    let password = &userinfo[userinfo.find(':')? + 1..];
    Some(
        percent_encoding::percent_decode_str(password)
            .decode_utf8_lossy()
            .into_owned(),
    )
}

/// Where the authority that starts at `start` ends: at the path, query, fragment, whitespace or a
/// quote. An `@` inside an unescaped password is still part of the authority: the user info ends
/// at the last `@` before the end.
fn authority_end(text: &str, start: usize) -> usize {
    text[start..]
        .find(|c: char| matches!(c, '/' | '?' | '#' | '"' | '\'' | '`') || c.is_whitespace())
        .map_or(text.len(), |i| start + i)
}

/// Masks every password in `text`: in URLs (`scheme://user:password@host`) and in `password=`
/// settings (libpq keyword strings and URL query parameters, quoted or not).
pub(crate) fn redact(text: &str) -> String {
    redact_keywords(&redact_userinfo(text))
}

fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let mut search = 0;
    while let Some(found) = text[search..].find("://") {
        let start = search + found + 3;
        let end = authority_end(text, start);
        let authority = &text[start..end];
        if let Some(at) = authority.rfind('@')
            && let Some(colon) = authority[..at].find(':')
        {
            out.push_str(&text[rest..start + colon + 1]);
            out.push_str(MASK);
            rest = start + at;
        }
        search = end.max(start);
    }
    out.push_str(&text[rest..]);
    out
}

fn redact_keywords(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let mut search = 0;
    while let Some(found) = lower[search..].find(KEY) {
        let at = search + found;
        let value = at + KEY.len();
        // `PGPASSWORD=` or `xpassword=` is not the keyword.
        let standalone = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if !standalone {
            search = value;
            continue;
        }
        let end = if text[value..].starts_with('\'') {
            // libpq quoting: 'a b\'c'
            let mut escaped = false;
            text[value + 1..]
                .char_indices()
                .find(|&(_, c)| {
                    let close = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    close
                })
                .map_or(text.len(), |(i, _)| value + 1 + i + 1)
        } else {
            text[value..]
                .find(|c: char| c == '&' || c == '#' || c == '"' || c.is_whitespace())
                .map_or(text.len(), |i| value + i)
        };
        out.push_str(&text[rest..value]);
        out.push_str(MASK);
        rest = end;
        search = end.max(value);
    }
    out.push_str(&text[rest..]);
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn the_flag_wins_over_database_url_which_wins_over_pg_variables() {
        let vars = env(&[("DATABASE_URL", "postgres://env/db"), ("PGHOST", "pg")]);
        let url = DatabaseUrl::resolve(Some("postgres://flag/db"), &vars).unwrap();
        assert_eq!(url.expose(), "postgres://flag/db");
        let url = DatabaseUrl::resolve(None, &vars).unwrap();
        assert_eq!(url.expose(), "postgres://env/db");
        let url = DatabaseUrl::resolve(None, env(&[("PGHOST", "pg"), ("USER", "me")])).unwrap();
        assert_eq!(url.expose(), "postgres://me@pg:5432/me");
    }

    #[test]
    fn no_source_at_all_is_a_clear_error() {
        let err = DatabaseUrl::resolve(None, env(&[("USER", "me")])).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("--database-url"), "{msg}");
        assert!(
            msg.contains("DATABASE_URL") && msg.contains("PGHOST"),
            "{msg}"
        );
    }

    #[test]
    fn pg_variables_are_assembled_with_libpq_defaults() {
        let url = DatabaseUrl::from_pg_env(env(&[
            ("PGHOST", "db.internal"),
            ("PGPORT", "6543"),
            ("PGUSER", "app"),
            ("PGPASSWORD", "s3cret"),
            ("PGDATABASE", "jobs"),
        ]))
        .unwrap();
        assert_eq!(url.expose(), "postgres://app:s3cret@db.internal:6543/jobs");
        let url = DatabaseUrl::from_pg_env(env(&[("PGDATABASE", "jobs"), ("USER", "me")])).unwrap();
        assert_eq!(url.expose(), "postgres://me@localhost:5432/jobs");
        let url = DatabaseUrl::from_pg_env(env(&[("PGUSER", "app")])).unwrap();
        assert_eq!(url.expose(), "postgres://app@localhost:5432/app");
        assert!(DatabaseUrl::from_pg_env(env(&[("USER", "me")])).is_none());
    }

    #[test]
    fn assembled_parts_are_escaped_and_sockets_and_ipv6_hosts_work() {
        let url = DatabaseUrl::from_pg_env(env(&[
            ("PGHOST", "/var/run/postgresql"),
            ("PGUSER", "a b"),
            ("PGPASSWORD", "p@ss:w/rd"),
            ("PGDATABASE", "my db"),
        ]))
        .unwrap();
        assert_eq!(
            url.expose(),
            "postgres://a%20b:p%40ss%3Aw%2Frd@%2Fvar%2Frun%2Fpostgresql:5432/my%20db"
        );
        let parsed: tokio_postgres::Config = url.expose().parse().unwrap();
        assert_eq!(parsed.get_user(), Some("a b"));
        assert_eq!(parsed.get_password(), Some(&b"p@ss:w/rd"[..]));
        assert_eq!(parsed.get_dbname(), Some("my db"));
        let url = DatabaseUrl::from_pg_env(env(&[("PGHOST", "::1"), ("PGUSER", "u")])).unwrap();
        assert_eq!(url.expose(), "postgres://u@[::1]:5432/u");
        assert!(url.expose().parse::<tokio_postgres::Config>().is_ok());
    }

    #[test]
    fn passwords_in_urls_are_masked() {
        let cases = [
            (
                "postgres://app:s3cret@db:5432/jobs",
                "postgres://app:***@db:5432/jobs",
            ),
            ("postgresql://app:s3cret@db", "postgresql://app:***@db"),
            ("postgres://app@db/jobs", "postgres://app@db/jobs"),
            ("postgres://db/jobs", "postgres://db/jobs"),
            ("postgres://app:p@ss@db/jobs", "postgres://app:***@db/jobs"),
            (
                "postgres://app:%40x@[::1]:5/j",
                "postgres://app:***@[::1]:5/j",
            ),
            (
                "error connecting to postgres://u:pw@h/d: refused; also postgres://v:qq@k",
                "error connecting to postgres://u:***@h/d: refused; also postgres://v:***@k",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn password_settings_are_masked() {
        let cases = [
            (
                "postgres://db/jobs?sslmode=disable&password=s3cret&x=1",
                "postgres://db/jobs?sslmode=disable&password=***&x=1",
            ),
            (
                "host=db password=s3cret user=app",
                "host=db password=*** user=app",
            ),
            (
                "host=db password='a b\\'c' user=app",
                "host=db password=*** user=app",
            ),
            ("PASSWORD=x", "PASSWORD=***"),
            (
                "PGPASSWORD=x is the variable",
                "PGPASSWORD=x is the variable",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn a_url_never_displays_its_password() {
        let url = DatabaseUrl::new("postgres://app:hunter22@db/jobs");
        assert_eq!(url.to_string(), "postgres://app:***@db/jobs");
        assert!(!format!("{url:?}").contains("hunter22"));
        let scrubbed = url
            .scrub("password authentication failed (hunter22) for postgres://app:hunter22@db/jobs");
        assert!(!scrubbed.contains("hunter22"), "{scrubbed}");
        assert!(
            scrubbed.contains("postgres://app:***@db/jobs"),
            "{scrubbed}"
        );
    }
}
