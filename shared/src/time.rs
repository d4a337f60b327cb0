//! Timestamps as RFC 3339 UTC text, without a calendar library: the bundle
//! records when it was made, and `SOURCE_DATE_EPOCH` fixes that time so two
//! runs on the same inputs give the same bytes.

use std::time::{SystemTime, UNIX_EPOCH};

/// The time to record: `SOURCE_DATE_EPOCH` when set to a number, else now.
pub fn build_time_unix() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        })
}

/// `2026-12-03T08:19:47Z` for a Unix time.
pub fn rfc3339_utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// The Unix time of `2026-12-03T08:19:47Z`: exactly the shape
/// [`rfc3339_utc`] writes (UTC, `Z`, whole seconds), else `None`. Times a
/// bundle states are compared with the clock, so anything looser is refused
/// rather than guessed at.
pub fn parse_rfc3339_utc(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&mo) || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let days = days_from_civil(y as i64, mo as u32, d as u32)?;
    let unix = days as u64 * 86_400 + h * 3600 + mi * 60 + sec;
    // Round-trip to refuse day 31 of a 30-day month and the like.
    (rfc3339_utc(unix) == s).then_some(unix)
}

/// Howard Hinnant's civil-to-days algorithm (proleptic Gregorian), for
/// dates from 1970 on.
fn days_from_civil(y: i64, m: u32, d: u32) -> Option<i64> {
    if !(1..=31).contains(&d) {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (days >= 0).then_some(days)
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_796_285_987), "2026-12-03T08:19:47Z");
    }

    #[test]
    fn parses_what_it_writes_and_nothing_looser() {
        for t in [0, 951_782_400, 1_796_285_987, 253_402_300_799] {
            assert_eq!(parse_rfc3339_utc(&rfc3339_utc(t)), Some(t));
        }
        for bad in [
            "",
            "2026-12-03",
            "2026-12-03T08:19:47+00:00",
            "2026-12-03T08:19:47.5Z",
            "2026-02-30T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "2026-12-03t08:19:47z",
            "+026-12-03T08:19:47Z",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
        }
    }
}
