//! The insert applications make inside their own transaction, on each driver's own library:
//! `tx.insert_job(..)` between the application's `BEGIN` and `COMMIT`; and next to it, as a
//! reference, the same transaction written by hand on that library with a plain `INSERT` of
//! (kind, args), prepared once per connection the way the library caches statements, without
//! notification (`<driver>_plain`): what the library itself costs, apart from pgmill.

use std::future::Future;

use pgmill::driver::Driver;
use pgmill::{Inserter, JobArgs, JobRow, Schema};
use pgmill_driver_diesel::DieselDriver;
use pgmill_driver_sqlx::SqlxDriver;
use pgmill_driver_tokio_postgres::TokioPostgresDriver;

use crate::bench_error::BenchError;
use crate::bench_job::BenchJob;
use crate::ceiling_bench::insert_sql;

/// A driver whose library's own transactions take `insert_job(..)`.
pub(crate) trait HostInsert: Driver {
    /// Opens a transaction on the library's own pool, inserts `job` in it through `inserter`
    /// (which sends its debounced insert notification in the same transaction), and commits.
    fn insert_in_own_transaction(
        &self,
        inserter: &Inserter,
        job: BenchJob,
    ) -> impl Future<Output = Result<JobRow, BenchError>> + Send;

    /// The hand-written reference: a plain `INSERT` of `job`'s kind and args into `schema`, in a
    /// transaction of the library's own pool, committed, without notification.
    fn insert_plain_in_own_transaction(
        &self,
        schema: &Schema,
        job: BenchJob,
    ) -> impl Future<Output = Result<(), BenchError>> + Send;
}

fn args_of(job: BenchJob) -> serde_json::Value {
    serde_json::json!({ "i": job.i })
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

    async fn insert_plain_in_own_transaction(
        &self,
        schema: &Schema,
        job: BenchJob,
    ) -> Result<(), BenchError> {
        let mut tx = self
            .pool()
            .begin()
            .await
            .map_err(|e| BenchError::context("sqlx begin", e))?;
        // Prepared once per connection: sqlx caches statements by their SQL.
        sqlx::query(sqlx::AssertSqlSafe(insert_sql(schema)))
            .bind(BenchJob::KIND)
            .bind(sqlx::types::Json(args_of(job)))
            .execute(&mut *tx)
            .await
            .map_err(|e| BenchError::context("sqlx insert", e))?;
        tx.commit()
            .await
            .map_err(|e| BenchError::context("sqlx commit", e))
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

    async fn insert_plain_in_own_transaction(
        &self,
        schema: &Schema,
        job: BenchJob,
    ) -> Result<(), BenchError> {
        let mut client = self
            .pool()
            .get()
            .await
            .map_err(|e| BenchError::context("deadpool-postgres checkout", e))?;
        let tx = client.transaction().await?;
        // Prepared once per connection, in deadpool's statement cache.
        let stmt = tx.prepare_cached(&insert_sql(schema)).await?;
        tx.execute(&stmt, &[&BenchJob::KIND, &args_of(job)]).await?;
        tx.commit().await?;
        Ok(())
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

    async fn insert_plain_in_own_transaction(
        &self,
        schema: &Schema,
        job: BenchJob,
    ) -> Result<(), BenchError> {
        use diesel::{Connection, RunQueryDsl};
        let conn = self
            .pool()
            .get()
            .await
            .map_err(|e| BenchError::context("deadpool-diesel checkout", e))?;
        let insert = PlainInsert {
            sql: insert_sql(schema),
            kind: BenchJob::KIND,
            args: args_of(job),
        };
        conn.interact(move |conn| {
            conn.transaction::<_, diesel::result::Error, _>(|conn| insert.execute(conn))
        })
        .await
        .map_err(|e| BenchError::new(format!("diesel interact: {e}")))?
        .map_err(|e| BenchError::context("diesel transaction", e))?;
        Ok(())
    }
}

/// The plain insert as a diesel query that diesel keeps in the connection's statement cache (as
/// it does its own DSL's inserts; a `sql_query` is never cached).
struct PlainInsert {
    sql: String,
    kind: &'static str,
    args: serde_json::Value,
}

impl diesel::query_builder::QueryId for PlainInsert {
    type QueryId = ();

    const HAS_STATIC_QUERY_ID: bool = false;
}

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for PlainInsert {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> diesel::QueryResult<()> {
        // The SQL up to its parameters, which diesel numbers itself as it binds them.
        let (head, _) = self.sql.split_once("$1").unwrap_or((&self.sql, ""));
        out.push_sql(head);
        out.push_bind_param::<diesel::sql_types::Text, _>(&self.kind)?;
        out.push_sql(", ");
        out.push_bind_param::<diesel::sql_types::Jsonb, _>(&self.args)?;
        out.push_sql(")");
        Ok(())
    }

    fn is_safe_to_cache_prepared(&self, _backend: &diesel::pg::Pg) -> diesel::QueryResult<bool> {
        Ok(true)
    }
}

impl diesel::RunQueryDsl<diesel::PgConnection> for PlainInsert {}
