//! `feth compare`: is the chain faster after a change, by how much, and is
//! that more than noise? Run mode (`--ladder`, `--only`, `--build-a/-b`,
//! `--network`) measures the steps in short interleaved rounds and prints
//! the tables; with `--max-regression PCT` it then gates its own last step
//! against its first. Gate mode (`--candidate NEW.json --max-regression
//! PCT [--baseline OLD.json]`) decides on a saved report. A gate answers
//! pass (0), regression ([`REGRESSION_STATUS`]) or inconclusive
//! ([`INCONCLUSIVE_STATUS`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use super::args::{emit, load_senders, SearchArgs};
use super::every_step::EveryStepArgs;
use super::Exit;
use crate::compare::deploy::Deploy;
use crate::compare::gate::Undecidable;
use crate::compare::ladder::{self, Step};
use crate::compare::run::{CompareConfig, LiveNode};
use crate::compare::{
    self, render, CompareReport, GateConfig, GateVerdict, Kind, Metric, Settings,
};
use crate::devnet;
use crate::devnet::recipe::{LoadKind, Recipe};
use crate::load::scenario::Scenario;
use crate::saturate::SearchConfig;
use crate::stats::GateAnswer;

/// Exit status of a gate that found a regression: 1 is any ordinary error
/// (unreadable report, mismatched conditions) and 2 clap's usage error, so a
/// CI job can tell "slower" from "broken".
pub const REGRESSION_STATUS: i32 = 3;
/// Exit status of a gate the data could not decide: run more rounds; never a pass.
pub const INCONCLUSIVE_STATUS: i32 = 4;

/// `feth compare …`
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    steps: StepsArgs,
    #[command(flatten)]
    runs: RunArgs,
    #[command(flatten)]
    search: SearchArgs,
    #[command(flatten)]
    gate: GateArgs,
    /// Also write the result as GitHub-flavoured Markdown to FILE (for a CI comment).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Print the result as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
}

/// The figure a gate decides on.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GateMetric {
    /// Committed TPS under overload.
    Tps,
    /// Node CPU per committed transaction at the fixed rate.
    Cpu,
}

impl GateMetric {
    /// The report's figure this names.
    pub fn metric(self) -> Metric {
        match self {
            GateMetric::Tps => Metric::Tps,
            GateMetric::Cpu => Metric::CpuPerTx,
        }
    }
}

/// The regression gate's arguments.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// Gate a saved report (written by `feth compare --json`): on its own
    /// interleaved pairing, its --step (default: the last) against its first.
    #[arg(long, value_name = "NEW.json", requires = "max_regression")]
    candidate: Option<PathBuf>,
    /// A separate baseline report, used only when the candidate has no
    /// pairing (one step): then an unpaired Welch comparison, which says so.
    #[arg(long, value_name = "OLD.json", requires = "candidate")]
    baseline: Option<PathBuf>,
    /// Largest worsening that passes, percent. In run mode: gate the run's
    /// last step against its first once it is measured.
    #[arg(long, value_name = "PCT")]
    max_regression: Option<f64>,
    /// The figure the gate decides on.
    #[arg(long, value_enum, default_value = "tps")]
    gate_metric: GateMetric,
    /// The candidate step [default: the last step: `b` of two builds].
    #[arg(long, value_name = "NAME")]
    step: Option<String>,
    /// Compare two reports measured under different conditions anyway, with
    /// the differences as warnings.
    #[arg(long, requires = "baseline")]
    force: bool,
}

