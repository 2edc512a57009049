//! `feth load`: the agent a chain engineer points at a fullnode to learn its
//! real committed TPS.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::accounts::KeySet;
use crate::load::engine::{EngineConfig, Recipients, Workload};
use crate::load::pick::{AccountDist, Picker, RateSchedule};
use crate::load::{self, LoadReport, LoadSettings};
use crate::sign::Fee;
use crate::units;

/// `--workload`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum WorkloadArg {
    Transfer,
    Erc20,
}

/// `feth load …`
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// web3 JSON-RPC endpoint(s); senders are spread across them.
    #[arg(long, default_value = "http://127.0.0.1:8545", value_delimiter = ',')]
    network: Vec<String>,
    /// Keys file made by `feth fund`.
    #[arg(long, default_value = "feth-keys.txt")]
    keys: PathBuf,
    /// Use only the first N accounts of the keys file.
    #[arg(long)]
    senders: Option<usize>,
    /// Concurrent requests in flight.
    #[arg(long, default_value_t = 64)]
    max_parallelism: usize,
    /// Transactions per account.
    #[arg(long)]
    count: Option<u64>,
    /// Transactions (of different senders) per JSON-RPC batch; 1 disables
    /// batching. CometBFT's own RPC refuses batches over 10 by default.
    #[arg(long, default_value_t = 10)]
    batch: usize,
    /// Seconds to send for.
    #[arg(long)]
    duration: Option<f64>,
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
    #[arg(long, value_enum, default_value_t = Recipients::Fresh)]
    recipients: Recipients,
    /// What each transaction does: a value transfer, or an ERC-20 `transfer`
    /// (the first account deploys a token and hands it to the others).
    #[arg(long, value_enum, default_value_t = WorkloadArg::Transfer)]
    workload: WorkloadArg,
    /// Value of each transfer (wei, or with a unit).
    #[arg(long, default_value = "1")]
    value: String,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Longest wait for inclusion after sending stops, seconds.
    #[arg(long, default_value_t = 60.0)]
    wait: f64,
    /// Write the full report (config, environment, series, totals) as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
}

fn positive(name: &str, v: f64) -> Result<f64> {
    if !(v > 0.0 && v.is_finite()) {
        bail!("{name} must be a positive number, got {v}");
    }
    Ok(v)
}

/// Runs `feth load`.
pub async fn run(args: LoadArgs) -> Result<()> {
    let schedule = match (&args.rate, &args.ramp) {
        (Some(r), _) => RateSchedule::Fixed(positive("--rate", *r)?),
        (None, Some(text)) => RateSchedule::parse_ramp(text)?,
        (None, None) => RateSchedule::Closed,
    };
    if args.count.is_none() && args.duration.is_none() {
        bail!("say how much to send: --count N (per account) and/or --duration SECONDS");
    }
    if args.count == Some(0) {
        bail!("--count must be at least 1");
    }
    let mut keys = KeySet::load(&args.keys).with_context(|| {
        format!(
            "create accounts first: feth fund --count N --amount A --out {}",
            args.keys.display()
        )
    })?;
    if let Some(n) = args.senders {
        if n == 0 || n > keys.len() {
            bail!("--senders {n}: the keys file holds {} accounts", keys.len());
        }
        keys.keys.truncate(n);
        keys.addresses.truncate(n);
    }
    let settings = LoadSettings {
        endpoints: args.network.clone(),
        timeout: Duration::from_secs_f64(positive("--timeout", args.timeout)?),
        wait: Duration::from_secs_f64(args.wait.max(0.0)),
        progress: !args.quiet,
        stop: None,
        engine: EngineConfig {
            schedule,
            per_account: args.count,
            duration: args
                .duration
                .map(|d| positive("--duration", d).map(Duration::from_secs_f64))
                .transpose()?,
            max_parallelism: args.max_parallelism.max(1),
            batch: args.batch.max(1),
            picker: Picker::new(args.accounts, keys.len()),
            recipients: args.recipients,
            workload: match args.workload {
                WorkloadArg::Transfer => Workload::Transfer,
                WorkloadArg::Erc20 => Workload::Erc20 {
                    token: alloy_primitives::Address::ZERO,
                },
            },
            value: units::parse_amount(&args.value)?,
            gas_limit: crate::fund::TRANSFER_GAS,
            fee: Fee::Legacy { gas_price: 0 },
            chain_id: 0,
        },
    };
    let report = load::run(settings, keys).await?;
    print_summary(&report);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if report.totals.included == 0 {
        bail!("nothing was included: the run failed (see the rejections above)");
    }
    Ok(())
}

fn print_summary(r: &LoadReport) {
    let t = &r.totals;
    let c = &r.chain;
    println!(
        "committed TPS   {:>10.1}  ours, read from blocks {}..{} over {:.0} s",
        c.committed_tps, c.first_block, c.last_block, c.seconds
    );
    println!(
        "                {:>10.1}  all transactions in those blocks",
        c.committed_tps_all
    );
    println!(
        "send rate       {:>10.1}  tx/s submitted over {:.1} s (not a TPS figure)",
        r.send_rate, r.send_seconds
    );
    let (b, o) = (&r.latency_ms.to_block_time, &r.latency_ms.to_observed);
    println!(
        "latency (ms)    p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → block timestamp (1 s resolution)",
        b.p50, b.p90, b.p99, b.max
    );
    println!(
        "                p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → block seen (100 ms polling)",
        o.p50, o.p90, o.p99, o.max
    );
    println!(
        "transactions    {} signed = {} included + {} rejected + {} unresolved",
        t.signed, t.included, t.rejected, t.unresolved
    );
    for (reason, n) in &t.rejected_by_reason {
        println!("  rejected      {n:>8}  {reason}");
    }
    println!(
        "recovery        {} back-offs, {} resends, {} nonce resyncs",
        r.backoffs, r.resends, r.resyncs
    );
}
