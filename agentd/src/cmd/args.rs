//! Argument groups shared by several subcommands, so that one flag means one
//! thing everywhere.
//!
//! Conventions of the whole command line:
//! - `--network URL[,URL…]` is always a web3 JSON-RPC endpoint (env `FETH_NETWORK`);
//! - `--comet-rpc URL` is always a CometBFT RPC endpoint;
//! - `--json` is always a switch: stdout carries exactly one JSON document, and
//!   whatever a person reads (progress, the summary) goes to stderr.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use serde::Serialize;

use crate::accounts::KeySet;
use crate::saturate::SearchConfig;
use crate::shard::{Shard, ShardOf};

/// The web3 endpoint of a default local devnet.
pub const DEFAULT_NETWORK: &str = "http://127.0.0.1:8545";

/// One or more web3 JSON-RPC endpoints.
#[derive(Debug, Clone, Args)]
pub struct NetworkArgs {
    /// web3 JSON-RPC endpoint(s), comma-separated; work is spread across them.
    #[arg(
        long = "network",
        env = "FETH_NETWORK",
        default_value = DEFAULT_NETWORK,
        value_delimiter = ',',
        value_name = "URL"
    )]
    pub urls: Vec<String>,
}

impl NetworkArgs {
    /// The first endpoint (commands that talk to one node).
    pub fn first(&self) -> anyhow::Result<&str> {
        self.urls
            .first()
            .map(String::as_str)
            .ok_or_else(|| anyhow::anyhow!("--network is empty: give a web3 URL"))
    }
}

/// Prints a command's result by the `--json` convention: with `json`, the
/// figures as one JSON document on stdout and the human `summary` on
/// stderr; without it, the summary alone on stdout.
pub fn emit<T: Serialize>(
    json: bool,
    figures: &T,
    summary: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    if json {
        summary(&mut std::io::stderr())?;
        println!("{}", serde_json::to_string_pretty(figures)?);
    } else {
        summary(&mut std::io::stdout())?;
    }
    Ok(())
}

/// The senders of `--keys FILE [--senders N]`: the keys file, or its first
/// `senders` accounts.
pub fn load_senders(file: &Path, senders: Option<usize>) -> anyhow::Result<KeySet> {
    Ok(load_shard(file, None, senders)?.0)
}

/// The senders of `--keys FILE [--shard I/N] [--senders N]`: the shard of
/// the keys file (all of it without one; a shard file is its own shard),
/// then its first `senders` accounts; with the shard's record for the
/// report.
pub fn load_shard(
    file: &Path,
    shard: Option<Shard>,
    senders: Option<usize>,
) -> anyhow::Result<(KeySet, Option<ShardOf>)> {
    let mut keys = KeySet::load(file).with_context(|| {
        format!(
            "create accounts first: feth fund --count N --amount A --out {}",
            file.display()
        )
    })?;
    let keys_in_file = keys.len();
    let mut of = "the keys file".to_string();
    let record = match (keys.cut, shard) {
        // A shard file: it is its shard, and --shard (if given) must agree.
        (Some(cut), asked) => {
            if asked.is_some_and(|asked| asked != cut.shard) {
                bail!(
                    "{} holds shard {} of its keys file, not --shard {}: give this agent its own shard file",
                    file.display(),
                    cut.shard,
                    asked.map_or_else(String::new, |a| a.to_string())
                );
            }
            of = format!("shard {} of the keys file", cut.shard);
            Some(cut)
        }
        (None, Some(shard)) => {
            keys = keys.slice(shard.range(keys_in_file)?);
            of = format!("shard {shard} of the keys file");
            Some(ShardOf {
                shard,
                keys_in_file,
            })
        }
        (None, None) => None,
    };
    if let Some(n) = senders {
        if n == 0 || n > keys.len() {
            bail!("--senders {n}: {of} holds {} accounts", keys.len());
        }
        keys.keys.truncate(n);
        keys.addresses.truncate(n);
    }
    Ok((keys, record))
}