/// Runs `feth compare`.
pub async fn run(args: CompareArgs) -> Result<()> {
    if let Some(candidate) = &args.gate.candidate {
        let candidate = CompareReport::read(candidate)?;
        let baseline = args
            .gate
            .baseline
            .as_deref()
            .map(CompareReport::read)
            .transpose()?;
        return decide(&args, baseline.as_ref(), &candidate);
    }
    let cfg = compare_config(&args)?;
    let report = compare::run::run(&cfg).await?;
    if let Some(path) = &args.markdown {
        std::fs::write(path, render::markdown(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    emit(args.json, &report, |out| {
        write!(out, "{}", render::table(&report))
    })?;
    if let Some(why) = &report.failed {
        bail!(
            "the comparison stopped early: {why}\nthe report holds the {} run(s) measured before it",
            report.runs.len()
        );
    }
    if args.gate.max_regression.is_some() {
        // The report is out (stdout); the verdict goes to stderr.
        return decide_quietly(&args, &report);
    }
    Ok(())
}

fn gate_config(args: &CompareArgs) -> Result<GateConfig> {
    let Some(pct) = args.gate.max_regression else {
        bail!("the gate needs --max-regression PCT");
    };
    Ok(GateConfig {
        max_regression_pct: pct,
        step: args.gate.step.clone(),
        metric: args.gate.gate_metric.metric(),
        force: args.gate.force,
    })
}

/// Gate mode: the verdict on stdout (JSON with --json).
fn decide(
    args: &CompareArgs,
    baseline: Option<&CompareReport>,
    candidate: &CompareReport,
) -> Result<()> {
    let verdict =
        undecidable_is_inconclusive(compare::gate(baseline, candidate, &gate_config(args)?))?;
    if let Some(path) = &args.markdown {
        write_markdown(path, &verdict, candidate)?;
    }
    emit(args.json, &verdict, |out| {
        write!(out, "{}", verdict.describe())
    })?;
    exit_for(&verdict)
}

/// Run mode's gate: the verdict on stderr, after the report.
fn decide_quietly(args: &CompareArgs, report: &CompareReport) -> Result<()> {
    let verdict = undecidable_is_inconclusive(compare::gate(None, report, &gate_config(args)?))?;
    eprint!("{}", verdict.describe());
    exit_for(&verdict)
}

/// A gate the figures cannot decide exits as inconclusive, saying why.
fn undecidable_is_inconclusive(verdict: Result<GateVerdict>) -> Result<GateVerdict> {
    verdict.map_err(|e| match e.downcast::<Undecidable>() {
        Ok(why) => Exit {
            status: INCONCLUSIVE_STATUS,
            message: format!("{why} (exit status {INCONCLUSIVE_STATUS})"),
        }
        .into(),
        Err(e) => e,
    })
}

fn exit_for(verdict: &GateVerdict) -> Result<()> {
    let status = match verdict.outcome {
        GateAnswer::Pass => return Ok(()),
        GateAnswer::Regression => REGRESSION_STATUS,
        GateAnswer::Inconclusive => INCONCLUSIVE_STATUS,
    };
    Err(Exit {
        status,
        message: format!("{} (exit status {status})", verdict.explanation),
    }
    .into())
}

/// Writes the verdict and the report's tables as Markdown to `path`.
fn write_markdown(path: &Path, verdict: &GateVerdict, report: &CompareReport) -> Result<()> {
    let text = format!(
        "{}\n#### the comparison\n\n{}",
        verdict.markdown(),
        render::markdown(report)
    );
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// What is compared: one of a patch ladder, patches alone, two builds, or a
/// running node.
#[derive(Debug, Args)]
pub struct StepsArgs {
    /// Patch sets, cumulative: `none,+parallel-abci,+rwlock,all` (`+NAME`
    /// adds to the step before, `-NAME` removes, a bare set starts afresh;
    /// a step named again, as in `all,all`, is measured again: A/A).
    /// `+comet:KEY=VALUE` sets a CometBFT `config.toml` key over the step
    /// before (`+comet:mempool.size=8000`), `-comet:KEY` drops it.
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["only", "build_a", "network"])]
    ladder: Option<String>,
    /// Each of these patches alone, against `none`: `fast-ecrecover,sender-cache`.
    #[arg(long, value_name = "LIST", conflicts_with_all = ["build_a", "network"])]
    only: Option<String>,
    /// Make every step's devnet from this chain recipe (a built-in one's
    /// name, `abcid`, `evmd`, or a recipe file; docs/RECIPES.md). Without it
    /// the steps are abcid's patch sets on the built-in `abcid` recipe. With
    /// --build-a/-b, the two builds are the chain's node binaries; a --ladder
    /// starts from `base` (the recipe as it is) and takes `+comet:KEY=VALUE`
    /// and `+app:KEY=VALUE` steps.
    #[arg(long, value_name = "RECIPE", conflicts_with_all = ["network", "only"])]
    chain: Option<String>,
    /// With --chain and --ladder: the chain's node binary every step runs
    /// (default: the recipe's).
    #[arg(
        long,
        value_name = "PATH",
        requires = "chain",
        conflicts_with = "build_a"
    )]
    binary: Option<PathBuf>,
    /// The baseline build of abcid: its binary, or a folder holding it
    /// (with --chain: the chain's node binary).
    #[arg(
        long,
        value_name = "BINARY_OR_DIR",
        requires = "build_b",
        conflicts_with = "network"
    )]
    build_a: Option<PathBuf>,
    /// The candidate build of abcid.
    #[arg(long, value_name = "BINARY_OR_DIR", requires = "build_a")]
    build_b: Option<PathBuf>,
    /// The patch set both builds run.
    #[arg(long, default_value = "all", requires = "build_a")]
    patches: String,
    #[command(flatten)]
    every_step: EveryStepArgs,
    /// A running node's web3 endpoint, measured as it is (one step).
    #[arg(long, value_name = "URL", requires = "keys")]
    network: Option<String>,
    /// With --network: keys file of funded senders (`feth fund`).
    #[arg(long, value_name = "FILE")]
    keys: Option<PathBuf>,
    /// With --network: its CometBFT RPC (else asked of the node).
    #[arg(long, value_name = "URL", requires = "network")]
    comet_rpc: Option<String>,
    /// With --network: the node's Go pprof (`rpc.pprof_laddr`, e.g.
    /// `http://127.0.0.1:6061`): with --profile-blocks, each step's first
    /// round profiles it per block and splits its CPU by role.
    #[arg(long, value_name = "URL", requires = "network")]
    pprof: Option<String>,
    /// With --network: the step's name in the report.
    #[arg(long, default_value = "node", requires = "network")]
    name: String,
    /// With --network: the PIDs of the node's processes, when it runs on
    /// this machine (`--node-pid 4242,4243`): its CPU per committed
    /// transaction, and other processes' load told apart from its own.
    /// Without them both are "not measured".
    #[arg(long, value_name = "PID", value_delimiter = ',', requires = "network")]
    node_pid: Vec<u32>,
    /// With --network: the baseline's deploy command (step `a`), run under
    /// `bash -c` before each of its runs: it puts the build on the node and
    /// restarts it (docs/GUIDE.md, "Redeploy and retest").
    #[arg(
        long,
        value_name = "CMD",
        requires_all = ["network", "comet_rpc", "deploy_b"],
        conflicts_with_all = ["deploy", "node_pid"]
    )]
    deploy_a: Option<String>,
    /// With --deploy-a: the candidate's deploy command (step `b`).
    #[arg(long, value_name = "CMD", requires = "deploy_a")]
    deploy_b: Option<String>,
    /// With --network: STEP=CMD, one step per build, in the order given
    /// (repeatable; at least two).
    #[arg(
        long,
        value_name = "STEP=CMD",
        requires_all = ["network", "comet_rpc"],
        conflicts_with = "node_pid"
    )]
    deploy: Vec<String>,
    /// The most one deploy and the node's return (serving, caught up, a
    /// new block, an empty mempool) may take.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    deploy_timeout: String,
}

