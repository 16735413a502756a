//! How values read on the pages: timestamps, durations, counts, pretty JSON cut to a size.

use chrono::{DateTime, TimeDelta, Utc};

/// Largest pretty-printed JSON shown on a job page, in bytes.
pub(crate) const MAX_PRETTY_BYTES: usize = 64 * 1024;

/// A timestamp as `2026-05-02 10:11:12 UTC`.
pub(crate) fn timestamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A periodic schedule's next run on the wall clock of its time zone, with the zone's
/// abbreviation at that moment: `2026-03-09 02:30:00 EDT` (`... UTC` for a schedule without a
/// zone).
pub(crate) fn next_run(p: &pgmill::admin::PeriodicRow) -> String {
    format!(
        "{} {}",
        p.next_run_local().format("%Y-%m-%d %H:%M:%S"),
        p.next_run_zone_abbreviation()
    )
}

/// An optional timestamp, `—` when absent.
pub(crate) fn maybe_timestamp(t: Option<DateTime<Utc>>) -> String {
    t.map_or_else(|| "—".to_owned(), timestamp)
}

/// A duration, short: `850 ms`, `12.3 s`, `4m 05s`, `3h 12m`, `2d 4h`.
pub(crate) fn duration(d: TimeDelta) -> String {
    let ms = d.num_milliseconds();
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let s = ms / 1000;
    let text = if ms < 1000 {
        format!("{ms} ms")
    } else if s < 60 {
        format!("{}.{} s", s, (ms % 1000) / 100)
    } else if s < 3600 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}d {}h", s / 86_400, (s % 86_400) / 3600)
    };
    format!("{sign}{text}")
}

/// The time from `from` to `to`, when both are known.
pub(crate) fn between(from: Option<DateTime<Utc>>, to: Option<DateTime<Utc>>) -> String {
    match (from, to) {
        (Some(a), Some(b)) => duration(b - a),
        _ => "—".to_owned(),
    }
}

/// A count with thousands separators: `1,234,567`.
pub(crate) fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// JSON pretty-printed, cut at [`MAX_PRETTY_BYTES`] (on a character boundary); the flag says
/// whether it was cut.
pub(crate) fn pretty_json(value: &serde_json::Value) -> (String, bool) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    cut(text, MAX_PRETTY_BYTES)
}

/// `text` cut to at most `max` bytes on a character boundary, and whether it was cut.
pub(crate) fn cut(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_counts_read_short() {
        assert_eq!(duration(TimeDelta::milliseconds(850)), "850 ms");
        assert_eq!(duration(TimeDelta::milliseconds(12_345)), "12.3 s");
        assert_eq!(duration(TimeDelta::seconds(245)), "4m 05s");
        assert_eq!(duration(TimeDelta::seconds(3 * 3600 + 12 * 60)), "3h 12m");
        assert_eq!(duration(TimeDelta::hours(52)), "2d 4h");
        assert_eq!(duration(TimeDelta::seconds(-5)), "-5.0 s");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(-1000), "-1,000");
    }

    #[test]
    fn json_is_cut_on_a_character_boundary() {
        let (t, cut_) = cut("ééé".to_owned(), 3);
        assert_eq!((t.as_str(), cut_), ("é", true));
        let (t, cut_) = pretty_json(&serde_json::json!({"a": 1}));
        assert_eq!((t.as_str(), cut_), ("{\n  \"a\": 1\n}", false));
        let big = serde_json::json!({"s": "x".repeat(MAX_PRETTY_BYTES)});
        let (t, cut_) = pretty_json(&big);
        assert!(cut_ && t.len() <= MAX_PRETTY_BYTES);
    }
}
