//! Log timestamps → UTC instants.
//!
//! Tendermint/CometBFT plain logs stamp lines with the machine's *local* time
//! and no zone (`I[2026-11-21|20:30:00.123]`); JSON logs (`"ts"`) and abcid
//! lines use RFC 3339 in UTC with a variable number of fraction digits. The
//! parser only checks the syntax ([`Civil`]); a [`Clock`] turns it into Unix
//! nanoseconds, applying the zone chosen with `--log-tz` to zone-less stamps.

use jiff::tz::{Offset, TimeZone};

/// A calendar date and wall-clock time as written in a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// Year, e.g. 2026.
    pub year: i16,
    /// Month, 1–12.
    pub month: i8,
    /// Day of month, 1–31.
    pub day: i8,
    /// Hour, 0–23.
    pub hour: i8,
    /// Minute, 0–59.
    pub minute: i8,
    /// Second, 0–60 (a leap second is folded into the next minute).
    pub second: i8,
    /// Nanoseconds of the second.
    pub nanos: u32,
    /// UTC offset in seconds when the stamp carries one (`Z` is 0); `None`
    /// for zone-less plain stamps, which the [`Clock`]'s zone interprets.
    pub offset: Option<i32>,
}

/// A timestamp that cannot be placed on the time line.
#[derive(Debug, thiserror::Error)]
pub enum TimeError {
    /// The date does not exist (e.g. 2026-02-30).
    #[error("invalid date {0:?}")]
    InvalidDate(Civil),
    /// Outside what Unix nanoseconds in an i64 hold (years 1678–2261).
    #[error("timestamp out of range (years 1678–2261 only): {0:?}")]
    OutOfRange(Civil),
    /// An unknown `--log-tz` value.
    #[error(
        "unknown time zone {name:?}: use an IANA name such as Europe/Berlin, `UTC`, `local` \
         or a fixed offset such as +02:00 ({reason})"
    )]
    UnknownZone {
        /// What was asked for.
        name: String,
        /// Why it was refused.
        reason: String,
    },
}

#[inline]
fn digits<const N: usize>(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b.get(..N)? {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u32::from(d);
    }
    Some(v)
}

/// Fraction digits after a `.`: returns (nanoseconds, bytes consumed).
#[inline]
fn fraction(b: &[u8]) -> Option<(u32, usize)> {
    let mut n = 0usize;
    let mut nanos = 0u32;
    while let Some(&c) = b.get(n) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if n < 9 {
            nanos = nanos * 10 + u32::from(d);
        }
        n += 1;
    }
    if n == 0 {
        return None;
    }
    for _ in n..9 {
        nanos *= 10;
    }
    Some((nanos, n))
}

#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
fn civil(
    [y, mo, d]: [u32; 3],
    [h, mi, s]: [u32; 3],
    nanos: u32,
    off: Option<i32>,
) -> Option<Civil> {
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    Some(Civil {
        year: y as i16,
        month: mo as i8,
        day: d as i8,
        hour: h as i8,
        minute: mi as i8,
        second: s as i8,
        nanos,
        offset: off,
    })
}

/// Parses Tendermint's plain stamp `2026-11-21|20:30:00.123` (exactly 23
/// bytes; a `T` or space instead of `|` is accepted too).
pub fn parse_plain(b: &[u8]) -> Option<Civil> {
    if b.len() != 23
        || b[4] != b'-'
        || b[7] != b'-'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
    {
        return None;
    }
    if !matches!(b[10], b'|' | b'T' | b' ') {
        return None;
    }
    let (nanos, used) = fraction(&b[20..])?;
    if used != 3 {
        return None;
    }
    civil(
        [
            digits::<4>(b)?,
            digits::<2>(&b[5..])?,
            digits::<2>(&b[8..])?,
        ],
        [
            digits::<2>(&b[11..])?,
            digits::<2>(&b[14..])?,
            digits::<2>(&b[17..])?,
        ],
        nanos,
        None,
    )
}

