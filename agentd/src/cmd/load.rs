//! `feth load`: the agent a chain engineer points at a fullnode to learn its
//! real committed TPS.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::U256;
use anyhow::{bail, Context, Result};
use clap::Args;

use super::args::{emit, load_shard, NetworkArgs};
use crate::fees::FeePolicy;
use crate::load::metrics::LoadMetrics;
use crate::load::pick::{AccountDist, RateSchedule};
use crate::load::plan::{
    LoadPlan, Recipients, WorkloadKind, DEFAULT_BATCH, DEFAULT_MAX_PARALLELISM, MAX_PER_SENDER,
};
use crate::load::reads::{ReadMethod, ReadPlan};
use crate::load::refill::RefillConfig;
use crate::load::scenario::Scenario;
use crate::load::{self, LoadSettings};
use crate::shard::Shard;
use crate::{keys, units};

/// `--workload`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum WorkloadArg {
    Transfer,
    Erc20,
    Store,
    Swap,
}

impl From<WorkloadArg> for WorkloadKind {
    fn from(arg: WorkloadArg) -> Self {
        match arg {
            WorkloadArg::Transfer => Self::Transfer,
            WorkloadArg::Erc20 => Self::Erc20,
            WorkloadArg::Store => Self::Store,
            WorkloadArg::Swap => Self::Swap,
        }
    }
}

/// `--recipients`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum RecipientsArg {
    /// Other accounts of the keys file.
    Existing,
    /// New addresses that never held anything.
    Fresh,
}

