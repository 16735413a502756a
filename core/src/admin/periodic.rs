//! Periodic schedules as operators see them.

use std::str::FromStr;

use chrono::{DateTime, FixedOffset, Offset, TimeZone, Utc};

use crate::job::JobId;

/// A periodic job's schedule state and statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeriodicRow {
    /// The periodic job's name.
    pub name: String,
    /// Its schedule, as text: `cron <expression>`, `cron <expression> in <zone>` for a cron
    /// schedule evaluated in a time zone, or `every <duration>`.
    pub schedule: String,
    /// The IANA time zone its cron expression is evaluated in; `None` for UTC and intervals.
    pub time_zone: Option<String>,
    /// When it is due next.
    pub next_run_at: DateTime<Utc>,
    /// True while paused.
    pub paused: bool,
    /// When a job was last enqueued for it.
    pub last_run_at: Option<DateTime<Utc>>,
    /// The job last enqueued.
    pub last_job_id: Option<JobId>,
    /// When a run last completed.
    pub last_success_at: Option<DateTime<Utc>>,
    /// When a run last ended discarded or cancelled.
    pub last_failure_at: Option<DateTime<Utc>>,
    /// Jobs enqueued.
    pub run_count: i64,
    /// Runs completed.
    pub success_count: i64,
    /// Runs discarded or cancelled.
    pub failure_count: i64,
    /// Runs failed since the last success.
    pub consecutive_failures: i64,
}

impl PeriodicRow {
    /// The next run on the wall clock of the schedule's time zone, with that moment's UTC offset
    /// (`-05:00` in New York in winter, `-04:00` in summer); in UTC for a schedule without a zone
    /// (or with a zone this build's time zone database does not know).
    ///
    /// # Examples
    ///
    /// ```
    /// # fn show(row: &pgmill::admin::PeriodicRow) {
    /// let next = row.next_run_local().format("%Y-%m-%d %H:%M %:z");
    /// tracing::info!(name = %row.name, %next, "next run");
    /// # }
    /// ```
    pub fn next_run_local(&self) -> DateTime<FixedOffset> {
        in_zone(self.next_run_at, self.time_zone.as_deref())
    }

    /// The abbreviation of the schedule's zone at its next run (`EST`, `CEST`), `UTC` for a
    /// schedule without a zone.
    pub fn next_run_zone_abbreviation(&self) -> String {
        match self
            .time_zone
            .as_deref()
            .and_then(|z| chrono_tz::Tz::from_str(z).ok())
        {
            Some(tz) => tz
                .from_utc_datetime(&self.next_run_at.naive_utc())
                .format("%Z")
                .to_string(),
            None => "UTC".to_owned(),
        }
    }
}

/// `t` on the wall clock of the IANA zone `zone` (UTC when `None` or unknown).
fn in_zone(t: DateTime<Utc>, zone: Option<&str>) -> DateTime<FixedOffset> {
    match zone.and_then(|z| chrono_tz::Tz::from_str(z).ok()) {
        Some(tz) => {
            let local = tz.from_utc_datetime(&t.naive_utc());
            local.with_timezone(&local.offset().fix())
        }
        None => t.fixed_offset(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(next: DateTime<Utc>, zone: Option<&str>) -> PeriodicRow {
        PeriodicRow {
            name: "p".into(),
            schedule: "cron 30 2 * * *".into(),
            time_zone: zone.map(str::to_owned),
            next_run_at: next,
            paused: false,
            last_run_at: None,
            last_job_id: None,
            last_success_at: None,
            last_failure_at: None,
            run_count: 0,
            success_count: 0,
            failure_count: 0,
            consecutive_failures: 0,
        }
    }

    #[test]
    fn the_next_run_reads_in_the_schedule_s_zone() {
        let winter = Utc.with_ymd_and_hms(2026, 1, 10, 7, 30, 0).unwrap();
        let summer = Utc.with_ymd_and_hms(2026, 7, 10, 6, 30, 0).unwrap();
        let ny = Some("America/New_York");
        for (t, local, abbr) in [
            (winter, "2026-01-10 02:30:00 -05:00", "EST"),
            (summer, "2026-07-10 02:30:00 -04:00", "EDT"),
        ] {
            let r = row(t, ny);
            assert_eq!(r.next_run_local().format("%F %T %:z").to_string(), local);
            assert_eq!(r.next_run_local(), t, "the same instant");
            assert_eq!(r.next_run_zone_abbreviation(), abbr);
        }
        let plain = row(winter, None);
        assert_eq!(
            plain.next_run_local().format("%F %T %:z").to_string(),
            "2026-01-10 07:30:00 +00:00"
        );
        assert_eq!(plain.next_run_zone_abbreviation(), "UTC");
        let unknown = row(winter, Some("Mars/Olympus_Mons"));
        assert_eq!(unknown.next_run_local(), winter);
        assert_eq!(unknown.next_run_zone_abbreviation(), "UTC");
    }
}
