//! The transaction-mode PgBouncer the pooler runs go through.

use std::future::Future;
use std::sync::OnceLock;

use pgmill::driver::{Driver, NoListener};
use pgmill::{Error, Result};

use crate::testdb::{self, PgBouncer};

/// The URL of a PgBouncer in transaction mode in front of [`testdb::url`], started on first use
/// and shared by the process's tests; its watchdog stops it when the process ends.
///
/// # Panics
///
/// When PgBouncer is not installed (at once, before the test database is started, with one line:
/// `pgbouncer not found: install it (Debian/Ubuntu: apt-get install pgbouncer)`) or does not
/// start; the message says why.
#[track_caller]
pub fn pgbouncer_url() -> String {
    static BOUNCER: OnceLock<PgBouncer> = OnceLock::new();
    // Each pooler case calls this first (its harness's url()): without PgBouncer, every one of
    // them fails here at once, naming what to install.
    testdb::require_program("pgbouncer");
    BOUNCER
        .get_or_init(|| {
            PgBouncer::start(&testdb::url()).unwrap_or_else(|e| panic!("PgBouncer: {e}"))
        })
        .url()
        .to_owned()
}

/// A driver with its listener taken away, so a client on it works in poll-only mode: what a
/// client behind a transaction-mode pooler with no direct connection does.
#[derive(Debug, Clone)]
pub struct PollOnly<D>(D);

impl<D: Driver> PollOnly<D> {
    /// Wraps `driver`; its pooled connections are used as they are.
    pub fn new(driver: D) -> Self {
        PollOnly(driver)
    }
}

impl<D: Driver> Driver for PollOnly<D> {
    type Connection = D::Connection;
    type Listener = NoListener;

    fn acquire(&self) -> impl Future<Output = Result<Self::Connection>> + Send {
        self.0.acquire()
    }

    fn supports_listener(&self) -> bool {
        false
    }

    fn discard(&self, conn: Self::Connection) {
        self.0.discard(conn);
    }

    async fn listener(&self) -> Result<NoListener> {
        Err(Error::Unsupported("the pooler runs without a listener"))
    }
}
