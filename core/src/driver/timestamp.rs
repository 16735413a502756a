//! `timestamptz` values in Postgres's binary format, for every driver.
//!
//! Postgres sends a `timestamptz` as microseconds since 2000-01-01 00:00:00 UTC, a big-endian
//! `i64`; `infinity` and `-infinity` are that type's largest and smallest values. [`from_binary`]
//! reads one as a UTC time with a single offset from the Unix epoch, where the libraries' own
//! decoders build the year 2000 from its calendar date and add a duration to it for every value
//! (about twice the work; a claim reads two per job).

use chrono::{DateTime, Utc};

/// The size of a `timestamptz` in Postgres's binary format.
pub const BINARY_LEN: usize = 8;

/// Microseconds from the Unix epoch to Postgres's, 2000-01-01 00:00:00 UTC.
const POSTGRES_EPOCH_UNIX_MICROS: i64 = 946_684_800_000_000;

/// The time of a `timestamptz` in the binary format.
///
/// # Errors
///
/// A message when `raw` is not [`BINARY_LEN`] bytes long, or the value is out of range for a
/// UTC time (`infinity` and `-infinity` among them).
pub fn from_binary(raw: &[u8]) -> Result<DateTime<Utc>, String> {
    let raw: [u8; BINARY_LEN] = raw
        .try_into()
        .map_err(|_| format!("timestamptz has {} bytes, expected {BINARY_LEN}", raw.len()))?;
    let micros = i64::from_be_bytes(raw);
    micros
        .checked_add(POSTGRES_EPOCH_UNIX_MICROS)
        .and_then(DateTime::from_timestamp_micros)
        .ok_or_else(|| match micros {
            i64::MAX => "timestamptz 'infinity' has no UTC time".to_owned(),
            i64::MIN => "timestamptz '-infinity' has no UTC time".to_owned(),
            _ => format!("timestamptz of {micros} µs since 2000 is out of range"),
        })
}

#[cfg(test)]
mod tests {
    use chrono::{TimeDelta, TimeZone};

    use super::*;

    fn raw(micros: i64) -> [u8; BINARY_LEN] {
        micros.to_be_bytes()
    }

    #[test]
    fn times_count_microseconds_from_the_year_2000() {
        let epoch = Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).unwrap();
        for micros in [
            0,
            1,
            -1,
            86_400_000_000 * 366 + 7,
            -946_684_800_000_000,
            123_456_789,
        ] {
            assert_eq!(
                from_binary(&raw(micros)).unwrap(),
                epoch + TimeDelta::microseconds(micros),
                "{micros}"
            );
        }
        assert_eq!(
            from_binary(&raw(-946_684_800_000_000)).unwrap(),
            DateTime::UNIX_EPOCH
        );
    }

    #[test]
    fn infinities_wrong_lengths_and_out_of_range_times_are_refused() {
        assert!(
            from_binary(&raw(i64::MAX))
                .unwrap_err()
                .contains("'infinity'")
        );
        assert!(
            from_binary(&raw(i64::MIN))
                .unwrap_err()
                .contains("'-infinity'")
        );
        assert!(from_binary(&raw(i64::MAX - 1)).is_err());
        assert!(from_binary(&[0; 7]).unwrap_err().contains("7 bytes"));
        assert!(from_binary(&[0; 9]).is_err());
    }
}