/// `feth load …`
#[derive(Debug, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    network: NetworkArgs,
    /// Keys file made by `feth fund`.
    #[arg(long, default_value = "feth-keys.txt")]
    keys: PathBuf,
    /// Use only the first N accounts of the keys file (of this agent's
    /// shard with --shard).
    #[arg(long)]
    senders: Option<usize>,
    /// This agent's share of the keys file when several agents share it:
    /// shard I (from 0) of N, a contiguous block of about 1/N of the keys.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Prepare (connect, read every sender's nonce), then begin sending at
    /// this time: RFC 3339 (2026-11-25T16:00:00Z) or relative (+30s), so
    /// agents on several machines begin together. A time already past is
    /// an error.
    #[arg(long, value_name = "TIME")]
    start_at: Option<String>,
    /// Concurrent requests in flight.
    #[arg(long, default_value_t = DEFAULT_MAX_PARALLELISM)]
    max_parallelism: usize,
    /// Transactions per account.
    #[arg(long)]
    count: Option<u64>,
    /// Transactions (of different senders) per JSON-RPC batch; 1 disables
    /// batching. CometBFT's own RPC refuses batches over 10 by default.
    #[arg(long, default_value_t = DEFAULT_BATCH)]
    batch: usize,
    /// Transactions in flight per sender (1–1024): a sender's consecutive
    /// nonces go out without waiting for each other's answers (how many per
    /// request: --per-request). For nodes that queue future nonces (geth;
    /// abcid with `--patches …,nonce-queue`); keep it within the node's
    /// window (64 for both by default).
    #[arg(long, default_value_t = 1, value_name = "K",
          value_parser = clap::value_parser!(u64).range(1..=MAX_PER_SENDER as u64))]
    per_sender: u64,
    /// Consecutive nonces of one sender per request (1 to --per-sender),
    /// sent in order: JSON-RPC servers run a batch's calls one after the
    /// other. 1 spreads a sender's transactions over parallel requests (the
    /// node's future-nonce queue puts them back in order); --per-sender
    /// keeps one ordered request per sender in flight. abcid answers each
    /// call after CometBFT's CheckTx, so only parallel requests pipeline
    /// there; geth takes either.
    #[arg(long, default_value_t = 1, value_name = "R",
          value_parser = clap::value_parser!(u64).range(1..=MAX_PER_SENDER as u64))]
    per_request: u64,
    /// How long to send: seconds, or with a unit (90s, 30m, 24h, 3d).
    #[arg(long, value_parser = units::parse_duration)]
    duration: Option<Duration>,
    /// Open loop at a fixed rate (transactions per second).
    #[arg(long, conflicts_with = "ramp")]
    rate: Option<f64>,
    /// Open loop ramp START:STEP:INTERVAL (e.g. 1:500:30).
    #[arg(long)]
    ramp: Option<String>,
    /// Sender activity: `uniform` or `zipf:S,V` (Zipf-Mandelbrot).
    #[arg(long, default_value = "uniform")]
    accounts: AccountDist,
    /// Recipients: other accounts of the keys file, or fresh addresses.
    #[arg(long, value_enum, default_value_t = RecipientsArg::Fresh)]
    recipients: RecipientsArg,
    /// What each transaction does: a value transfer, an ERC-20 `transfer`
    /// (the first account deploys a token and hands it to the others), a
    /// storage-heavy `store` (eight fresh slots) or a swap-like `swap`
    /// (the first account deploys the contract). Each is the built-in
    /// scenario of its name.
    #[arg(long, value_enum, default_value_t = WorkloadArg::Transfer)]
    workload: WorkloadArg,
    /// The traffic, from a scenario file (TOML: the writes' shares, the
    /// reads' rate and mix, how senders send) or a built-in scenario:
    /// transfer, erc20, store, swap, fullnode, read-heavy. It says what --workload,
    /// --reads, --read-mix, --accounts, --per-sender, --per-request and
    /// --recipients would, so it takes none of them.
    #[arg(long, value_name = "FILE|NAME",
          conflicts_with_all = ["workload", "reads", "read_mix", "accounts", "per_sender", "per_request", "recipients"])]
    scenario: Option<String>,
    /// Value of each transfer: wei (or with a unit) for value transfers,
    /// token units for ERC-20 transfers (each sender holds 10^9; a transfer
    /// past its balance reverts and is counted as reverted).
    #[arg(long, default_value = "1")]
    value: String,
    /// The highest max fee per gas (gas price, on a legacy chain) the agent
    /// signs: wei, or with a unit (`50gwei`). A transaction refused because
    /// the base fee passed this cap is a rejection. Default: no cap.
    #[arg(long, value_name = "AMOUNT")]
    max_fee: Option<String>,
    /// EIP-1559 chains: each transaction's max fee is this many times the
    /// base fee of the latest block read, plus the tip (wallets use 2). Below
    /// ~1.15 a base fee rising under the load overtakes transactions signed
    /// a block earlier: they are re-signed with a higher fee and sent again
    /// (fee resends).
    #[arg(long, default_value_t = 2.0, value_name = "M")]
    base_fee_multiplier: f64,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Longest wait for inclusion after sending stops, seconds.
    #[arg(long, default_value_t = 60.0)]
    wait: f64,
    /// Print the full report (config, environment, series, totals) as JSON
    /// on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
    /// Also write the JSON report to FILE (for `feth merge`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while the run lasts
    /// (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// CometBFT RPC for ns header times (latency to the block, window
    /// seconds); default: the one the node names (abcid_cometbftRpc), else
    /// web3 timestamps (whole seconds).
    #[arg(long, value_name = "URL")]
    comet_rpc: Option<String>,
    /// Report committed TPS per window of N blocks (e.g. 10000, as the Ardor
    /// load test).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    window_blocks: Option<u64>,
    /// Stream the figures (one JSON line per finished second and window) to
    /// FILE as the run goes, so a run that is killed still leaves them.
    #[arg(long, value_name = "FILE")]
    series_out: Option<PathBuf>,
    /// Top up senders that run low during the run, paid by this root key
    /// file (mode 0600; not one of the senders).
    #[arg(long, value_name = "FILE", requires = "refill_amount")]
    refill_key: Option<PathBuf>,
    /// Balance a low sender is topped up to: wei, or with a unit (`0.5eth`).
    #[arg(long, value_name = "AMOUNT", requires = "refill_key")]
    refill_amount: Option<String>,
    /// A sender is low below this balance (default: a quarter of
    /// --refill-amount).
    #[arg(long, value_name = "AMOUNT", requires = "refill_key")]
    refill_balance: Option<String>,
    /// How often low senders are looked for.
    #[arg(long, value_parser = units::parse_duration, default_value = "2s", requires = "refill_key")]
    refill_interval: Duration,
    /// Web3 reads per second beside the writes, open loop, from the first
    /// endpoint: each answer checked, per-method latency and errors reported.
    #[arg(long, value_name = "RATE")]
    reads: Option<f64>,
    /// The reads' mix, METHOD=WEIGHT,… of block_number, latest_block,
    /// balance, receipt, logs, token_balance, estimate (default:
    /// receipt=8,balance=5, block_number=3,latest_block=2,logs=2, a
    /// wallet-heavy mix, plus token_balance=3 with --workload erc20).
    #[arg(long, value_name = "MIX", requires = "reads")]
    read_mix: Option<String>,
}

impl LoadArgs {
    /// The traffic: the scenario given, or the one the flags describe.
    fn scenario(&self) -> Result<Scenario> {
        if let Some(name) = &self.scenario {
            return Scenario::load(name);
        }
        let kind = WorkloadKind::from(self.workload);
        Ok(Scenario {
            name: kind.name().to_string(),
            writes: kind.into(),
            reads: self.reads(kind)?,
            accounts: Some(self.accounts),
            per_sender: Some(self.per_sender as usize),
            per_request: Some(self.per_request.min(self.per_sender) as usize),
            recipients: Some(match self.recipients {
                RecipientsArg::Existing => Recipients::Existing,
                RecipientsArg::Fresh => Recipients::Fresh,
            }),
        })
    }

