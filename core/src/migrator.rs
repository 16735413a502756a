//! Versioned schema migrations: up, down, status, and the SQL of a version.
//!
//! Each version is applied in its own transaction together with its row in `pgmill_migration`,
//! after taking a transaction-scoped advisory lock named after the schema. Two processes migrating
//! the same schema at once therefore apply each version exactly once: the second waits for the
//! lock, then sees the version recorded and skips it. Running `up` again is a no-op.

use pgmill_migrations::{LINE, MIGRATIONS, Migration};
use tracing::info;

use crate::admin::MigrationRow;
use crate::driver::{Executor, Transaction};
use crate::error::{Error, Result};
use crate::query::{
    migration_delete, migration_get_all, migration_insert, migration_lock, migration_table_exists,
};
use crate::schema::Schema;

/// Which way a migration script goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Apply the version.
    Up,
    /// Revert the version.
    Down,
}

/// What a call to [`Migrator::up`] or [`Migrator::down`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrateReport {
    /// The direction migrated.
    pub direction: Direction,
    /// The versions this call applied or reverted, in the order it did so (empty: nothing to do).
    pub versions: Vec<u32>,
}

/// The migration state of a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationStatus {
    /// The versions recorded as applied.
    pub applied: Vec<MigrationRow>,
    /// Known versions not applied yet, in order.
    pub pending: Vec<u32>,
    /// The latest version this build of pgmill knows.
    pub latest: u32,
}

impl MigrationStatus {
    /// The highest applied version, 0 when none is.
    pub fn current(&self) -> u32 {
        self.applied
            .iter()
            .map(|m| u32::try_from(m.version).unwrap_or(0))
            .max()
            .unwrap_or(0)
    }

    /// True when every known version is applied.
    pub fn is_up_to_date(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Applies and reverts pgmill's schema versions in one schema.
///
/// # Examples
///
/// ```no_run
/// # async fn run<E: pgmill::driver::Executor>(conn: &mut E) -> pgmill::Result<()> {
/// let migrator = pgmill::Migrator::new(pgmill::Schema::public());
/// migrator.up(conn, None).await?; // to the latest version
/// assert!(migrator.status(conn).await?.is_up_to_date());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Migrator {
    schema: Schema,
}

impl Migrator {
    /// A migrator for `schema`.
    pub fn new(schema: Schema) -> Self {
        Migrator { schema }
    }

    /// The latest schema version this build of pgmill knows.
    pub fn latest_version() -> u32 {
        pgmill_migrations::latest_version()
    }

    /// The schema migrated.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Applies every version up to `target` (the latest when `None`) not applied yet.
    ///
    /// # Errors
    ///
    /// [`Error::Migration`] for an unknown target; a database error from a script, in which case
    /// that version's transaction is rolled back and earlier versions stay applied.
    pub async fn up<E: Executor>(
        &self,
        exec: &mut E,
        target: Option<u32>,
    ) -> Result<MigrateReport> {
        let target = match target {
            Some(t) => {
                find(t)?;
                t
            }
            None => pgmill_migrations::latest_version(),
        };
        let mut versions = Vec::new();
        for m in MIGRATIONS.iter().filter(|m| m.version <= target) {
            if self.apply(exec, m, Direction::Up).await? {
                versions.push(m.version);
            }
        }
        Ok(MigrateReport {
            direction: Direction::Up,
            versions,
        })
    }

    /// Reverts every applied version above `target`, newest first; `0` removes everything.
    ///
    /// # Errors
    ///
    /// [`Error::Migration`] for an unknown target; a database error from a script.
    pub async fn down<E: Executor>(&self, exec: &mut E, target: u32) -> Result<MigrateReport> {
        if target != 0 {
            find(target)?;
        }
        let mut versions = Vec::new();
        for m in MIGRATIONS.iter().rev().filter(|m| m.version > target) {
            if self.apply(exec, m, Direction::Down).await? {
                versions.push(m.version);
            }
        }
        Ok(MigrateReport {
            direction: Direction::Down,
            versions,
        })
    }

