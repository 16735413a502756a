//! The driver handle: pgmill's engine over a deadpool-diesel pool.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use deadpool_diesel::postgres::{Manager, Object, Pool, QueueMode};
use deadpool_diesel::{ManagerConfig, RecyclingMethod, Runtime};
use pgmill::driver::{Driver, WarmConnections};
use pgmill::{Error, Result};

use crate::codec::Statements;
use crate::error::pool_error;
use crate::executor::DieselConnection;
use crate::listener::DieselListener;

/// How long [`DieselDriver::connect`]'s pool waits for a free connection, opens one, or checks one.
const POOL_TIMEOUT: Duration = Duration::from_secs(30);

/// The diesel driver: a cheap-to-clone handle over a deadpool-diesel pool.
///
/// The engine checks [`DieselConnection`]s out of it and opens a [`DieselListener`], a dedicated
/// connection outside the pool, for notifications.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> pgmill::Result<()> {
/// use pgmill::driver::{Driver, Executor, Statement};
///
/// let driver = pgmill_driver_diesel::DieselDriver::connect("postgres://localhost/app", 10).await?;
/// let mut conn = driver.acquire().await?;
/// let one: i64 = conn.query_scalar(&Statement::new("SELECT 1::bigint AS one")).await?;
/// assert_eq!(one, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct DieselDriver {
    pool: Pool,
    url: Arc<str>,
    statements: Statements,
    /// Connections the engine just released, handed out again without the pool's check.
    warm: Arc<WarmConnections<Object>>,
}

impl fmt::Debug for DieselDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password: leave it out.
        f.debug_struct("DieselDriver")
            .field("pool", &self.pool.status())
            .finish_non_exhaustive()
    }
}

impl DieselDriver {
    /// Builds a pool of at most `max_size` connections to `url` and checks that one connects.
    ///
    /// The pool waits at most 30 seconds for a free connection and for opening or checking one,
    /// and hands out the connection returned last first ([`QueueMode::Lifo`]; deadpool's default
    /// is the one returned first), so the few callers busy at a time keep to the same few server
    /// backends instead of rotating through all of them. Build your own pool (with
    /// `.queue_mode(QueueMode::Lifo)` for the same) and use [`DieselDriver::from_pool`] for other
    /// settings.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a pool that cannot be built, or the connection error.
    pub async fn connect(url: &str, max_size: u32) -> Result<Self> {
        // No test query on checkout: connections that were found lost never return to the pool
        // (see `DieselConnection`), and the engine retries a call that fails on a stale one.
        let manager = Manager::from_config(
            url,
            Runtime::Tokio1,
            ManagerConfig {
                recycling_method: RecyclingMethod::CustomFunction(Box::new(|_| Ok(()))),
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_size as usize)
            .queue_mode(QueueMode::Lifo)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_TIMEOUT))
            .create_timeout(Some(POOL_TIMEOUT))
            .recycle_timeout(Some(POOL_TIMEOUT))
            .build()
            .map_err(|e| Error::InvalidConfig(format!("diesel pool: {e}")))?;
        drop(pool.get().await.map_err(pool_error)?);
        Ok(Self::from_pool(pool, url))
    }

    /// Wraps an existing pool; `url` is the database URL the listener connects to.
    ///
    /// deadpool-diesel runs its recycle check on every connection it hands out, in a call of its
    /// own on tokio's blocking pool, which costs the engine as much as a statement. So a connection
    /// the engine releases clean is kept out of the pool for up to 50 ms and handed to the
    /// engine's next acquire without the check: at most a quarter of the pool, never more than
    /// two connections, none of a pool under four. Your own checkouts from the pool wait at most
    /// that long for them.
    pub fn from_pool(pool: Pool, url: impl Into<Arc<str>>) -> Self {
        let warm = Arc::new(WarmConnections::new(pool.status().max_size));
        DieselDriver {
            pool,
            url: url.into(),
            statements: Statements::Cached,
            warm,
        }
    }

    /// Opens the listener's dedicated connection to `url` instead of the pool's database: behind
    /// a transaction-mode pooler (PgBouncer's `pool_mode = transaction`), the URL of the database
    /// itself, since a `LISTEN` sent through the pooler holds on to one server connection no
    /// longer than a transaction. Behind such a pooler also use
    /// [`DieselDriver::unnamed_statements`]. See the "Behind a connection pooler" section of the
    /// README.
    ///
    /// # Errors
    ///
    /// None today; the signature matches the other drivers', which parse the URL.
    pub fn with_listener_url(mut self, url: &str) -> Result<Self> {
        self.url = url.into();
        Ok(self)
    }

    /// Runs every statement on pooled connections unnamed (marked unsafe to cache, as diesel's
    /// `sql_query` is: parsed and planned in its one round trip) instead of preparing each once
    /// per connection in diesel's statement cache: for a transaction-mode pooler (PgBouncer's
    /// `pool_mode = transaction`), where a statement prepared on one server connection is missing
    /// on the next. In the application's own transactions pgmill's statements follow the
    /// connection's cache setting (`set_prepared_statement_cache_size(CacheSize::Disabled)` makes
    /// them unnamed).
    #[must_use]
    pub fn unnamed_statements(mut self) -> Self {
        self.statements = Statements::Unnamed;
        self
    }

    /// The underlying pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

impl Driver for DieselDriver {
    type Connection = DieselConnection;
    type Listener = DieselListener;

    async fn acquire(&self) -> Result<DieselConnection> {
        let object = match self.warm.take() {
            Some(object) => object,
            None => self.pool.get().await.map_err(pool_error)?,
        };
        Ok(DieselConnection::new(
            object,
            self.statements,
            Arc::clone(&self.warm),
        ))
    }

    fn discard(&self, conn: DieselConnection) {
        conn.detach();
    }

    fn supports_listener(&self) -> bool {
        true
    }

    async fn listener(&self) -> Result<DieselListener> {
        DieselListener::connect(Arc::clone(&self.url)).await
    }
}