    /// The read traffic, when `--reads` is given.
    fn reads(&self, kind: WorkloadKind) -> Result<Option<ReadPlan>> {
        let Some(rate) = self.reads else {
            return Ok(None);
        };
        let mut plan = ReadPlan::wallets(positive("--reads", rate)?);
        match (&self.read_mix, kind) {
            (Some(mix), _) => plan.mix = ReadPlan::parse_mix(mix).context("--read-mix")?,
            // A dapp's reads of the token the run sends.
            (None, WorkloadKind::Erc20) => plan.mix.push((ReadMethod::TokenBalance, 3)),
            (None, _) => {}
        }
        Ok(Some(plan))
    }

    /// The refill settings, when `--refill-key` is given.
    fn refill(&self) -> Result<Option<RefillConfig>> {
        let (Some(key), Some(amount)) = (&self.refill_key, &self.refill_amount) else {
            return Ok(None);
        };
        let amount = units::parse_amount(amount).context("--refill-amount")?;
        let below = match &self.refill_balance {
            Some(b) => units::parse_amount(b).context("--refill-balance")?,
            None => amount / U256::from(4u64),
        };
        if below >= amount {
            bail!("--refill-balance must be below --refill-amount (a sender is topped up to the amount once below the balance)");
        }
        if self.refill_interval.is_zero() {
            bail!("--refill-interval must be more than 0");
        }
        keys::check_private(key).context("--refill-key")?;
        let root = keys::read_key_file(key)?;
        let mut journal = self.keys.as_os_str().to_os_string();
        journal.push(".refill.json");
        Ok(Some(RefillConfig {
            root,
            amount,
            below,
            interval: self.refill_interval,
            journal: PathBuf::from(journal),
        }))
    }
}

fn positive(name: &str, v: f64) -> Result<f64> {
    if !(v > 0.0 && v.is_finite()) {
        bail!("{name} must be a positive number, got {v}");
    }
    Ok(v)
}

impl LoadArgs {
    /// What to send, as these arguments and `scenario` ask for it.
    fn plan(&self, senders: usize, scenario: &Scenario) -> Result<LoadPlan> {
        let schedule = match (&self.rate, &self.ramp) {
            (Some(r), _) => RateSchedule::Fixed(positive("--rate", *r)?),
            (None, Some(text)) => RateSchedule::parse_ramp(text)?,
            (None, None) => RateSchedule::Closed,
        };
        if self.count.is_none() && self.duration.is_none() {
            bail!("say how much to send: --count N (per account) and/or --duration SECONDS");
        }
        if self.count == Some(0) {
            bail!("--count must be at least 1");
        }
        let plan = LoadPlan {
            per_account: self.count,
            duration: self.duration,
            max_parallelism: self.max_parallelism.max(1),
            batch: self.batch.max(1),
            value: units::parse_amount(&self.value)?,
            fees: self.fees()?,
            ..LoadPlan::transfers(schedule, senders)
        };
        Ok(scenario.apply(plan, senders))
    }

    /// `--max-fee` and `--base-fee-multiplier`.
    fn fees(&self) -> Result<FeePolicy> {
        let cap = match &self.max_fee {
            Some(text) => {
                let wei = units::parse_amount(text).context("--max-fee")?;
                if wei.is_zero() {
                    bail!("--max-fee must be more than 0 wei");
                }
                Some(u128::try_from(wei).map_err(|_| {
                    anyhow::anyhow!("--max-fee {text} is beyond any fee a node takes (2^128 wei)")
                })?)
            }
            None => None,
        };
        Ok(FeePolicy {
            multiplier: positive("--base-fee-multiplier", self.base_fee_multiplier)?,
            cap,
        })
    }
}

