//! The operator API over retention rules: how long finished jobs are kept, per final state and
//! queue, stored in the database so that it changes without a deploy.

use std::time::Duration;

use super::Client;
use crate::admin::{EVERY_QUEUE, RetentionRule};
use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::ident::validate_name;
use crate::job::JobState;
use crate::query::{retention_delete, retention_list, retention_set};

impl<D: Driver> Client<D> {
    /// Every retention rule stored in the database, by queue (`*` for every queue) and state.
    ///
    /// # Errors
    ///
    /// The database error.
    pub async fn retention_rules(&self) -> Result<Vec<RetentionRule>> {
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_as(&retention_list(self.schema())).await
    }

    /// Keeps finished jobs of `queue` (`*`: every queue without a rule of its own) in the final
    /// `state` for `keep` (whole seconds) after they finish, or forever for `None`, whatever the
    /// clients' configuration says. The leading client's cleaner applies it from its next pass;
    /// a job already deleted is not brought back. For discarded jobs the time counts from when
    /// they entered the dead-letter queue. Returns the rule as stored.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> pgmill::Result<()> {
    /// use std::time::Duration;
    /// use pgmill::JobState;
    ///
    /// // A busy queue keeps its completed jobs an hour; dead letters stay a month everywhere.
    /// client.retention_set("events", JobState::Completed, Some(Duration::from_secs(3600))).await?;
    /// client
    ///     .retention_set("*", JobState::Discarded, Some(Duration::from_secs(30 * 86_400)))
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a state that is not final or a retention under a second,
    /// [`Error::InvalidName`] for a bad queue name: nothing is stored. The database error.
    pub async fn retention_set(
        &self,
        queue: &str,
        state: JobState,
        keep: Option<Duration>,
    ) -> Result<RetentionRule> {
        check_rule(queue, state)?;
        if keep.is_some_and(|k| k < Duration::from_secs(1)) {
            return Err(Error::InvalidArgument(
                "a retention is at least one second; use None to keep jobs forever".into(),
            ));
        }
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_opt(&retention_set(self.schema(), queue, state, keep))
            .await?
            .ok_or_else(|| Error::decode("retention set", "no row"))
    }

    /// Removes the rule of `queue` (`*`: the rule for every queue) and `state`: the next rule in
    /// line applies again (the rule for every queue, then the clients' configuration). Returns
    /// the rule removed, `None` when there was none.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a state that is not final, [`Error::InvalidName`] for a
    /// bad queue name. The database error.
    pub async fn retention_clear(
        &self,
        queue: &str,
        state: JobState,
    ) -> Result<Option<RetentionRule>> {
        check_rule(queue, state)?;
        let mut conn = ConnectionLease::acquire(&self.inner.parts.driver).await?;
        conn.query_opt(&retention_delete(self.schema(), queue, state))
            .await
    }
}

/// Refuses a rule for a state that is not final or a queue name that is not valid.
fn check_rule(queue: &str, state: JobState) -> Result<()> {
    if !state.is_final() {
        return Err(Error::InvalidArgument(format!(
            "retention applies to finished jobs: completed, cancelled or discarded, not {state}"
        )));
    }
    if queue != EVERY_QUEUE {
        validate_name("queue", queue)?;
    }
    Ok(())
}
