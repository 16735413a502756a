//! Periodic jobs: a named schedule (cron expression, in UTC or a named time zone, or fixed
//! interval) whose ticks the leader enqueues as jobs.
//!
//! Schedules are durable: each lives in `pgmill_periodic` with its next run time, so restarts and
//! leader changes neither lose nor repeat ticks. The leader enqueues a due tick's job in the same
//! transaction that advances `next_run_at`, guarded by the tick being advanced, so a tick is
//! enqueued at most once even when leadership changes mid-tick. Times are computed from the
//! database clock.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;

use crate::error::{Error, Result};
use crate::ident::validate_name;
use crate::job_args::{InsertOpts, InsertParams, JobArgs};

/// When a periodic job runs: a cron expression in UTC or in a named time zone, or a fixed
/// interval.
///
/// # Time zones and daylight saving
///
/// A cron expression is evaluated in UTC ([`Schedule::cron`]) or in a named IANA time zone
/// ([`Schedule::cron_in`]), whose wall clock it then follows across daylight-saving changes. On
/// the days the clock jumps, what runs follows the Open Cron Pattern Specification (as the
/// `croner` crate evaluates it), and depends on whether the expression names one fixed time of day
/// (a single second, minute and hour, such as `30 2 * * *`) or not (`*/15 * * * *`,
/// `0,30 2 * * *`, `0 * * * *`):
///
/// | | fixed time of day | any other expression |
/// |---|---|---|
/// | **skipped hour** (spring forward: 02:00 becomes 03:00) | runs once, at the first instant after the gap: a `30 2 * * *` job runs at 03:00 that day | the times inside the gap do not run |
/// | **repeated hour** (fall back: 02:00 becomes 01:00) | runs once, at the first occurrence: a `30 1 * * *` job runs at 01:30 before the change, not again after it | runs at each matching time of both passes: `*/30 * * * *` runs at 01:00 and 01:30 twice |
///
/// A fixed interval ([`Schedule::every`]) counts elapsed time and has no time zone.
#[derive(Clone)]
pub struct Schedule(Timing);

#[derive(Clone)]
enum Timing {
    Cron {
        cron: Arc<croner::Cron>,
        expr: String,
        /// `None`: UTC.
        zone: Option<Tz>,
    },
    Every(Duration),
}

