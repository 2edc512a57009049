//! Running a comparison: each step set up once, then many short interleaved
//! rounds, then the reference ceiling, the summaries and the differential
//! flamegraphs.
//!
//! **Setup, once per step.** A devnet of its own (funded senders, warm
//! caches) and one saturation search, coarse (doubling the rate until the
//! chain falls behind): it only places the *overload*, a rate above what
//! every step commits. A *pilot* round then checks it: one unmeasured
//! saturation window per step, the overload doubled while any step keeps
//! up with it. The pilot's committed rates are the steps' capacities; the
//! comparison's *fixed rate* is a share of the lowest.
//!
//! **A run: one step in one round, two windows.**
//! - *Saturation*: one overload for every step (`overload` × the highest
//!   rate any step's search fell behind at) for `seconds`; the chain commits
//!   what it can, so committed TPS is a continuous measurement of its
//!   capacity, not a point of the search's grid, and every step is offered
//!   the same load. A round in which a step kept up does not count: the
//!   overload is doubled and the round run again. A window the chain kept up with is only a lower bound and
//!   is kept out of the estimates. Gas per second comes from the same blocks.
//! - *Fixed rate*: the same rate for every step, for `seconds`: node CPU
//!   (CometBFT + abcid, schedstat ns) per committed transaction and latency
//!   to commit, at one operating point: the low-noise view of a change.
//!
//! **Rounds.** Every step once per round, the order alternating (A B C,
//! C B A, …), each step's node paused while the others are measured. With
//! `until_resolved`, rounds go on until every step's intervals against the
//! previous step (TPS and CPU per transaction) are within the target
//! half-width, or the budget would be overrun, and the report says which.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::etl;
use super::ladder::Step;
use super::profile;
use super::report::{CompareReport, Environment, ReferenceRun, Settings};
use super::session::StepNode;
use super::step::Metric;
use super::step::{FixedWindow, StepRun, StepSetup};
use super::summary::{summarise, Rounds};
use crate::accounts::KeySet;
use crate::devnet;
use crate::kvstore::{KvProbe, KvReferenceConfig};
use crate::load::scenario::Scenario;
use crate::node_profile;
use crate::progress;
use crate::saturate::{
    find_knee, EvmProbe, EvmProbeConfig, Outcome, Probe, SearchConfig, SearchEvent, SearchReport,
    Verdict,
};
use crate::stats::MIN_ROUNDS;

/// Seconds of load under the profiled blocks.
const PROFILE_SECS: f64 = 5.0;
/// The fixed rate, as a share of the lowest capacity the pilot measured.
pub const FIXED_SHARE: f64 = 0.6;
/// Times the pilot, and again the rounds, may double the overload.
const PILOT_DOUBLINGS: usize = 4;
/// A step committing this share of the pilot's overload was not clearly
/// saturated by it: the pilot doubles the overload.
const PILOT_MARGIN: f64 = 0.75;

/// A running node to measure instead of fresh devnets: one's own fullnode,
/// measured as it is (one step).
#[derive(Debug, Clone)]
pub struct LiveNode {
    /// web3 endpoint.
    pub web3: String,
    /// Its CometBFT RPC, for header times and results (else discovered).
    pub comet_rpc: Option<String>,
    /// Funded senders.
    pub keys: KeySet,
    /// PIDs of its processes on this machine, for its CPU per transaction
    /// and to tell other processes' load from its own (none: not measured).
    pub node_pids: Vec<u32>,
}

