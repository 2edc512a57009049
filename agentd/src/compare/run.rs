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
//! Without it, a `budget` stops the rounds before one would overrun it.
//! After the first round the expected wall time of the rest is printed.
//!
//! **A live node redeployed** ([`super::deploy`]): every step is a build on
//! the same node, deployed before each of its searches, pilots and runs,
//! so the rounds' ABBA order pairs the builds on one node. An error in a
//! round (a deploy that fails, a node that does not return) ends the
//! rounds; the report keeps the runs measured before it and names it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::deploy::{Deploy, Deployer, Phase};
use super::ladder::Step;
use super::node::{AfterRun, MeasuredNode};
use super::profile;
use super::ready::Readiness;
use super::report::{CompareReport, Environment, ReferenceRun, Settings};
use super::session::{file_name, StepNode};
use super::step::Metric;
use super::step::{FixedWindow, StepRun, StepSetup};
use super::summary::{summarise, Rounds};
use crate::accounts::KeySet;
use crate::devnet;
use crate::devnet::recipe::Recipe;
use crate::kvstore::{KvProbe, KvReferenceConfig};
use crate::load::scenario::Scenario;
use crate::node_profile;
use crate::progress;
use crate::saturate::{
    find_knee, EvmProbeConfig, Outcome, Probe, SearchConfig, SearchEvent, SearchReport, Verdict,
};
use crate::stats::MIN_ROUNDS;

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
    /// Each step's deploy command, in ladder order (empty: the node is
    /// measured as it is, one step).
    pub deploys: Vec<Deploy>,
    /// The most one deploy and the node's return may take.
    pub deploy_timeout: Duration,
    /// Its Go pprof (`rpc.pprof_laddr`): with `profile_blocks`, each step's
    /// first round profiles it per block, by role.
    pub pprof: Option<String>,
}

/// Everything a comparison needs; [`Settings`] is what the report records.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The steps, in ladder order (one, with a live node).
    pub steps: Vec<Step>,
    /// Measure this node rather than fresh devnets.
    pub live: Option<LiveNode>,
    /// Make each step's devnet from this chain recipe (`None`: the built-in
    /// `abcid` one).
    pub chain: Option<Recipe>,
    /// What the report records; `fixed_rate` is filled in once chosen and
    /// `rounds` once run.
    pub settings: Settings,
    /// The fixed rate given (`--rate`); else [`FIXED_SHARE`] of the lowest
    /// rate kept up.
    pub rate: Option<f64>,
    /// Rounds at most (the rounds to run without `until_resolved`).
    pub max_rounds: usize,
    /// Without `until_resolved`: no round starts that would end past this
    /// many seconds of the whole comparison.
    pub budget: Option<f64>,
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
    let start = async |k: usize, _: &Step| start_node(cfg, work.path(), &out, k).await;
    let measured = measure(cfg, start, &out, &bar, started).await?;
    let Measured {
        nodes,
        setups,
        mut runs,
        settings,
        stopped,
        failed,
    } = measured;
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
        failed,
    };
    CompareReport::assemble(
        Environment::detect(devnet::tools::cometbft_version()),
        settings,
        measured,
        reference,
        started.elapsed().as_secs_f64(),
    )
}

/// Step `k`'s node: a devnet of its own in `work`, or the live node (first
/// deployed, when it has deploy commands; their logs go under `out`).
async fn start_node(cfg: &CompareConfig, work: &Path, out: &Path, k: usize) -> Result<StepNode> {
    let step = &cfg.steps[k];
    match &cfg.live {
        Some(l) => {
            let deployer = deployer(l, k, out)?;
            let mut pids = l.node_pids.clone();
            if let Some(d) = &deployer {
                pids = d.deploy(Phase::Setup).await?.pids;
            }
            let probe = EvmProbeConfig {
                comet_rpc: l.comet_rpc.clone(),
                node_pids: pids,
                warmup: cfg.warmup,
                scenario: cfg.scenario.clone(),
                ..EvmProbeConfig::new(vec![l.web3.clone()], l.keys.clone())
            };
            let mut node = StepNode::live(probe).await?;
            node.deployer = deployer;
            node.pprof = l.pprof.clone();
            Ok(node)
        }
        None => {
            let dir = work.join(format!("step-{k}"));
            let scenario = cfg.scenario.clone();
            let abcid;
            let recipe = match &cfg.chain {
                Some(recipe) => recipe,
                None => {
                    abcid = Recipe::find("abcid")?;
                    &abcid
                }
            };
            let load = (cfg.warmup, scenario);
            StepNode::start_recipe(recipe, step, &cfg.settings, load, &dir).await
        }
    }
}

