//! Parsing amounts of ether (`1000` wei, `5gwei`, `0.5eth`) and durations
//! (`90`, `30m`, `24h`); printing gas rates.

use std::time::Duration;

use alloy_primitives::U256;
use anyhow::{bail, Context, Result};

/// Parses an amount with an optional unit (`wei`, `gwei`, `eth` / `ether`).
pub fn parse_amount(text: &str) -> Result<U256> {
    let t = text.trim().to_ascii_lowercase();
    let (number, decimals) = if let Some(n) = t.strip_suffix("gwei") {
        (n, 9)
    } else if let Some(n) = t.strip_suffix("ether").or_else(|| t.strip_suffix("eth")) {
        (n, 18)
    } else if let Some(n) = t.strip_suffix("wei") {
        (n, 0)
    } else {
        (t.as_str(), 0)
    };
    let number = number.trim();
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        bail!("{text:?} is not an amount (examples: 1000, 5gwei, 0.5eth)");
    }
    if frac.len() > decimals {
        bail!("{text:?} has more decimals than its unit allows");
    }
    let digits = format!("{int}{frac:0<decimals$}");
    U256::from_str_radix(if digits.is_empty() { "0" } else { &digits }, 10)
        .with_context(|| format!("{text:?} is not an amount (examples: 1000, 5gwei, 0.5eth)"))
}

/// A duration: seconds, or a number with a unit `s`, `m`, `h` or `d`.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => bail!("{text:?}: give seconds, or a number with s, m, h or d (e.g. 24h)"),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("{text:?} is not a duration (e.g. 90, 30m, 24h)"))?;
    let secs = value * scale;
    if !(secs > 0.0 && secs.is_finite()) {
        bail!("{text:?}: a duration must be positive");
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Gas per second as people read it: `12.35 Mgas/s`.
pub fn mgas(gas_per_second: f64) -> String {
    format!("{} Mgas/s", mgas_figure(gas_per_second))
}

/// Gas per second in millions, for a column headed `Mgas/s`: `12.35`.
pub fn mgas_figure(gas_per_second: f64) -> String {
    format!("{:.2}", gas_per_second / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_amount("1000").unwrap(), U256::from(1000));
        assert_eq!(parse_amount("5gwei").unwrap(), U256::from(5_000_000_000u64));
        assert_eq!(
            parse_amount("0.5eth").unwrap(),
            U256::from(500_000_000_000_000_000u64)
        );
        assert!(parse_amount("1.5wei").is_err());
        assert!(parse_amount("abc").is_err());
        assert!(parse_amount("-1").is_err());
    }
}
