//! Periodic jobs: a named schedule (cron expression or fixed interval) whose ticks the leader
//! enqueues as jobs.
//!
//! Schedules are durable: each lives in `pgmill_periodic` with its next run time, so restarts and
//! leader changes neither lose nor repeat ticks. The leader enqueues a due tick's job in the same
//! transaction that advances `next_run_at`, guarded by the tick being advanced, so a tick is
//! enqueued at most once even when leadership changes mid-tick. Times are computed from the
//! database clock.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::error::{Error, Result};
use crate::ident::validate_name;
use crate::job_args::{InsertOpts, InsertParams, JobArgs};

/// When a periodic job runs.
#[derive(Clone)]
pub enum Schedule {
    /// A cron expression (5 fields, or 6 with seconds), evaluated in UTC.
    Cron(Arc<croner::Cron>, String),
    /// A fixed interval, counted from the first run.
    Every(Duration),
}

impl Schedule {
    /// Parses a cron expression.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] saying why the expression is invalid.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(pgmill::Schedule::cron("*/5 * * * *").is_ok());
    /// assert!(pgmill::Schedule::cron("every tuesday").is_err());
    /// ```
    pub fn cron(expr: &str) -> Result<Self> {
        let cron = croner::Cron::from_str(expr)
            .map_err(|e| Error::InvalidConfig(format!("cron expression {expr:?}: {e}")))?;
        Ok(Schedule::Cron(Arc::new(cron), expr.to_owned()))
    }

    /// A fixed interval.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval.
    pub fn every(interval: Duration) -> Result<Self> {
        if interval.is_zero() || TimeDelta::from_std(interval).is_err() {
            return Err(Error::InvalidConfig(
                "periodic interval must be positive".into(),
            ));
        }
        Ok(Schedule::Every(interval))
    }

    /// The schedule as stored in `pgmill_periodic.schedule`.
    pub fn describe(&self) -> String {
        match self {
            Schedule::Cron(_, expr) => format!("cron {expr}"),
            Schedule::Every(d) => format!("every {d:?}"),
        }
    }

    /// The first run after `now` for a schedule registered at `now`.
    pub(crate) fn first_after(&self, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        match self {
            Schedule::Cron(cron, expr) => cron
                .find_next_occurrence(&now, false)
                .map_err(|e| Error::InvalidConfig(format!("cron expression {expr:?}: {e}"))),
            Schedule::Every(d) => Ok(now + TimeDelta::from_std(*d).unwrap_or(TimeDelta::MAX)),
        }
    }

    /// The first tick after `now`, following the tick at `tick`.
    pub(crate) fn next_after(
        &self,
        tick: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>> {
        match self {
            Schedule::Cron(..) => self.first_after(now.max(tick)),
            Schedule::Every(d) => {
                let step = TimeDelta::from_std(*d).unwrap_or(TimeDelta::MAX);
                let step_us = step.num_microseconds().unwrap_or(i64::MAX).max(1);
                let behind_us = (now - tick).num_microseconds().unwrap_or(i64::MAX).max(0);
                let steps = behind_us / step_us + 1;
                Ok(tick + TimeDelta::microseconds(step_us.saturating_mul(steps)))
            }
        }
    }
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What to do when ticks were missed (no leader ran, or the schedule was paused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MissedTicks {
    /// Enqueue one job for all the missed ticks, then continue with the next tick. The default.
    #[default]
    CatchUpOnce,
    /// Enqueue nothing for missed ticks; continue with the next tick.
    Skip,
}

type MakeJob = Arc<dyn Fn() -> Result<InsertParams> + Send + Sync>;

/// A named, durable schedule that enqueues a job at every tick.
///
/// # Examples
///
/// ```
/// use pgmill::{JobArgs, PeriodicJob, Schedule};
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Report;
/// # impl JobArgs for Report { const KIND: &'static str = "report"; }
/// let nightly = PeriodicJob::new("nightly_report", Schedule::cron("0 3 * * *").unwrap(), || Report)
///     .unwrap()
///     .run_on_start(false);
/// assert_eq!(nightly.name(), "nightly_report");
/// ```
#[derive(Clone)]
pub struct PeriodicJob {
    name: String,
    schedule: Schedule,
    make: MakeJob,
    missed: MissedTicks,
    run_on_start: bool,
}

impl PeriodicJob {
    /// A periodic job enqueueing `make()` with its kind's insert options at every tick.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for a bad name.
    pub fn new<A: JobArgs>(
        name: impl Into<String>,
        schedule: Schedule,
        make: impl Fn() -> A + Send + Sync + 'static,
    ) -> Result<Self> {
        Self::with_opts(name, schedule, InsertOpts::new(), make)
    }

    /// Like [`PeriodicJob::new`], with insert options.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for a bad name.
    pub fn with_opts<A: JobArgs>(
        name: impl Into<String>,
        schedule: Schedule,
        opts: InsertOpts,
        make: impl Fn() -> A + Send + Sync + 'static,
    ) -> Result<Self> {
        let name = name.into();
        validate_name("periodic job", &name)?;
        Ok(PeriodicJob {
            name,
            schedule,
            make: Arc::new(move || InsertParams::from_args(&make(), Some(opts.clone()))),
            missed: MissedTicks::default(),
            run_on_start: false,
        })
    }

    /// Sets what happens to missed ticks.
    pub fn missed_ticks(mut self, missed: MissedTicks) -> Self {
        self.missed = missed;
        self
    }

    /// Enqueues a job as soon as the leader starts its periodic enqueuer, then follows the
    /// schedule.
    pub fn run_on_start(mut self, run_on_start: bool) -> Self {
        self.run_on_start = run_on_start;
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    pub(crate) fn missed(&self) -> MissedTicks {
        self.missed
    }

    pub(crate) fn runs_on_start(&self) -> bool {
        self.run_on_start
    }

    /// The job for one tick, marked as this schedule's.
    pub(crate) fn make_job(&self) -> Result<InsertParams> {
        let mut params = (self.make)()?;
        params.metadata["periodic"] = serde_json::Value::String(self.name.clone());
        Ok(params)
    }
}

impl fmt::Debug for PeriodicJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeriodicJob")
            .field("name", &self.name)
            .field("schedule", &self.schedule)
            .field("missed", &self.missed)
            .field("run_on_start", &self.run_on_start)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, h, m, s).unwrap()
    }

    #[test]
    fn intervals_step_past_now_from_the_last_tick() {
        let every = Schedule::every(Duration::from_secs(60)).unwrap();
        assert_eq!(
            every.next_after(at(10, 0, 0), at(10, 0, 0)).unwrap(),
            at(10, 1, 0)
        );
        assert_eq!(
            every.next_after(at(10, 0, 0), at(10, 5, 30)).unwrap(),
            at(10, 6, 0)
        );
        assert_eq!(every.first_after(at(10, 0, 0)).unwrap(), at(10, 1, 0));
    }

    #[test]
    fn cron_finds_the_next_occurrence_after_now() {
        let cron = Schedule::cron("*/15 * * * *").unwrap();
        assert_eq!(cron.first_after(at(10, 7, 0)).unwrap(), at(10, 15, 0));
        assert_eq!(
            cron.next_after(at(10, 15, 0), at(10, 50, 0)).unwrap(),
            at(11, 0, 0)
        );
        assert_eq!(cron.describe(), "cron */15 * * * *");
        assert!(Schedule::cron("61 * * * *").is_err());
        assert!(Schedule::every(Duration::ZERO).is_err());
    }
}