    /// Reads which versions are applied and which are pending.
    ///
    /// # Errors
    ///
    /// A database error.
    pub async fn status<E: Executor>(&self, exec: &mut E) -> Result<MigrationStatus> {
        let applied = if migration_table_exists(exec, &self.schema).await? {
            migration_get_all(exec, &self.schema, LINE).await?
        } else {
            Vec::new()
        };
        let pending = MIGRATIONS
            .iter()
            .map(|m| m.version)
            .filter(|v| !applied.iter().any(|a| a.version == i64::from(*v)))
            .collect();
        Ok(MigrationStatus {
            applied,
            pending,
            latest: pgmill_migrations::latest_version(),
        })
    }

    /// The SQL of one version, rendered into this schema, for users of other migration tools.
    ///
    /// The script ends by recording (or forgetting) the version in `pgmill_migration`, so pgmill
    /// sees the same state as if it had migrated itself.
    ///
    /// # Errors
    ///
    /// [`Error::Migration`] for an unknown version.
    pub fn sql(&self, version: u32, direction: Direction) -> Result<String> {
        let m = find(version)?;
        let table = format!("{}.pgmill_migration", self.schema.quoted());
        // The line is a constant and the version an integer: nothing user-supplied is formatted in.
        Ok(match direction {
            Direction::Up => format!(
                "{}\nINSERT INTO {table} (line, version) VALUES ('{LINE}', {version});\n",
                self.schema.render(m.up).trim_end()
            ),
            // Forget the version first: reverting version 1 drops the table itself.
            Direction::Down => format!(
                "DELETE FROM {table} WHERE line = '{LINE}' AND version = {version};\n{}\n",
                self.schema.render(m.down).trim_end()
            ),
        })
    }

    /// Applies or reverts one version in its own transaction; false when there was nothing to do.
    async fn apply<E: Executor>(
        &self,
        exec: &mut E,
        m: &Migration,
        dir: Direction,
    ) -> Result<bool> {
        let version = i64::from(m.version);
        let mut tx = exec.begin().await?;
        migration_lock(&mut tx, &self.schema).await?;
        let applied = migration_table_exists(&mut tx, &self.schema).await?
            && migration_get_all(&mut tx, &self.schema, LINE)
                .await?
                .iter()
                .any(|a| a.version == version);
        let todo = match dir {
            Direction::Up => !applied,
            Direction::Down => applied,
        };
        if !todo {
            tx.rollback().await?;
            return Ok(false);
        }
        match dir {
            Direction::Up => {
                tx.execute_script(&self.schema.render(m.up)).await?;
                migration_insert(&mut tx, &self.schema, LINE, version).await?;
            }
            Direction::Down => {
                migration_delete(&mut tx, &self.schema, LINE, version).await?;
                tx.execute_script(&self.schema.render(m.down)).await?;
            }
        }
        tx.commit().await?;
        info!(
            schema = self.schema.name(),
            version = m.version,
            name = m.name,
            direction = ?dir,
            "migrated"
        );
        Ok(true)
    }
}

fn find(version: u32) -> Result<&'static Migration> {
    MIGRATIONS
        .iter()
        .find(|m| m.version == version)
        .ok_or_else(|| {
            Error::Migration(format!(
                "unknown version {version}; known versions are 1 to {}",
                pgmill_migrations::latest_version()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_of_a_version_is_rendered_and_records_itself() {
        let m = Migrator::new(Schema::new("jobs").unwrap());
        let up = m.sql(1, Direction::Up).unwrap();
        assert!(up.contains("CREATE TABLE \"jobs\".pgmill_job"));
        assert!(up.ends_with(
            "INSERT INTO \"jobs\".pgmill_migration (line, version) VALUES ('main', 1);\n"
        ));
        let down = m.sql(1, Direction::Down).unwrap();
        assert!(down.contains("DROP TABLE \"jobs\".pgmill_job;"));
        assert!(!down.contains("{schema}"));
        assert!(matches!(m.sql(99, Direction::Up), Err(Error::Migration(_))));
    }
}
