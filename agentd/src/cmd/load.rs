//! `feth load`: the agent a chain engineer points at a fullnode to learn its
//! real committed TPS.

use std::io::Write;
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
use crate::load::reads::{ReadMethod, ReadPlan, ReadsReport};
use crate::load::refill::RefillConfig;
use crate::load::scenario::Scenario;
use crate::load::tally::TxsPerBlock;
use crate::load::{self, LoadReport, LoadSettings};
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
    emit(args.json, &report, |out| print_summary(out, &report))?;
    if report.totals.included == 0 {
        bail!("nothing was included: the run failed (see the rejections above)");
    }
    Ok(())
}

fn print_summary(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    let t = &r.totals;
    let c = &r.chain;
    if let (Some(s), Some(k)) = (&r.config.shard, &r.config.keys) {
        writeln!(
            out,
            "shard           {:>10}  {k} of the keys file's {}",
            s.shard.to_string(),
            s.keys_in_file
        )?;
    }
    writeln!(
        out,
        "committed TPS   {:>10.1}  ours, read from blocks {}..{} over {:.0} s",
        c.committed_tps, c.first_block, c.last_block, c.seconds
    )?;
    writeln!(
        out,
        "                {:>10.1}  all transactions in those blocks",
        c.committed_tps_all
    )?;
    writeln!(
        out,
        "committed gas/s {:>10}  all transactions' gas in those blocks ({} gas)",
        units::mgas(c.gas_per_second),
        c.gas_used
    )?;
    if let Some(limited) = &r.agent_limited {
        writeln!(
            out,
            "WARNING         the agent, not the chain, limited the offered rate: the committed TPS above is about the agent, not the chain"
        )?;
        writeln!(out, "                {}", limited.reason)?;
    }
    if let Some(b) = r.closed_loop_backlog.as_ref().filter(|b| b.growing) {
        writeln!(
            out,
            "WARNING         the node accepted faster than it committed: the backlog (accepted − committed) grew from {} to {} over the second half of sending (+{:.1} tx/s while {:.1} tx/s committed); the committed TPS above is a drain, not a steady state",
            b.mid, b.end, b.growth_per_second, b.committed_per_second
        )?;
        writeln!(
            out,
            "                lower the load (fewer senders, or an open loop with --rate) until the backlog stays flat"
        )?;
    }
    writeln!(
        out,
        "send rate       {:>10.1}  tx/s submitted over {:.1} s (not a TPS figure)",
        r.send_rate, r.send_seconds
    )?;
    writeln!(
        out,
        "agent           {:>10.1}  µs CPU per signed tx; every request slot busy {:.0} % of the time",
        r.agent_cpu_us_per_tx,
        r.slots_busy * 100.0
    )?;
    match &r.schedule_lag_ms {
        Some(l) => writeln!(
            out,
            "schedule lag    p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  ms, first send − intended send",
            l.p50, l.p90, l.p99, l.max
        )?,
        None => writeln!(out, "schedule lag    none: a closed loop has no schedule")?,
    }
    print_latency(out, r)?;
    writeln!(
        out,
        "transactions    {} signed = {} included + {} rejected + {} unresolved",
        t.signed, t.included, t.rejected, t.unresolved
    )?;
    writeln!(
        out,
        "                {} included succeeded, {} reverted (receipt status 0); {} duplicate submission(s) of a counted hash folded",
        t.included - t.reverted,
        t.reverted,
        t.duplicates_folded
    )?;
    if r.sent_by_kind.len() > 1 {
        print_kinds(out, r)?;
    }
    for (reason, n) in &t.rejected_by_reason {
        let text = t
            .rejected_texts
            .get(reason)
            .and_then(|texts| texts.first())
            .map_or(String::new(), |text| format!(" (e.g. \"{text}\")"));
        writeln!(out, "  rejected      {n:>8}  {reason}{text}")?;
    }
    writeln!(
        out,
        "recovery        {} back-offs, {} resends, {} fee resends (re-signed with a higher fee), {} nonce resyncs, {} RPC read retries",
        r.backoffs, r.resends, t.fee_resends, r.resyncs, r.rpc_retries
    )?;
    if let Some(f) = &r.refill {
        writeln!(
            out,
            "refill          {} top-up(s) in {} round(s) ({:.1} s paying), {} wei paid, {} balance(s) read, {} failed round(s)",
            f.topped_up, f.rounds, f.seconds, f.value_wei, f.balances_read, f.failed_rounds
        )?;
    }
    if let Some(reads) = &r.reads {
        print_reads(out, reads)?;
    }
    print_blocks(out, r)?;
    let d = &r.dropped;
    if !d.is_none() {
        writeln!(
            out,
            "kept            the report holds the latest rows only: {} older second(s), {} block(s) and {} window(s) are in the series file (--series-out); totals cover the whole run",
            d.seconds, d.blocks, d.windows
        )?;
    }
    Ok(())
}

