//! `feth compare`: is the chain faster after a change, by how much, and is
//! that more than noise? Run mode (`--ladder`, `--only`, `--build-a/-b`,
//! `--network`) measures the steps in interleaved rounds and prints the
//! table; gate mode (`--baseline OLD.json --candidate NEW.json
//! --max-regression PCT`) compares two saved reports and exits with
//! [`REGRESSION_STATUS`] on a regression.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::args::{emit, load_senders, SearchArgs};
use super::Exit;
use crate::compare::ladder::{self, Step};
use crate::compare::run::{CompareConfig, LiveNode};
use crate::compare::{self, render, CompareReport, GateConfig, GateVerdict, Kind, Settings};
use crate::devnet;

/// Exit status of `feth compare` when the gate finds a regression: 1 is any
/// ordinary error (unreadable report, mismatched conditions) and 2 clap's
/// usage error, so a CI job can tell "slower" from "broken".
pub const REGRESSION_STATUS: i32 = 3;

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

/// The regression gate's arguments: two saved reports and a threshold.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The report to gate against (written by `feth compare --json`).
    #[arg(long, value_name = "OLD.json", requires_all = ["candidate", "max_regression"])]
    baseline: Option<PathBuf>,
    /// The report of the change.
    #[arg(long, value_name = "NEW.json", requires = "baseline")]
    candidate: Option<PathBuf>,
    /// Largest drop of mean committed TPS that passes, percent of the baseline's.
    #[arg(long, value_name = "PCT", requires = "baseline")]
    max_regression: Option<f64>,
    /// The step compared in both reports [default: the last step of each: `all`
    /// of a patch ladder, `b` of two builds].
    #[arg(long, value_name = "NAME", requires = "baseline")]
    step: Option<String>,
    /// Compare reports measured under different conditions (CPU, cores, gas
    /// limit, block time, …) anyway, with the differences as warnings.
    #[arg(long, requires = "baseline")]
    force: bool,
}

