//! `feth load`: the agent a chain engineer points at a fullnode to learn its
//! real committed TPS.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;

use super::args::{emit, load_senders, NetworkArgs};
use crate::load::engine::{
    LoadPlan, Recipients, WorkloadKind, DEFAULT_BATCH, DEFAULT_MAX_PARALLELISM,
};
use crate::load::metrics::LoadMetrics;
use crate::load::pick::{AccountDist, Picker, RateSchedule};
use crate::load::{self, LoadReport, LoadSettings};
use crate::units;

/// `--workload`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum WorkloadArg {
    Transfer,
    Erc20,
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
    /// Use only the first N accounts of the keys file.
    #[arg(long)]
    senders: Option<usize>,
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
    #[arg(long, value_enum, default_value_t = RecipientsArg::Fresh)]
    recipients: RecipientsArg,
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
    /// Print the full report (config, environment, series, totals) as JSON
    /// on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics while the run lasts
    /// (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
}

fn positive(name: &str, v: f64) -> Result<f64> {
    if !(v > 0.0 && v.is_finite()) {
        bail!("{name} must be a positive number, got {v}");
    }
    Ok(v)
}

impl LoadArgs {
    /// What to send, as these arguments ask for it.
    fn plan(&self, senders: usize) -> Result<LoadPlan> {
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
        Ok(LoadPlan {
            schedule,
            per_account: self.count,
            duration: self
                .duration
                .map(|d| positive("--duration", d).map(Duration::from_secs_f64))
                .transpose()?,
            max_parallelism: self.max_parallelism.max(1),
            batch: self.batch.max(1),
            picker: Picker::new(self.accounts, senders),
            recipients: match self.recipients {
                RecipientsArg::Existing => Recipients::Existing,
                RecipientsArg::Fresh => Recipients::Fresh,
            },
            workload: match self.workload {
                WorkloadArg::Transfer => WorkloadKind::Transfer,
                WorkloadArg::Erc20 => WorkloadKind::Erc20,
            },
            value: units::parse_amount(&self.value)?,
        })
    }
}

/// Runs `feth load`.
pub async fn run(args: LoadArgs) -> Result<()> {
    let keys = load_senders(&args.keys, args.senders)?;
    let settings = LoadSettings {
        endpoints: args.network.urls.clone(),
        timeout: Duration::from_secs_f64(positive("--timeout", args.timeout)?),
        wait: Duration::from_secs_f64(args.wait.max(0.0)),
        progress: !args.quiet,
        stop: None,
        plan: args.plan(keys.len())?,
        metrics: None,
    };
    let report = match args.metrics {
        None => load::run(settings, keys).await?,
        Some(addr) => {
            let metrics = Arc::new(LoadMetrics::new());
            let render = {
                let m = metrics.clone();
                Arc::new(move || m.encode()) as crate::metrics_http::Render
            };
            let (bound, server) = crate::metrics_http::serve(addr, render).await?;
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
    emit(args.json, &report, |out| print_summary(out, &report))?;
    if report.totals.included == 0 {
        bail!("nothing was included: the run failed (see the rejections above)");
    }
    Ok(())
}

fn print_summary(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    let t = &r.totals;
    let c = &r.chain;
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
    let (b, o) = (&r.latency_ms.to_block_time, &r.latency_ms.to_observed);
    writeln!(
        out,
        "latency (ms)    p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → block timestamp (1 s resolution)",
        b.p50, b.p90, b.p99, b.max
    )?;
    writeln!(
        out,
        "                p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → block seen (100 ms polling)",
        o.p50, o.p90, o.p99, o.max
    )?;
    writeln!(
        out,
        "transactions    {} signed = {} included + {} rejected + {} unresolved",
        t.signed, t.included, t.rejected, t.unresolved
    )?;
    for (reason, n) in &t.rejected_by_reason {
        writeln!(out, "  rejected      {n:>8}  {reason}")?;
    }
    writeln!(
        out,
        "recovery        {} back-offs, {} resends, {} nonce resyncs",
        r.backoffs, r.resends, r.resyncs
    )?;
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
        load.args.plan(100)
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
        ])
        .unwrap();
        assert_eq!(p.schedule, RateSchedule::Fixed(250.0));
        assert_eq!((p.per_account, p.batch), (Some(3), 1));
        assert_eq!(p.workload, WorkloadKind::Erc20);
    }

    #[test]
    fn a_load_without_an_amount_or_with_a_bad_rate_is_refused() {
        let e = plan(&[]).unwrap_err().to_string();
        assert!(e.contains("--count N") && e.contains("--duration"), "{e}");
        let e = plan(&["--count", "1", "--rate", "0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--rate must be a positive number"), "{e}");
    }
}