/// Step `k`'s deployer on the live node `l`, if it has deploy commands.
fn deployer(l: &LiveNode, k: usize, out: &Path) -> Result<Option<Deployer>> {
    let Some(deploy) = l.deploys.get(k) else {
        return Ok(None);
    };
    let comet = l
        .comet_rpc
        .as_deref()
        .context("a redeployed node needs its CometBFT RPC (--comet-rpc)")?;
    Ok(Some(Deployer {
        deploy: deploy.clone(),
        timeout: l.deploy_timeout,
        node: Readiness::new(&l.web3, comet)?,
        logs: out.join("deploys"),
    }))
}

/// What the rounds measured, with the nodes still alive.
pub(crate) struct Measured<N> {
    /// Every step's node, paused.
    pub nodes: Vec<N>,
    /// Every step's setup.
    pub setups: Vec<StepSetup>,
    /// Every run, in the order it ran.
    pub runs: Vec<StepRun>,
    /// The settings, with the fixed rate and the rounds filled in.
    pub settings: Settings,
    /// Why the rounds stopped, with `until_resolved` or a budget.
    pub stopped: Option<String>,
    /// The error that ended the rounds early, after at least one run.
    pub failed: Option<String>,
}

/// The comparison over any nodes: each started by `start` and set up, the
/// pilot, then the rounds until [`stop_reason`] says so.
pub(crate) async fn measure<N: MeasuredNode>(
    cfg: &CompareConfig,
    start: impl AsyncFnMut(usize, &Step) -> Result<N>,
    out: &Path,
    bar: &ProgressBar,
    started: Instant,
) -> Result<Measured<N>> {
    let (mut nodes, mut setups) = set_up(cfg, start, bar).await?;
    let capacity = pilot(cfg, &mut nodes, &mut setups, bar).await?;
    let mut settings = cfg.settings.clone();
    settings.fixed_rate = fixed_rate(cfg.rate, &capacity)?;
    let mut runs: Vec<StepRun> = Vec::new();
    let (mut rounds, mut saturated, mut raised) = (0, 0, 0);
    let mut clock = Clock::new(started);
    let mut failed = None;
    let stopped = 'rounds: loop {
        if let Some(why) = stop_reason(cfg, &settings, &setups, &runs, saturated, &clock) {
            break why;
        }
        let first = runs.len();
        for i in round_order(cfg.steps.len(), rounds) {
            let step = &cfg.steps[i];
            bar.set_message(format!("round {}, step {}", rounds + 1, step.name));
            let at = Run {
                cfg,
                settings: &settings,
                setup: &setups[i],
                step,
                round: rounds,
                out,
                bar,
            };
            let run = match run_step(&at, &mut nodes[i]).await {
                Ok(run) => run,
                Err(e) if runs.is_empty() => return Err(e),
                Err(e) => {
                    failed = Some(format!("{e:#}"));
                    break 'rounds None;
                }
            };
            report_line(bar, &run);
            runs.push(run);
        }
        rounds += 1;
        clock.rounds_run = rounds;
        if rounds == 1 {
            forecast(cfg, clock.rounds_began.elapsed(), started.elapsed(), bar);
        }
        // A round in which a step kept up with the overload does not count:
        // the overload is doubled and the round run again (its fixed-rate
        // windows still count).
        let kept_up = runs[first..].iter().any(|r| r.lower_bound.is_some());
        if kept_up && raised < PILOT_DOUBLINGS {
            raised += 1;
            raise_overload(&mut setups, bar);
        } else {
            saturated += 1;
        }
    };
    settings.rounds = rounds;
    Ok(Measured {
        nodes,
        setups,
        runs,
        settings,
        stopped,
        failed,
    })
}

/// One step's run in its round, its node readied first (a deploy).
async fn run_step<N: MeasuredNode>(at: &Run<'_>, node: &mut N) -> Result<StepRun> {
    let (step, round) = (&at.step.name, at.round + 1);
    node.before(Phase::Round(at.round)).await?;
    one_run(at, node)
        .await
        .with_context(|| format!("step {step} (round {round})"))
}

