//! The driver handle: pgmill's engine over a `sqlx::PgPool`.

use pgmill::Result;
use pgmill::driver::Driver;
use sqlx::PgPool;

use crate::error::db_error;
use crate::executor::{SqlxConnection, SqlxExecutor};
use crate::listener::SqlxListener;

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
}

impl SqlxDriver {
    /// Wraps an existing pool, usually the one the application already uses.
    pub fn new(pool: PgPool) -> Self {
        SqlxDriver { pool }
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
        self.pool
            .acquire()
            .await
            .map(SqlxExecutor::new)
            .map_err(db_error)
    }

    fn discard(&self, conn: SqlxConnection) {
        // Detached, the connection leaves the pool and closes when dropped.
        drop(conn.into_inner().detach());
    }

    fn supports_listener(&self) -> bool {
        true
    }

    async fn listener(&self) -> Result<SqlxListener> {
        SqlxListener::connect(&self.pool).await
    }
}