impl Schedule {
    /// Parses a cron expression (5 fields, or 6 with seconds first), evaluated in UTC.
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
        Ok(Schedule(Timing::Cron {
            cron: Arc::new(parse_cron(expr)?),
            expr: expr.to_owned(),
            zone: None,
        }))
    }

    /// Parses a cron expression evaluated on the wall clock of the IANA time zone `zone` (such as
    /// `"Europe/Berlin"` or `"America/New_York"`), daylight saving included: `0 9 * * MON-FRI`
    /// in `"Europe/Berlin"` runs at 09:00 Berlin time all year, 08:00 UTC in summer and 07:00 UTC
    /// in winter. What runs in the hour skipped or repeated when the clock changes is described
    /// at [`Schedule`].
    ///
    /// Until every client of the schema runs a version that knows time zones (schema version
    /// 9), clients of older versions leave a zoned schedule alone: they never enqueue it, and
    /// their own definition of it does not replace it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for an invalid expression or a zone the IANA database does not
    /// name (names are case-sensitive).
    ///
    /// # Examples
    ///
    /// ```
    /// use pgmill::Schedule;
    ///
    /// let standup = Schedule::cron_in("0 9 * * MON-FRI", "Europe/Berlin").unwrap();
    /// assert_eq!(standup.time_zone(), Some("Europe/Berlin"));
    /// assert!(Schedule::cron_in("0 9 * * *", "Europe/Berln").is_err());
    /// ```
    pub fn cron_in(expr: &str, zone: &str) -> Result<Self> {
        let tz = Tz::from_str(zone).map_err(|_| {
            Error::InvalidConfig(format!(
                "unknown time zone {zone:?}: give an IANA time zone name such as \"Europe/Berlin\""
            ))
        })?;
        Ok(Schedule(Timing::Cron {
            cron: Arc::new(parse_cron(expr)?),
            expr: expr.to_owned(),
            zone: Some(tz),
        }))
    }

    /// A fixed interval, counted from the first run.
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
        Ok(Schedule(Timing::Every(interval)))
    }

    /// The IANA name of the time zone a cron schedule is evaluated in; `None` for UTC (the
    /// default) and for intervals.
    pub fn time_zone(&self) -> Option<&'static str> {
        match &self.0 {
            Timing::Cron { zone, .. } => zone.map(|tz| tz.name()),
            Timing::Every(_) => None,
        }
    }

    /// The schedule as stored in `pgmill_periodic.schedule`: `cron <expr>`, `cron <expr> in
    /// <zone>` or `every <duration>`.
    pub fn describe(&self) -> String {
        match &self.0 {
            Timing::Cron {
                expr, zone: None, ..
            } => format!("cron {expr}"),
            Timing::Cron {
                expr,
                zone: Some(tz),
                ..
            } => format!("cron {expr} in {}", tz.name()),
            Timing::Every(d) => format!("every {d:?}"),
        }
    }

    /// The first run after `now` for a schedule registered at `now`.
    pub(crate) fn first_after(&self, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        match &self.0 {
            Timing::Cron { .. } => self.cron_search(now, false, true),
            Timing::Every(d) => Ok(now + TimeDelta::from_std(*d).unwrap_or(TimeDelta::MAX)),
        }
    }

    /// The first tick after `now`, following the tick at `tick`.
    pub(crate) fn next_after(
        &self,
        tick: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>> {
        match &self.0 {
            Timing::Cron { .. } => self.first_after(now.max(tick)),
            Timing::Every(d) => {
                let step_us = step_micros(*d);
                let behind_us = (now - tick).num_microseconds().unwrap_or(i64::MAX).max(0);
                let steps = behind_us / step_us + 1;
                Ok(tick + TimeDelta::microseconds(step_us.saturating_mul(steps)))
            }
        }
    }

    /// The ticks due by `now`, starting with the due tick `tick`: `tick` and every tick of the
    /// schedule after it up to `now` included, the latest `max` of them, oldest first. Also says
    /// whether older ticks were left out.
    pub(crate) fn due_ticks(
        &self,
        tick: DateTime<Utc>,
        now: DateTime<Utc>,
        max: NonZeroU32,
    ) -> Result<(Vec<DateTime<Utc>>, bool)> {
        let max = max.get() as usize;
        let mut ticks = Vec::new();
        let mut left_out = false;
        match &self.0 {
            Timing::Every(d) => {
                let step_us = step_micros(*d);
                let behind_us = (now - tick).num_microseconds().unwrap_or(i64::MAX).max(0);
                let after = usize::try_from(behind_us / step_us).unwrap_or(usize::MAX);
                let taken = after.saturating_add(1).min(max);
                left_out = taken <= after;
                let first = after + 1 - taken;
                for k in first..=after {
                    let k = i64::try_from(k).unwrap_or(i64::MAX);
                    ticks.push(tick + TimeDelta::microseconds(step_us.saturating_mul(k)));
                }
            }
            Timing::Cron { .. } => {
                // Walk back from `now`: the latest ticks are the ones kept.
                let mut at = now;
                let mut inclusive = true;
                loop {
                    let t = match self.cron_search(at, inclusive, false) {
                        Ok(t) => t,
                        // Nothing earlier within the search's range: no more ticks.
                        Err(_) => break,
                    };
                    if t <= tick {
                        break;
                    }
                    if ticks.len() == max {
                        left_out = true;
                        break;
                    }
                    ticks.push(t);
                    (at, inclusive) = (t, false);
                }
                if ticks.len() < max {
                    ticks.push(tick);
                } else {
                    left_out = true;
                }
                ticks.reverse();
            }
        }
        Ok((ticks, left_out))
    }

    /// The cron occurrence after (`forward`) or before `from` (or at it, when `inclusive`), on the
    /// schedule's wall clock.
    fn cron_search(
        &self,
        from: DateTime<Utc>,
        inclusive: bool,
        forward: bool,
    ) -> Result<DateTime<Utc>> {
        let Timing::Cron { cron, expr, zone } = &self.0 else {
            return Err(Error::InvalidConfig("not a cron schedule".into()));
        };
        let found = match zone {
            None if forward => cron.find_next_occurrence(&from, inclusive),
            None => cron.find_previous_occurrence(&from, inclusive),
            Some(tz) => {
                let local = from.with_timezone(tz);
                if forward {
                    cron.find_next_occurrence(&local, inclusive)
                } else {
                    cron.find_previous_occurrence(&local, inclusive)
                }
                .map(|t| t.with_timezone(&Utc))
            }
        };
        found.map_err(|e| Error::InvalidConfig(format!("cron expression {expr:?}: {e}")))
    }
}