/// How the rounds are made.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Rounds: every step measured once per round, in alternating order (at
    /// least 5 for a verdict) [default: 8; with --until-resolved: the most,
    /// default 100, the budget bounding it].
    #[arg(long, alias = "repeat")]
    rounds: Option<usize>,
    /// Seconds measured per window (each run measures two: saturation, fixed rate).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// The fixed rate (tx/s) of the CPU-per-transaction windows [default:
    /// 0.6 × the lowest capacity the pilot round measured].
    #[arg(long)]
    rate: Option<f64>,
    /// The saturation windows' rate (the same for every step) over the
    /// highest rate any step's search fell behind at.
    #[arg(long, default_value_t = 2.0)]
    overload: f64,
    /// Skip every step's knee search: the saturation windows offer TPS
    /// from the start (the pilot still doubles it while a step keeps up).
    /// For a ladder whose knees an earlier run found; saves a search per step.
    #[arg(long, value_name = "TPS", conflicts_with = "overload")]
    overload_tps: Option<f64>,
    /// Changes smaller than this, percent, are "no change".
    #[arg(long, value_name = "PCT", default_value_t = 2.0)]
    floor: f64,
    /// A window that loses more than this share of the machine, percent, to
    /// other processes and steal makes every verdict inconclusive.
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    max_busy: f64,
    /// Add rounds until every step's intervals (TPS and CPU per transaction,
    /// against the previous step) are within ±PCT, or --budget is spent.
    #[arg(long, value_name = "PCT")]
    until_resolved: Option<f64>,
    /// The longest the whole comparison may take: no round starts that
    /// would end past it [default with --until-resolved: 30m; else none].
    #[arg(long, value_name = "DURATION")]
    budget: Option<String>,
    /// Funded senders per devnet (with --network: the first N of --keys).
    #[arg(long, default_value_t = 500)]
    senders: usize,
    /// CometBFT `timeout_commit` of every devnet (and of the kvstore
    /// reference) [default: 500ms; with --chain, the recipe's]; a node
    /// given by --network keeps its own.
    #[arg(long, conflicts_with = "network")]
    timeout_commit: Option<devnet::GoDuration>,
    /// Block gas limit of every devnet [default: 150000000; with --chain,
    /// the recipe's]; a node given by --network keeps its own.
    #[arg(long, conflicts_with = "network")]
    block_gas_limit: Option<u64>,
    /// Blocks profiled per step in the first round (0: none).
    #[arg(long, default_value_t = 3)]
    profile_blocks: u32,
    /// Every step's traffic, from a scenario file or a built-in scenario
    /// (transfer, erc20, store, swap, fullnode, read-heavy; see `feth load --scenario`):
    /// the ladder under a chosen mix of writes, with reads beside them.
    #[arg(long, value_name = "FILE|NAME")]
    scenario: Option<String>,
    /// Skip the reference run of CometBFT's own kvstore application.
    #[arg(long)]
    no_reference: bool,
    /// Where profiles (abcid's and CometBFT's) and differential flamegraphs go.
    #[arg(long, default_value = "flamegraphs/compare")]
    out: PathBuf,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
}