/// Everything a comparison needs; [`Settings`] is what the report records.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The steps, in ladder order (one, with a live node).
    pub steps: Vec<Step>,
    /// Measure this node rather than fresh devnets.
    pub live: Option<LiveNode>,
    /// What the report records; `fixed_rate` is filled in once chosen and
    /// `rounds` once run.
    pub settings: Settings,
    /// The fixed rate given (`--rate`); else [`FIXED_SHARE`] of the lowest
    /// rate kept up.
    pub rate: Option<f64>,
    /// Rounds at most (the rounds to run without `until_resolved`).
    pub max_rounds: usize,
    /// Load before every measured window.
    pub warmup: Duration,
    /// Blocks profiled per step in the first round (0: none).
    pub profile_blocks: u32,
    /// Measure CometBFT's kvstore ceiling too.
    pub reference: bool,
    /// Every step's traffic; `None`: value transfers, no reads.
    pub scenario: Option<Scenario>,
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
    let bar = progress_bar(cfg.progress);
    let (mut nodes, mut setups) = set_up(cfg, work.path(), &bar).await?;
    let capacity = pilot(cfg, &mut nodes, &mut setups, &bar).await?;
    let mut settings = cfg.settings.clone();
    settings.fixed_rate = fixed_rate(cfg.rate, &capacity)?;
    let mut runs: Vec<StepRun> = Vec::new();
    let (mut rounds, mut saturated, mut raised) = (0, 0, 0);
    let stopped = loop {
        if let Some(why) = stop_reason(cfg, &settings, &setups, &runs, saturated, started) {
            break why;
        }
        let first = runs.len();
        for i in round_order(cfg.steps.len(), rounds) {
            let step = &cfg.steps[i];
            bar.set_message(format!("round {}, step {}", rounds + 1, step.name));
            let run = one_run(
                cfg,
                &settings,
                &setups[i],
                &mut nodes[i],
                step,
                rounds,
                &out,
                &bar,
            )
            .await
            .with_context(|| format!("step {} (round {})", step.name, rounds + 1))?;
            report_line(&bar, &run);
            runs.push(run);
        }
        rounds += 1;
        // A round in which a step kept up with the overload does not count:
        // the overload is doubled and the round run again (its fixed-rate
        // windows still count).
        let kept_up = runs[first..].iter().any(|r| r.lower_bound.is_some());
        if kept_up && raised < PILOT_DOUBLINGS {
            raised += 1;
            raise_overload(&mut setups, &bar);
        } else {
            saturated += 1;
        }
    };
    settings.rounds = rounds;
    drop(nodes);
    let reference = match cfg.reference {
        true => Some(reference(cfg, &settings, &work.path().join("kvstore"), &bar).await?),
        false => None,
    };
    bar.finish_and_clear();
    diff_flamegraphs(&mut runs, &cfg.steps, &out)?;
    let measured = Rounds {
        setups,
        runs,
        ladder: cfg.steps.iter().map(|s| s.name.clone()).collect(),
        stopped,
    };
    CompareReport::assemble(
        Environment::detect(devnet::tools::cometbft_version()),
        settings,
        measured,
        reference,
        started.elapsed().as_secs_f64(),
    )
}

/// Every step's node, started, funded and searched once, then paused.
async fn set_up(
    cfg: &CompareConfig,
    work: &Path,
    bar: &ProgressBar,
) -> Result<(Vec<StepNode>, Vec<StepSetup>)> {
    let (mut nodes, mut setups) = (Vec::new(), Vec::new());
    for (k, step) in cfg.steps.iter().enumerate() {
        bar.set_message(format!("setting up step {}", step.name));
        let mut node = match &cfg.live {
            Some(l) => {
                let probe = EvmProbeConfig {
                    comet_rpc: l.comet_rpc.clone(),
                    node_pids: l.node_pids.clone(),
                    warmup: cfg.warmup,
                    scenario: cfg.scenario.clone(),
                    ..EvmProbeConfig::new(vec![l.web3.clone()], l.keys.clone())
                };
                StepNode::live(probe).await
            }
            None => {
                let dir = work.join(format!("step-{k}"));
                let scenario = cfg.scenario.clone();
                StepNode::start(step, &cfg.settings, cfg.warmup, scenario, &dir).await
            }
        }
        .with_context(|| format!("setting up step {}", step.name))?;
        let mut setup = search(&cfg.settings.search, step, &mut node.probe, bar)
            .await
            .with_context(|| format!("searching step {}'s knee", step.name))?;
        setup.conditions = Some(node.conditions().await);
        progress::println(bar, format!("step {}: {}", step.name, setup.search));
        node.pause()?;
        nodes.push(node);
        setups.push(setup);
    }
    let highest = setups
        .iter()
        .map(|s| s.overload_tps)
        .fold(cfg.settings.search.start_tps, f64::max);
    for s in &mut setups {
        s.overload_tps = highest * cfg.settings.overload;
    }
    Ok((nodes, setups))
}