fn parse_cron(expr: &str) -> Result<croner::Cron> {
    croner::Cron::from_str(expr)
        .map_err(|e| Error::InvalidConfig(format!("cron expression {expr:?}: {e}")))
}

/// An interval in microseconds, at least 1.
fn step_micros(d: Duration) -> i64 {
    TimeDelta::from_std(d)
        .unwrap_or(TimeDelta::MAX)
        .num_microseconds()
        .unwrap_or(i64::MAX)
        .max(1)
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What to do when ticks were missed (no leader ran, or the schedule was paused).
///
/// Whatever the policy, the jobs of a due tick are inserted in the transaction that advances the
/// schedule past it, so each tick is enqueued at most once, also across changes of leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MissedTicks {
    /// Enqueue one job for all the missed ticks, then continue with the next tick. The default.
    #[default]
    CatchUpOnce,
    /// Enqueue nothing for missed ticks; continue with the next tick.
    Skip,
    /// Enqueue one job for each missed tick, oldest first, but no more than the latest `max` of
    /// them (older ones are dropped), then continue with the next tick. They are inserted in one
    /// transaction, so keep `max` to what one insert should carry. Each job's metadata says
    /// which tick it stands for (`periodic_tick`).
    ///
    /// ```
    /// use std::num::NonZeroU32;
    /// use pgmill::MissedTicks;
    ///
    /// // After an outage, one job for each missed hour of the last day at most.
    /// let policy = MissedTicks::CatchUpEach { max: NonZeroU32::new(24).unwrap() };
    /// # let _ = policy;
    /// ```
    CatchUpEach {
        /// The most jobs enqueued for one catch-up.
        max: NonZeroU32,
    },
}

type MakeJob = Arc<dyn Fn() -> Result<InsertParams> + Send + Sync>;

