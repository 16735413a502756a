//! The cleaner: applies the retention of finished jobs.
//!
//! Most finished jobs left the job table when they finished: completed and cancelled ones are in
//! the history ring (`pgmill_job_done`), whose slots the cleaner empties with `TRUNCATE` once
//! every row of a slot is past its retention (no `DELETE`, no dead rows); discarded ones are in
//! the dead-letter queue, which it trims in bounded batches. The few finished jobs that stay in
//! the job table (a unique job keeping its key taken in its final state, or jobs finished by a
//! client of an older schema version) it deletes past their retention in bounded batches, as
//! before. It also keeps the history slots wide enough that a slot's rows are past retention
//! before the ring is back at it.
//!
//! The retention comes from the rules stored in the database first
//! ([`Client::retention_set`](crate::Client::retention_set)): a queue's own rule for a state,
//! else the rule for every queue, else this configuration. A slot is emptied once its rows are
//! past the longest retention any queue has; jobs of queues kept for less are deleted before,
//! in bounded batches that read at most a thousand rows per queue.

use std::time::Duration;

use chrono::TimeDelta;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::admin::RetentionRule;
use crate::connection_lease::ConnectionLease;
use crate::driver::Statement;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::job::JobState;
use crate::query::{
    ExpiredRow, SlotRow, job_dead_delete_expired, job_dead_delete_expired_by_queue,
    job_delete_finalized, job_done_delete_expired, retention_list, storage_done_truncate_expired,
    storage_set_done_slot_seconds,
};
use crate::schema::Schema;

/// Default [`JobCleanerConfig::completed_retention`].
pub const DEFAULT_COMPLETED_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Default [`JobCleanerConfig::cancelled_retention`].
pub const DEFAULT_CANCELLED_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Default [`JobCleanerConfig::discarded_retention`].
pub const DEFAULT_DISCARDED_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The history ring's default slot width: sixteen slots of two hours hold a day of history with
/// room to spare.
const DEFAULT_DONE_SLOT: Duration = Duration::from_secs(2 * 3600);

/// The most a truncation waits for a history slot's lock before leaving it to the next pass:
/// readers and writers queue behind a waiting `TRUNCATE`, so the wait is kept short.
const TRUNCATE_LOCK_WAIT: Duration = Duration::from_millis(100);

/// The most rows of one queue a per-queue retention statement reads.
const RETENTION_PROBE: usize = 1_000;

/// Settings of the [`JobCleaner`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobCleanerConfig {
    /// Time between passes. Default 30 s.
    pub interval: Duration,
    /// Completed jobs are kept this long after finishing; `None` keeps them. Default 24 h. In the
    /// history they go a history slot at a time (see [`JobCleanerConfig::cancelled_retention`]).
    ///
    /// These retentions are the default: a rule stored in the database for a queue, or for every
    /// queue, wins over them ([`Client::retention_set`](crate::Client::retention_set)).
    pub completed_retention: Option<Duration>,
    /// Cancelled jobs are kept this long after finishing; `None` keeps them. Default 24 h.
    ///
    /// The history is a ring of sixteen slots, each holding the jobs that finished within one
    /// slot width, emptied all at once when every job in it is past its retention: a job stays
    /// up to one slot width longer than its retention. The width is two hours, or the longest
    /// retention of the two states (over every queue's rule) divided by thirteen when that is
    /// more, so that a slot is emptied before the ring is back at it.
    pub cancelled_retention: Option<Duration>,
    /// Discarded jobs are kept this long in the dead-letter queue after entering it; `None`
    /// keeps them until redriven or purged. Default 7 days.
    pub discarded_retention: Option<Duration>,
    /// Most jobs one statement deletes. Default 10,000.
    pub batch_size: usize,
    /// How long one batch may take. Default 30 s.
    pub batch_timeout: Duration,
}