/// The step's search, once: its knee, and in `overload_tps` the rate it fell
/// behind at (the highest rate kept up without a knee), which
/// [`set_up`] turns into the common overload.
async fn search(
    search: &SearchConfig,
    step: &Step,
    probe: &mut EvmProbe,
    bar: &ProgressBar,
) -> Result<StepSetup> {
    let report = find_knee(probe, search, |event| {
        if let SearchEvent::Starting { index, rate_tps } = event {
            bar.set_message(format!(
                "step {}: searching, {rate_tps:.0} tx/s (search step {})",
                step.name,
                index + 1
            ));
        }
    })
    .await?;
    let kept = highest_kept_up(&report);
    let (knee_tps, behind_tps, lower_bound) = match &report.outcome {
        Outcome::KneeFound {
            knee_tps,
            behind_tps,
            ..
        } => (Some(*knee_tps), Some(*behind_tps), None),
        Outcome::NoRateKeptUp => anyhow::bail!(
            "no rate was kept up, not even {:.0} tx/s: lower --start",
            search.start_tps
        ),
        other => (kept, None, Some(format!("{other:?}"))),
    };
    let base = behind_tps.or(kept).unwrap_or(search.start_tps);
    Ok(StepSetup {
        step: step.name.clone(),
        search: match (knee_tps, behind_tps) {
            (Some(k), Some(b)) => format!("kept up at {k:.0} tx/s, behind at {b:.0}"),
            _ => format!("no knee: {:?}", report.outcome),
        },
        knee_tps,
        behind_tps,
        overload_tps: base,
        lower_bound,
        conditions: None,
    })
}

/// The pilot: one unmeasured saturation window per step at the overload,
/// doubled (up to [`PILOT_DOUBLINGS`] times) while any step commits
/// [`PILOT_MARGIN`] of it or more, so that every measured window
/// saturates even where a short search step misjudged a step's knee. Gives
/// each step's committed TPS in the last pilot window: its capacity, a
/// measurement, from which the fixed rate is chosen.
async fn pilot(
    cfg: &CompareConfig,
    nodes: &mut [StepNode],
    setups: &mut [StepSetup],
    bar: &ProgressBar,
) -> Result<Vec<f64>> {
    let mut doublings = 0;
    loop {
        let rate = setups.first().map_or(0.0, |s| s.overload_tps);
        let mut committed = Vec::with_capacity(nodes.len());
        for (node, step) in nodes.iter_mut().zip(&cfg.steps) {
            bar.set_message(format!("pilot: step {} at {rate:.0} tx/s", step.name));
            node.resume()?;
            let m = node.probe.step(rate, cfg.settings.seconds).await;
            node.pause()?;
            committed.push(
                m.with_context(|| format!("pilot window of step {}", step.name))?
                    .committed_tps,
            );
        }
        let kept_up = committed.iter().any(|c| *c >= PILOT_MARGIN * rate);
        if !kept_up || doublings == PILOT_DOUBLINGS {
            progress::println(
                bar,
                format!("pilot at {rate:.0} tx/s: committed {committed:.0?}"),
            );
            return Ok(committed);
        }
        progress::println(
            bar,
            format!("pilot: a step committed {PILOT_MARGIN} of {rate:.0} tx/s or more"),
        );
        raise_overload(setups, bar);
        doublings += 1;
    }
}