/// The expected wall time of the rounds still to run, from the first.
fn forecast(cfg: &CompareConfig, first_round: Duration, elapsed: Duration, bar: &ProgressBar) {
    let rest = cfg.max_rounds.saturating_sub(1);
    let more = first_round.as_secs_f64() * rest as f64;
    let mut line = format!(
        "round 1 took {:.0} s; {rest} more round(s) at most: about {:.1} min more, {:.1} min in all",
        first_round.as_secs_f64(),
        more / 60.0,
        (elapsed.as_secs_f64() + more) / 60.0
    );
    let budget = cfg.settings.until_resolved.map(|(_, b)| b).or(cfg.budget);
    if let Some(b) = budget.filter(|b| elapsed.as_secs_f64() + more > *b) {
        line.push_str(&format!(
            "; the budget of {:.1} min ends it sooner",
            b / 60.0
        ));
    }
    progress::println(bar, line);
}

/// Every step's node, started, searched once and read, then paused.
async fn set_up<N: MeasuredNode>(
    cfg: &CompareConfig,
    mut start: impl AsyncFnMut(usize, &Step) -> Result<N>,
    bar: &ProgressBar,
) -> Result<(Vec<N>, Vec<StepSetup>)> {
    let (mut nodes, mut setups) = (Vec::new(), Vec::new());
    for (k, step) in cfg.steps.iter().enumerate() {
        bar.set_message(format!("setting up step {}", step.name));
        let mut node = start(k, step)
            .await
            .with_context(|| format!("setting up step {}", step.name))?;
        let mut setup = match cfg.settings.given_overload_tps {
            Some(rate) => given_overload(step, rate),
            None => search(&cfg.settings.search, step, &mut node, bar)
                .await
                .with_context(|| format!("searching step {}'s knee", step.name))?,
        };
        setup.conditions = Some(node.conditions().await);
        progress::println(bar, format!("step {}: {}", step.name, setup.search));
        node.pause()?;
        nodes.push(node);
        setups.push(setup);
    }
    let overload = match cfg.settings.given_overload_tps {
        Some(rate) => rate,
        None => {
            let highest = setups.iter().map(|s| s.overload_tps);
            highest.fold(cfg.settings.search.start_tps, f64::max) * cfg.settings.overload
        }
    };
    for s in &mut setups {
        s.overload_tps = overload;
    }
    Ok((nodes, setups))
}

/// A step set up at a given overload (`--overload-tps`): no search, so no
/// knee; the pilot still raises the overload while a step keeps up.
fn given_overload(step: &Step, rate: f64) -> StepSetup {
    StepSetup {
        step: step.name.clone(),
        search: format!("not searched: saturated from {rate:.0} tx/s (--overload-tps)"),
        knee_tps: None,
        behind_tps: None,
        overload_tps: rate,
        lower_bound: None,
        conditions: None,
    }
}

