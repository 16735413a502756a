//! Executors over pooled connections, transactions and the application's own clients.
//!
//! [`TokioPostgresExecutor`] runs every statement, over any `GenericClient`: borrowed from the
//! application, a transaction this crate opened, or the client of a [`TokioPostgresConnection`]
//! (a pooled connection, whose statements go through it, and whose COPYs are its own). It
//! prepares each statement once in the connection's cache when it has one (pooled connections,
//! deadpool's objects and transactions through [`DeadpoolClientExt`], and transactions opened on
//! a pooled connection);
//! otherwise, and when [`TokioPostgresExecutor::unnamed`], it runs every statement with
//! `query_typed` / `execute_typed`: one round trip, an unnamed statement (so it also works behind
//! PgBouncer in transaction mode), and parameter types sent explicitly, so the server never has
//! to infer them.

use std::fmt;
use std::pin::pin;
use std::sync::Arc;

use bytes::Bytes;
use deadpool_postgres::{ClientWrapper, Object, StatementCache};
use futures_util::SinkExt;
use pgmill::Result;
use pgmill::driver::{CopyChunks, CopyIn, Executor, HeldRows, Row, Statement, Transaction};
use tokio_postgres::{Client, GenericClient, ToStatement};

use crate::codec::{LibraryRows, Params, decode_rows};
use crate::error::db_error;

/// The size of the `CopyData` messages a COPY is streamed in.
const COPY_CHUNK_BYTES: usize = 1 << 20;

/// A connection checked out of the [`TokioPostgresDriver`](crate::TokioPostgresDriver)'s pool.
///
/// Returned to the pool when dropped. Use [`TokioPostgresConnection::into_inner`] to reach the
/// deadpool object (and through it the `tokio_postgres::Client`).
#[derive(Debug)]
pub struct TokioPostgresConnection(Object, Statements);

/// How a pooled connection runs statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Statements {
    /// Prepared once per connection, kept in deadpool's cache.
    Cached,
    /// Unnamed, each in one round trip (`query_typed`), and every COPY in a transaction of its
    /// own: for a transaction-mode pooler, where consecutive round trips outside a transaction
    /// may reach different server connections.
    Unnamed,
}

impl TokioPostgresConnection {
    pub(crate) fn new(object: Object, statements: Statements) -> Self {
        TokioPostgresConnection(object, statements)
    }

    /// The pooled deadpool object; it goes back to the pool when dropped.
    pub fn into_inner(self) -> Object {
        self.0
    }

    fn client(&self) -> &Client {
        &self.0
    }

    fn client_mut(&mut self) -> &mut Client {
        &mut self.0
    }

    /// deadpool's cache of this connection's prepared statements, unless statements go unnamed.
    fn statement_cache(&self) -> Option<Arc<StatementCache>> {
        (self.1 == Statements::Cached).then(|| Arc::clone(&self.0.statement_cache))
    }

    /// This connection as the generic executor: the engine runs the same few statements over and
    /// over, and planning them on every call costs more than running them, so each is prepared
    /// once per connection in deadpool's cache (or sent unnamed).
    fn executor(&mut self) -> TokioPostgresExecutor<&mut Client> {
        let cache = self.statement_cache();
        TokioPostgresExecutor(self.client_mut(), cache)
    }
}

impl Executor for TokioPostgresConnection {
    type Transaction<'t>
        = TokioPostgresTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        self.executor().execute(stmt).await
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        self.executor().query(stmt).await
    }

    async fn query_held(&mut self, stmt: &Statement) -> Result<HeldRows> {
        self.executor().query_held(stmt).await
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.client().batch_execute(sql).await.map_err(db_error)
    }

    async fn begin(&mut self) -> Result<TokioPostgresTransaction<'_>> {
        // deadpool's `ClientWrapper::transaction` returns its own wrapper; take tokio-postgres's.
        // Statements in the transaction use the connection's cache too, unless unnamed.
        let cache = self.statement_cache();
        let tx = self.client_mut().transaction().await.map_err(db_error)?;
        Ok(TokioPostgresExecutor(tx, cache))
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        if self.1 == Statements::Unnamed {
            // tokio-postgres prepares the COPY and runs it in two round trips: keep both on one
            // server connection.
            let mut tx = self.begin().await?;
            let n = tx.copy_in(copy).await?;
            tx.commit().await?;
            return Ok(n);
        }
        copy_in(self.client(), copy).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: CopyChunks) -> Result<u64> {
        if self.1 == Statements::Unnamed {
            let mut tx = self.begin().await?;
            let n = tx.copy_in_stream(sql, data).await?;
            tx.commit().await?;
            return Ok(n);
        }
        // Prepared once per connection: a COPY by its text is parsed in a round trip of its own.
        let prepared = self.0.prepare_cached(sql).await.map_err(db_error)?;
        copy_in_stream(self.client(), &prepared, data).await
    }
}