/// Runs `feth compare`.
pub async fn run(args: CompareArgs) -> Result<()> {
    if args.gate.baseline.is_some() {
        return run_gate(args).await;
    }
    let cfg = compare_config(&args)?;
    let report = compare::run::run(&cfg).await?;
    if let Some(path) = &args.markdown {
        std::fs::write(path, render::markdown(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    emit(args.json, &report, |out| {
        write!(out, "{}", render::table(&report))
    })
}

/// Gate mode: two saved reports and a threshold.
async fn run_gate(args: CompareArgs) -> Result<()> {
    let g = &args.gate;
    let (Some(baseline), Some(candidate), Some(max_regression_pct)) =
        (&g.baseline, &g.candidate, g.max_regression)
    else {
        bail!(
            "feth compare needs --baseline OLD.json --candidate NEW.json --max-regression PCT \
             (two reports written by `feth compare --json`) to gate a change"
        );
    };
    let cfg = GateConfig {
        max_regression_pct,
        step: g.step.clone(),
        force: g.force,
    };
    let baseline = CompareReport::read(baseline)?;
    let candidate = CompareReport::read(candidate)?;
    let verdict = compare::gate(&baseline, &candidate, &cfg)?;
    if let Some(path) = &args.markdown {
        write_markdown(path, &verdict, &baseline, &candidate)?;
    }
    emit(args.json, &verdict, |out| {
        write!(out, "{}", verdict.describe())
    })?;
    if !verdict.outcome.passes() {
        return Err(Exit {
            status: REGRESSION_STATUS,
            message: format!(
                "regression: committed TPS fell {:.1} %, more than the {} % allowed (exit status {REGRESSION_STATUS})",
                -verdict.change_pct, verdict.max_regression_pct
            ),
        }
        .into());
    }
    Ok(())
}

/// Writes the verdict and both reports' tables as Markdown to `path`.
fn write_markdown(
    path: &Path,
    verdict: &GateVerdict,
    baseline: &CompareReport,
    candidate: &CompareReport,
) -> Result<()> {
    let text = format!(
        "{}\n#### candidate\n\n{}\n#### baseline\n\n{}",
        verdict.markdown(),
        render::markdown(candidate),
        render::markdown(baseline)
    );
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// What is compared: one of a patch ladder, patches alone, two builds, or a
/// running node.
#[derive(Debug, Args)]
pub struct StepsArgs {
    /// Patch sets, cumulative: `none,+parallel-abci,+rwlock,all` (`+NAME`
    /// adds to the step before, `-NAME` removes, a bare set starts afresh).
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["only", "build_a", "network"])]
    ladder: Option<String>,
    /// Each of these patches alone, against `none`: `fast-ecrecover,sender-cache`.
    #[arg(long, value_name = "LIST", conflicts_with_all = ["build_a", "network"])]
    only: Option<String>,
    /// The baseline build of abcid: its binary, or a folder holding it.
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
    /// A running node's web3 endpoint, measured as it is (one step).
    #[arg(long, value_name = "URL", requires = "keys")]
    network: Option<String>,
    /// With --network: keys file of funded senders (`feth fund`).
    #[arg(long, value_name = "FILE")]
    keys: Option<PathBuf>,
    /// With --network: its CometBFT RPC (else asked of the node).
    #[arg(long, value_name = "URL", requires = "network")]
    comet_rpc: Option<String>,
    /// With --network: the step's name in the report (the gate matches it).
    #[arg(long, default_value = "node", requires = "network")]
    name: String,
}

/// How every run is made.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Rounds: every step runs once per round, in alternating order.
    #[arg(long, default_value_t = 2)]
    repeat: usize,
    /// Seconds measured at the knee per run.
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Hold this offered rate (tx/s) in every run instead of searching the knee.
    #[arg(long)]
    rate: Option<f64>,
    /// Funded senders per devnet (with --network: the first N of --keys).
    #[arg(long, default_value_t = 500)]
    senders: usize,
    /// CometBFT `timeout_commit` of every devnet (and of the kvstore reference).
    #[arg(long, default_value = "500ms")]
    timeout_commit: String,
    /// Block gas limit of every devnet.
    #[arg(long, default_value_t = crate::devnet::DEFAULT_BLOCK_GAS_LIMIT)]
    block_gas_limit: u64,
    /// Blocks profiled per run, after its measured window (0: none).
    #[arg(long, default_value_t = 3)]
    profile_blocks: u32,
    /// Skip the reference run of CometBFT's own kvstore application.
    #[arg(long)]
    no_reference: bool,
    /// Where profiles and differential flamegraphs go.
    #[arg(long, default_value = "flamegraphs/compare")]
    out: PathBuf,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
}

/// The steps and the kind of comparison the arguments ask for.
fn steps(s: &StepsArgs) -> Result<(Kind, Vec<Step>)> {
    Ok(
        match (&s.ladder, &s.only, &s.build_a, &s.build_b, &s.network) {
            (Some(spec), ..) => (Kind::Patches, ladder::ladder(spec)?),
            (_, Some(list), ..) => (Kind::Patches, ladder::only(list)?),
            (_, _, Some(a), Some(b), _) => (
                Kind::Builds,
                ladder::builds(
                    devnet::tools::build(a)?,
                    devnet::tools::build(b)?,
                    &s.patches,
                ),
            ),
            (.., Some(_)) => (Kind::Live, vec![ladder::live(&s.name)]),
            _ => bail!(
                "say what to compare: --ladder SPEC, --only LIST, --build-a A --build-b B or \\
             --network URL --keys FILE; or gate two reports with --baseline/--candidate"
            ),
        },
    )
}

fn compare_config(args: &CompareArgs) -> Result<CompareConfig> {
    let (kind, steps) = steps(&args.steps)?;
    let r = &args.runs;
    if r.repeat == 0 || !(r.seconds > 0.0 && r.seconds.is_finite()) {
        bail!("--repeat must be at least 1 and --seconds a positive number");
    }
    let search = args.search.search_config();
    search.validate()?;
    let live = match (&args.steps.network, &args.steps.keys) {
        (Some(web3), Some(keys)) => Some(LiveNode {
            web3: web3.clone(),
            comet_rpc: args.steps.comet_rpc.clone(),
            keys: load_senders(keys, Some(r.senders))?,
        }),
        _ => None,
    };
    Ok(CompareConfig {
        settings: Settings {
            kind,
            block_gas_limit: r.block_gas_limit,
            timeout_commit: r.timeout_commit.clone(),
            seconds: r.seconds,
            repeat: r.repeat,
            senders: r.senders,
            workload: "transfer".to_string(),
            fixed_rate: r.rate,
        },
        steps,
        search,
        warmup: args.search.warmup()?,
        profile_blocks: if live.is_some() { 0 } else { r.profile_blocks },
        reference: !r.no_reference && live.is_none(),
        live,
        out: r.out.clone(),
        progress: !r.quiet,
    })
}