/// The step's search, once: its knee, and in `overload_tps` the rate it fell
/// behind at (the highest rate kept up without a knee), which
/// [`set_up`] turns into the common overload.
async fn search(
    search: &SearchConfig,
    step: &Step,
    probe: &mut impl Probe,
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
        Outcome::NoRateKeptUp { lowest_tps } => anyhow::bail!(
            "no rate was kept up, from --start {:.0} tx/s down to {:.0}: is the chain committing blocks? (its log, or CometBFT's /status)",
            search.start_tps,
            lowest_tps.unwrap_or(search.start_tps)
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
async fn pilot<N: MeasuredNode>(
    cfg: &CompareConfig,
    nodes: &mut [N],
    setups: &mut [StepSetup],
    bar: &ProgressBar,
) -> Result<Vec<f64>> {
    let mut doublings = 0;
    loop {
        let rate = setups.first().map_or(0.0, |s| s.overload_tps);
        let mut committed = Vec::with_capacity(nodes.len());
        for (node, step) in nodes.iter_mut().zip(&cfg.steps) {
            bar.set_message(format!("pilot: step {} at {rate:.0} tx/s", step.name));
            node.before(Phase::Pilot).await?;
            node.resume()?;
            let m = node.step(rate, cfg.settings.seconds).await;
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

/// The wall time a comparison has used, and what one more round costs.
struct Clock {
    /// When the comparison began (set-up and pilot included).
    started: Instant,
    /// When its first round began.
    rounds_began: Instant,
    /// Rounds run so far, those run again on a raised overload included.
    rounds_run: usize,
}

impl Clock {
    fn new(started: Instant) -> Self {
        let rounds_began = Instant::now();
        Self {
            started,
            rounds_began,
            rounds_run: 0,
        }
    }

    /// Seconds since the comparison began.
    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The mean wall time of the rounds run so far: the set-up and the
    /// pilot are not a round's cost, and a round run again is one.
    fn per_round(&self) -> Option<f64> {
        let rounds = u32::try_from(self.rounds_run).ok().filter(|r| *r > 0)?;
        Some((self.rounds_began.elapsed() / rounds).as_secs_f64())
    }

    /// Whether one more round would end past `budget` seconds.
    fn next_round_overruns(&self, budget: f64) -> bool {
        self.per_round()
            .is_some_and(|r| self.elapsed() + r > budget)
    }
}

/// Why no further round runs, if none should.
fn stop_reason(
    cfg: &CompareConfig,
    settings: &Settings,
    setups: &[StepSetup],
    runs: &[StepRun],
    rounds: usize,
    clock: &Clock,
) -> Option<Option<String>> {
    let Some((target, budget)) = settings.until_resolved else {
        return fixed_stop(cfg, rounds, clock);
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
    if clock.next_round_overruns(budget) || rounds >= cfg.max_rounds {
        return Some(Some(format!(
            "budget spent after {rounds} rounds ({:.1} min): not every interval is within ±{:.1} %",
            clock.elapsed() / 60.0,
            target * 100.0
        )));
    }
    None
}

/// Why a fixed number of rounds stops: all run, or (with a budget) one more
/// would end past it.
fn fixed_stop(cfg: &CompareConfig, rounds: usize, clock: &Clock) -> Option<Option<String>> {
    if rounds >= cfg.max_rounds {
        return Some(None);
    }
    let budget = cfg.budget?;
    clock.next_round_overruns(budget).then(|| {
        Some(format!(
            "--budget {:.1} min: stopped after {rounds} of {} rounds ({:.1} min; another would end past it)",
            budget / 60.0,
            cfg.max_rounds,
            clock.elapsed() / 60.0
        ))
    })
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

/// Where a run stands: the comparison, the step and its round.
struct Run<'a> {
    cfg: &'a CompareConfig,
    settings: &'a Settings,
    setup: &'a StepSetup,
    step: &'a Step,
    round: usize,
    out: &'a Path,
    bar: &'a ProgressBar,
}

/// A window that began with more than this share of its own offered
/// transactions already waiting (left by the window before it, past the
/// probe's bounded drain) is kept out of estimates.
pub const BACKLOG_SHARE: f64 = 0.05;

/// One step in one round: resume, the two windows, what the node records
/// after them (the etl; profiles in the first round), pause.
async fn one_run<N: MeasuredNode>(at: &Run<'_>, node: &mut N) -> Result<StepRun> {
    node.resume()?;
    let retried_before = node.rpc_retries();
    let overload = at.setup.overload_tps;
    let (measure, extras) = node.window(overload, at.settings.seconds).await?;
    let tolerance = at.settings.search.tolerance;
    // Whatever the search found, a window that fell behind the overload
    // measured the step's capacity; one that kept up is a lower bound.
    let lower_bound =
        (measure.committed_tps >= (1.0 - tolerance) * measure.offered_tps).then(|| {
            format!(
                "committed {:.0} of {:.0} tx/s offered: kept up, not saturated",
                measure.committed_tps, measure.offered_tps
            )
        });
    let seconds = at.settings.seconds;
    let backlog = measure.started_on_backlog(seconds, BACKLOG_SHARE);
    let rate = at.settings.fixed_rate;
    let (fixed, fixed_extras) = node.window(rate, seconds).await?;
    let fixed_backlog = fixed.started_on_backlog(seconds, BACKLOG_SHARE);
    let off_rate = (fixed.committed_tps < (1.0 - tolerance) * fixed.offered_tps).then(|| {
        format!(
            "committed {:.0} of {:.0} tx/s: behind the fixed rate",
            fixed.committed_tps, fixed.offered_tps
        )
    });
    let profile_blocks = match at.round {
        0 => at.cfg.profile_blocks,
        _ => 0,
    };
    let records = node
        .after_run(AfterRun {
            step: at.step,
            window: &measure,
            profile_blocks,
            rate: overload,
            out: at.out,
            bar: at.bar,
        })
        .await?;
    let rpc_retries = node.rpc_retries().saturating_sub(retried_before);
    node.pause()?;
    let mut measure = measure;
    if let Some(e) = &records.etl {
        measure.valid = e.valid;
        measure.invalid = Some(e.invalid);
    }
    Ok(StepRun {
        step: at.step.name.clone(),
        patches: at.step.patches.clone(),
        comet: node.comet().to_vec(),
        node: node.version().to_string(),
        round: at.round,
        measure,
        extras,
        lower_bound,
        backlog,
        fixed: Some(FixedWindow {
            measure: fixed,
            extras: fixed_extras,
            off_rate,
            backlog: fixed_backlog,
        }),
        etl: records.etl,
        flamegraph: records.app,
        diff_flamegraph: None,
        cometbft_profile: records.cometbft,
        node_profile: records.node,
        node_diff_flamegraph: None,
        go_profile: records.go,
        go_diff_flamegraph: None,
        rpc_retries,
    })
}

/// Seconds since the Unix epoch (0 if the clock is before it): the stamp of
/// an output folder.
pub fn unix_seconds() -> u64 {
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
        kv.node.timeout_commit = *t;
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
/// whole node's, `<out>/<step>-go-diff.svg` of a Go node's by role.
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
        if let (Some(before), Some(after)) = (&runs[a].go_profile, &runs[b].go_profile) {
            let svg = out.join(format!("{name}-go-diff.svg"));
            let title = format!("{title} (the Go node, by role)");
            let folded = crate::go_profile::FOLDED;
            profile::diff(
                &before.dir.join(folded),
                &after.dir.join(folded),
                &svg,
                &title,
            )?;
            runs[b].go_diff_flamegraph = Some(svg);
        }
    }
    Ok(())
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
    let backlog = [Some(&run.measure), run.fixed.as_ref().map(|f| &f.measure)]
        .into_iter()
        .flatten()
        .filter_map(|m| m.backlog)
        .max()
        .filter(|n| *n > 0)
        .map_or_else(String::new, |n| format!("  began on a backlog of {n}"));
    let kept_out = run.backlog.is_some() || run.fixed.as_ref().is_some_and(|f| f.backlog.is_some());
    let kept_out = if kept_out { " (kept out)" } else { "" };
    progress::println(
        bar,
        format!(
            "round {} {:<20} {:>8.1} committed tx/s{bound}  block p50 {:>5.0} ms  {cpu}{lost}{backlog}{kept_out}",
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

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use anyhow::Result;
    use indicatif::ProgressBar;

    use super::{
        fixed_rate, fixed_stop, measure, round_order, stop_reason, Clock, CompareConfig, Measured,
    };
    use crate::compare::conditions::NodeConditions;
    use crate::compare::deploy::Phase;
    use crate::compare::ladder::{ladder, Step};
    use crate::compare::node::MeasuredNode;
    use crate::compare::report::Kind;
    use crate::compare::step::StepRun;
    use crate::compare::testing::{extras, run, settings};
    use crate::saturate::{Probe, StepMeasure, WindowExtras};

    #[test]
    fn a_window_begun_on_more_than_the_share_of_its_load_is_named() {
        let mut m = crate::compare::testing::measure(80.0); // 100 tx/s offered
        let share = super::BACKLOG_SHARE;
        let at = (share * 100.0 * 2.0) as u64; // of 2 s
        for (backlog, named) in [(None, false), (Some(0), false), (Some(at), false)] {
            m.backlog = backlog;
            assert_eq!(m.started_on_backlog(2.0, share).is_some(), named);
        }
        m.backlog = Some(at + 1);
        let why = m.started_on_backlog(2.0, share).unwrap();
        let said = format!("backlog of {} transactions, over 5 % of the 200", at + 1);
        assert!(why.contains(&said), "{why}");
    }

    /// A model node: it commits what it is offered up to its capacity, which
    /// becomes `later` after `windows_before` windows (a step whose short
    /// search misjudged its knee). Every window checks that this node, and
    /// no other, is running.
    struct Model {
        name: String,
        capacity: f64,
        later: f64,
        windows_before: usize,
        windows: usize,
        paused: bool,
        running: Arc<AtomicUsize>,
        log: Arc<Mutex<Vec<(String, f64)>>>,
        /// The round whose deploy fails, if any.
        fails_in: Option<usize>,
        /// Every phase it was readied before.
        readied: Vec<Phase>,
    }

    impl Model {
        fn committed(&mut self, rate: f64) -> StepMeasure {
            assert!(!self.paused, "{} measured while paused", self.name);
            assert_eq!(
                self.running.load(Ordering::SeqCst),
                1,
                "{}: another node runs",
                self.name
            );
            self.windows += 1;
            let cap = match self.windows > self.windows_before {
                true => self.later,
                false => self.capacity,
            };
            self.log.lock().unwrap().push((self.name.clone(), rate));
            StepMeasure {
                offered_tps: rate,
                sent_tps: rate,
                ..crate::compare::testing::measure(rate.min(cap))
            }
        }
    }

    impl Probe for Model {
        async fn step(&mut self, rate: f64, _seconds: f64) -> Result<StepMeasure> {
            Ok(self.committed(rate))
        }
    }

    impl MeasuredNode for Model {
        async fn window(&mut self, rate: f64, _: f64) -> Result<(StepMeasure, WindowExtras)> {
            let m = self.committed(rate);
            let e = extras(m.committed_tps);
            Ok((m, e))
        }
        async fn before(&mut self, phase: Phase) -> Result<()> {
            assert!(self.paused, "{} readied while running", self.name);
            self.readied.push(phase);
            match (phase, self.fails_in) {
                (Phase::Round(r), Some(f)) if r == f => anyhow::bail!("deploy failed"),
                _ => Ok(()),
            }
        }
        fn pause(&mut self) -> Result<()> {
            assert!(!self.paused, "{} paused twice", self.name);
            self.paused = true;
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        }
        fn resume(&mut self) -> Result<()> {
            assert!(self.paused, "{} resumed twice", self.name);
            self.paused = false;
            self.running.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn version(&self) -> &str {
            "model/1"
        }
        fn comet(&self) -> &[String] {
            &[]
        }
        async fn conditions(&self) -> NodeConditions {
            NodeConditions {
                client: "model/1".into(),
                ..NodeConditions::default()
            }
        }
    }

    /// Runs `cfg`'s comparison on models of `(capacity, later, windows_before)`.
    async fn on_models(
        cfg: &CompareConfig,
        models: &[(f64, f64, usize)],
    ) -> (Measured<Model>, Vec<(String, f64)>) {
        on_failing_models(cfg, models, None).await.unwrap()
    }

    /// The same, model `fail.0`'s deploy failing in round `fail.1`.
    async fn on_failing_models(
        cfg: &CompareConfig,
        models: &[(f64, f64, usize)],
        fail: Option<(usize, usize)>,
    ) -> Result<(Measured<Model>, Vec<(String, f64)>)> {
        let running = Arc::new(AtomicUsize::new(0));
        let log = Arc::new(Mutex::new(Vec::new()));
        let start = async |k: usize, step: &Step| {
            running.fetch_add(1, Ordering::SeqCst);
            let (capacity, later, windows_before) = models[k];
            Ok(Model {
                name: step.name.clone(),
                capacity,
                later,
                windows_before,
                windows: 0,
                paused: false,
                running: running.clone(),
                log: log.clone(),
                fails_in: fail.filter(|f| f.0 == k).map(|f| f.1),
                readied: Vec::new(),
            })
        };
        let bar = ProgressBar::hidden();
        let measured = measure(cfg, start, "out".as_ref(), &bar, Instant::now()).await?;
        assert_eq!(running.load(Ordering::SeqCst), 0, "a node left running");
        let log = log.lock().unwrap().clone();
        Ok((measured, log))
    }

    #[tokio::test]
    async fn every_window_is_readied_and_a_failed_deploy_keeps_the_rounds_before_it() {
        let cfg = config(None, 5);
        let models = [(1000.0, 1000.0, 0), (1500.0, 1500.0, 0)];
        // `all` (step 1) fails its deploy in round 3 (index 2), which runs
        // forwards: `none`'s run of that round is kept, unpaired.
        let (m, _) = on_failing_models(&cfg, &models, Some((1, 2)))
            .await
            .unwrap();
        let failed = m.failed.as_deref().unwrap();
        assert!(failed.contains("deploy failed"), "{failed}");
        assert_eq!(m.settings.rounds, 2);
        let order: Vec<(&str, usize)> = m.runs.iter().map(|r| (r.step.as_str(), r.round)).collect();
        assert_eq!(
            order,
            [
                ("none", 0),
                ("all", 0),
                ("all", 1),
                ("none", 1),
                ("none", 2)
            ]
        );
        // Each node was readied before each of its pilot windows (one per
        // doubling) and each of its runs, in that order.
        let pilots = m.nodes[0]
            .readied
            .iter()
            .take_while(|p| **p == Phase::Pilot)
            .count();
        assert!(pilots >= 1);
        let rounds = [Phase::Round(0), Phase::Round(1), Phase::Round(2)];
        for n in &m.nodes {
            assert_eq!(
                n.readied[..pilots],
                vec![Phase::Pilot; pilots],
                "{:?}",
                n.readied
            );
            assert_eq!(n.readied[pilots..], rounds, "{:?}", n.readied);
        }
        // Nothing measured yet: the error itself, no report.
        let e = on_failing_models(&cfg, &models, Some((0, 0)))
            .await
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("deploy failed"), "{e:#}");
    }

    #[test]
    fn a_budget_stops_fixed_rounds_before_one_would_overrun_it() {
        let mut cfg = config(None, 8);
        let two = clock(100, 100, 2);
        assert_eq!(fixed_stop(&cfg, 2, &two), None);
        assert_eq!(fixed_stop(&cfg, 8, &two), Some(None));
        // 50 s a round so far: a third would end at 150 s, past 120.
        cfg.budget = Some(120.0);
        let why = fixed_stop(&cfg, 2, &two).unwrap().unwrap();
        assert!(why.contains("stopped after 2 of 8 rounds"), "{why}");
        cfg.budget = Some(200.0);
        assert_eq!(fixed_stop(&cfg, 2, &two), None);
    }

    /// A clock whose comparison began `started` s ago, its rounds `rounds`
    /// s ago, with `run` rounds run.
    fn clock(started: u64, rounds: u64, run: usize) -> Clock {
        let now = Instant::now();
        Clock {
            started: now - Duration::from_secs(started),
            rounds_began: now - Duration::from_secs(rounds),
            rounds_run: run,
        }
    }

    #[test]
    fn a_rounds_cost_is_the_rounds_own_time_not_the_set_up_or_a_round_run_again() {
        // A 260 s set-up and pilot, then one 100 s round: the next round is
        // expected to end at 460 s, within a 12 min budget (counting the
        // set-up as a round's cost, it would seem to end at 720 s).
        let cfg = config(Some((0.01, 700.0)), 100);
        let one = clock(360, 100, 1);
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(1, 0.2), 1, &one),
            None
        );
        // Three rounds of 100 s of which two were run again on a raised
        // overload: one counts, yet a round costs 100 s, not 300.
        let rerun = clock(300, 300, 3);
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(1, 0.2), 1, &rerun),
            None
        );
        // A round that would end past the budget still stops the rounds.
        let late = clock(650, 100, 1);
        let why = stop_reason(&cfg, &cfg.settings, &[], &rounds(1, 0.2), 1, &late);
        assert!(why
            .unwrap()
            .unwrap()
            .starts_with("budget spent after 1 rounds"));
    }

    #[tokio::test]
    async fn rounds_interleave_on_one_overload_with_only_the_measured_node_running() {
        let cfg = config(None, 5);
        let (m, log) = on_models(&cfg, &[(1000.0, 1000.0, 0), (1500.0, 1500.0, 0)]).await;
        assert!(m.nodes.iter().all(|n| n.paused));
        assert_eq!(m.settings.rounds, 5);
        let order: Vec<(&str, usize)> = m.runs.iter().map(|r| (r.step.as_str(), r.round)).collect();
        assert_eq!(
            &order[..4],
            [("none", 0), ("all", 0), ("all", 1), ("none", 1)]
        );
        // One overload, above what either commits; the fixed rate is 0.6 ×
        // the lower capacity the pilot measured.
        let overload = m.setups[0].overload_tps;
        assert!(m.setups.iter().all(|s| s.overload_tps == overload) && overload > 1500.0);
        assert!(
            (m.settings.fixed_rate - 600.0).abs() < 1e-9,
            "{}",
            m.settings.fixed_rate
        );
        for r in &m.runs {
            assert_eq!(
                (r.measure.offered_tps, r.lower_bound.as_deref()),
                (overload, None)
            );
        }
        // Every window of the rounds ran at the overload or the fixed rate.
        let rounds_windows = log.iter().rev().take(20);
        assert!(rounds_windows
            .into_iter()
            .all(|(_, r)| *r == overload || *r == 600.0));
        assert!(m.setups.iter().all(|s| s.conditions.is_some()));
    }

    #[tokio::test]
    async fn a_misjudged_knee_doubles_the_pilots_overload() {
        let cfg = config(None, 5);
        // Step `all` commits four times its searched capacity from the pilot on.
        let searched = |m: &Measured<Model>| m.setups[1].knee_tps.unwrap();
        let (m, _) = on_models(&cfg, &[(1000.0, 1000.0, 0), (1000.0, 4000.0, 6)]).await;
        let knee = searched(&m);
        assert!(knee < 1100.0, "the search saw the old capacity: {knee}");
        let overload = m.setups[0].overload_tps;
        assert!(
            overload > 4000.0,
            "the pilot raised the overload above 4,000: {overload}"
        );
        assert!(m.runs.iter().all(|r| r.lower_bound.is_none()));
    }

    #[tokio::test]
    async fn a_given_overload_skips_the_searches_and_the_pilot_still_raises_it() {
        let mut cfg = config(None, 5);
        cfg.settings.given_overload_tps = Some(1500.0);
        // `none` falls behind 1,500 tx/s; `all` keeps up with it until 6,000.
        let (m, log) = on_models(&cfg, &[(1000.0, 1000.0, 0), (4000.0, 4000.0, 0)]).await;
        // No search: the first window of each step is the pilot's, at the
        // rate given, one after the other.
        assert_eq!(log[0], ("none".to_string(), 1500.0));
        assert_eq!(log[1], ("all".to_string(), 1500.0));
        for s in &m.setups {
            assert!(s.knee_tps.is_none() && s.behind_tps.is_none(), "{s:?}");
            assert!(s.search.contains("not searched"), "{}", s.search);
        }
        // `all` kept up with 1,500 and 3,000: raised twice, to 6,000.
        assert_eq!(m.setups[0].overload_tps, 6000.0);
        assert!(m.runs.iter().all(|r| r.lower_bound.is_none()));
    }

    #[tokio::test]
    async fn a_round_a_step_kept_up_in_is_run_again_at_a_doubled_overload() {
        let cfg = config(None, 5);
        // `all` gains capacity after the pilot: its first round keeps up.
        let (m, _) = on_models(&cfg, &[(1000.0, 1000.0, 0), (1000.0, 1e6, 7)]).await;
        let kept_up = m.runs.iter().filter(|r| r.lower_bound.is_some()).count();
        assert!(kept_up >= 1, "{:?}", m.runs);
        // The rounds that kept up do not count: 5 saturated rounds were run
        // besides them, up to the four doublings allowed.
        assert!(
            m.settings.rounds > 5 && m.settings.rounds <= 5 + 4,
            "{}",
            m.settings.rounds
        );
        let first = m.runs.first().unwrap().measure.offered_tps;
        let last = m.runs.last().unwrap().measure.offered_tps;
        assert!(last >= 2.0 * first, "{first} → {last}");
    }

    fn config(until: Option<(f64, f64)>, max_rounds: usize) -> CompareConfig {
        let mut settings = settings(Kind::Patches, 0);
        settings.until_resolved = until;
        CompareConfig {
            steps: ladder("none,all").unwrap(),
            live: None,
            chain: None,
            settings,
            rate: None,
            max_rounds,
            budget: None,
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
        let now = clock(0, 0, 0);
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(7, 0.01), 7, &now),
            None
        );
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(8, 0.01), 8, &now),
            Some(None)
        );
    }

    #[test]
    fn until_resolved_stops_when_every_interval_is_narrow_or_the_budget_is_spent() {
        let now = clock(10, 10, 5);
        // ±0.1 % noise: within ±1 % after the first five rounds.
        let cfg = config(Some((0.01, 3600.0)), 100);
        let why = stop_reason(&cfg, &cfg.settings, &[], &rounds(5, 0.001), 5, &now);
        assert!(why.unwrap().unwrap().starts_with("resolved after 5 rounds"));
        // ±20 % noise: not resolved; a budget of an hour is not spent yet…
        assert_eq!(
            stop_reason(&cfg, &cfg.settings, &[], &rounds(5, 0.2), 5, &now),
            None
        );
        // …and none is left of a budget of 0 s.
        let broke = config(Some((0.01, 0.0)), 100);
        let why = stop_reason(&broke, &broke.settings, &[], &rounds(5, 0.2), 5, &now);
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
