//! A CometBFT duration setting (`consensus.timeout_commit`), typed: written
//! in Go's duration syntax (`500ms`, `1s`, `1m30s`), checked when it is
//! parsed, so a bad value is refused on feth's command line rather than by
//! CometBFT after a devnet has been set up.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A non-negative duration in Go's syntax, as CometBFT's `config.toml`
/// takes it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct GoDuration(Duration);

/// Go's units, longest name first where one is a prefix of another.
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a duration: {why}; write it as Go does, e.g. 500ms, 1s or 1m30s")]
pub struct DurationError {
    text: String,
    why: &'static str,
}

impl GoDuration {
    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Self(Duration::from_millis(ms))
    }

    /// The duration.
    pub const fn get(self) -> Duration {
        self.0
    }
}

impl From<Duration> for GoDuration {
    fn from(d: Duration) -> Self {
        Self(d)
    }
}

impl FromStr for GoDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let refuse = |why| DurationError {
            text: text.to_string(),
            why,
        };
        if text == "0" {
            return Ok(Self(Duration::ZERO));
        }
        if text.is_empty() {
            return Err(refuse("it is empty"));
        }
        if text.starts_with('-') {
            return Err(refuse("it is negative"));
        }
        let mut nanos: u128 = 0;
        let mut rest = text.strip_prefix('+').unwrap_or(text);
        while !rest.is_empty() {
            let number_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(|| refuse("a number has no unit (ns, us, ms, s, m or h)"))?;
            let (number, after) = rest.split_at(number_len);
            let unit_len = after
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(after.len());
            let (unit, after) = after.split_at(unit_len);
            let scale = UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|(_, scale)| *scale)
                .ok_or_else(|| refuse("its unit is not one of ns, us, ms, s, m or h"))?;
            nanos = nanos
                .checked_add(scaled(number, scale).ok_or_else(|| refuse("a number is malformed"))?)
                .ok_or_else(|| refuse("it is too long"))?;
            rest = after;
        }
        let nanos = u64::try_from(nanos).map_err(|_| refuse("it is too long"))?;
        Ok(Self(Duration::from_nanos(nanos)))
    }
}

/// `number` (digits, at most one `.`) times `scale` nanoseconds, truncated.
fn scaled(number: &str, scale: u64) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut out = whole.checked_mul(u128::from(scale))?;
    let mut unit = u128::from(scale);
    for digit in fraction.chars().take(18) {
        unit /= 10;
        out = out.checked_add(u128::from(digit.to_digit(10)?) * unit)?;
    }
    Some(out)
}

impl fmt::Display for GoDuration {
    /// The shortest exact form in one unit: `1s`, `500ms`, `1500ms`, `250us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        let unit = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
            .into_iter()
            .find(|(scale, _)| nanos.is_multiple_of(*scale));
        match unit {
            _ if nanos == 0 => f.write_str("0s"),
            Some((scale, name)) => write!(f, "{}{name}", nanos / scale),
            None => write!(f, "{nanos}ns"),
        }
    }
}

impl fmt::Debug for GoDuration {
    /// As written: `500ms` (a report's differences name it so).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl TryFrom<String> for GoDuration {
    type Error = DurationError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<GoDuration> for String {
    fn from(d: GoDuration) -> Self {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Duration, String> {
        text.parse::<GoDuration>()
            .map(GoDuration::get)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn go_durations_parse_as_go_parses_them() {
        let ms = Duration::from_millis;
        assert_eq!(parse("500ms"), Ok(ms(500)));
        assert_eq!(parse("1s"), Ok(ms(1_000)));
        assert_eq!(parse("1.5s"), Ok(ms(1_500)));
        assert_eq!(parse("1m30s"), Ok(ms(90_000)));
        assert_eq!(parse("1h"), Ok(ms(3_600_000)));
        assert_eq!(parse("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse(".5s"), Ok(ms(500)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn a_bad_duration_is_refused_naming_what_is_wrong() {
        for (text, why) in [
            ("", "it is empty"),
            ("500", "has no unit"),
            ("1sec", "its unit is not one of"),
            ("5 s", "its unit is not one of"),
            ("-1s", "it is negative"),
            ("1..5s", "malformed"),
            (".s", "malformed"),
            ("99999999999h", "too long"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains("e.g. 500ms, 1s or 1m30s"), "{err}");
        }
    }

    #[test]
    fn it_is_written_back_in_one_exact_unit_and_round_trips() {
        for (text, shown) in [
            ("1s", "1s"),
            ("1000ms", "1s"),
            ("1.5s", "1500ms"),
            ("1m", "60s"),
            ("300ms", "300ms"),
            ("250us", "250us"),
            ("7ns", "7ns"),
            ("0", "0s"),
        ] {
            let d: GoDuration = text.parse().unwrap();
            assert_eq!(d.to_string(), shown);
            assert_eq!(shown.parse::<GoDuration>().unwrap(), d);
        }
        let json = serde_json::to_string(&GoDuration::from_millis(500)).unwrap();
        assert_eq!(json, "\"500ms\"");
        assert!(serde_json::from_str::<GoDuration>("\"soon\"").is_err());
    }
}