/// Doubles every step's overload.
fn raise_overload(setups: &mut [StepSetup], bar: &ProgressBar) {
    for s in setups.iter_mut() {
        s.overload_tps *= 2.0;
    }
    let rate = setups.first().map_or(0.0, |s| s.overload_tps);
    progress::println(bar, format!("overload raised to {rate:.0} tx/s"));
}

/// The highest rate a search's steps kept up with.
fn highest_kept_up(report: &SearchReport) -> Option<f64> {
    report
        .steps
        .iter()
        .filter(|(_, v)| *v == Verdict::KeepsUp)
        .map(|(m, _)| m.offered_tps)
        .reduce(f64::max)
}

/// The rate given, or [`FIXED_SHARE`] of the lowest capacity the pilot saw.
fn fixed_rate(given: Option<f64>, capacity: &[f64]) -> Result<f64> {
    if let Some(rate) = given {
        return Ok(rate);
    }
    capacity
        .iter()
        .copied()
        .filter(|c| *c > 0.0)
        .reduce(f64::min)
        .map(|c| c * FIXED_SHARE)
        .context("no step committed anything in the pilot: give the fixed rate with --rate")
}

/// The steps' order in `round`: forwards in even rounds, backwards in odd ones.
pub fn round_order(steps: usize, round: usize) -> Vec<usize> {
    let forward: Vec<usize> = (0..steps).collect();
    match round % 2 {
        0 => forward,
        _ => forward.into_iter().rev().collect(),
    }
}