/// What a [`TokioPostgresExecutor`] runs on: the application's own client or transaction,
/// borrowed (`&mut C` for any `GenericClient`), or a `tokio_postgres::Transaction` this crate
/// opened, owned.
pub trait AsGenericClient: Send + Sync {
    /// The client or transaction reached.
    type Client: GenericClient + Send + Sync;

    /// Reaches the client or transaction.
    fn as_generic_client(&mut self) -> &mut Self::Client;

    /// The connection's cache of prepared statements, when it has one (deadpool-postgres's
    /// objects and transactions, through [`DeadpoolClientExt`]): statements are then prepared
    /// once per connection instead of parsed and planned on every call.
    fn statement_cache(&self) -> Option<Arc<StatementCache>> {
        None
    }
}

impl<C: GenericClient + Send + Sync> AsGenericClient for &mut C {
    type Client = C;

    fn as_generic_client(&mut self) -> &mut C {
        self
    }
}

impl<'t> AsGenericClient for tokio_postgres::Transaction<'t> {
    type Client = tokio_postgres::Transaction<'t>;

    fn as_generic_client(&mut self) -> &mut Self::Client {
        self
    }
}

/// An executor over a tokio-postgres client or transaction.
///
/// [`GenericClientExt::pgmill`] makes one over the application's own client or transaction, so
/// pgmill's statements commit or roll back with it; [`TokioPostgresTransaction`] is one over a
/// transaction [`Executor::begin`] opened. `begin` opens a transaction on a client and a
/// savepoint inside a transaction.
pub struct TokioPostgresExecutor<C>(C, Option<Arc<StatementCache>>);

/// A transaction (or savepoint) opened by one of this crate's executors.
///
/// Dropped without [`Transaction::commit`], it rolls back. [`Executor::begin`] on it opens a
/// savepoint.
pub type TokioPostgresTransaction<'t> = TokioPostgresExecutor<tokio_postgres::Transaction<'t>>;

impl<C: AsGenericClient> TokioPostgresExecutor<C> {
    /// Wraps a client or transaction: `&mut` the application's own, or an owned transaction.
    pub fn new(client: C) -> Self {
        let cache = client.statement_cache();
        TokioPostgresExecutor(client, cache)
    }

    /// This executor with every statement unnamed, each in one round trip (`query_typed`), even
    /// on a connection with a statement cache: behind a transaction-mode pooler (PgBouncer's
    /// `pool_mode = transaction`), where a statement prepared on one server connection is
    /// missing on the next.
    #[must_use]
    pub fn unnamed(mut self) -> Self {
        self.1 = None;
        self
    }

    /// The wrapped client or transaction.
    pub fn get_mut(&mut self) -> &mut C::Client {
        self.0.as_generic_client()
    }

    /// `stmt` prepared in the connection's statement cache (once per connection), when this
    /// executor has one; `None` to run it unnamed.
    async fn prepared(
        &mut self,
        stmt: &Statement,
        params: &Params<'_>,
    ) -> Result<Option<tokio_postgres::Statement>> {
        let Some(cache) = &self.1 else {
            return Ok(None);
        };
        let client = self.0.as_generic_client().client();
        cache
            .prepare_typed(client, stmt.sql(), &params.types())
            .await
            .map(Some)
            .map_err(db_error)
    }

    /// The connection's client, whose own methods run every statement: `GenericClient`'s box each
    /// call's future (one allocation of the whole query's state per statement), and a
    /// transaction's methods only call its client's.
    fn client(&mut self) -> &Client {
        self.0.as_generic_client().client()
    }

    /// Runs a statement for its rows, as the library returns them.
    async fn rows(&mut self, stmt: &Statement) -> Result<Vec<tokio_postgres::Row>> {
        let params = Params::new(stmt)?;
        match self.prepared(stmt, &params).await? {
            Some(prepared) => self.client().query(&prepared, &params.values()).await,
            None => self.client().query_typed(stmt.sql(), &params.typed()).await,
        }
        .map_err(db_error)
    }

    /// Unwraps the client or transaction.
    pub fn into_inner(self) -> C {
        self.0
    }
}

impl<C> fmt::Debug for TokioPostgresExecutor<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioPostgresExecutor")
            .finish_non_exhaustive()
    }
}

