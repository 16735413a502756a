//! The one database of a test process: `DATABASE_URL`, or a throwaway cluster started on first use.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::after_exit::{sh_quote, spawn_after_exit};
use crate::cluster::Cluster;
use crate::error::Error;

/// The environment variable naming an existing database to test against.
pub const DATABASE_URL: &str = "DATABASE_URL";

/// The prefix of every schema [`fresh_schema_name`] names; followed by the process id.
pub const TEST_SCHEMA_PREFIX: &str = "pgmill_t";

enum Source {
    External(String),
    Cluster(Cluster),
}

static SHARED: OnceLock<Result<Source, Error>> = OnceLock::new();

/// The URL of this process's test database, starting the throwaway cluster on first use.
///
/// # Errors
///
/// [`Error::NotInstalled`] (its message names both options: `DATABASE_URL`, or installing
/// PostgreSQL) or why the cluster did not start.
pub fn try_url() -> Result<String, Error> {
    let source = SHARED.get_or_init(|| match std::env::var(DATABASE_URL) {
        Ok(url) if !url.is_empty() => {
            spawn_schema_dropper(&url);
            Ok(Source::External(url))
        }
        _ => Cluster::start().map(Source::Cluster),
    });
    match source {
        Ok(Source::External(url)) => Ok(url.clone()),
        Ok(Source::Cluster(c)) => Ok(c.url()),
        Err(e) => Err(e.clone()),
    }
}

/// The URL of this process's test database.
///
/// # Panics
///
/// When no database can be had; the message says how to provide one.
pub fn url() -> String {
    try_url().unwrap_or_else(|e| panic!("{e}"))
}

/// A schema name no other test (in this or another process) uses: `pgmill_t<pid>_<n>`.
pub fn fresh_schema_name() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{TEST_SCHEMA_PREFIX}{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// With an external database, drops this process's test schemas after it exits.
fn spawn_schema_dropper(url: &str) {
    let sql = format!(
        "DO $$ DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace \
         WHERE nspname LIKE '{TEST_SCHEMA_PREFIX}{}\\_%' LOOP \
         EXECUTE format('DROP SCHEMA %I CASCADE', s); END LOOP; END $$;",
        std::process::id()
    );
    spawn_after_exit(&format!(
        "psql {} -q -v ON_ERROR_STOP=1 -c {} >/dev/null 2>&1",
        sh_quote(url),
        sh_quote(&sql)
    ));
}
