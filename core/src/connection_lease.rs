//! A pooled connection as the engine holds it: closed instead of reused once it reports that the
//! server is read-only or that the connection was lost.
//!
//! After a failover the old primary is demoted and answers writes with SQLSTATE 25006. Pooled
//! connections to it would keep failing, so a lease that sees that error hands its connection to
//! [`Driver::discard`] when dropped, and the pool opens a new one, to the new primary. A lost
//! connection goes the same way, so pools need not test connections on every checkout.

use tracing::warn;

use crate::driver::{CopyIn, Driver, Executor, Row, RowView, Statement};
use crate::error::Result;

/// A connection leased from the driver's pool.
pub(crate) struct ConnectionLease<D: Driver> {
    driver: D,
    conn: Option<D::Connection>,
    /// Set once the connection reported a read-only server or its own loss.
    spoiled: bool,
}

impl<D: Driver> ConnectionLease<D> {
    /// Leases a connection from `driver`'s pool.
    pub(crate) async fn acquire(driver: &D) -> Result<Self> {
        Ok(ConnectionLease {
            conn: Some(driver.acquire().await?),
            driver: driver.clone(),
            spoiled: false,
        })
    }

    fn conn(&mut self) -> &mut D::Connection {
        self.conn
            .as_mut()
            .expect("a lease holds its connection until dropped")
    }

    fn observe<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(e) = &result
            && (e.is_read_only() || e.is_connection_lost())
        {
            self.spoiled = true;
        }
        result
    }
}

impl<D: Driver> Drop for ConnectionLease<D> {
    fn drop(&mut self) {
        // Otherwise the connection simply drops back into the pool.
        if self.spoiled
            && let Some(conn) = self.conn.take()
        {
            warn!("closing a connection that was lost or reached a read-only server");
            self.driver.discard(conn);
        }
    }
}

impl<D: Driver> Executor for ConnectionLease<D> {
    type Transaction<'t>
        = <D::Connection as Executor>::Transaction<'t>
    where
        Self: 't;

    async fn execute(&mut self, stmt: &Statement) -> Result<u64> {
        let r = self.conn().execute(stmt).await;
        self.observe(r)
    }

    async fn query(&mut self, stmt: &Statement) -> Result<Vec<Row>> {
        let r = self.conn().query(stmt).await;
        self.observe(r)
    }

    async fn query_with<T, F>(&mut self, stmt: &Statement, decode: F) -> Result<Vec<T>>
    where
        T: Send + 'static,
        F: FnMut(&mut dyn RowView) -> Result<T> + Send + 'static,
    {
        let r = self.conn().query_with(stmt, decode).await;
        self.observe(r)
    }

    async fn query_held(&mut self, stmt: &Statement) -> Result<crate::driver::HeldRows> {
        let r = self.conn().query_held(stmt).await;
        self.observe(r)
    }

    async fn execute_script(&mut self, sql: &str) -> Result<()> {
        let r = self.conn().execute_script(sql).await;
        self.observe(r)
    }

    fn begin(&mut self) -> impl Future<Output = Result<Self::Transaction<'_>>> + Send {
        self.conn().begin()
    }

    fn supports_copy(&self) -> bool {
        self.conn.as_ref().is_some_and(Executor::supports_copy)
    }

    fn min_copy_rows(&self) -> usize {
        self.conn.as_ref().map_or(0, Executor::min_copy_rows)
    }

    async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        let r = self.conn().copy_in(copy).await;
        self.observe(r)
    }

    async fn copy_in_stream(&mut self, sql: &str, data: crate::driver::CopyChunks) -> Result<u64> {
        let r = self.conn().copy_in_stream(sql, data).await;
        self.observe(r)
    }
}
