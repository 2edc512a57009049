//! Configuration of a [`crate::BlockProfiler`] and the limits on what callers may ask.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::ProfilerError;
use crate::work::ThreadWork;

/// Blocks captured by `profiler_enable` when `blocks` is omitted.
pub const DEFAULT_BLOCKS: u32 = 1;
/// Sampling frequency when `frequency_hz` is omitted: 99 Hz, off the 100 Hz beat of timers.
pub const DEFAULT_FREQUENCY_HZ: u32 = 99;
/// Lowest accepted sampling frequency.
pub const MIN_FREQUENCY_HZ: u32 = 1;
/// Highest accepted sampling frequency.
pub const MAX_FREQUENCY_HZ: u32 = 1000;
/// Most blocks one session may capture (further capped by [`Retention::max_profiles`]).
pub const MAX_BLOCKS_PER_SESSION: u32 = 1000;

/// Shared libraries whose frames pprof-rs must not walk from its signal handler: the C
/// library, the unwinder, the dynamic loader and the vDSO have no frame pointers, and the
/// unwinder is not async-signal-safe.
pub const DEFAULT_BLOCKLIST: [&str; 5] = ["libc.so", "libgcc_s", "libpthread", "vdso", "ld-linux"];

/// How a [`crate::BlockProfiler`] captures and where it keeps profiles.
#[derive(Clone, Debug)]
pub struct ProfilerConfig {
    /// Chain id; profiles go to `<out_dir>/<chain_id>/<height>/`. Letters, digits, `.`,
    /// `_` and `-` only, at most 64 characters, not starting with `.`.
    pub chain_id: String,
    /// Root directory of the profiles (`flamegraphs` by convention).
    pub out_dir: PathBuf,
    /// How many profiles, and how many bytes of them, are kept on disk.
    pub retention: Retention,
    /// Substrings of shared-library paths whose frames are not sampled
    /// (default: [`DEFAULT_BLOCKLIST`]).
    pub blocklist: Vec<String>,
    /// What the unmarked samples of the node's own named threads count as (see
    /// [`crate::work`]); threads tagged by [`Role`](crate::Role) need no rule. Default: none.
    pub thread_work: Vec<ThreadWork>,
}

impl ProfilerConfig {
    /// A configuration with the default retention and blocklist.
    pub fn new(chain_id: impl Into<String>, out_dir: impl Into<PathBuf>) -> Self {
        ProfilerConfig {
            chain_id: chain_id.into(),
            out_dir: out_dir.into(),
            retention: Retention::default(),
            blocklist: DEFAULT_BLOCKLIST.iter().map(|s| s.to_string()).collect(),
            thread_work: Vec::new(),
        }
    }

    /// Checks the chain id and the retention limits.
    pub fn validate(&self) -> Result<(), ProfilerError> {
        validate_chain_id(&self.chain_id)?;
        if self.retention.max_profiles == 0 {
            return Err(ProfilerError::InvalidConfig(
                "retention.max_profiles must be at least 1".into(),
            ));
        }
        if self.retention.max_bytes == 0 {
            return Err(ProfilerError::InvalidConfig(
                "retention.max_bytes must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Most blocks one session may capture: the smaller of [`MAX_BLOCKS_PER_SESSION`] and
    /// the retention count, so a session never evicts its own first blocks.
    pub fn max_blocks_per_session(&self) -> u32 {
        u32::try_from(self.retention.max_profiles)
            .unwrap_or(u32::MAX)
            .min(MAX_BLOCKS_PER_SESSION)
    }
}

/// Retention cap of the profiles of one chain: the oldest captures are deleted first when
/// a new one would exceed either limit; a single profile larger than `max_bytes` is
/// refused (the disk quota).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Most profiles (blocks) kept.
    pub max_profiles: usize,
    /// Most bytes kept, `meta.json` files included.
    pub max_bytes: u64,
}

impl Default for Retention {
    /// 200 profiles, 512 MiB.
    fn default() -> Self {
        Retention {
            max_profiles: 200,
            max_bytes: 512 * 1024 * 1024,
        }
    }
}

/// Checks that `chain_id` is safe as one path component.
pub fn validate_chain_id(chain_id: &str) -> Result<(), ProfilerError> {
    let ok_chars = chain_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if chain_id.is_empty() || chain_id.len() > 64 || !ok_chars || chain_id.starts_with('.') {
        return Err(ProfilerError::InvalidConfig(format!(
            "chain id {chain_id:?} must be 1-64 characters of [A-Za-z0-9._-], not starting with '.'"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_ids_are_single_safe_path_components() {
        for good in ["feth-devnet-1", "evm_9000-1", "a", "chain.v2"] {
            assert!(validate_chain_id(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "..",
            ".hidden",
            "a/b",
            "a\\b",
            "chain id",
            &"x".repeat(65),
        ] {
            assert!(validate_chain_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn session_length_is_capped_by_retention() {
        let mut config = ProfilerConfig::new("c", "/tmp/x");
        assert_eq!(config.max_blocks_per_session(), 200);
        config.retention.max_profiles = 5000;
        assert_eq!(config.max_blocks_per_session(), MAX_BLOCKS_PER_SESSION);
        config.retention.max_profiles = 0;
        assert!(config.validate().is_err());
    }
}