/// Parses RFC 3339 (`2026-11-21T20:30:00.123456Z`, any number of fraction
/// digits or none, `Z` or `±hh:mm`). The whole slice must be the stamp.
pub fn parse_rfc3339(b: &[u8]) -> Option<Civil> {
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0;
    if b[i] == b'.' {
        let (n, used) = fraction(&b[i + 1..])?;
        nanos = n;
        i += 1 + used;
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let h = digits::<2>(&[*h1, *h2])?;
            let m = digits::<2>(&[*m1, *m2])?;
            #[allow(clippy::cast_possible_wrap)]
            let secs = (h * 3600 + m * 60) as i32;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    civil(
        [
            digits::<4>(b)?,
            digits::<2>(&b[5..])?,
            digits::<2>(&b[8..])?,
        ],
        [
            digits::<2>(&b[11..])?,
            digits::<2>(&b[14..])?,
            digits::<2>(&b[17..])?,
        ],
        nanos,
        Some(offset),
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Turns log stamps into Unix nanoseconds (UTC).
///
/// Zone-less stamps are read in the clock's zone; the conversion is cached
/// per hour, so the cost is paid about once per hour of log.
#[derive(Debug, Clone)]
pub struct Clock {
    tz: TimeZone,
    name: String,
    /// (year, month, day, hour) → Unix seconds at the start of that local hour.
    cache: Option<((i16, i8, i8, i8), i64)>,
}

impl Clock {
    /// A clock for zone-less stamps in `zone`: an IANA name, `UTC`, `local`
    /// (the machine's zone) or a fixed offset like `+02:00`. `None` means local.
    pub fn new(zone: Option<&str>) -> Result<Self, TimeError> {
        let (tz, name) = match zone {
            None | Some("local") => {
                let tz = TimeZone::system();
                let name = tz
                    .iana_name()
                    .unwrap_or("system zone (unnamed)")
                    .to_string();
                (tz, format!("{name} (this machine's local zone)"))
            }
            Some(z) if z.eq_ignore_ascii_case("utc") || z == "Z" => {
                (TimeZone::UTC, "UTC".to_string())
            }
            Some(z) if z.starts_with('+') || z.starts_with('-') => {
                let unknown = |reason: String| TimeError::UnknownZone {
                    name: z.to_string(),
                    reason,
                };
                let off =
                    parse_offset(z).ok_or_else(|| unknown("not a valid offset".to_string()))?;
                let offset = Offset::from_seconds(off).map_err(|e| unknown(e.to_string()))?;
                (TimeZone::fixed(offset), z.to_string())
            }
            Some(z) => {
                let tz = TimeZone::get(z).map_err(|e| TimeError::UnknownZone {
                    name: z.to_string(),
                    reason: e.to_string(),
                })?;
                (tz, z.to_string())
            }
        };
        Ok(Self {
            tz,
            name,
            cache: None,
        })
    }

    /// A UTC clock (zone-less stamps are taken as UTC).
    pub fn utc() -> Self {
        Self {
            tz: TimeZone::UTC,
            name: "UTC".to_string(),
            cache: None,
        }
    }

    /// The zone's name as shown to the user.
    pub fn zone_name(&self) -> &str {
        &self.name
    }

    /// Unix nanoseconds of a stamp.
    pub fn unix_nanos(&mut self, c: &Civil) -> Result<i64, TimeError> {
        let (y, m, d) = (i64::from(c.year), i64::from(c.month), i64::from(c.day));
        if d > days_in_month(y, m) {
            return Err(TimeError::InvalidDate(*c));
        }
        let within_hour = i64::from(c.minute) * 60 + i64::from(c.second);
        let hour_start = match c.offset {
            Some(off) => {
                days_from_civil(y, m, d) * 86_400 + i64::from(c.hour) * 3600 - i64::from(off)
            }
            None => {
                let key = (c.year, c.month, c.day, c.hour);
                match self.cache {
                    Some((k, v)) if k == key => v,
                    _ => {
                        let dt =
                            jiff::civil::DateTime::new(c.year, c.month, c.day, c.hour, 0, 0, 0)
                                .map_err(|_| TimeError::InvalidDate(*c))?;
                        let ts = self
                            .tz
                            .to_ambiguous_timestamp(dt)
                            .compatible()
                            .map_err(|_| TimeError::InvalidDate(*c))?;
                        let v = ts.as_second();
                        self.cache = Some((key, v));
                        v
                    }
                }
            }
        };
        (hour_start + within_hour)
            .checked_mul(1_000_000_000)
            .and_then(|n| n.checked_add(i64::from(c.nanos)))
            .ok_or(TimeError::OutOfRange(*c))
    }
}

fn parse_offset(z: &str) -> Option<i32> {
    let b = z.as_bytes();
    let (sign, rest) = match b.first()? {
        b'+' => (1, &b[1..]),
        b'-' => (-1, &b[1..]),
        _ => return None,
    };
    let (h, m) = match rest {
        [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => {
            (digits::<2>(&[*h1, *h2])?, digits::<2>(&[*m1, *m2])?)
        }
        [h1, h2] => (digits::<2>(&[*h1, *h2])?, 0),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    #[allow(clippy::cast_possible_wrap)]
    Some(sign * (h * 3600 + m * 60) as i32)
}

/// Formats Unix nanoseconds as RFC 3339 UTC with milliseconds.
pub fn format_utc(nanos: i64) -> String {
    match jiff::Timestamp::from_nanosecond(i128::from(nanos)) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => format!("{nanos}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_stamp_in_utc_and_in_a_zone() {
        let c = parse_plain(b"2026-11-21|20:30:00.123").expect("valid stamp");
        assert_eq!(c.offset, None);
        let utc = Clock::utc().unix_nanos(&c).expect("converts");
        // jiff as the reference implementation.
        let want: jiff::Timestamp = "2026-11-21T20:30:00.123Z".parse().expect("reference");
        assert_eq!(i128::from(utc), want.as_nanosecond());
        let mut berlin = Clock::new(Some("Europe/Berlin")).expect("zone exists");
        let b = berlin.unix_nanos(&c).expect("converts");
        assert_eq!(utc - b, 3600 * 1_000_000_000, "Berlin is UTC+1 in November");
        let mut fixed = Clock::new(Some("-05:30")).expect("offset");
        assert_eq!(
            fixed.unix_nanos(&c).expect("converts") - utc,
            5 * 3600 * 1_000_000_000 + 1_800_000_000_000
        );
    }

    #[test]
    fn zone_cache_follows_dst() {
        let mut berlin = Clock::new(Some("Europe/Berlin")).expect("zone exists");
        let summer = parse_plain(b"2026-07-01|12:00:00.000").expect("valid");
        let winter = parse_plain(b"2026-01-01|12:00:00.000").expect("valid");
        for (c, utc) in [
            (summer, "2026-07-01T10:00:00Z"),
            (winter, "2026-01-01T11:00:00Z"),
            (summer, "2026-07-01T10:00:00Z"),
        ] {
            let want: jiff::Timestamp = utc.parse().expect("reference");
            assert_eq!(
                i128::from(berlin.unix_nanos(&c).expect("converts")),
                want.as_nanosecond()
            );
        }
    }

    #[test]
    fn rfc3339_variable_fraction_and_offsets() {
        for s in [
            "2026-11-21T20:32:45.499683827Z",
            "2026-11-21T20:32:45.4996838Z",
            "2026-11-21T20:32:45.4Z",
            "2026-11-21T20:32:45Z",
            "2026-11-21T21:32:45.25+01:00",
            "2026-11-21T15:02:45.25-05:30",
            "2024-02-29T23:59:59.999999999Z",
        ] {
            let c = parse_rfc3339(s.as_bytes()).unwrap_or_else(|| panic!("parses {s}"));
            let want: jiff::Timestamp = s.parse().expect("reference");
            assert_eq!(
                i128::from(Clock::utc().unix_nanos(&c).expect("converts")),
                want.as_nanosecond(),
                "{s}"
            );
        }
    }

    #[test]
    fn rejects_bad_stamps() {
        for s in [
            "2026-11-21|20:30:00.12",
            "2026-13-21|20:30:00.123",
            "2026-11-21|25:30:00.123",
            "2026-11-2x|20:30:00.123",
            "",
        ] {
            assert!(parse_plain(s.as_bytes()).is_none(), "{s}");
        }
        for s in [
            "2026-11-21T20:32:45.Z",
            "2026-11-21T20:32:45",
            "2026-11-21T20:32:45+0100x",
            "x",
        ] {
            assert!(parse_rfc3339(s.as_bytes()).is_none(), "{s}");
        }
        // Found by the fuzzer: a year whose nanoseconds overflow an i64.
        let old = parse_plain(b"1013-11-21|20:31:31.168").expect("syntax ok");
        assert!(matches!(
            Clock::utc().unix_nanos(&old),
            Err(TimeError::OutOfRange(_))
        ));
        assert!(matches!(
            Clock::new(Some("Europe/Berlin"))
                .expect("zone")
                .unix_nanos(&old),
            Err(TimeError::OutOfRange(_))
        ));
        let far = parse_rfc3339(b"9999-12-31T23:59:59Z").expect("syntax ok");
        assert!(Clock::utc().unix_nanos(&far).is_err());
        let feb30 = parse_plain(b"2026-02-30|00:00:00.000").expect("syntax ok");
        assert!(Clock::utc().unix_nanos(&feb30).is_err());
        assert!(Clock::new(Some("Mars/Olympus")).is_err());
        assert!(Clock::new(Some("+25:00")).is_err());
    }
}
