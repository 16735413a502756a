//! A private schema per test: [`test_schema`].

use pgmill::driver::Executor;
use pgmill::{Migrator, Schema};

/// Creates a schema of the test's own, with pgmill's tables migrated into it, through `conn`
/// (a pooled connection of any driver). Give it to the client
/// ([`ClientBuilder::schema`](pgmill::ClientBuilder::schema)) and the assertions, so tests run
/// in parallel without seeing each other's jobs.
///
/// Its name comes from [`pgmill_testdb::fresh_schema_name`]: unique in the process, and dropped
/// when the process ends (with `DATABASE_URL`; a throwaway cluster is deleted whole).
///
/// # Errors
///
/// The database error, or a failed migration.
pub async fn test_schema<E: Executor>(conn: &mut E) -> pgmill::Result<Schema> {
    let schema = Schema::new(&pgmill_testdb::fresh_schema_name())?;
    conn.execute_script(&format!("CREATE SCHEMA {}", schema.quoted()))
        .await?;
    Migrator::new(schema.clone()).up(conn, None).await?;
    Ok(schema)
}