/// The steps and the kind of comparison the arguments ask for (with a live
/// node, one per deploy command of `deploys`, else one).
fn steps(s: &StepsArgs, deploys: &[Deploy]) -> Result<(Kind, Vec<Step>)> {
    Ok(match (&s.ladder, &s.only, &s.build_a, &s.build_b, &s.network) {
        (Some(spec), ..) => {
            let mut steps = ladder::ladder(spec)?;
            for step in &mut steps {
                step.abcid = s.binary.clone();
            }
            (Kind::Patches, steps)
        }
        (_, _, Some(a), Some(b), _) if s.chain.is_some() => {
            // A recipe chain's builds run as given, on the recipe as it is.
            (Kind::Builds, ladder::builds(a.clone(), b.clone(), "base"))
        }
        (_, Some(list), ..) => (Kind::Patches, ladder::only(list)?),
        (_, _, Some(a), Some(b), _) => (
            Kind::Builds,
            ladder::builds(devnet::tools::build(a)?, devnet::tools::build(b)?, &s.patches),
        ),
        (.., Some(_)) if deploys.is_empty() => (Kind::Live, vec![ladder::live(&s.name)]),
        (.., Some(_)) => (
            Kind::Live,
            deploys.iter().map(|d| ladder::live(&d.step)).collect(),
        ),
        _ => bail!(
            "say what to compare: --ladder SPEC, --only LIST, --build-a A --build-b B or \
             --network URL --keys FILE; or gate a report with --candidate NEW.json --max-regression PCT"
        ),
    })
}

/// The live node's deploy commands, one per step: `--deploy-a/-b` (steps
/// `a` and `b`) or `--deploy STEP=CMD`s (at least two, names distinct).
fn deploys(s: &StepsArgs) -> Result<Vec<Deploy>> {
    if let (Some(a), Some(b)) = (&s.deploy_a, &s.deploy_b) {
        let step = |name: &str, command: &str| Deploy {
            step: name.to_string(),
            command: command.to_string(),
        };
        return Ok(vec![step("a", a), step("b", b)]);
    }
    let deploys = s
        .deploy
        .iter()
        .map(|d| Deploy::parse(d))
        .collect::<Result<Vec<_>>>()?;
    if deploys.len() == 1 {
        bail!("--deploy needs at least two steps to compare (`--deploy a=CMD --deploy b=CMD`)");
    }
    for (i, d) in deploys.iter().enumerate() {
        if deploys[..i].iter().any(|e| e.step == d.step) {
            bail!(
                "--deploy names step `{}` twice; give each build its own name",
                d.step
            );
        }
    }
    Ok(deploys)
}

/// A devnet setting: none for a live node; the one given, else feth's
/// devnet default, else (with --chain) the recipe's own.
fn devnet_setting<T>(
    live: &Option<LiveNode>,
    chain: &Option<Recipe>,
    given: Option<T>,
    default: T,
) -> Option<T> {
    match (live, chain) {
        (Some(_), _) => None,
        (None, Some(_)) => given,
        (None, None) => Some(given.unwrap_or(default)),
    }
}

