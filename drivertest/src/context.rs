//! A fresh schema and a driver connected to the test database, for one test.

use pgmill::driver::{Driver, Executor, Statement};
use pgmill::{Migrator, Schema};

use crate::harness::Harness;
use crate::testdb;

/// What one test works with: a driver over the test database and a schema of its own.
#[derive(Debug)]
pub struct TestContext<D: Driver> {
    /// The driver under test.
    pub driver: D,
    /// The test's own schema (created, not migrated unless [`TestContext::migrated`]).
    pub schema: Schema,
    /// The database URL.
    pub url: String,
}

impl<D: Driver> TestContext<D> {
    /// Connects the harness's driver to [`Harness::url`] and creates a fresh, empty schema.
    ///
    /// # Panics
    ///
    /// When the database cannot be reached: tests fail loudly.
    pub async fn new<H: Harness<Driver = D>>() -> Self {
        Self::on::<H>(H::url()).await
    }

    /// Like [`TestContext::new`], on the database at `url` (e.g. a private [`Cluster`](crate::testdb::Cluster)).
    ///
    /// # Panics
    ///
    /// When the database cannot be reached.
    pub async fn on<H: Harness<Driver = D>>(url: String) -> Self {
        crate::log_capture::init();
        let driver = H::connect(&url, 6).await.expect("driver connects");
        let schema = Schema::new(&testdb::fresh_schema_name()).expect("valid schema name");
        let ctx = TestContext {
            driver,
            schema,
            url,
        };
        ctx.script(&format!("CREATE SCHEMA {}", ctx.schema.quoted()))
            .await;
        ctx
    }

    /// Like [`TestContext::new`], with pgmill's tables migrated into the schema.
    ///
    /// # Panics
    ///
    /// When migrating fails.
    pub async fn migrated<H: Harness<Driver = D>>() -> Self {
        let ctx = Self::new::<H>().await;
        let mut conn = ctx.conn().await;
        Migrator::new(ctx.schema.clone())
            .up(&mut conn, None)
            .await
            .expect("migrates");
        ctx
    }

    /// A pooled connection.
    ///
    /// # Panics
    ///
    /// When the pool gives none.
    pub async fn conn(&self) -> D::Connection {
        self.driver.acquire().await.expect("acquires a connection")
    }

    /// Runs a script on a pooled connection, panicking on error.
    ///
    /// # Panics
    ///
    /// When the script fails.
    pub async fn script(&self, sql: &str) {
        self.conn()
            .await
            .execute_script(sql)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{sql}"));
    }

    /// Renders `{schema}` in `sql` to this test's schema and builds a statement.
    pub fn stmt(&self, sql: &str) -> Statement {
        Statement::new(self.schema.render(sql))
    }

    /// Runs the engine statement `sql` (a `core/sql/` template) under `EXPLAIN ANALYZE`, so it
    /// takes effect, with `args` (SQL literals, `$1`'s first) in place of its parameters, and
    /// returns how many rows its scans of `pgmill_job` read and then filtered out: 0 when every
    /// scan reads only rows its index conditions select.
    ///
    /// # Panics
    ///
    /// When the statement fails.
    pub async fn job_rows_filtered_out(&self, sql: &str, args: &[&str]) -> i64 {
        let mut sql = self.schema.render(sql);
        // The highest first, so `$1` does not take the front of `$10`.
        for (i, arg) in args.iter().enumerate().rev() {
            sql = sql.replace(&format!("${}", i + 1), arg);
        }
        self.script(&self.schema.render(
            "CREATE OR REPLACE FUNCTION {schema}.pgmill_test_job_rows_filtered_out(q text) \
             RETURNS bigint LANGUAGE plpgsql AS $f$ \
             DECLARE plan json; \
             BEGIN \
                 EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan; \
                 RETURN (SELECT coalesce(sum(v::bigint), 0) FROM jsonb_path_query(plan::jsonb, \
                     ('strict $.** ? (@.\"Relation Name\" == \"pgmill_job\" \
                         && exists(@.\"Rows Removed by Filter\"))' \
                     || '.\"Rows Removed by Filter\"')::jsonpath) AS v); \
             END $f$",
        ))
        .await;
        let stmt = self
            .stmt("SELECT {schema}.pgmill_test_job_rows_filtered_out($1) AS n")
            .bind(sql);
        self.conn()
            .await
            .query_scalar(&stmt)
            .await
            .expect("explained statement")
    }

    /// Counts the rows of a table in the test's schema.
    ///
    /// # Panics
    ///
    /// When the query fails.
    pub async fn count(&self, table: &str) -> i64 {
        let stmt = self.stmt(&format!("SELECT count(*) AS n FROM {{schema}}.{table}"));
        self.conn()
            .await
            .query_scalar(&stmt)
            .await
            .expect("count query")
    }
}

/// A [`TestContext`] on the harness's driver with pgmill's tables migrated into a fresh schema.
///
/// # Panics
///
/// When the database cannot be reached or migrating fails.
pub async fn migrated<H: Harness>() -> TestContext<H::Driver> {
    TestContext::<H::Driver>::migrated::<H>().await
}
