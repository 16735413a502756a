//! Queries of the migrator.

use crate::admin::MigrationRow;
use crate::driver::{Executor, FromRow, Row};
use crate::error::Result;
use crate::query::catalog::Query;
use crate::schema::Schema;

impl FromRow for MigrationRow {
    fn from_row(mut row: Row) -> Result<Self> {
        Ok(MigrationRow {
            line: row.take("line")?,
            version: row.take("version")?,
            created_at: row.take("created_at")?,
        })
    }
}

pub(crate) async fn migration_lock<E: Executor>(exec: &mut E, schema: &Schema) -> Result<()> {
    let stmt = schema
        .statement(Query::MigrationLock)
        .bind(format!("pgmill_migrate:{}", schema.name()));
    exec.execute(&stmt).await.map(drop)
}

pub(crate) async fn migration_table_exists<E: Executor>(
    exec: &mut E,
    schema: &Schema,
) -> Result<bool> {
    let stmt = schema
        .statement(Query::MigrationTableExists)
        .bind(schema.name());
    exec.query_scalar(&stmt).await
}

pub(crate) async fn migration_get_all<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    line: &str,
) -> Result<Vec<MigrationRow>> {
    let stmt = schema.statement(Query::MigrationGetAll).bind(line);
    exec.query_as(&stmt).await
}

pub(crate) async fn migration_insert<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    line: &str,
    version: i64,
) -> Result<()> {
    let stmt = schema
        .statement(Query::MigrationInsert)
        .bind(line)
        .bind(version);
    exec.execute(&stmt).await.map(drop)
}

pub(crate) async fn migration_delete<E: Executor>(
    exec: &mut E,
    schema: &Schema,
    line: &str,
    version: i64,
) -> Result<()> {
    let stmt = schema
        .statement(Query::MigrationDelete)
        .bind(line)
        .bind(version);
    exec.execute(&stmt).await.map(drop)
}