/// A duration flag in seconds ([`positive_duration`]).
fn parse_secs(text: &str, flag: &str) -> Result<f64> {
    Ok(positive_duration(text, flag)?.as_secs_f64())
}

/// A duration flag (`90s`, `30m`, `2h`) that must be longer than 0, its
/// name in the error.
pub fn positive_duration(text: &str, flag: &str) -> Result<Duration> {
    let d = crate::units::parse_duration(text).with_context(|| format!("{flag} {text}"))?;
    if d.is_zero() {
        bail!("{flag} must be longer than 0, got {text}");
    }
    Ok(d)
}

/// `--node-pid`'s processes, each checked to be running on this machine.
fn node_pids(pids: &[u32]) -> Result<Vec<u32>> {
    for pid in pids {
        crate::procstat::pid_cpu(*pid).with_context(|| {
            format!("--node-pid {pid}: no such process on this machine; give the PIDs of the node's own processes (e.g. `pgrep -f evmd`)")
        })?;
    }
    Ok(pids.to_vec())
}

/// The search's defaults in a comparison: short steps, the doubling alone.
pub fn compare_search_defaults() -> SearchConfig {
    SearchConfig {
        step_secs: 5.0,
        resolution: 1.0,
        ..SearchConfig::default()
    }
}

fn compare_config(args: &CompareArgs) -> Result<CompareConfig> {
    if args.steps.network.is_some() && !args.steps.every_step.is_empty() {
        bail!(
            "--var, --set, --app and --genesis give feth's devnets settings; a node given by \
             --network runs with its own"
        );
    }
    let deploys = deploys(&args.steps)?;
    let (kind, steps) = steps(&args.steps, &deploys)?;
    if args.steps.chain.is_none() && matches!(kind, Kind::Patches | Kind::Builds) {
        // abcid's patch ladder: every step's patch set as abcid will parse it,
        // before the first devnet starts.
        ladder::check_patch_sets(&steps)?;
    }
    let r = &args.runs;
    let default_rounds = if r.until_resolved.is_some() { 100 } else { 8 };
    let rounds = r.rounds.unwrap_or(default_rounds);
    if rounds == 0 || !(r.seconds > 0.0 && r.seconds.is_finite()) {
        bail!("--rounds must be at least 1 and --seconds a positive number");
    }
    if !(r.overload > 1.0 && r.overload.is_finite()) {
        bail!(
            "--overload must be above 1 (a rate above what the step commits), got {}",
            r.overload
        );
    }
    if !(0.0..50.0).contains(&r.floor) {
        bail!(
            "--floor must be a percentage from 0 to below 50, got {}",
            r.floor
        );
    }
    if !(r.max_busy > 0.0 && r.max_busy < 100.0) {
        bail!(
            "--max-busy must be a percentage above 0 and below 100, got {}",
            r.max_busy
        );
    }
    if let Some(rate) = r.rate.filter(|v| !(*v > 0.0 && v.is_finite())) {
        bail!("--rate must be a positive number of tx/s, got {rate}");
    }
    let until_resolved = match r.until_resolved {
        Some(pct) if !(pct > 0.0 && pct < 100.0) => {
            bail!("--until-resolved must be a percentage above 0, got {pct}")
        }
        Some(pct) => Some((
            pct / 100.0,
            parse_secs(r.budget.as_deref().unwrap_or("30m"), "--budget")?,
        )),
        None => None,
    };
    let budget = match (&r.budget, until_resolved) {
        (Some(b), None) => Some(parse_secs(b, "--budget")?),
        _ => None,
    };
    let search = args.search.search_config_over(compare_search_defaults());
    search.validate()?;
    let live = match (&args.steps.network, &args.steps.keys) {
        (Some(web3), Some(keys)) => Some(LiveNode {
            web3: web3.clone(),
            comet_rpc: args.steps.comet_rpc.clone(),
            keys: load_senders(keys, Some(r.senders))?,
            node_pids: node_pids(&args.steps.node_pid)?,
            pprof: args.steps.pprof.clone(),
            deploys,
            deploy_timeout: Duration::from_secs_f64(parse_secs(
                &args.steps.deploy_timeout,
                "--deploy-timeout",
            )?),
        }),
        _ => None,
    };
    let warmup = args.search.warmup()?;
    let scenario = r.scenario.as_deref().map(Scenario::load).transpose()?;
    let chain = args.steps.chain.as_deref().map(Recipe::find).transpose()?;
    let every_step = args.steps.every_step.settings(chain.as_ref())?;
    if chain.as_ref().is_some_and(|r| r.spec.load != LoadKind::Evm) && scenario.is_some() {
        bail!("--scenario is EVM traffic; a kvstore recipe's load is key=value transactions");
    }
    Ok(CompareConfig {
        scenario: scenario.clone(),
        settings: Settings {
            kind,
            block_gas_limit: devnet_setting(
                &live,
                &chain,
                r.block_gas_limit,
                crate::devnet::DEFAULT_BLOCK_GAS_LIMIT,
            ),
            timeout_commit: devnet_setting(
                &live,
                &chain,
                r.timeout_commit,
                crate::bench::BENCH_TIMEOUT_COMMIT,
            ),
            seconds: r.seconds,
            warmup_secs: warmup.as_secs_f64(),
            rounds: 0,
            senders: r.senders,
            workload: scenario
                .as_ref()
                .map_or_else(|| "transfer".to_string(), |s| s.name.clone()),
            overload: r.overload,
            given_overload_tps: super::args::given_overload(r.overload_tps)?,
            fixed_rate: 0.0,
            floor: r.floor / 100.0,
            search,
            until_resolved,
            max_lost: r.max_busy / 100.0,
            every_step,
        },
        rate: r.rate,
        max_rounds: rounds,
        budget,
        steps,
        warmup,
        // A live node is profiled only through its Go pprof, when given.
        profile_blocks: match &live {
            Some(l) if l.pprof.is_none() => 0,
            _ => r.profile_blocks,
        },
        reference: !r.no_reference && live.is_none(),
        live,
        chain,
        out: r.out.clone(),
        progress: !r.quiet,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Compare {
        #[command(flatten)]
        args: CompareArgs,
    }

    fn config(args: &[&str]) -> Result<CompareConfig> {
        let builds = ["--build-a", "/bin/true", "--build-b", "/bin/true"];
        let all = [&["compare"][..], &builds, args].concat();
        let parsed = Compare::try_parse_from(all).expect("parses");
        compare_config(&parsed.args)
    }

    #[test]
    fn every_steps_settings_are_checked_against_the_recipe_and_kept_in_the_report() {
        let kv = ["--chain", "kvstore"];
        let given = [
            "--var",
            "timeout_commit=200ms",
            "--set",
            "mempool.size=300",
            "--genesis",
            "/consensus/params/block/max_bytes=\"4194304\"",
        ];
        let cfg = config(&[&kv[..], &given].concat()).unwrap();
        let want = [
            "var:timeout_commit=200ms",
            "comet:mempool.size=300",
            "genesis:/consensus/params/block/max_bytes=\"4194304\"",
        ];
        assert_eq!(cfg.settings.every_step, want);
        let refused = |args: &[&str]| format!("{:#}", config(args).unwrap_err());
        let err = refused(&[&kv[..], &["--var", "patches=none"]].concat());
        assert!(
            err.contains(
                "recipe `kvstore` has no var `patches` (its vars: block_gas, timeout_commit)"
            ),
            "{err}"
        );
        let err = refused(&[&kv[..], &["--app", "a.b=1"]].concat());
        assert!(
            err.contains("recipe `kvstore` names no app config file"),
            "{err}"
        );
        let err = refused(&[&kv[..], &["--genesis", "max_gas=1"]].concat());
        assert!(err.contains("a JSON pointer starts with `/`"), "{err}");
        let err = refused(&[&kv[..], &["--var", "timeout_commit"]].concat());
        assert!(err.contains("expected NAME=VALUE"), "{err}");
        let live = ["compare", "--network", "http://127.0.0.1:9", "--keys", "k"];
        let parsed = Compare::try_parse_from([&live[..], &["--set", "a=1"]].concat()).unwrap();
        let err = compare_config(&parsed.args).unwrap_err().to_string();
        assert!(
            err.contains("a node given by --network runs with its own"),
            "{err}"
        );
        // Without --chain the steps are abcid's: its recipe's vars.
        let cfg = config(&["--var", "fee_market={\"elasticity\": 2}"]).unwrap();
        assert_eq!(
            cfg.settings.every_step,
            ["var:fee_market={\"elasticity\": 2}"]
        );
    }
}
