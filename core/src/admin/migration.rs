//! Applied migrations.

use chrono::{DateTime, Utc};

/// One applied migration, as recorded in `pgmill_migration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationRow {
    /// The migration line (`main`).
    pub line: String,
    /// The version applied.
    pub version: i64,
    /// When it was applied (database time).
    pub created_at: DateTime<Utc>,
}
