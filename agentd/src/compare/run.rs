//! Running a comparison: every step's runs in interleaved rounds, each on a
//! fresh devnet of its own, then the reference ceiling, the summaries and
//! the differential flamegraphs.
//!
//! A run: start a devnet with the step's patch set (or build), fund the
//! senders, find the knee by the saturation search (or take the fixed
//! rate), measure `seconds` at that rate, profile a few blocks under the
//! same load, and put the node's logs through the etl.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use alloy_primitives::{B256, U256};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::etl;
use super::ladder::{interleaved, Step};
use super::profile;
use super::report::{CompareReport, Environment, ReferenceRun, Settings, StepRun};
use crate::accounts::KeySet;
use crate::devnet::{self, Devnet};
use crate::eth::EthClient;
use crate::kvstore::{KvProbe, KvReferenceConfig};
use crate::progress;
use crate::saturate::{
    find_knee, EvmProbe, EvmProbeConfig, Outcome, Probe, SearchConfig, SearchEvent, Verdict,
};

/// Seconds of load under the profiled blocks.
const PROFILE_SECS: f64 = 5.0;

/// A running node to measure instead of fresh devnets: one's own fullnode,
/// measured as it is (one step, `repeat` runs at its knee).
#[derive(Debug, Clone)]
pub struct LiveNode {
    /// web3 endpoint.
    pub web3: String,
    /// Its CometBFT RPC, for header times and results (else discovered).
    pub comet_rpc: Option<String>,
    /// Funded senders.
    pub keys: KeySet,
}

/// Everything a comparison needs; [`Settings`] is what the report records.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The steps, in ladder order (one, with a live node).
    pub steps: Vec<Step>,
    /// Measure this node rather than fresh devnets.
    pub live: Option<LiveNode>,
    /// What the report records (gas limit, block time, seconds, repeats …).
    pub settings: Settings,
    /// The saturation search of every run (unless `settings.fixed_rate`).
    pub search: SearchConfig,
    /// Load before every measured window (search steps included).
    pub warmup: Duration,
    /// Blocks profiled per run (0: none).
    pub profile_blocks: u32,
    /// Measure CometBFT's kvstore ceiling too.
    pub reference: bool,
    /// Where profiles and differential flamegraphs go (in a `compare-<unix
    /// time>` folder of their own).
    pub out: PathBuf,
    /// Show progress.
    pub progress: bool,
}