/// Why no further round runs, if none should.
fn stop_reason(
    cfg: &CompareConfig,
    settings: &Settings,
    setups: &[StepSetup],
    runs: &[StepRun],
    rounds: usize,
    started: Instant,
) -> Option<Option<String>> {
    let Some((target, budget)) = settings.until_resolved else {
        return (rounds >= cfg.max_rounds).then_some(None);
    };
    if rounds >= MIN_ROUNDS {
        let ladder: Vec<String> = cfg.steps.iter().map(|s| s.name.clone()).collect();
        let widest = summarise(runs, &ladder, setups, None, settings.floor)
            .ok()
            .and_then(|s| widest_half_width(&s));
        if let Some(w) = widest.filter(|w| *w <= target) {
            return Some(Some(format!(
                "resolved after {rounds} rounds: every interval within ±{:.1} % (widest ±{:.1} %)",
                target * 100.0,
                w * 100.0
            )));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let per_round = (rounds > 0).then(|| elapsed / rounds as f64);
    let over_budget = per_round.is_some_and(|r| elapsed + r > budget);
    if over_budget || rounds >= cfg.max_rounds {
        return Some(Some(format!(
            "budget spent after {rounds} rounds ({:.1} min): not every interval is within ±{:.1} %",
            elapsed / 60.0,
            target * 100.0
        )));
    }
    None
}

/// The widest half-width of TPS and CPU per transaction against the
/// previous step; `None` while one has no interval.
fn widest_half_width(steps: &[super::step::StepSummary]) -> Option<f64> {
    let mut widest: f64 = 0.0;
    for s in steps.iter().skip(1) {
        for m in [Metric::Tps, Metric::CpuPerTx] {
            let w = s.figure(m)?.vs_previous?.half_width()?;
            widest = widest.max(w);
        }
    }
    Some(widest)
}

/// One step in one round: resume, the two windows, profile (first round), pause.
#[allow(clippy::too_many_arguments)]
async fn one_run(
    cfg: &CompareConfig,
    settings: &Settings,
    setup: &StepSetup,
    node: &mut StepNode,
    step: &Step,
    round: usize,
    out: &Path,
    bar: &ProgressBar,
) -> Result<StepRun> {
    node.resume()?;
    let retried_before = node.probe.rpc_retries();
    let (measure, extras) = node
        .probe
        .step_with_extras(setup.overload_tps, settings.seconds)
        .await?;
    let tolerance = settings.search.tolerance;
    // Whatever the search found, a window that fell behind the overload
    // measured the step's capacity; one that kept up is a lower bound.
    let lower_bound =
        (measure.committed_tps >= (1.0 - tolerance) * measure.offered_tps).then(|| {
            format!(
                "committed {:.0} of {:.0} tx/s offered: kept up, not saturated",
                measure.committed_tps, measure.offered_tps
            )
        });
    let (fixed, fixed_extras) = node
        .probe
        .step_with_extras(settings.fixed_rate, settings.seconds)
        .await?;
    let off_rate = (fixed.committed_tps < (1.0 - tolerance) * fixed.offered_tps).then(|| {
        format!(
            "committed {:.0} of {:.0} tx/s: behind the fixed rate",
            fixed.committed_tps, fixed.offered_tps
        )
    });
    let (etl, profiles) = match &node.net {
        Some(net) => {
            let etl =
                etl::window(&net.state, measure.first_height + 1, measure.last_height).await?;
            let profiles = match round == 0 && cfg.profile_blocks > 0 {
                true => profiled(cfg, node, step, setup.overload_tps, out, bar).await?,
                false => Profiles::default(),
            };
            (Some(etl), profiles)
        }
        None => (None, Profiles::default()),
    };
    let rpc_retries = node.probe.rpc_retries().saturating_sub(retried_before);
    node.pause()?;
    let mut measure = measure;
    if let Some(e) = &etl {
        measure.valid = e.valid;
        measure.invalid = Some(e.invalid);
    }
    Ok(StepRun {
        step: step.name.clone(),
        patches: step.patches.clone(),
        comet: node.comet.clone(),
        node: node.version.clone(),
        round,
        measure,
        extras,
        lower_bound,
        fixed: Some(FixedWindow {
            measure: fixed,
            extras: fixed_extras,
            off_rate,
        }),
        etl,
        flamegraph: profiles.abcid,
        diff_flamegraph: None,
        cometbft_profile: profiles.cometbft,
        node_profile: profiles.node,
        node_diff_flamegraph: None,
        rpc_retries,
    })
}

/// The folders of a step's profiles; each is `None` when not taken.
#[derive(Debug, Default)]
struct Profiles {
    /// abcid's block profiles.
    abcid: Option<PathBuf>,
    /// CometBFT's capture.
    cometbft: Option<PathBuf>,
    /// The whole node's profile, of both.
    node: Option<PathBuf>,
}

/// Profiles a few blocks of the step under `rate`: abcid's block profiles
/// (under `<out>/<step>/`), CometBFT's own CPU over the same load (under
/// `<out>/cometbft/<step>/`) and the whole node's profile of both (in
/// `<out>/node/<step>/`). What could not be taken is left out with a
/// warning; the comparison goes on.
async fn profiled(
    cfg: &CompareConfig,
    node: &mut StepNode,
    step: &Step,
    rate: f64,
    out: &Path,
    bar: &ProgressBar,
) -> Result<Profiles> {
    let Some(net) = &node.net else {
        return Ok(Profiles::default());
    };
    let state = net.state.clone();
    let folder = file_name(&step.name);
    let (abcid_dir, comet_dir) = (out.join(&folder), out.join("cometbft").join(&folder));
    let load = node.probe.step(rate, PROFILE_SECS);
    let abcid = profile::capture(&state, cfg.profile_blocks, &abcid_dir, load);
    let comet = profile::capture_cometbft(&state, &comet_dir);
    let (abcid, comet) = tokio::join!(abcid, comet);
    let warn = |what: &str, why: String| {
        progress::println(
            bar,
            format!("warning: step {}: no {what}: {why}", step.name),
        );
    };
    let abcid = match abcid? {
        profile::Captured::Profiles(dir) => Some(dir),
        profile::Captured::Nothing(why) => {
            warn("flamegraph", why);
            None
        }
    };
    let (cometbft, window) = comet
        .map_err(|e| warn("CometBFT profile", format!("{e:#}")))
        .ok()
        .unzip();
    let node = match (&abcid, window) {
        (Some(abcid), Some(window)) => {
            let title = format!("step {}: the whole node, abcid and CometBFT", step.name);
            let dir = out.join("node").join(&folder);
            profile::whole_node(abcid, window, &dir, &title)
                .map_err(|e| warn("whole-node profile", format!("{e:#}")))
                .ok()
        }
        _ => None,
    };
    Ok(Profiles {
        abcid,
        cometbft,
        node,
    })
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// CometBFT's kvstore at its own knee, measured as long as one window.
async fn reference(
    cfg: &CompareConfig,
    settings: &Settings,
    dir: &Path,
    bar: &ProgressBar,
) -> Result<ReferenceRun> {
    bar.set_message("reference: CometBFT kvstore");
    let mut kv = KvReferenceConfig::new(dir);
    if let Some(t) = &settings.timeout_commit {
        kv.node.timeout_commit = t.clone();
    }
    kv.warmup = cfg.warmup;
    let mut probe = KvProbe::start(kv)
        .await
        .context("starting the kvstore reference node")?;
    let report = find_knee(&mut probe, &settings.search, |_| {}).await?;
    let kept = highest_kept_up(&report);
    // No knee: the highest rate kept up, measured as a lower bound.
    let (knee_tps, rate) = match (report.outcome, kept) {
        (Outcome::KneeFound { knee_tps, .. }, _) => (Some(knee_tps), knee_tps),
        (_, Some(kept)) => (None, kept),
        (other, None) => anyhow::bail!("the kvstore reference kept up with no rate: {other:?}"),
    };
    let measure = probe.step(rate, settings.seconds).await?;
    Ok(ReferenceRun {
        app: "cometbft kvstore".to_string(),
        knee_tps,
        measure,
    })
}

/// Each step's first-round profiles against the step before it:
/// `<out>/<step>-diff.svg` of abcid's, `<out>/<step>-node-diff.svg` of the
/// whole node's.
fn diff_flamegraphs(runs: &mut [StepRun], steps: &[Step], out: &Path) -> Result<()> {
    let first_round =
        |runs: &[StepRun], name: &str| runs.iter().position(|r| r.round == 0 && r.step == name);
    for pair in steps.windows(2) {
        let (Some(b), Some(a)) = (
            first_round(runs, &pair[1].name),
            first_round(runs, &pair[0].name),
        ) else {
            continue;
        };
        let title = format!("{} → {}: red grew, blue shrank", pair[0].name, pair[1].name);
        let name = file_name(&pair[1].name);
        if let (Some(before), Some(after)) = (&runs[a].flamegraph, &runs[b].flamegraph) {
            let svg = out.join(format!("{name}-diff.svg"));
            profile::diff(before, after, &svg, &title)?;
            runs[b].diff_flamegraph = Some(svg);
        }
        if let (Some(before), Some(after)) = (&runs[a].node_profile, &runs[b].node_profile) {
            let svg = out.join(format!("{name}-node-diff.svg"));
            let folded = node_profile::FOLDED;
            let title = format!("{title} (whole node, CPU time)");
            profile::diff(&before.join(folded), &after.join(folded), &svg, &title)?;
            runs[b].node_diff_flamegraph = Some(svg);
        }
    }
    Ok(())
}

/// A step name as a file name (`+rwlock` → `plus-rwlock`).
fn file_name(step: &str) -> String {
    step.replace('+', "plus-").replace(['/', ' ', '#'], "_")
}

fn progress_bar(visible: bool) -> ProgressBar {
    if !visible {
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

fn report_line(bar: &ProgressBar, run: &StepRun) {
    let m = &run.measure;
    let cpu = run
        .fixed
        .as_ref()
        .and_then(|f| f.measure.node_cpu_us_per_tx)
        .map_or_else(
            || "node CPU not measured".to_string(),
            |c| format!("node {c:.0} µs/tx at the fixed rate"),
        );
    let lost = [Some(&run.measure), run.fixed.as_ref().map(|f| &f.measure)]
        .into_iter()
        .flatten()
        .filter_map(|m| m.machine.as_ref()?.lost())
        .reduce(f64::max)
        .map_or_else(String::new, |l| {
            format!("  machine lost {:.0} %", l * 100.0)
        });
    let bound = if run.lower_bound.is_some() {
        " (lower bound)"
    } else {
        ""
    };
    progress::println(
        bar,
        format!(
            "round {} {:<20} {:>8.1} committed tx/s{bound}  block p50 {:>5.0} ms  {cpu}{lost}",
            run.round + 1,
            run.step,
            m.committed_tps,
            m.block_time_p50_ms,
        ),
    );
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{fixed_rate, round_order, stop_reason, CompareConfig};
    use crate::compare::ladder::ladder;
    use crate::compare::report::Kind;
    use crate::compare::step::StepRun;
    use crate::compare::testing::{run, settings};

    fn config(until: Option<(f64, f64)>, max_rounds: usize) -> CompareConfig {
        let mut settings = settings(Kind::Patches, 0);
        settings.until_resolved = until;
        CompareConfig {
            steps: ladder("none,all").unwrap(),
            live: None,
            settings,
            rate: None,
            max_rounds,
            warmup: Duration::ZERO,
            profile_blocks: 0,
            reference: false,
            scenario: None,
            out: "out".into(),
            progress: false,
        }
    }

    /// `rounds` rounds of `none` and `all`, `all` 1.5 × with ±`spread` noise.
    fn rounds(n: usize, spread: f64) -> Vec<StepRun> {
        (0..n)
            .flat_map(|r| {
                let wobble = if r % 2 == 0 {
                    1.0 + spread
                } else {
                    1.0 - spread
                };
                [run("none", r, 100.0), run("all", r, 150.0 * wobble)]
            })
            .collect()
    }

    #[test]
    fn fixed_rounds_stop_at_their_count() {
        let cfg = config(None, 8);
        let now = Instant::now();
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(7, 0.01), 7, now),
            None
        );
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(8, 0.01), 8, now),
            Some(None)
        );
    }

    #[test]
    fn until_resolved_stops_when_every_interval_is_narrow_or_the_budget_is_spent() {
        let now = Instant::now();
        // ±0.1 % noise: within ±1 % after the first five rounds.
        let cfg = config(Some((0.01, 3600.0)), 100);
        let why = stop_reason(&cfg, &cfg.settings, &[], &rounds(5, 0.001), 5, now);
        assert!(why.unwrap().unwrap().starts_with("resolved after 5 rounds"));
        // ±20 % noise: not resolved; a budget of an hour is not spent yet…
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(5, 0.2), 5, now),
            None
        );
        // …and none is left of a budget of 0 s.
        let broke = config(Some((0.01, 0.0)), 100);
        let why = stop_reason(&broke, &broke.settings, &[], &rounds(5, 0.2), 5, now);
        assert!(why
            .unwrap()
            .unwrap()
            .starts_with("budget spent after 5 rounds"));
    }

    #[test]
    fn rounds_alternate_direction() {
        assert_eq!(round_order(3, 0), [0, 1, 2]);
        assert_eq!(round_order(3, 1), [2, 1, 0]);
        assert_eq!(round_order(3, 2), [0, 1, 2]);
    }

    #[test]
    fn the_fixed_rate_is_a_share_of_the_lowest_capacity() {
        let capacity = [1000.0, 2000.0, 0.0];
        assert!((fixed_rate(None, &capacity).unwrap() - 600.0).abs() < 1e-9);
        assert_eq!(fixed_rate(Some(42.0), &capacity).unwrap(), 42.0);
        assert!(fixed_rate(None, &[0.0]).is_err());
    }
}