/// A named, durable schedule that enqueues a job at every tick.
///
/// Each job's metadata names its schedule (`periodic`) and the tick it was enqueued for
/// (`periodic_tick`, an RFC 3339 UTC timestamp; for one job standing for several missed ticks,
/// as [`MissedTicks::CatchUpOnce`] enqueues, the first of them).
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

    /// The job for the tick at `tick`, marked as this schedule's (`periodic`) and as that tick's
    /// (`periodic_tick`, RFC 3339 in UTC).
    pub(crate) fn make_job(&self, tick: DateTime<Utc>) -> Result<InsertParams> {
        let mut params = (self.make)()?;
        params.metadata["periodic"] = serde_json::Value::String(self.name.clone());
        params.metadata["periodic_tick"] =
            serde_json::Value::String(tick.to_rfc3339_opts(SecondsFormat::Micros, true));
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

    fn utc(mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, mo, d, h, mi, 0).unwrap()
    }

    /// The next `n` ticks after `from`, each found from the one before, as the enqueuer does.
    fn ticks(s: &Schedule, from: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = vec![s.first_after(from).unwrap()];
        while out.len() < n {
            let last = *out.last().unwrap();
            out.push(s.next_after(last, last).unwrap());
        }
        out
    }

    // New York in 2026: EST (UTC-5) until 8 March 02:00, which becomes 03:00 EDT (UTC-4); EDT
    // until 1 November 02:00, which becomes 01:00 EST again, so 01:00-02:00 comes twice.
    const NEW_YORK: &str = "America/New_York";

    #[test]
    fn a_zoned_cron_follows_the_zone_s_wall_clock() {
        let s = Schedule::cron_in("30 2 * * *", NEW_YORK).unwrap();
        // 02:30 EST is 07:30 UTC in winter; 02:30 EDT is 06:30 UTC in summer.
        assert_eq!(s.first_after(utc(1, 10, 0, 0)).unwrap(), utc(1, 10, 7, 30));
        assert_eq!(s.first_after(utc(7, 10, 0, 0)).unwrap(), utc(7, 10, 6, 30));
        let utc_cron = Schedule::cron("30 2 * * *").unwrap();
        assert_eq!(
            utc_cron.first_after(utc(1, 10, 0, 0)).unwrap(),
            utc(1, 10, 2, 30)
        );
        assert_eq!(s.time_zone(), Some(NEW_YORK));
        assert_eq!(utc_cron.time_zone(), None);
        assert_eq!(s.describe(), "cron 30 2 * * * in America/New_York");
        assert_eq!(format!("{s:?}"), "cron 30 2 * * * in America/New_York");
    }

    #[test]
    fn a_fixed_time_in_the_skipped_hour_runs_once_right_after_the_gap() {
        let s = Schedule::cron_in("30 2 * * *", NEW_YORK).unwrap();
        assert_eq!(
            ticks(&s, utc(3, 6, 12, 0), 3),
            // 02:30 EST on the 7th; on the 8th 02:30 does not exist: 03:00 EDT; then 02:30 EDT.
            [utc(3, 7, 7, 30), utc(3, 8, 7, 0), utc(3, 9, 6, 30)]
        );
        let berlin = Schedule::cron_in("30 2 * * *", "Europe/Berlin").unwrap();
        // Berlin's clock goes from 02:00 CET to 03:00 CEST on 29 March (01:00 UTC).
        assert_eq!(
            ticks(&berlin, utc(3, 28, 12, 0), 2),
            [utc(3, 29, 1, 0), utc(3, 30, 0, 30)]
        );
    }

    #[test]
    fn other_times_in_the_skipped_hour_do_not_run() {
        // Two times in the hour: not a fixed time, so neither runs on the 8th.
        let s = Schedule::cron_in("0,30 2 * * *", NEW_YORK).unwrap();
        assert_eq!(
            ticks(&s, utc(3, 7, 12, 0), 2),
            [utc(3, 9, 6, 0), utc(3, 9, 6, 30)]
        );
        let half_hourly = Schedule::cron_in("*/30 * * * *", NEW_YORK).unwrap();
        assert_eq!(
            ticks(&half_hourly, utc(3, 8, 6, 0), 3),
            // 01:30 EST, then 03:00 EDT: 02:00 and 02:30 never happen.
            [utc(3, 8, 6, 30), utc(3, 8, 7, 0), utc(3, 8, 7, 30)]
        );
    }

    #[test]
    fn a_fixed_time_in_the_repeated_hour_runs_once_at_its_first_occurrence() {
        let s = Schedule::cron_in("30 1 * * *", NEW_YORK).unwrap();
        assert_eq!(
            ticks(&s, utc(10, 31, 12, 0), 2),
            // 01:30 EDT (05:30 UTC) on the 1st, not 01:30 EST (06:30 UTC); then 01:30 EST.
            [utc(11, 1, 5, 30), utc(11, 2, 6, 30)]
        );
        let berlin = Schedule::cron_in("30 2 * * *", "Europe/Berlin").unwrap();
        // Berlin's clock goes from 03:00 CEST back to 02:00 CET on 25 October (01:00 UTC).
        assert_eq!(
            ticks(&berlin, utc(10, 24, 12, 0), 2),
            [utc(10, 25, 0, 30), utc(10, 26, 1, 30)]
        );
    }

    #[test]
    fn other_times_in_the_repeated_hour_run_in_both_passes() {
        let s = Schedule::cron_in("*/30 * * * *", NEW_YORK).unwrap();
        assert_eq!(
            ticks(&s, utc(11, 1, 4, 45), 5),
            // 01:00 and 01:30 EDT, then 01:00 and 01:30 EST, then 02:00 EST.
            [
                utc(11, 1, 5, 0),
                utc(11, 1, 5, 30),
                utc(11, 1, 6, 0),
                utc(11, 1, 6, 30),
                utc(11, 1, 7, 0)
            ]
        );
    }

    #[test]
    fn an_unknown_time_zone_is_an_error_at_build() {
        for zone in ["Europe/Berln", "europe/berlin", "", "UTC+2"] {
            let e = Schedule::cron_in("0 3 * * *", zone).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidConfig(m) if m.contains("unknown time zone")),
                "{zone:?}: {e}"
            );
        }
        assert!(Schedule::cron_in("61 * * * *", NEW_YORK).is_err());
        assert!(Schedule::cron_in("0 3 * * *", "Asia/Kathmandu").is_ok());
    }

    fn n(max: u32) -> NonZeroU32 {
        NonZeroU32::new(max).unwrap()
    }

    #[test]
    fn due_ticks_are_the_latest_up_to_the_bound_oldest_first() {
        let every = Schedule::every(Duration::from_secs(60)).unwrap();
        // Due at 10:00, now 10:05:30: ticks at 10:00 to 10:05.
        let all: Vec<_> = (0..6).map(|m| at(10, m, 0)).collect();
        assert_eq!(
            every.due_ticks(at(10, 0, 0), at(10, 5, 30), n(10)).unwrap(),
            (all.clone(), false)
        );
        assert_eq!(
            every.due_ticks(at(10, 0, 0), at(10, 5, 30), n(3)).unwrap(),
            (all[3..].to_vec(), true)
        );
        assert_eq!(
            every.due_ticks(at(10, 0, 0), at(10, 0, 0), n(3)).unwrap(),
            (vec![at(10, 0, 0)], false)
        );
        let cron = Schedule::cron("*/15 * * * *").unwrap();
        assert_eq!(
            cron.due_ticks(at(10, 0, 0), at(10, 50, 0), n(10)).unwrap(),
            (
                vec![at(10, 0, 0), at(10, 15, 0), at(10, 30, 0), at(10, 45, 0)],
                false
            )
        );
        assert_eq!(
            cron.due_ticks(at(10, 0, 0), at(10, 45, 0), n(2)).unwrap(),
            (vec![at(10, 30, 0), at(10, 45, 0)], true)
        );
        // The bound reached by the ticks after the due one: the due one is left out.
        assert_eq!(
            cron.due_ticks(at(10, 0, 0), at(10, 30, 0), n(2)).unwrap(),
            (vec![at(10, 15, 0), at(10, 30, 0)], true)
        );
        // Exactly the bound: nothing left out.
        assert_eq!(
            cron.due_ticks(at(10, 0, 0), at(10, 20, 0), n(2)).unwrap(),
            (vec![at(10, 0, 0), at(10, 15, 0)], false)
        );
        // A due tick that is no cron tick (run on start) counts as one.
        assert_eq!(
            cron.due_ticks(at(10, 7, 0), at(10, 20, 0), n(5)).unwrap(),
            (vec![at(10, 7, 0), at(10, 15, 0)], false)
        );
    }

    #[test]
    fn due_ticks_of_a_zoned_cron_follow_its_wall_clock_across_both_changes() {
        let hourly = Schedule::cron_in("0 * * * *", NEW_YORK).unwrap();
        // Spring forward: 00:00, 01:00 EST, then 03:00 EDT; there is no 02:00.
        assert_eq!(
            hourly
                .due_ticks(utc(3, 8, 5, 0), utc(3, 8, 7, 10), n(10))
                .unwrap(),
            (
                vec![utc(3, 8, 5, 0), utc(3, 8, 6, 0), utc(3, 8, 7, 0)],
                false
            )
        );
        // Fall back: 01:00 EDT, 01:00 EST, 02:00 EST.
        assert_eq!(
            hourly
                .due_ticks(utc(11, 1, 5, 0), utc(11, 1, 7, 0), n(10))
                .unwrap(),
            (
                vec![utc(11, 1, 5, 0), utc(11, 1, 6, 0), utc(11, 1, 7, 0)],
                false
            )
        );
        let fixed = Schedule::cron_in("30 1 * * *", NEW_YORK).unwrap();
        // Two days missed over the fall-back day: the repeated 01:30 counts once.
        assert_eq!(
            fixed
                .due_ticks(utc(10, 31, 5, 30), utc(11, 2, 12, 0), n(10))
                .unwrap(),
            (
                vec![utc(10, 31, 5, 30), utc(11, 1, 5, 30), utc(11, 2, 6, 30)],
                false
            )
        );
    }
}