/// Runs the comparison.
pub async fn run(cfg: &CompareConfig) -> Result<CompareReport> {
    let started = Instant::now();
    let (work, _) = devnet::scratch_dir()?;
    let out = cfg.out.join(format!("compare-{}", unix_seconds()));
    let order = interleaved(cfg.steps.len(), cfg.settings.repeat);
    let bar = progress_bar(cfg.progress, order.len() + usize::from(cfg.reference));
    let mut runs = Vec::with_capacity(order.len());
    for (k, &(round, i)) in order.iter().enumerate() {
        let step = &cfg.steps[i];
        bar.set_message(format!("round {round}, step {}", step.name));
        let dir = work.path().join(format!("run-{k}"));
        let run = match &cfg.live {
            Some(node) => live_run(cfg, node, step, round, &bar).await,
            None => one_run(cfg, step, round, &dir, &out, &bar).await,
        };
        let run = run.with_context(|| format!("step {} (round {round})", step.name))?;
        report_line(&bar, &run);
        runs.push(run);
        bar.inc(1);
    }
    let reference = if cfg.reference {
        bar.set_message("reference: CometBFT kvstore");
        let r = reference(cfg, &work.path().join("kvstore"), &bar).await?;
        bar.inc(1);
        Some(r)
    } else {
        None
    };
    bar.finish_and_clear();
    diff_flamegraphs(&mut runs, &cfg.steps, &out)?;
    let ladder: Vec<String> = cfg.steps.iter().map(|s| s.name.clone()).collect();
    CompareReport::assemble(
        Environment::detect(devnet::tools::cometbft_version()),
        cfg.settings.clone(),
        runs,
        &ladder,
        reference,
        started.elapsed().as_secs_f64(),
    )
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One run of one step on a fresh devnet.
async fn one_run(
    cfg: &CompareConfig,
    step: &Step,
    round: usize,
    dir: &Path,
    out: &Path,
    bar: &ProgressBar,
) -> Result<StepRun> {
    let settings = &cfg.settings;
    let net = Devnet::start_private(dir, |o| {
        o.patches = step.patches.clone();
        o.timeout_commit = settings.timeout_commit.clone();
        o.block_gas_limit = settings.block_gas_limit;
        o.abcid = step.abcid.clone();
    })
    .await
    .context("starting the devnet")?;
    let client = EthClient::new(&net.state.web3_url(), Duration::from_secs(10))?;
    let node: String = client
        .call("web3_clientVersion", serde_json::json!([]))
        .await?;
    let keys = fund(&client, &net, settings.senders, dir).await?;
    let mut probe = EvmProbe::connect(probe_config(&net, keys, cfg.warmup)).await?;
    let (knee_tps, rate) = rate_of(cfg, &mut probe, bar).await?;
    bar.set_message(format!("round {round}, step {}: {rate:.0} tx/s", step.name));
    let mut measure = probe.step(rate, settings.seconds).await?;
    let etl = etl::window(&net.state, measure.first_height + 1, measure.last_height).await?;
    measure.valid = etl.valid;
    measure.invalid = Some(etl.invalid);
    let flamegraph = if cfg.profile_blocks > 0 {
        let out = out.join(format!("{}-round{round}", file_name(&step.name)));
        let load = probe.step(rate, PROFILE_SECS);
        match profile::capture(&net.state, cfg.profile_blocks, &out, load).await? {
            profile::Captured::Profiles(dir) => Some(dir),
            profile::Captured::Nothing(why) => {
                progress::println(
                    bar,
                    format!(
                        "warning: round {round}, step {}: no flamegraph: {why}",
                        step.name
                    ),
                );
                None
            }
        }
    } else {
        None
    };
    Ok(StepRun {
        step: step.name.clone(),
        patches: step.patches.clone(),
        node,
        round,
        knee_tps,
        measure,
        etl: Some(etl),
        flamegraph,
        diff_flamegraph: None,
    })
}

/// One run on a live node: its knee, then `seconds` measured at it.
async fn live_run(
    cfg: &CompareConfig,
    node: &LiveNode,
    step: &Step,
    round: usize,
    bar: &ProgressBar,
) -> Result<StepRun> {
    let client = EthClient::new(&node.web3, Duration::from_secs(10))?;
    let version: String = client
        .call("web3_clientVersion", serde_json::json!([]))
        .await?;
    let mut probe = EvmProbe::connect(EvmProbeConfig {
        comet_rpc: node.comet_rpc.clone(),
        warmup: cfg.warmup,
        ..EvmProbeConfig::new(vec![node.web3.clone()], node.keys.clone())
    })
    .await?;
    let (knee_tps, rate) = rate_of(cfg, &mut probe, bar).await?;
    let measure = probe.step(rate, cfg.settings.seconds).await?;
    Ok(StepRun {
        step: step.name.clone(),
        patches: step.patches.clone(),
        node: version,
        round,
        knee_tps,
        measure,
        etl: None,
        flamegraph: None,
        diff_flamegraph: None,
    })
}

/// The senders, funded from the devnet's root account.
async fn fund(client: &EthClient, net: &Devnet, senders: usize, dir: &Path) -> Result<KeySet> {
    let root = crate::keys::read_key_file(&net.state.root_key())?;
    let (keys, _) = crate::fund::fund_seeded(
        client,
        &root,
        B256::repeat_byte(12),
        senders,
        U256::from(10u64).pow(U256::from(20u64)),
        &dir.join("keys.txt"),
    )
    .await
    .context("funding the senders")?;
    Ok(keys)
}

fn probe_config(net: &Devnet, keys: KeySet, warmup: Duration) -> EvmProbeConfig {
    let pids = [net.state.abcid_pid, net.state.cometbft_pid];
    EvmProbeConfig {
        comet_rpc: Some(net.state.rpc_url()),
        node_pids: pids.into_iter().flatten().collect(),
        warmup,
        ..EvmProbeConfig::new(vec![net.state.web3_url()], keys)
    }
}

/// The knee found (`None` with a fixed rate, or when the search found none)
/// and the rate to measure at.
async fn rate_of(
    cfg: &CompareConfig,
    probe: &mut impl Probe,
    bar: &ProgressBar,
) -> Result<(Option<f64>, f64)> {
    if let Some(rate) = cfg.settings.fixed_rate {
        return Ok((None, rate));
    }
    let search = find_knee(probe, &cfg.search, |event| {
        if let SearchEvent::Starting { index, rate_tps } = event {
            bar.set_message(format!(
                "searching the knee: step {}, {rate_tps:.0} tx/s",
                index + 1
            ));
        }
    })
    .await?;
    let kept_up = search
        .steps
        .iter()
        .filter(|(_, v)| *v == Verdict::KeepsUp)
        .map(|(m, _)| m.offered_tps)
        .reduce(f64::max);
    match (&search.outcome, kept_up) {
        (Outcome::KneeFound { knee_tps, .. }, _) => Ok((Some(*knee_tps), *knee_tps)),
        (Outcome::NoRateKeptUp, _) | (_, None) => anyhow::bail!(
            "no rate was kept up ({:?}): lower --start, or use --rate",
            search.outcome
        ),
        // No knee: the highest rate kept up is a lower bound, measured as
        // such; the run records no knee.
        (outcome, Some(kept)) => {
            warn(
                bar,
                &format!(
                    "no knee found ({outcome:?}); measuring at the highest rate kept up, {kept:.0} tx/s (a lower bound)"
                ),
            );
            Ok((None, kept))
        }
    }
}

fn warn(bar: &ProgressBar, line: &str) {
    progress::println(bar, format!("warning: {line}"));
}

/// CometBFT's kvstore at its own knee, measured as long as every step.
async fn reference(cfg: &CompareConfig, dir: &Path, bar: &ProgressBar) -> Result<ReferenceRun> {
    let mut kv = KvReferenceConfig::new(dir);
    kv.node.timeout_commit = cfg.settings.timeout_commit.clone();
    kv.warmup = cfg.warmup;
    let mut probe = KvProbe::start(kv)
        .await
        .context("starting the kvstore reference node")?;
    let (knee_tps, rate) = rate_of(cfg, &mut probe, bar).await?;
    let measure = probe.step(rate, cfg.settings.seconds).await?;
    Ok(ReferenceRun {
        app: "cometbft kvstore".to_string(),
        knee_tps,
        measure,
    })
}

/// Each run's profiles against those of the step before it in the same
/// round: `<out>/<step>-round<r>-diff.svg`.
fn diff_flamegraphs(runs: &mut [StepRun], steps: &[Step], out: &Path) -> Result<()> {
    for i in 0..runs.len() {
        let (round, name) = (runs[i].round, runs[i].step.clone());
        let Some(pos) = steps.iter().position(|s| s.name == name) else {
            continue;
        };
        let Some(previous) = pos.checked_sub(1).map(|p| &steps[p].name) else {
            continue;
        };
        let before = runs
            .iter()
            .find(|r| r.round == round && &r.step == previous)
            .and_then(|r| r.flamegraph.clone());
        let (Some(before), Some(after)) = (before, runs[i].flamegraph.clone()) else {
            continue;
        };
        let svg = out.join(format!("{}-round{round}-diff.svg", file_name(&name)));
        let title = format!("{previous} → {name} (round {round}): red grew, blue shrank");
        profile::diff(&before, &after, &svg, &title)?;
        runs[i].diff_flamegraph = Some(svg);
    }
    Ok(())
}

/// A step name as a file name (`+rwlock` → `plus-rwlock`).
fn file_name(step: &str) -> String {
    step.replace('+', "plus-").replace(['/', ' '], "_")
}

fn progress_bar(visible: bool, len: usize) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed:>4} run {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

fn report_line(bar: &ProgressBar, run: &StepRun) {
    let m = &run.measure;
    let line = format!(
        "round {} {:<20} {:>8.1} committed tx/s at {:>8.1} offered  block p50 {:>5.0} ms  node {} µs/tx",
        run.round,
        run.step,
        m.committed_tps,
        m.offered_tps,
        m.block_time_p50_ms,
        m.node_cpu_us_per_tx
            .map_or_else(|| "?".to_string(), |c| format!("{c:.0}")),
    );
    progress::println(bar, line);
}
