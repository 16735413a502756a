//! The driver handle: pgmill's engine over a `sqlx::PgPool`.

use std::sync::Arc;

use pgmill::Result;
use pgmill::driver::{Driver, WarmConnections};
use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};

use crate::error::db_error;
use crate::executor::SqlxConnection;
use crate::listener::SqlxListener;

/// How many listeners [`SqlxDriver::with_listener_url`]'s connections serve at once.
const LISTENER_CONNECTIONS: u32 = 8;

/// pgmill's driver for sqlx: a cheap-to-clone handle over a [`PgPool`].
///
/// The engine checks connections out of the pool for its own work, and takes one more out of it
/// for good for its notification [`SqlxListener`], so size the pool with one connection to spare.
///
/// # Examples
///
/// ```no_run
/// use pgmill_driver_sqlx::SqlxDriver;
/// use sqlx::postgres::PgPoolOptions;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = PgPoolOptions::new()
///     .max_connections(10)
///     .connect("postgres://localhost/app")
///     .await?;
/// let driver = SqlxDriver::new(pool);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SqlxDriver {
    pool: PgPool,
    /// Connections the engine just released, handed out again without the pool's ping.
    warm: Arc<WarmConnections<PoolConnection<Postgres>>>,
    /// Where the listener connects, when not to the pool's database.
    listener_pool: Option<PgPool>,
    unnamed: bool,
}

impl SqlxDriver {
    /// Wraps an existing pool, usually the one the application already uses.
    ///
    /// sqlx pings every connection returned to its pool, a round trip on each release. So a
    /// connection the engine releases with nothing left on it is kept out of the pool for up to
    /// 50 ms and handed to the engine's next acquire without the ping: at most a quarter of the
    /// pool, never more than two connections, none of a pool under four. Your own checkouts from
    /// the pool wait at most that long for them.
    pub fn new(pool: PgPool) -> Self {
        let size = usize::try_from(pool.options().get_max_connections()).unwrap_or(usize::MAX);
        SqlxDriver {
            warm: Arc::new(WarmConnections::new(size)),
            pool,
            listener_pool: None,
            unnamed: false,
        }
    }

    /// Runs every statement on pooled connections unnamed, with no prepared statement cache,
    /// and each statement outside a transaction in a transaction of its own
    /// ([`SqlxExecutor::unnamed`](crate::SqlxExecutor::unnamed)): the setting for a
    /// transaction-mode pooler (PgBouncer's `pool_mode = transaction`). It costs a parse and plan
    /// per statement and two round trips (`BEGIN`, `COMMIT`) per statement outside a transaction.
    ///
    /// Combine it with [`SqlxDriver::with_listener_url`] (notifications need a direct
    /// connection) or run the client in poll-only mode (`Config::poll_only`). See the
    /// "Behind a connection pooler" section of the README.
    pub fn unnamed_statements(mut self) -> Self {
        self.unnamed = true;
        self
    }

    /// Opens the listener's dedicated connection to `url` instead of taking it out of the pool:
    /// behind a transaction-mode pooler, the URL of the database itself (a `LISTEN` sent through
    /// the pooler holds on to one server connection no longer than a transaction). The
    /// connection is opened when the listener starts; up to 8 clients on this driver can each
    /// hold one.
    ///
    /// # Errors
    ///
    /// The error of parsing `url`, as a [`pgmill::DbError`].
    pub fn with_listener_url(mut self, url: &str) -> Result<Self> {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(LISTENER_CONNECTIONS)
            .connect_lazy(url)
            .map_err(db_error)?;
        self.listener_pool = Some(pool);
        Ok(self)
    }

    /// Connects a pool of up to `max_connections` to `url`.
    ///
    /// Unlike sqlx's defaults, the pool does not ping a connection before handing it out: the
    /// engine runs a handful of statements per batch, and a ping would add a round trip to each.
    /// A connection found broken is dropped on use and the engine retries the call.
    ///
    /// # Errors
    ///
    /// The connection error, as a [`pgmill::DbError`].
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        sqlx::postgres::PgPoolOptions::new()
            .max_connections(max_connections)
            .test_before_acquire(false)
            .connect(url)
            .await
            .map(Self::new)
            .map_err(db_error)
    }

    /// The pool this driver runs on.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

impl From<PgPool> for SqlxDriver {
    fn from(pool: PgPool) -> Self {
        SqlxDriver::new(pool)
    }
}

impl Driver for SqlxDriver {
    type Connection = SqlxConnection;
    type Listener = SqlxListener;

    async fn acquire(&self) -> Result<SqlxConnection> {
        let conn = match self.warm.take() {
            Some(conn) => conn,
            // Boxed: sqlx's acquire future takes kilobytes, and every future that awaits
            // this one (a claim, a completion batch, an insert) would carry it inline and be
            // copied whole each time it is built and moved, whether or not it gets this far.
            None => Box::pin(self.pool.acquire()).await.map_err(db_error)?,
        };
        let conn = SqlxConnection::pooled(conn, Arc::clone(&self.warm));
        Ok(if self.unnamed { conn.unnamed() } else { conn })
    }

    fn discard(&self, conn: SqlxConnection) {
        // Detached, the connection leaves the pool and closes when dropped.
        drop(conn.into_inner().detach());
    }

    fn supports_listener(&self) -> bool {
        true
    }

    async fn listener(&self) -> Result<SqlxListener> {
        SqlxListener::connect(self.listener_pool.as_ref().unwrap_or(&self.pool)).await
    }
}
