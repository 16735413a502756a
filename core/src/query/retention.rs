//! Retention rules (`pgmill_retention`): listing, setting and removing them.

use std::time::Duration;

use crate::admin::RetentionRule;
use crate::driver::{FromRow, Row, Statement};
use crate::error::Result;
use crate::job::JobState;
use crate::query::catalog::Query;
use crate::schema::Schema;

impl FromRow for RetentionRule {
    fn from_row(mut row: Row) -> Result<Self> {
        let updated_at = row.take("updated_at")?;
        let keep_seconds: Option<i64> = row.take("keep_seconds")?;
        let state = row.take::<String>("state")?.parse()?;
        Ok(RetentionRule {
            queue: row.take("queue")?,
            state,
            keep: keep_seconds.map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0))),
            updated_at,
        })
    }
}

pub(crate) fn retention_list(schema: &Schema) -> Statement {
    schema.statement(Query::RetentionList)
}

/// Sets the rule of `queue` (`*`: every queue) and `state`: `keep` whole seconds, `None` for
/// forever. The caller has checked the state is final and `keep` at least a second.
pub(crate) fn retention_set(
    schema: &Schema,
    queue: &str,
    state: JobState,
    keep: Option<Duration>,
) -> Statement {
    schema
        .statement(Query::RetentionSet)
        .bind(queue.to_owned())
        .bind(state.as_str().to_owned())
        .bind(keep.map(|k| i64::try_from(k.as_secs()).unwrap_or(i64::MAX)))
}

pub(crate) fn retention_delete(schema: &Schema, queue: &str, state: JobState) -> Statement {
    schema
        .statement(Query::RetentionDelete)
        .bind(queue.to_owned())
        .bind(state.as_str().to_owned())
}
