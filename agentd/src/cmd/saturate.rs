//! `feth saturate`: the highest open-loop rate a web3 node's chain keeps up
//! with, found step by step (see [`crate::saturate`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::args::{emit, load_senders, seconds, NetworkArgs, SearchArgs};
use crate::load::plan::{DEFAULT_BATCH, DEFAULT_MAX_PARALLELISM};
use crate::load::scenario::Scenario;
use crate::saturate::{
    find_knee, Clock, EvmProbe, EvmProbeConfig, Outcome, SearchEvent, SearchReport, StepMeasure,
    Verdict,
};

/// `feth saturate …`
#[derive(Debug, Args)]
pub struct SaturateArgs {
    #[command(flatten)]
    network: NetworkArgs,
    /// Keys file made by `feth fund` (the funded senders).
    #[arg(long, default_value = "feth-keys.txt")]
    keys: PathBuf,
    /// Use only the first N accounts of the keys file.
    #[arg(long)]
    senders: Option<usize>,
    #[command(flatten)]
    search: SearchArgs,
    /// CometBFT RPC endpoint (nanosecond header times, mempool, valid/invalid);
    /// by default asked of the node, else web3 timestamps are used.
    #[arg(long, value_name = "URL")]
    comet_rpc: Option<String>,
    /// PID of a node process on this machine (repeat): node CPU per transaction.
    #[arg(long = "node-pid", value_name = "PID")]
    node_pids: Vec<u32>,
    /// Concurrent requests in flight.
    #[arg(long, default_value_t = DEFAULT_MAX_PARALLELISM)]
    max_parallelism: usize,
    /// Transactions (of different senders) per JSON-RPC batch.
    #[arg(long, default_value_t = DEFAULT_BATCH)]
    batch: usize,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Longest wait after each step for inclusion, and again for an empty mempool, seconds.
    #[arg(long, default_value_t = 60.0)]
    drain: f64,
    /// Print the whole search (every step, its verdict, the outcome) as JSON
    /// on stdout; the steps and the summary then go to stderr.
    #[arg(long)]
    json: bool,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Each step's traffic, from a scenario file or a built-in scenario
    /// (transfer, erc20, store, swap, fullnode, read-heavy; see `feth load --scenario`):
    /// its writes' mix, its reads at their own rate beside them, how senders
    /// send. Default: value transfers between the senders, no reads.
    #[arg(long, value_name = "FILE|NAME")]
    scenario: Option<String>,
}

impl SaturateArgs {
    fn probe(&self) -> Result<EvmProbeConfig> {
        let keys = load_senders(&self.keys, self.senders)?;
        let mut cfg = EvmProbeConfig::new(self.network.urls.clone(), keys);
        cfg.warmup = self.search.warmup()?;
        cfg.comet_rpc = self.comet_rpc.clone();
        cfg.node_pids = self.node_pids.clone();
        cfg.max_parallelism = self.max_parallelism;
        cfg.batch = self.batch;
        cfg.timeout = seconds("--timeout", self.timeout)?;
        cfg.drain = seconds("--drain", self.drain)?;
        cfg.scenario = self.scenario.as_deref().map(Scenario::load).transpose()?;
        Ok(cfg)
    }
}

/// Runs `feth saturate`.
pub async fn run(args: SaturateArgs) -> Result<()> {
    let search = args.search.search_config();
    search.validate()?;
    let mut probe = EvmProbe::connect(args.probe()?).await?;
    let json = args.json;
    let human = move || -> Box<dyn Write> {
        if json {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        }
    };
    writeln!(human(), "clock  {}", probe.clock_source())?;
    writeln!(human(), "{HEADER}")?;
    let bar = progress_bar(args.quiet);
    let searching = find_knee(&mut probe, &search, |event| match event {
        SearchEvent::Starting { index, rate_tps } => {
            bar.set_message(format!("step {}: offering {rate_tps:.0} tx/s", index + 1));
        }
        SearchEvent::Finished {
            index,
            measure,
            verdict,
        } => bar.suspend(|| {
            // A closed stdout (a pipe gone) must not stop the search.
            let _ = writeln!(human(), "{}", step_line(index, measure, verdict));
            if let Some(reads) = &measure.reads {
                let _ = writeln!(human(), "      reads {}", reads.one_line());
            }
        }),
    });
    let report = tokio::select! {
        report = searching => report?,
        _ = tokio::signal::ctrl_c() => bail!("interrupted"),
    };
    bar.finish_and_clear();
    emit(json, &report, |out| {
        print_outcome(out, &report)?;
        if report.rpc_retries > 0 {
            writeln!(
                out,
                "rpc    {} read(s) retried after a transient transport error (reset, refused, timeout)",
                report.rpc_retries
            )?;
        }
        Ok(())
    })?;
    if let Outcome::AgentLimited { at_tps, .. } = report.outcome {
        bail!("the agent could not offer {at_tps:.0} tx/s: no knee is claimed (see above)");
    }
    Ok(())
}

fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

const HEADER: &str = "step  offered     sent  committed  Mgas/s  block p50/p95 ms  mempool start→end  lag p99 ms (own)  agent µs/tx  slots busy  verdict";

fn step_line(index: usize, m: &StepMeasure, v: &Verdict) -> String {
    let count = |n: Option<u64>| n.map_or_else(|| "?".to_string(), |n| n.to_string());
    let mempool = format!("{}→{}", count(m.mempool_start), count(m.mempool_end));
    let verdict = match v {
        Verdict::KeepsUp => "keeps up".to_string(),
        Verdict::ChainBehind { why } => format!("chain behind: {why}"),
        Verdict::AgentBehind { why } => format!("AGENT behind: {why}"),
    };
    format!(
        "{:>4} {:>8.0} {:>8.1} {:>10.1}  {:>6}  {:>7.0}/{:<8.0} {:>17}  {:>8.0} ({:>5.0})  {:>11.1}  {:>8.0} %  {verdict}",
        index + 1,
        m.offered_tps,
        m.sent_tps,
        m.committed_tps,
        m.gas_per_sec
            .map_or_else(|| "?".to_string(), crate::units::mgas_figure),
        m.block_time_p50_ms,
        m.block_time_p95_ms,
        mempool,
        m.schedule_lag_p99_ms,
        m.agent_lag_p99_ms,
        m.agent_cpu_us_per_tx,
        m.slots_busy * 100.0,
    )
}

fn print_outcome(out: &mut dyn Write, r: &SearchReport) -> std::io::Result<()> {
    let clock = match r.clock {
        Clock::CometbftHeaders => "CometBFT header times",
        Clock::Web3Timestamps => "web3 block timestamps (whole seconds)",
    };
    match &r.outcome {
        Outcome::KneeFound {
            knee_tps,
            committed_tps,
            behind_tps,
        } => writeln!(
            out,
            "knee   {knee_tps:.0} tx/s kept up ({committed_tps:.1} tx/s committed, {clock}); fell behind at {behind_tps:.0} tx/s"
        ),
        Outcome::AgentLimited { at_tps, why } => writeln!(
            out,
            "no knee: the agent could not offer {at_tps:.0} tx/s ({why}); give it more CPU, more senders, or another machine"
        ),
        Outcome::NoRateKeptUp { lowest_tps } => writeln!(
            out,
            "no knee: the chain fell behind at every rate offered, from the start rate {:.0} tx/s down to {:.0}; is it committing blocks? (its log, or CometBFT's /status)",
            r.config.start_tps,
            lowest_tps.unwrap_or(r.config.start_tps)
        ),
        Outcome::MaxReached {
            max_tps,
            committed_tps,
        } => writeln!(
            out,
            "no knee: the chain kept up at --max {max_tps:.0} tx/s ({committed_tps:.1} committed, {clock}); raise --max"
        ),
        Outcome::StepsExhausted {
            kept_up_tps,
            committed_tps,
        } => writeln!(
            out,
            "no knee: {} steps ran out with the chain keeping up at {kept_up_tps:.0} tx/s ({committed_tps:.1} committed, {clock}); raise --max-steps or --start",
            r.steps.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::saturate::SearchConfig;

    #[derive(Parser)]
    struct Saturate {
        #[command(flatten)]
        args: SaturateArgs,
    }

    fn parse(args: &[&str]) -> SaturateArgs {
        Saturate::try_parse_from(std::iter::once("saturate").chain(args.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn flags_reach_the_search_and_defaults_are_the_library_s() {
        assert_eq!(parse(&[]).search.search_config(), SearchConfig::default());
        let s = parse(&[
            "--start",
            "400",
            "--max",
            "1000000",
            "--step-secs",
            "4",
            "--tolerance",
            "0.1",
        ])
        .search
        .search_config();
        assert_eq!(
            (s.start_tps, s.max_tps, s.step_secs, s.tolerance),
            (400.0, 1e6, 4.0, 0.1)
        );
        let e = seconds("--warmup-secs", -1.0).unwrap_err().to_string();
        assert!(e.contains("--warmup-secs"), "{e}");
        assert_eq!(
            seconds("--drain", 2.5).unwrap(),
            Duration::from_millis(2500)
        );
    }
}
