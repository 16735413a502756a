//! The insert applications make inside their own transaction, on each driver's own library:
//! `tx.insert_job(..)` between the application's `BEGIN` and `COMMIT`.

use std::future::Future;

use pgmill::driver::Driver;
use pgmill::{Inserter, JobRow};
use pgmill_driver_diesel::DieselDriver;
use pgmill_driver_sqlx::SqlxDriver;
use pgmill_driver_tokio_postgres::TokioPostgresDriver;

use crate::bench_error::BenchError;
use crate::bench_job::BenchJob;

/// A driver whose library's own transactions take `insert_job(..)`.
pub(crate) trait HostInsert: Driver {
    /// Opens a transaction on the library's own pool, inserts `job` in it through `inserter`
    /// (which sends its debounced insert notification in the same transaction), and commits.
    fn insert_in_own_transaction(
        &self,
        inserter: &Inserter,
        job: BenchJob,
    ) -> impl Future<Output = Result<JobRow, BenchError>> + Send;
}

impl HostInsert for SqlxDriver {
    async fn insert_in_own_transaction(
        &self,
        inserter: &Inserter,
        job: BenchJob,
    ) -> Result<JobRow, BenchError> {
        use pgmill_driver_sqlx::PgConnectionExt;
        let mut tx = self
            .pool()
            .begin()
            .await
            .map_err(|e| BenchError::context("sqlx begin", e))?;
        let row = tx.insert_job(inserter, job).await?.into_job();
        tx.commit()
            .await
            .map_err(|e| BenchError::context("sqlx commit", e))?;
        Ok(row)
    }
}

impl HostInsert for TokioPostgresDriver {
    async fn insert_in_own_transaction(
        &self,
        inserter: &Inserter,
        job: BenchJob,
    ) -> Result<JobRow, BenchError> {
        // deadpool's own transaction (the driver's pool type): statements prepared once per
        // connection in deadpool's cache.
        use pgmill_driver_tokio_postgres::DeadpoolClientExt;
        let mut client = self
            .pool()
            .get()
            .await
            .map_err(|e| BenchError::context("deadpool-postgres checkout", e))?;
        let mut tx = client.transaction().await?;
        let row = tx.insert_job(inserter, job).await?.into_job();
        tx.commit().await?;
        Ok(row)
    }
}

/// An error inside diesel's `conn.transaction(|conn| ..)`.
#[derive(Debug)]
enum DieselTxError {
    Diesel(diesel::result::Error),
    Pgmill(pgmill::Error),
}

impl From<diesel::result::Error> for DieselTxError {
    fn from(e: diesel::result::Error) -> Self {
        DieselTxError::Diesel(e)
    }
}

impl HostInsert for DieselDriver {
    async fn insert_in_own_transaction(
        &self,
        inserter: &Inserter,
        job: BenchJob,
    ) -> Result<JobRow, BenchError> {
        use diesel::Connection;
        use pgmill_driver_diesel::PgConnectionExt;
        let conn = self
            .pool()
            .get()
            .await
            .map_err(|e| BenchError::context("deadpool-diesel checkout", e))?;
        let inserter = inserter.clone();
        let inserted = conn
            .interact(move |conn| {
                conn.transaction::<JobRow, DieselTxError, _>(|conn| {
                    conn.insert_job(&inserter, job)
                        .map(pgmill::InsertResult::into_job)
                        .map_err(DieselTxError::Pgmill)
                })
            })
            .await
            .map_err(|e| BenchError::new(format!("diesel interact: {e}")))?;
        match inserted {
            Ok(row) => Ok(row),
            Err(DieselTxError::Pgmill(e)) => Err(e.into()),
            Err(DieselTxError::Diesel(e)) => Err(BenchError::context("diesel transaction", e)),
        }
    }
}
