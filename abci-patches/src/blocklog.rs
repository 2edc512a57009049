//! abcid's one log line per committed block (format: `docs/abcid-log-format.md`).

use std::time::Duration;

use alloy_primitives::B256;

/// Target of the per-block line; the etl matches on it.
pub const TARGET: &str = "abcid::block";

/// What the per-block line reports.
#[derive(Debug, Clone, Copy)]
pub struct BlockLine {
    /// Height.
    pub height: u64,
    /// Transactions with code 0.
    pub valid: usize,
    /// Transactions with a non-zero code.
    pub invalid: usize,
    /// Time spent in FinalizeBlock.
    pub finalize: Duration,
    /// Time spent in Commit, all of it (the pool's recheck included).
    pub commit: Duration,
    /// Commit's write of the block to the store (part of `commit`).
    pub store: Duration,
    /// `app-mempool`: Commit's recheck of the node's pool (part of `commit`;
    /// zero without the patch).
    pub recheck: Duration,
    /// `app-mempool`: transactions the recheck dropped from the pool.
    pub recheck_dropped: usize,
    /// Header time, seconds.
    pub time_secs: u64,
    /// Header time, nanoseconds.
    pub time_nanos: u32,
    /// App hash after the block.
    pub app_hash: B256,
}

impl BlockLine {
    /// Writes the line at info level.
    pub fn emit(&self) {
        tracing::info!(
            target: TARGET,
            height = self.height,
            txs = self.valid + self.invalid,
            valid = self.valid,
            invalid = self.invalid,
            finalize_ms = %millis(self.finalize),
            commit_ms = %millis(self.commit),
            block_time = %rfc3339(self.time_secs, self.time_nanos),
            app_hash = %self.app_hash,
            recheck_ms = %millis(self.recheck),
            recheck_dropped = self.recheck_dropped,
            "block committed"
        );
    }
}

fn millis(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// Formats a UTC instant as RFC 3339 with nanoseconds and a `Z` suffix.
pub fn rfc3339(secs: u64, nanos: u32) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000000000Z");
        // 2024-02-29T12:34:56.5Z
        assert_eq!(
            rfc3339(1_709_210_096, 500_000_000),
            "2024-02-29T12:34:56.500000000Z"
        );
    }
}