impl Default for JobCleanerConfig {
    fn default() -> Self {
        JobCleanerConfig {
            interval: Duration::from_secs(30),
            completed_retention: Some(DEFAULT_COMPLETED_RETENTION),
            cancelled_retention: Some(DEFAULT_CANCELLED_RETENTION),
            discarded_retention: Some(DEFAULT_DISCARDED_RETENTION),
            batch_size: 10_000,
            batch_timeout: Duration::from_secs(30),
        }
    }
}

/// What one cleaner pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobCleanerRunOnceResult {
    /// Finished jobs deleted from the job table.
    pub num_jobs_deleted: i64,
    /// Jobs deleted from the dead-letter queue past its retention.
    pub num_dead_deleted: i64,
    /// Jobs deleted from the history ahead of its truncation, their queue keeping them for less
    /// than the longest retention.
    pub num_done_deleted: i64,
    /// History slots emptied (each a `TRUNCATE`).
    pub num_slots_truncated: usize,
}

impl JobCleanerConfig {
    /// The retention of a final `state` in this configuration (`None`: kept).
    fn retention(&self, state: JobState) -> Option<Duration> {
        match state {
            JobState::Completed => self.completed_retention,
            JobState::Cancelled => self.cancelled_retention,
            _ => self.discarded_retention,
        }
    }
}

/// What one pass applies: per final state, the retention of the queues without a rule of their
/// own (the rule for every queue, else the configuration) and the longest any queue has, from the
/// rules stored in the database and the client's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RetentionPlan {
    /// Per state (completed, cancelled, discarded): the retention of queues without a rule of
    /// their own (`None`: kept), the longest of any queue (`None`: some queue keeps its jobs),
    /// and whether some queue has a rule of its own.
    states: [(Option<Duration>, Option<Duration>, bool); 3],
}

impl RetentionPlan {
    fn new(config: &JobCleanerConfig, rules: &[RetentionRule]) -> Self {
        let plan = |state: JobState| {
            let default = rules
                .iter()
                .find(|r| r.state == state && r.is_for_every_queue())
                .map_or(config.retention(state), |r| r.keep);
            let own: Vec<Option<Duration>> = rules
                .iter()
                .filter(|r| r.state == state && !r.is_for_every_queue())
                .map(|r| r.keep)
                .collect();
            let longest = own
                .iter()
                .fold(default, |longest, keep| Some(longest?.max((*keep)?)));
            (default, longest, !own.is_empty())
        };
        RetentionPlan {
            states: [
                plan(JobState::Completed),
                plan(JobState::Cancelled),
                plan(JobState::Discarded),
            ],
        }
    }

    fn of(&self, state: JobState) -> (Option<Duration>, Option<Duration>, bool) {
        match state {
            JobState::Completed => self.states[0],
            JobState::Cancelled => self.states[1],
            _ => self.states[2],
        }
    }

    /// The retention of `state` for queues without a rule of their own.
    fn default(&self, state: JobState) -> Option<Duration> {
        self.of(state).0
    }

    /// The longest retention of `state` any queue has; `None` when some queue keeps its jobs.
    fn longest(&self, state: JobState) -> Option<Duration> {
        self.of(state).1
    }

    /// True when some queue has a rule of its own for `state`.
    fn has_queue_rules(&self, state: JobState) -> bool {
        self.of(state).2
    }

