//! What a link between two devnet nodes does to their traffic: one-way
//! latency, jitter and a bandwidth cap (each direction), and parsing them
//! from `50ms`, `1s`, `10mbit`.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The shape of every link of a devnet (or of the links of a slowed node).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkShape {
    /// Delay added to each direction, ms (so a round trip takes twice it).
    pub latency_ms: u64,
    /// Random variation of that delay, ± ms.
    pub jitter_ms: u64,
    /// Bandwidth cap of each direction, kbit/s; none when unset.
    pub bandwidth_kbit: Option<u64>,
}

impl LinkShape {
    /// Whether it leaves traffic as it is.
    pub fn is_clear(&self) -> bool {
        *self == Self::default()
    }
}

impl std::fmt::Display for LinkShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "latency {} ms ± {} ms", self.latency_ms, self.jitter_ms)?;
        match self.bandwidth_kbit {
            Some(k) => write!(f, ", bandwidth {k} kbit/s"),
            None => write!(f, ", bandwidth unlimited"),
        }
    }
}

/// Parses a duration into whole milliseconds: `150ms`, `1s`, `0`.
pub fn parse_millis(text: &str) -> Result<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else if t == "0" {
        ("0", 1.0)
    } else {
        bail!("{text:?}: give a duration with its unit, e.g. 50ms or 1s");
    };
    let value: f64 = number
        .trim()
        .parse()
        .with_context(|| format!("{text:?} is not a duration (examples: 50ms, 1s)"))?;
    if !(0.0..=600_000.0).contains(&(value * scale)) {
        bail!("{text:?}: a link delay is between 0 and 600s");
    }
    Ok((value * scale).round() as u64)
}

/// Parses a bandwidth into kbit/s: `10mbit`, `500kbit`, `1gbit`.
pub fn parse_kbit(text: &str) -> Result<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = t.strip_suffix("gbit") {
        (n, 1_000_000.0)
    } else if let Some(n) = t.strip_suffix("mbit") {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix("kbit") {
        (n, 1.0)
    } else {
        bail!("{text:?}: give a bandwidth with its unit, e.g. 10mbit, 500kbit or 1gbit");
    };
    let value: f64 = number
        .trim()
        .parse()
        .with_context(|| format!("{text:?} is not a bandwidth (examples: 10mbit, 500kbit)"))?;
    let kbit = (value * scale).round();
    if !(8.0..=1e9).contains(&kbit) {
        bail!("{text:?}: a link's bandwidth is between 8kbit and 1000gbit");
    }
    Ok(kbit as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_bandwidths_parse_with_their_units() {
        assert_eq!(parse_millis("150ms").unwrap(), 150);
        assert_eq!(parse_millis("1.5s").unwrap(), 1500);
        assert_eq!(parse_millis("0").unwrap(), 0);
        assert!(parse_millis("150").is_err(), "a unit is required");
        assert!(parse_millis("-5ms").is_err());
        assert_eq!(parse_kbit("10mbit").unwrap(), 10_000);
        assert_eq!(parse_kbit("500kbit").unwrap(), 500);
        assert_eq!(parse_kbit("1gbit").unwrap(), 1_000_000);
        assert!(parse_kbit("10mb").is_err());
        assert!(parse_kbit("1kbit").is_err(), "below 1 KB/s");
    }
}