/// Each write kind's share of the first submissions, beside the share
/// asked for.
fn print_kinds(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    let all: u64 = r.sent_by_kind.values().sum();
    let parts: Vec<String> = r
        .config
        .writes
        .iter()
        .map(|w| {
            let kind = w.workload.kind();
            let n = r.sent_by_kind.get(&kind).copied().unwrap_or(0);
            let got = n as f64 / all.max(1) as f64;
            format!(
                "{} {n} ({:.1} %, asked {:.1} %)",
                kind.name(),
                got * 100.0,
                w.share * 100.0
            )
        })
        .collect();
    writeln!(out, "  by kind       {}", parts.join("; "))
}

fn print_reads(out: &mut dyn Write, r: &ReadsReport) -> std::io::Result<()> {
    writeln!(
        out,
        "reads           {:.0}/s offered over {:.1} s, beside the writes; each answer checked",
        r.rate, r.seconds
    )?;
    for (name, m) in &r.methods {
        writeln!(
            out,
            "  {name:<13} {:>7.1}/s answered  p50 {:>6.1} p99 {:>7.1} ms  {} ok, {} wrong, {} failed, {} skipped",
            m.answered_per_second, m.latency_ms.p50, m.latency_ms.p99, m.ok, m.wrong, m.failed, m.skipped
        )?;
        for e in &m.examples {
            writeln!(out, "                {e}")?;
        }
    }
    Ok(())
}

fn print_latency(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    let (b, o) = (&r.latency_ms.to_block_time, &r.latency_ms.to_observed);
    let resolution = r.latency_ms.block_time_resolution_ms;
    if resolution < 1.0 {
        writeln!(
            out,
            "latency (ms)    p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → commit (the next CometBFT header's time, ns)",
            b.p50, b.p90, b.p99, b.max
        )?;
    } else {
        // Whole-second timestamps: each figure is a lower bound, up to 1 s short.
        let range = |v: f64| format!("{:.0}–{:.0}", v, v + resolution);
        writeln!(
            out,
            "latency (ms)    p50 {}  p90 {}  p99 {}  max {}  intended send → block timestamp: bounded by its 1 s resolution (give --comet-rpc for ns)",
            range(b.p50),
            range(b.p90),
            range(b.p99),
            range(b.max)
        )?;
    }
    writeln!(
        out,
        "                p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → block seen (100 ms polling)",
        o.p50, o.p90, o.p99, o.max
    )
}

/// The per-window table and the transactions-per-block histogram.
fn print_blocks(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    if !r.windows.is_empty() {
        writeln!(
            out,
            "windows         {:>17}  {:>8}  {:>8}  {:>9}  {:>9}",
            "blocks", "ours", "reverted", "ours TPS", "all TPS"
        )?;
        for w in &r.windows {
            writeln!(
                out,
                "                {:>17}  {:>8}  {:>8}  {:>9.1}  {:>9.1}",
                format!("{}–{}", w.from, w.to),
                w.ours,
                w.reverted,
                w.tps,
                w.tps_all
            )?;
        }
    }
    let bins = txs_per_block_bins(&r.txs_per_block);
    if !bins.is_empty() {
        writeln!(out, "txs per block   blocks")?;
        let widest = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1);
        for (from, to, blocks) in bins {
            let bar = "#".repeat((blocks * 40).div_ceil(widest) as usize);
            writeln!(out, "  {:>13}  {blocks:>7}  {bar}", format!("{from}–{to}"))?;
        }
    }
    Ok(())
}

/// The histogram in at most 10 bins of equal, round width: (from, to, blocks).
fn txs_per_block_bins(h: &[TxsPerBlock]) -> Vec<(u64, u64, u64)> {
    let Some(max) = h.iter().map(|b| b.txs).max() else {
        return Vec::new();
    };
    let raw = (max + 1).div_ceil(10).max(1);
    let width = [1, 2, 5]
        .iter()
        .flat_map(|m| (0..12).map(move |e| m * 10u64.pow(e)))
        .filter(|w| *w >= raw)
        .min()
        .unwrap_or(raw);
    let mut bins: Vec<(u64, u64, u64)> = (0..=max / width)
        .map(|i| (i * width, i * width + width - 1, 0))
        .collect();
    for b in h {
        bins[(b.txs / width) as usize].2 += b.blocks;
    }
    bins
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
    fn durations_take_units_and_bins_are_round() {
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
        let h = [
            TxsPerBlock { txs: 0, blocks: 4 },
            TxsPerBlock { txs: 37, blocks: 2 },
            TxsPerBlock { txs: 45, blocks: 1 },
        ];
        // Width 5 (46 values in 10 bins); 37 and 45 fall in 35–39 and 45–49.
        let bins = txs_per_block_bins(&h);
        assert_eq!(bins.len(), 10);
        assert_eq!(
            (bins[0], bins[7], bins[9]),
            ((0, 4, 4), (35, 39, 2), (45, 49, 1))
        );
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 7);
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
