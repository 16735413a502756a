//! The driver handle: a deadpool pool for the engine's work, and a config for its listener.

use std::fmt;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod};
use pgmill::driver::Driver;
use pgmill::{Error, Result};
use tokio_postgres::{Config, NoTls};

use crate::error::pool_error;
use crate::executor::{Statements, TokioPostgresConnection};
use crate::listener::TokioPostgresListener;

/// pgmill's driver for tokio-postgres: a cheap-to-clone handle over a `deadpool_postgres::Pool`.
///
/// The engine checks connections out of the pool for its own statements. Notifications use a
/// dedicated connection opened from the listener [`Config`], outside the pool: pooled
/// tokio-postgres connections drive their `Connection` in a task that drops notifications, and
/// pool recycling must not close the listener.
///
/// # Examples
///
/// ```no_run
/// use pgmill::driver::{Driver, Executor, Statement};
/// use pgmill_driver_tokio_postgres::TokioPostgresDriver;
///
/// # async fn run() -> pgmill::Result<()> {
/// let driver = TokioPostgresDriver::connect("postgres://localhost/app", 8).await?;
/// let mut conn = driver.acquire().await?;
/// let n: i64 = conn.query_scalar(&Statement::new("select 1::bigint as n")).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TokioPostgresDriver {
    pool: Pool,
    listener_config: Arc<Config>,
    statements: Statements,
}

impl TokioPostgresDriver {
    /// Builds a driver over a new pool of at most `max_connections` connections to `url`, without TLS.
    ///
    /// Opens one connection to check that the database can be reached; it stays in the pool. The
    /// pool recycles connections with [`RecyclingMethod::Fast`] (a closed connection is replaced;
    /// no query is run on checkout) and hands out the connection returned last first
    /// ([`QueueMode::Lifo`]; deadpool's default is the one returned first), so the few callers
    /// busy at a time keep to the same few server backends instead of rotating through all of
    /// them. For TLS, timeouts or other pool settings, build the pool yourself (with
    /// `.queue_mode(QueueMode::Lifo)` for the same) and use [`TokioPostgresDriver::from_pool`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] when `url` does not parse or `max_connections` is zero; the connection
    /// error when the database cannot be reached.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        let max_size = usize::try_from(max_connections).unwrap_or(usize::MAX);
        let config: Config = url
            .parse()
            .map_err(|e| Error::InvalidConfig(format!("invalid Postgres URL: {e}")))?;
        if max_size == 0 {
            return Err(Error::InvalidConfig(
                "the pool needs at least one connection".into(),
            ));
        }
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_size)
            .queue_mode(QueueMode::Lifo)
            .build()
            .map_err(|e| Error::InvalidConfig(format!("cannot build the pool: {e}")))?;
        drop(pool.get().await.map_err(pool_error)?);
        Ok(Self::from_pool(pool, config))
    }

    /// Builds a driver over an existing pool; `listener_config` opens the dedicated listener
    /// connection (without TLS), usually the same config the pool's manager was built from.
    pub fn from_pool(pool: Pool, listener_config: Config) -> Self {
        TokioPostgresDriver {
            pool,
            listener_config: Arc::new(listener_config),
            statements: Statements::Cached,
        }
    }

    /// Runs every statement on pooled connections unnamed, in one round trip each
    /// (`query_typed`), with no prepared statement cache, and every COPY in a transaction of its
    /// own: the setting for a transaction-mode pooler (PgBouncer's `pool_mode = transaction`),
    /// where a named statement prepared on one server connection is missing (or another's) on the
    /// next. Each statement is then parsed and planned on every call.
    ///
    /// Combine it with [`TokioPostgresDriver::with_listener_url`] (notifications need a direct
    /// connection) or run the client in poll-only mode (`Config::poll_only`). See the
    /// "Behind a connection pooler" section of the README.
    pub fn unnamed_statements(mut self) -> Self {
        self.statements = Statements::Unnamed;
        self
    }

    /// Opens the listener's dedicated connection to `url` instead of the pool's database: behind
    /// a transaction-mode pooler, the URL of the database itself (a `LISTEN` sent through the
    /// pooler holds on to one server connection no longer than a transaction).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] when `url` does not parse.
    pub fn with_listener_url(mut self, url: &str) -> Result<Self> {
        let config: Config = url
            .parse()
            .map_err(|e| Error::InvalidConfig(format!("invalid Postgres URL: {e}")))?;
        self.listener_config = Arc::new(config);
        Ok(self)
    }

    /// The pool the engine checks connections out of.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

impl fmt::Debug for TokioPostgresDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioPostgresDriver")
            .field("pool", &self.pool.status())
            .finish_non_exhaustive()
    }
}

impl Driver for TokioPostgresDriver {
    type Connection = TokioPostgresConnection;
    type Listener = TokioPostgresListener;

    async fn acquire(&self) -> Result<TokioPostgresConnection> {
        let object = self.pool.get().await.map_err(pool_error)?;
        Ok(TokioPostgresConnection::new(object, self.statements))
    }

    fn discard(&self, conn: TokioPostgresConnection) {
        // Taken out of the pool, the client closes its connection when dropped.
        drop(deadpool_postgres::Object::take(conn.into_inner()));
    }

    fn supports_listener(&self) -> bool {
        true
    }

    async fn listener(&self) -> Result<TokioPostgresListener> {
        TokioPostgresListener::connect(Arc::clone(&self.listener_config)).await
    }
}