/// The devnet a `feth bench` command starts for itself (fund, profiler,
/// stages, zipf), typed and checked when parsed.
#[derive(Debug, Clone, Args)]
pub struct BenchDevnetArgs {
    /// The devnet's CometBFT `timeout_commit` (Go's syntax: 500ms, 1s).
    #[arg(long, default_value_t = crate::bench::BENCH_TIMEOUT_COMMIT)]
    pub timeout_commit: crate::devnet::GoDuration,
}

/// How the saturation search runs (`feth saturate`, `feth compare`).
#[derive(Debug, Clone, Args)]
pub struct SearchArgs {
    /// First rate offered, tx/s.
    #[arg(long, default_value_t = SearchConfig::default().start_tps)]
    pub start: f64,
    /// Highest rate offered, tx/s.
    #[arg(long, default_value_t = SearchConfig::default().max_tps)]
    pub max: f64,
    /// Measured seconds per step [default: 10; `feth compare`: 5].
    #[arg(long)]
    pub step_secs: Option<f64>,
    /// Seconds of load before each step's window.
    #[arg(long, default_value_t = 3.0)]
    pub warmup_secs: f64,
    /// Shortfall allowed: a rate is kept up with (1 − tolerance) of it committed.
    #[arg(long, default_value_t = SearchConfig::default().tolerance)]
    pub tolerance: f64,
    /// Most steps.
    #[arg(long, default_value_t = SearchConfig::default().max_steps)]
    pub max_steps: usize,
    /// Stop once (first rate behind) / (last rate kept up) ≤ 1 + resolution
    /// [default: 0.1; `feth compare`: 1, the doubling alone, since its search
    /// only places operating points].
    #[arg(long)]
    pub resolution: Option<f64>,
    /// Schedule lag p99 (ms) above which the agent missed its schedule.
    #[arg(long, default_value_t = SearchConfig::default().lag_limit_ms)]
    pub lag_limit_ms: f64,
    /// p99 (ms) of the agent's own part of the lag (a due transaction with
    /// its sender free reaching the wire) above which the agent is short of CPU.
    #[arg(long, default_value_t = SearchConfig::default().agent_lag_limit_ms)]
    pub agent_lag_limit_ms: f64,
}

impl SearchArgs {
    /// The search these arguments ask for.
    pub fn search_config(&self) -> SearchConfig {
        self.search_config_over(SearchConfig::default())
    }

    /// The search these arguments ask for, `defaults` filling what they leave out.
    pub fn search_config_over(&self, defaults: SearchConfig) -> SearchConfig {
        SearchConfig {
            start_tps: self.start,
            max_tps: self.max,
            step_secs: self.step_secs.unwrap_or(defaults.step_secs),
            tolerance: self.tolerance,
            max_steps: self.max_steps,
            resolution: self.resolution.unwrap_or(defaults.resolution),
            lag_limit_ms: self.lag_limit_ms,
            agent_lag_limit_ms: self.agent_lag_limit_ms,
            ..defaults
        }
    }

    /// `--warmup-secs` as a duration.
    pub fn warmup(&self) -> anyhow::Result<Duration> {
        seconds("--warmup-secs", self.warmup_secs)
    }
}

/// `--overload-tps`, checked: a positive, finite rate.
pub fn given_overload(tps: Option<f64>) -> anyhow::Result<Option<f64>> {
    match tps {
        Some(t) if !(t > 0.0 && t.is_finite()) => {
            bail!("--overload-tps must be a rate above 0 tx/s, got {t}; or leave it out to search each step's knee")
        }
        _ => Ok(tps),
    }
}

/// A flag's number of seconds as a duration: finite and not negative.
pub fn seconds(name: &str, v: f64) -> anyhow::Result<Duration> {
    if !(v >= 0.0 && v.is_finite()) {
        bail!("{name} must be a number of seconds ≥ 0, got {v}");
    }
    Ok(Duration::from_secs_f64(v))
}

#[cfg(test)]
mod tests {
    use super::given_overload;

    #[test]
    fn a_given_overload_must_be_a_positive_finite_rate() {
        assert_eq!(given_overload(None).unwrap(), None);
        assert_eq!(given_overload(Some(12800.0)).unwrap(), Some(12800.0));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = given_overload(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("--overload-tps must be a rate above 0"), "{e}");
        }
    }
}