impl<C: AsGenericClient> Executor for TokioPostgresExecutor<C> {
    type Transaction<'t>
        = TokioPostgresTransaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        let params = Params::new(stmt)?;
        match self.prepared(stmt, &params).await? {
            Some(prepared) => self.client().execute(&prepared, &params.values()).await,
            None => {
                self.client()
                    .execute_typed(stmt.sql(), &params.typed())
                    .await
            }
        }
        .map_err(db_error)
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        decode_rows(&self.rows(stmt).await?)
    }

    async fn query_held(&mut self, stmt: &Statement) -> Result<HeldRows> {
        Ok(HeldRows::new(LibraryRows(self.rows(stmt).await?)))
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        self.client().batch_execute(sql).await.map_err(db_error)
    }

    async fn begin(&mut self) -> Result<TokioPostgresTransaction<'_>> {
        let cache = self.1.clone();
        let tx = self.get_mut().transaction().await.map_err(db_error)?;
        Ok(TokioPostgresExecutor(tx, cache))
    }

    fn supports_copy(&self) -> bool {
        true
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        copy_in(self.client(), copy).await
    }

    async fn copy_in_stream(&mut self, sql: &str, data: CopyChunks) -> Result<u64> {
        let client = self.0.as_generic_client().client();
        match &self.1 {
            Some(cache) => {
                let prepared = cache.prepare(client, sql).await.map_err(db_error)?;
                copy_in_stream(client, &prepared, data).await
            }
            None => copy_in_stream(client, sql, data).await,
        }
    }
}

impl Transaction for TokioPostgresTransaction<'_> {
    async fn commit(self) -> Result<()> {
        self.0.commit().await.map_err(db_error)
    }

    async fn rollback(self) -> Result<()> {
        self.0.rollback().await.map_err(db_error)
    }
}

/// Streams chunks of core's text-format rows into one `COPY ... FROM STDIN`, each chunk
/// flushed as it arrives.
async fn copy_in_stream<T>(client: &Client, statement: &T, mut data: CopyChunks) -> Result<u64>
where
    T: ?Sized + ToStatement,
{
    let sink = client
        .copy_in::<_, Bytes>(statement)
        .await
        .map_err(db_error)?;
    let mut sink = pin!(sink);
    while let Some(chunk) = data.recv().await {
        sink.send(Bytes::from(chunk)).await.map_err(db_error)?;
    }
    sink.as_mut().finish().await.map_err(db_error)
}

/// Streams core's text-format rows through `COPY ... FROM STDIN` (on a transaction's client the
/// COPY runs inside that transaction: it is the same connection).
async fn copy_in(client: &Client, copy: &CopyIn) -> Result<u64> {
    let sink = client
        .copy_in::<_, Bytes>(copy.sql())
        .await
        .map_err(db_error)?;
    let mut sink = pin!(sink);
    let data = Bytes::copy_from_slice(copy.data());
    let mut offset = 0;
    while offset < data.len() {
        let end = data.len().min(offset + COPY_CHUNK_BYTES);
        sink.feed(data.slice(offset..end)).await.map_err(db_error)?;
        offset = end;
    }
    sink.as_mut().finish().await.map_err(db_error)
}

pgmill::driver::host_extension_trait! {
    async;
    /// Enqueues jobs (and runs any of pgmill's statements) on your own tokio-postgres client or
    /// transaction.
    ///
    /// Implemented for everything that implements `tokio_postgres::GenericClient`: a `Client` and
    /// a `Transaction`. deadpool-postgres's `Object` and `Transaction` deref to those, so the
    /// methods work on them too (write `(&mut **obj).insert_job(..)` where method lookup needs
    /// help). Jobs inserted in a transaction exist once it commits and never if it rolls back.
    ///
    /// Core operations that open a savepoint of their own
    /// ([`Inserter::insert_bulk`](pgmill::Inserter::insert_bulk),
    /// [`Migrator::up`](pgmill::Migrator::up)) also run on `&mut tx.pgmill()`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use pgmill::{Inserter, JobArgs, Schema};
    /// use pgmill_driver_tokio_postgres::GenericClientExt;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct SendEmail {
    ///     to: String,
    /// }
    ///
    /// impl JobArgs for SendEmail {
    ///     const KIND: &'static str = "send_email";
    /// }
    ///
    /// # async fn run(client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let inserter = Inserter::new(Schema::public());
    /// let mut tx = client.transaction().await?;
    /// tx.execute("UPDATE users SET invited = true WHERE id = $1", &[&7_i64])
    ///     .await?;
    /// let job = tx
    ///     .insert_job(&inserter, SendEmail { to: "a@example.com".into() })
    ///     .await?;
    /// tx.commit().await?;
    /// # let _ = job;
    /// # Ok(())
    /// # }
    /// ```
    pub trait GenericClientExt: GenericClient + Send + Sync + Sized {
        /// Borrows this client or transaction as a pgmill [`Executor`], for any of pgmill's
        /// operations.
        fn pgmill(&mut self) -> TokioPostgresExecutor<&mut Self>;
    }
}

