//! `--start-at`: agents on several machines begin sending together. Each
//! prepares first (connects, detects the fee model, reads every sender's
//! nonce), then waits for the agreed wall-clock time with a countdown.
//!
//! The time is RFC 3339 (`2026-11-25T16:00:00Z`, any UTC offset) or relative
//! to now (`+30s`, `+2m`), which only suits agents started by one command.
//! A time already past is an error, not a late start: an agent that starts
//! late would skew the common window the merge reads from the chain, and an
//! orchestrator restarting a failed pod after the time should not send
//! alone.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;

/// The start time `text` names, `now` being the time of the question.
pub fn parse(text: &str, now: SystemTime) -> Result<SystemTime> {
    let t = text.trim();
    if let Some(rel) = t.strip_prefix('+') {
        let d = crate::units::parse_duration(rel).with_context(|| {
            format!("--start-at {text:?}: after `+` give a duration (+30s, +2m)")
        })?;
        return Ok(now + d);
    }
    let usage = "give an RFC 3339 time such as 2026-11-25T16:00:00Z, or +30s";
    let civil = feth_comet::time::parse_rfc3339(t.as_bytes())
        .with_context(|| format!("--start-at {text:?} is not a time: {usage}"))?;
    let nanos = feth_comet::time::Clock::utc()
        .unix_nanos(&civil)
        .with_context(|| format!("--start-at {text:?}: {usage}"))?;
    let at = u64::try_from(nanos)
        .ok()
        .map(|n| UNIX_EPOCH + Duration::from_nanos(n))
        .with_context(|| format!("--start-at {text:?} is before 1970"))?;
    if let Ok(ago) = now.duration_since(at) {
        bail!(
            "--start-at {text} is {:.1} s in the past (it is {} now); give a later time",
            ago.as_secs_f64(),
            format(now)
        );
    }
    Ok(at)
}

/// `at` as RFC 3339 UTC with milliseconds.
pub fn format(at: SystemTime) -> String {
    let nanos = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    feth_comet::time::format_utc(nanos)
}

/// Waits until `at`, counting down on `pb`; `ready` says what was prepared.
/// Refuses a time that passed while the agent prepared.
pub async fn wait(at: SystemTime, pb: &ProgressBar, ready: &str) -> Result<()> {
    if let Ok(late) = SystemTime::now().duration_since(at) {
        bail!(
            "the start time {} passed {:.1} s ago while this agent prepared ({ready}); \
             give a later --start-at",
            format(at),
            late.as_secs_f64()
        );
    }
    tracing::info!("{ready}; starting at {}", format(at));
    while let Ok(left) = at.duration_since(SystemTime::now()) {
        pb.set_message(format!(
            "{ready}; starting at {} in {:.0} s",
            format(at),
            left.as_secs_f64().ceil()
        ));
        pb.tick();
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(left.min(Duration::from_millis(250))).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn absolute_and_relative_times_parse() {
        // 2026-11-25T16:00:00Z.
        let now = at(1_795_621_600);
        let t = parse("2026-11-25T16:00:00Z", now).unwrap();
        assert_eq!(t, at(1_795_622_400));
        assert_eq!(parse("2026-11-25T17:00:00+01:00", now).unwrap(), t);
        assert_eq!(format(t), "2026-11-25T16:00:00.000Z");
        assert_eq!(parse("+30s", now).unwrap(), at(1_795_621_630));
        assert_eq!(parse("+2m", now).unwrap(), at(1_795_621_720));
    }

    #[test]
    fn past_and_malformed_times_are_refused_with_the_reason() {
        let now = at(1_795_622_400 + 12);
        let e = parse("2026-11-25T16:00:00Z", now).unwrap_err().to_string();
        assert!(e.contains("12.0 s in the past"), "{e}");
        let e = parse("16:00", now).unwrap_err().to_string();
        assert!(e.contains("RFC 3339"), "{e}");
        let e = format!("{:#}", parse("+soon", now).unwrap_err());
        assert!(e.contains("+30s"), "{e}");
        let e = parse("2026-02-30T16:00:00Z", now).unwrap_err().to_string();
        assert!(e.contains("RFC 3339"), "{e}");
    }

    #[tokio::test]
    async fn waiting_ends_at_the_time_and_a_passed_time_is_an_error() {
        let pb = ProgressBar::hidden();
        let target = SystemTime::now() + Duration::from_millis(300);
        wait(target, &pb, "ready").await.unwrap();
        assert!(SystemTime::now() >= target);
        let e = wait(target, &pb, "nonces read")
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("passed") && e.contains("nonces read"), "{e}");
    }
}
