//! `interval` values as durations, for every driver.
//!
//! Postgres stores an interval as months, days and microseconds. pgmill binds a duration as
//! microseconds only (0 months, 0 days; below a microsecond it truncates, as Postgres does), and
//! reads one back with a day counted as 24 hours. Months have no fixed length, so an interval with
//! months is refused; core's SQL never produces one. [`to_binary`] and [`from_binary`] are the
//! wire format, for libraries without an interval type of their own.

use chrono::TimeDelta;

/// The size of an interval in Postgres's binary format.
pub const BINARY_LEN: usize = 16;

/// The months, days and microseconds a duration binds as: `(0, 0, all of it)`.
///
/// # Errors
///
/// A message when the duration does not fit in 64-bit microseconds.
pub fn to_parts(d: TimeDelta) -> Result<(i32, i32, i64), String> {
    Ok((0, 0, to_micros(d)?))
}

fn to_micros(d: TimeDelta) -> Result<i64, String> {
    d.num_microseconds()
        .ok_or_else(|| format!("interval {d} does not fit in 64-bit microseconds"))
}

/// The duration of an interval of `months`, `days` and `micros`, as Postgres stores it.
///
/// # Errors
///
/// A message when the interval has months, or is out of range for a duration.
pub fn from_parts(months: i32, days: i32, micros: i64) -> Result<TimeDelta, String> {
    if months != 0 {
        return Err(format!(
            "an interval of {months} months has no fixed duration; cast it to days or seconds in SQL"
        ));
    }
    TimeDelta::try_days(i64::from(days))
        .and_then(|days| days.checked_add(&TimeDelta::microseconds(micros)))
        .ok_or_else(|| "interval out of range for a duration".to_owned())
}

/// A duration in the binary format: microseconds (`i64`), days (`i32`), months (`i32`), each
/// big-endian.
///
/// # Errors
///
/// As [`to_parts`].
pub fn to_binary(d: TimeDelta) -> Result<[u8; BINARY_LEN], String> {
    let (months, days, micros) = to_parts(d)?;
    let mut out = [0; BINARY_LEN];
    out[..8].copy_from_slice(&micros.to_be_bytes());
    out[8..12].copy_from_slice(&days.to_be_bytes());
    out[12..].copy_from_slice(&months.to_be_bytes());
    Ok(out)
}

/// The duration of an interval in the binary format.
///
/// # Errors
///
/// A message when `raw` is not [`BINARY_LEN`] bytes long, or as [`from_parts`].
pub fn from_binary(raw: &[u8]) -> Result<TimeDelta, String> {
    let raw: &[u8; BINARY_LEN] = raw
        .try_into()
        .map_err(|_| format!("interval has {} bytes, expected {BINARY_LEN}", raw.len()))?;
    let (micros, rest) = raw.split_at(8);
    let (days, months) = rest.split_at(4);
    let int = |b: &[u8]| i32::from_be_bytes(b.try_into().expect("four bytes"));
    let micros = i64::from_be_bytes(micros.try_into().expect("eight bytes"));
    from_parts(int(months), int(days), micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_through_the_binary_format() {
        for d in [
            TimeDelta::zero(),
            TimeDelta::microseconds(1),
            TimeDelta::seconds(-90),
            TimeDelta::days(40) + TimeDelta::microseconds(7),
        ] {
            let raw = to_binary(d).unwrap();
            assert_eq!(raw[8..], [0; 8], "no days or months");
            assert_eq!(from_binary(&raw).unwrap(), d);
        }
    }

    #[test]
    fn days_count_as_24_hours_and_months_are_refused() {
        assert_eq!(
            from_parts(0, 2, -1).unwrap(),
            TimeDelta::days(2) - TimeDelta::microseconds(1)
        );
        assert!(from_parts(1, 0, 0).is_err());
        let mut raw = [0; BINARY_LEN];
        raw[7] = 5;
        raw[11] = 2;
        assert_eq!(
            from_binary(&raw).unwrap(),
            TimeDelta::days(2) + TimeDelta::microseconds(5)
        );
        raw[15] = 1;
        assert!(from_binary(&raw).is_err());
        assert!(from_binary(&raw[..15]).is_err());
    }

    #[test]
    fn durations_beyond_64_bit_microseconds_are_refused() {
        assert!(to_parts(TimeDelta::MAX).is_err());
        assert_eq!(to_parts(TimeDelta::seconds(90)), Ok((0, 0, 90_000_000)));
    }
}