/// Runs `feth load`.
pub async fn run(args: LoadArgs) -> Result<()> {
    let start_at = args
        .start_at
        .as_deref()
        .map(|t| load::start_at::parse(t, std::time::SystemTime::now()))
        .transpose()?;
    let (keys, shard) = load_shard(&args.keys, args.shard, args.senders)?;
    let a_day = Duration::from_secs(load::rows::KEEP_SECONDS as u64);
    if args.duration.is_some_and(|d| d > a_day) && args.series_out.is_none() {
        eprintln!(
            "warning: the report keeps the latest day of per-second rows; give --series-out FILE to keep them all"
        );
    }
    let scenario = args.scenario()?;
    let settings = LoadSettings {
        endpoints: args.network.urls.clone(),
        timeout: Duration::from_secs_f64(positive("--timeout", args.timeout)?),
        wait: Duration::from_secs_f64(args.wait.max(0.0)),
        progress: !args.quiet,
        stop: None,
        plan: args.plan(keys.len(), &scenario)?,
        metrics: None,
        comet_rpc: args.comet_rpc.clone(),
        window_blocks: args.window_blocks,
        series_out: args.series_out.clone(),
        start_at,
        shard,
        refill: args.refill()?,
        reads: scenario.reads.clone(),
        prepared: None,
    };
    let report = match args.metrics {
        None => load::run(settings, keys).await?,
        Some(addr) => {
            let metrics = Arc::new(LoadMetrics::new());
            let render = {
                let m = metrics.clone();
                Arc::new(move || m.encode()) as feth_metrics_http::Render
            };
            let (bound, server) = feth_metrics_http::serve(addr, render).await?;
            eprintln!("metrics: http://{bound}/metrics");
            let report = load::run(
                LoadSettings {
                    metrics: Some(metrics),
                    ..settings
                },
                keys,
            )
            .await;
            server.abort();
            report?
        }
    };
    if let Some(path) = &args.out {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
    }
    emit(args.json, &report, |out| {
        load::summary::write_summary(out, &report)
    })?;
    if report.totals.included == 0 {
        bail!("nothing was included: the run failed (see the rejections above)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Load {
        #[command(flatten)]
        args: LoadArgs,
    }

    fn plan(args: &[&str]) -> Result<LoadPlan> {
        let load = Load::try_parse_from(std::iter::once("load").chain(args.iter().copied()))?;
        load.args.plan(100, &load.args.scenario()?)
    }

    #[test]
    fn no_optional_flags_give_the_default_plan() {
        let expected = LoadPlan {
            duration: Some(Duration::from_secs(5)),
            ..LoadPlan::transfers(RateSchedule::Closed, 100)
        };
        assert_eq!(plan(&["--duration", "5"]).unwrap(), expected);
    }

    #[test]
    fn flags_reach_the_plan() {
        let p = plan(&[
            "--count",
            "3",
            "--rate",
            "250",
            "--workload",
            "erc20",
            "--batch",
            "1",
            "--per-sender",
            "16",
        ])
        .unwrap();
        assert_eq!(p.per_sender, 16);
        assert_eq!(p.schedule, RateSchedule::Fixed(250.0));
        assert_eq!((p.per_account, p.batch), (Some(3), 1));
        assert_eq!(p.writes, WorkloadKind::Erc20.into());
    }

    #[test]
    fn a_scenario_sets_the_writes_and_senders_and_takes_no_flag_it_names() {
        let p = plan(&["--duration", "5", "--scenario", "fullnode"]).unwrap();
        assert_eq!(p.writes, Scenario::load("fullnode").unwrap().writes);
        assert_eq!(p.per_sender, 1, "fullnode leaves per_sender as it was");
        let swap = plan(&["--duration", "5", "--workload", "swap"]).unwrap();
        assert_eq!(swap.writes, WorkloadKind::Swap.into());
        for flag in [
            ["--workload", "erc20"],
            ["--per-sender", "2"],
            ["--reads", "10"],
        ] {
            let args = [
                "--duration",
                "5",
                "--scenario",
                "fullnode",
                flag[0],
                flag[1],
            ];
            let e = plan(&args).unwrap_err().to_string();
            assert!(e.contains("cannot be used with"), "{flag:?}: {e}");
        }
        let e = plan(&["--duration", "5", "--scenario", "mainnet"]).unwrap_err();
        assert!(
            e.to_string().contains("no built-in scenario of that name"),
            "{e}"
        );
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(
            units::parse_duration("24h").unwrap(),
            Duration::from_secs(86_400)
        );
        assert_eq!(
            units::parse_duration("90").unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            units::parse_duration("1.5m").unwrap(),
            Duration::from_secs(90)
        );
        let e = units::parse_duration("3w").unwrap_err().to_string();
        assert!(e.contains("s, m, h or d"), "{e}");
    }

    #[test]
    fn a_load_without_an_amount_or_with_a_bad_rate_is_refused() {
        let e = plan(&[]).unwrap_err().to_string();
        assert!(e.contains("--count N") && e.contains("--duration"), "{e}");
        let e = plan(&["--count", "1", "--rate", "0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--rate must be a positive number"), "{e}");
        let e = plan(&["--count", "1", "--per-sender", "0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--per-sender") && e.contains("1..=1024"), "{e}");
    }
}
