//! What every database command shares: where the database is, the schema, and the output mode.

use std::time::Duration;

use pgmill::{Client, Schema};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;

use crate::cli_error::CliError;
use crate::database_url::DatabaseUrl;

/// How long connecting may take before the command gives up.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Connections the admin commands' pool may open.
const ADMIN_POOL_SIZE: u32 = 2;

/// The global options, as the database commands use them.
#[derive(Debug, Clone)]
pub(crate) struct CommandContext {
    /// `--database-url`, if given.
    pub(crate) database_url: Option<String>,
    /// `--schema`.
    pub(crate) schema: String,
    /// `--json`.
    pub(crate) json: bool,
}

impl CommandContext {
    /// The database URL: the flag, `DATABASE_URL`, or the `PG*` variables.
    ///
    /// # Errors
    ///
    /// When none is set.
    pub(crate) fn url(&self) -> Result<DatabaseUrl, CliError> {
        DatabaseUrl::resolve(self.database_url.as_deref(), |k| std::env::var(k).ok())
    }

    /// The validated schema.
    ///
    /// # Errors
    ///
    /// An invalid schema name.
    pub(crate) fn schema(&self) -> Result<Schema, CliError> {
        Ok(Schema::new(&self.schema)?)
    }

    /// Connects the admin commands' driver (tokio-postgres, the lightest).
    ///
    /// # Errors
    ///
    /// The connection error, naming the database without its password.
    pub(crate) async fn driver(&self) -> Result<TokioPostgresDriver, CliError> {
        let url = self.url()?;
        connect_admin(&url, ADMIN_POOL_SIZE).await
    }

    /// An insert-only client over the admin driver, for the queue and job commands.
    ///
    /// # Errors
    ///
    /// An invalid schema, or the connection error.
    pub(crate) async fn client(&self) -> Result<Client<TokioPostgresDriver>, CliError> {
        self.client_with_pool(ADMIN_POOL_SIZE).await
    }

    /// Like [`CommandContext::client`], with a pool of `pool_size` connections.
    ///
    /// # Errors
    ///
    /// An invalid schema, or the connection error.
    pub(crate) async fn client_with_pool(
        &self,
        pool_size: u32,
    ) -> Result<Client<TokioPostgresDriver>, CliError> {
        let schema = self.schema()?;
        let driver = connect_admin(&self.url()?, pool_size).await?;
        Ok(Client::builder(driver).schema(schema).build()?)
    }
}

/// Connects a tokio-postgres driver with a pool of `pool_size` to `url`, with a timeout.
///
/// # Errors
///
/// `cannot connect to <url without password>: <cause>`.
pub(crate) async fn connect_admin(
    url: &DatabaseUrl,
    pool_size: u32,
) -> Result<TokioPostgresDriver, CliError> {
    let connect = TokioPostgresDriver::connect(url.expose(), pool_size);
    match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(driver)) => Ok(driver),
        Ok(Err(e)) => Err(CliError::new(
            url.scrub(&format!("cannot connect to {url}: {}", CliError::from(e))),
        )),
        Err(_) => Err(CliError::new(format!(
            "cannot connect to {url}: no answer within {} s",
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}