impl<C: GenericClient + Send + Sync> GenericClientExt for C {
    fn pgmill(&mut self) -> TokioPostgresExecutor<&mut C> {
        TokioPostgresExecutor::new(self)
    }
}

/// deadpool-postgres's own client types, which carry their connection's statement cache: the
/// pooled object's [`ClientWrapper`] and its [`deadpool_postgres::Transaction`]s. What
/// [`DeadpoolClientExt`] is implemented for; not meant to be implemented elsewhere.
pub trait DeadpoolClient: Send + Sync {
    /// The tokio-postgres client or transaction it wraps.
    type Client: GenericClient + Send + Sync;

    /// The wrapped client or transaction.
    fn generic_client(&mut self) -> &mut Self::Client;

    /// The connection's statement cache.
    fn cache(&self) -> &Arc<StatementCache>;
}

impl DeadpoolClient for ClientWrapper {
    type Client = Client;

    fn generic_client(&mut self) -> &mut Client {
        self
    }

    fn cache(&self) -> &Arc<StatementCache> {
        &self.statement_cache
    }
}

impl<'t> DeadpoolClient for deadpool_postgres::Transaction<'t> {
    type Client = tokio_postgres::Transaction<'t>;

    fn generic_client(&mut self) -> &mut tokio_postgres::Transaction<'t> {
        self
    }

    fn cache(&self) -> &Arc<StatementCache> {
        &self.statement_cache
    }
}

/// A deadpool-postgres client or transaction borrowed by [`DeadpoolClientExt::pgmill`]: an
/// executor over it prepares each statement once per connection, in deadpool's cache.
#[derive(Debug)]
pub struct Deadpool<'a, C>(&'a mut C);

impl<C: DeadpoolClient> AsGenericClient for Deadpool<'_, C> {
    type Client = C::Client;

    fn as_generic_client(&mut self) -> &mut C::Client {
        self.0.generic_client()
    }

    fn statement_cache(&self) -> Option<Arc<StatementCache>> {
        Some(Arc::clone(self.0.cache()))
    }
}

pgmill::driver::host_extension_trait! {
    async;
    /// Enqueues jobs (and runs any of pgmill's statements) on your own deadpool-postgres pooled
    /// object or transaction, each statement prepared once per connection and kept in deadpool's
    /// statement cache, as the driver's own pooled connections do. [`GenericClientExt`] on the
    /// same types (through deref to tokio-postgres's) sends every statement unnamed, to be parsed
    /// and planned on every call.
    ///
    /// Behind a transaction-mode pooler (PgBouncer's `pool_mode = transaction`), where a prepared
    /// statement does not outlive the server connection's turn, insert through
    /// `inserter.insert(&mut tx.pgmill().unnamed(), job)`.
    /// Jobs inserted in a transaction exist once it commits and never if it rolls back.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use pgmill::{Inserter, JobArgs, Schema};
    /// use pgmill_driver_tokio_postgres::DeadpoolClientExt;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct SendEmail {
    ///     to: String,
    /// }
    ///
    /// impl JobArgs for SendEmail {
    ///     const KIND: &'static str = "send_email";
    /// }
    ///
    /// # async fn run(pool: deadpool_postgres::Pool) -> Result<(), Box<dyn std::error::Error>> {
    /// let inserter = Inserter::new(Schema::public());
    /// let mut client = pool.get().await?;
    /// let mut tx = client.transaction().await?;
    /// tx.execute("UPDATE users SET invited = true WHERE id = $1", &[&7_i64])
    ///     .await?;
    /// tx.insert_job(&inserter, SendEmail { to: "a@example.com".into() })
    ///     .await?;
    /// tx.commit().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub trait DeadpoolClientExt: DeadpoolClient + Sized {
        /// Borrows this object or transaction as a pgmill [`Executor`] that prepares statements
        /// in the connection's cache.
        fn pgmill(&mut self) -> TokioPostgresExecutor<Deadpool<'_, Self>>;
    }
}

impl<C: DeadpoolClient> DeadpoolClientExt for C {
    fn pgmill(&mut self) -> TokioPostgresExecutor<Deadpool<'_, C>> {
        TokioPostgresExecutor::new(Deadpool(self))
    }
}