    /// The history slot width these retentions need: a slot must be past retention before the
    /// ring of sixteen is back at it (thirteen widths, keeping the slot being written, the
    /// next one and a spare out of it).
    fn done_slot_seconds(&self) -> i32 {
        let longest = [
            self.longest(JobState::Completed),
            self.longest(JobState::Cancelled),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or_default();
        let width = DEFAULT_DONE_SLOT.max(Duration::from_secs(longest.as_secs().div_ceil(13)));
        i32::try_from(width.as_secs())
            .unwrap_or(31_536_000)
            .min(31_536_000)
    }
}

fn delta(d: Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
}

/// Applies the retention of completed, cancelled and discarded jobs (see the module docs).
#[derive(Debug, Clone)]
pub struct JobCleaner<D: Driver> {
    driver: D,
    schema: Schema,
    config: JobCleanerConfig,
}

impl<D: Driver> JobCleaner<D> {
    /// A cleaner for `schema`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval, batch size or timeout.
    pub fn new(driver: D, schema: Schema, config: JobCleanerConfig) -> Result<Self> {
        if config.interval.is_zero() || config.batch_size == 0 || config.batch_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "cleaner interval, batch_size and batch_timeout must be positive".into(),
            ));
        }
        Ok(JobCleaner {
            driver,
            schema,
            config,
        })
    }

    /// One pass: the retention rules stored in the database are read, then the history's
    /// expired slots are emptied, the jobs of queues kept for less than the slots wait are
    /// deleted, and the dead-letter queue's and the job table's expired jobs go, batches until a
    /// batch comes back short.
    ///
    /// # Errors
    ///
    /// The database error, or [`Error::Timeout`] for a batch over its timeout.
    pub async fn run_once(&self) -> Result<JobCleanerRunOnceResult> {
        let c = &self.config;
        let mut result = JobCleanerRunOnceResult::default();
        let full = i64::try_from(c.batch_size).unwrap_or(i64::MAX);
        let probe = c.batch_size.min(RETENTION_PROBE);
        let timed = |what: &'static str| move |_| Error::Timeout(what);
        let plan = {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            let rules: Vec<RetentionRule> = conn.query_as(&retention_list(&self.schema)).await?;
            let plan = RetentionPlan::new(c, &rules);
            conn.execute(&storage_set_done_slot_seconds(
                &self.schema,
                plan.done_slot_seconds(),
            ))
            .await?;
            let (completed, cancelled) = (
                plan.longest(JobState::Completed),
                plan.longest(JobState::Cancelled),
            );
            if completed.is_some() || cancelled.is_some() {
                let slots: Vec<SlotRow> = tokio::time::timeout(
                    c.batch_timeout,
                    conn.query_as(&storage_done_truncate_expired(
                        &self.schema,
                        completed.map(delta),
                        cancelled.map(delta),
                        TRUNCATE_LOCK_WAIT,
                    )),
                )
                .await
                .map_err(timed("job cleaner truncation"))??;
                result.num_slots_truncated = slots.len();
            }
            plan
        };
        for state in [JobState::Completed, JobState::Cancelled] {
            if !plan.has_queue_rules(state) {
                continue;
            }
            loop {
                let stmt = job_done_delete_expired(
                    &self.schema,
                    state,
                    self.configured(state),
                    plan.longest(state).map(delta),
                    probe,
                );
                let row = self.expired_batch(stmt, "history cleaner batch").await?;
                result.num_done_deleted += row.num_deleted;
                if row.num_full == 0 || row.num_deleted == 0 {
                    break;
                }
            }
        }
        if plan.has_queue_rules(JobState::Discarded) {
            loop {
                let stmt = job_dead_delete_expired_by_queue(
                    &self.schema,
                    self.configured(JobState::Discarded),
                    probe,
                );
                let row = self
                    .expired_batch(stmt, "dead-letter cleaner batch")
                    .await?;
                result.num_dead_deleted += row.num_deleted;
                if row.num_full == 0 || row.num_deleted == 0 {
                    break;
                }
            }
        } else if let Some(dead) = plan.default(JobState::Discarded) {
            loop {
                let stmt = job_dead_delete_expired(&self.schema, delta(dead), c.batch_size);
                let deleted = self.batch(stmt, "dead-letter cleaner batch").await?;
                result.num_dead_deleted += deleted;
                if deleted < full {
                    break;
                }
            }
        }
        loop {
            let stmt = job_delete_finalized(
                &self.schema,
                self.configured(JobState::Completed),
                self.configured(JobState::Cancelled),
                self.configured(JobState::Discarded),
                c.batch_size,
            );
            let deleted = self.batch(stmt, "job cleaner batch").await?;
            result.num_jobs_deleted += deleted;
            if deleted < full {
                return Ok(result);
            }
        }
    }

    /// The retention of `state` in this client's configuration.
    fn configured(&self, state: JobState) -> Option<TimeDelta> {
        self.config.retention(state).map(delta)
    }

    /// Runs one deleting statement that returns a count, within the batch timeout.
    async fn batch(&self, stmt: Statement, what: &'static str) -> Result<i64> {
        tokio::time::timeout(self.config.batch_timeout, async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.query_scalar::<i64>(&stmt).await
        })
        .await
        .map_err(|_| Error::Timeout(what))?
    }

    /// Runs one per-queue retention statement within the batch timeout.
    async fn expired_batch(&self, stmt: Statement, what: &'static str) -> Result<ExpiredRow> {
        tokio::time::timeout(self.config.batch_timeout, async {
            let mut conn = ConnectionLease::acquire(&self.driver).await?;
            conn.query_opt::<ExpiredRow>(&stmt)
                .await?
                .ok_or_else(|| Error::decode(what, "no row"))
        })
        .await
        .map_err(|_| Error::Timeout(what))?
    }

    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) => debug!(
                        num_jobs_deleted = r.num_jobs_deleted,
                        num_dead_deleted = r.num_dead_deleted,
                        num_slots_truncated = r.num_slots_truncated,
                        num_done_deleted = r.num_done_deleted,
                        "cleaned jobs"
                    ),
                    Err(e) => warn!(error = %e, "job cleaner pass failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(self.config.interval) => {}
                }
            }
        }
        .instrument(info_span!("job_cleaner"))
        .await
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn rule(queue: &str, state: JobState, keep: Option<Duration>) -> RetentionRule {
        RetentionRule {
            queue: queue.into(),
            state,
            keep,
            updated_at: Utc::now(),
        }
    }

    #[test]
    fn without_rules_the_configuration_applies() {
        let plan = RetentionPlan::new(&JobCleanerConfig::default(), &[]);
        assert_eq!(plan.default(JobState::Completed), Some(24 * HOUR));
        assert_eq!(plan.longest(JobState::Completed), Some(24 * HOUR));
        assert_eq!(plan.default(JobState::Discarded), Some(7 * 24 * HOUR));
        assert!(!plan.has_queue_rules(JobState::Completed));
        assert_eq!(plan.done_slot_seconds(), 7200);
    }

    #[test]
    fn the_rule_for_every_queue_replaces_the_configuration() {
        let rules = [rule("*", JobState::Completed, Some(HOUR))];
        let plan = RetentionPlan::new(&JobCleanerConfig::default(), &rules);
        assert_eq!(plan.default(JobState::Completed), Some(HOUR));
        assert_eq!(plan.longest(JobState::Completed), Some(HOUR));
        assert!(!plan.has_queue_rules(JobState::Completed));
        assert_eq!(plan.default(JobState::Cancelled), Some(24 * HOUR));
    }

    #[test]
    fn a_queue_kept_longer_widens_the_ring_and_forever_stops_truncation() {
        let rules = [
            rule("audit", JobState::Completed, Some(30 * 24 * HOUR)),
            rule("hot", JobState::Completed, Some(HOUR)),
            rule("keep", JobState::Cancelled, None),
        ];
        let plan = RetentionPlan::new(&JobCleanerConfig::default(), &rules);
        assert_eq!(plan.default(JobState::Completed), Some(24 * HOUR));
        assert_eq!(plan.longest(JobState::Completed), Some(30 * 24 * HOUR));
        assert!(plan.has_queue_rules(JobState::Completed));
        assert_eq!(plan.longest(JobState::Cancelled), None);
        assert!(!plan.has_queue_rules(JobState::Discarded));
        assert_eq!(
            plan.done_slot_seconds(),
            (30 * 24 * 3600_u32).div_ceil(13) as i32
        );
    }

    #[test]
    fn a_default_kept_forever_leaves_every_queue_to_its_rule() {
        let config = JobCleanerConfig {
            completed_retention: None,
            ..JobCleanerConfig::default()
        };
        let rules = [rule("hot", JobState::Completed, Some(HOUR))];
        let plan = RetentionPlan::new(&config, &rules);
        assert_eq!(plan.default(JobState::Completed), None);
        assert_eq!(plan.longest(JobState::Completed), None);
    }
}
