//! `feth bisect --good REV --bad REV --build CMD`: which commit made the
//! chain slower (or, with `--find faster`, faster). Arguments into
//! [`BuildConfig`], a [`CompareConfig`] for every probe and the gate's
//! [`GateConfig`]; the search is [`crate::bisect`]'s.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::args::{emit, SearchArgs};
use super::compare::{compare_search_defaults, positive_duration, GateMetric, INCONCLUSIVE_STATUS};
use super::every_step::EveryStepArgs;
use super::Exit;
use crate::bisect::build::{BuildConfig, Builder};
use crate::bisect::judge::DevnetJudge;
use crate::bisect::render::BisectReport;
use crate::bisect::search::{Find, Found};
use crate::bisect::{self, commits, Limits};
use crate::compare::run::{unix_seconds, CompareConfig};
use crate::compare::{self, GateConfig, Kind, Settings};
use crate::devnet::recipe::Recipe;
use crate::devnet::{self, GoDuration};

/// `feth bisect …`
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// A revision known good: the older one, before the change.
    #[arg(long, visible_alias = "old", value_name = "REV")]
    good: String,
    /// A revision known bad: the newer one, after --good, that shows the change.
    #[arg(long, visible_alias = "new", value_name = "REV")]
    bad: String,
    /// The change looked for: `slower` (which commit made it slower), or
    /// `faster` (which commit made it faster; --max-regression is then
    /// how much slower than a probe the old endpoint must be shown).
    #[arg(long, value_name = "slower|faster", default_value = "slower")]
    find: Find,
    /// The git repository the revisions are in.
    #[arg(long, value_name = "DIR", default_value = ".")]
    repo: PathBuf,
    /// The build command, run under `bash -c` in feth's own worktree of the
    /// repository with FETH_BISECT_COMMIT set (e.g. `cargo build --release -p abcid`).
    #[arg(long, value_name = "CMD")]
    build: String,
    /// Where the build leaves the node binary, relative to the repository
    /// [default: target/release/abcid; required with --chain].
    #[arg(long, value_name = "PATH")]
    binary_path: Option<PathBuf>,
    /// Make every devnet from this chain recipe (docs/RECIPES.md); the
    /// builds are the chain's node binaries.
    #[arg(long, value_name = "RECIPE")]
    chain: Option<String>,
    /// abcid's patch set every build runs (without --chain).
    #[arg(long, default_value = "all", conflicts_with = "chain")]
    patches: String,
    #[command(flatten)]
    every_step: EveryStepArgs,
    /// The figure a probe is judged on: node CPU per committed transaction
    /// by default (the low-noise one: fewer rounds per probe), or committed
    /// TPS under overload.
    #[arg(long, value_enum, default_value = "cpu")]
    metric: GateMetric,
    /// Largest slowdown, percent, that still counts as "not slower".
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    max_regression: f64,
    /// The longest the whole bisection may take: no probe starts that
    /// would end past it.
    #[arg(long, value_name = "DURATION", default_value = "2h")]
    budget: String,
    /// The longest one probe's comparison may take: an inconclusive one
    /// adds rounds up to this, then the commit is skipped.
    #[arg(long, value_name = "DURATION", default_value = "20m")]
    probe_budget: String,
    /// Rounds one probe's comparison may reach at the most.
    #[arg(long, default_value_t = 30)]
    max_rounds: usize,
    /// Seconds measured per window.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// A window that loses more than this share of the machine, percent, to
    /// other processes and steal makes the probe inconclusive (skipped).
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    max_busy: f64,
    /// Funded senders per devnet.
    #[arg(long, default_value_t = 500)]
    senders: usize,
    /// CometBFT `timeout_commit` of every devnet [default: 500ms; with
    /// --chain, the recipe's].
    #[arg(long)]
    timeout_commit: Option<GoDuration>,
    /// Blocks profiled per build in a probe's first round (0: none): the
    /// first bad commit's differential flamegraph against its parent.
    #[arg(long, default_value_t = 3)]
    profile_blocks: u32,
    /// The longest one build may take.
    #[arg(long, value_name = "DURATION", default_value = "30m")]
    build_timeout: String,
    /// Search every commit between the endpoints, not only the first-parent line.
    #[arg(long)]
    all_parents: bool,
    /// feth's own folder: its worktree of the repository and the builds,
    /// cached by commit (a re-run rebuilds nothing already built) [default:
    /// `~/.cache/feth/bisect/<repository name>-<hash of its path>`, outside
    /// the repository's working tree].
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// Where the probes' reports and flamegraphs go (a `bisect-<unix time>` folder).
    #[arg(long, default_value = "flamegraphs/bisect")]
    out: PathBuf,
    /// Skip every step's knee search: the saturation windows offer TPS
    /// from the start (the pilot still doubles it while a step keeps up).
    /// For a ladder whose knees an earlier run found; saves a search per step.
    #[arg(long, value_name = "TPS")]
    overload_tps: Option<f64>,
    #[command(flatten)]
    search: SearchArgs,
    /// Also write the result as GitHub-flavoured Markdown to FILE.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Print the result as JSON on stdout; the table then goes to stderr.
    #[arg(long)]
    json: bool,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

/// Runs `feth bisect`: exits 0 when it names the first bad commit, and
/// [`INCONCLUSIVE_STATUS`] when it could only narrow the range or stopped
/// at the endpoints.
pub async fn run(args: BisectArgs) -> Result<()> {
    if !(args.max_regression > 0.0 && args.max_regression < 100.0) {
        bail!(
            "--max-regression must be a percentage above 0 and below 100, got {}",
            args.max_regression
        );
    }
    let commits = commits::between(&args.repo, &args.good, &args.bad, !args.all_parents)?;
    let out = args.out.join(format!("bisect-{}", unix_seconds()));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let builder = Builder::new(build_config(&args)?)?;
    let bar = progress(args.quiet, &commits);
    let mut judge = DevnetJudge {
        commits: commits.clone(),
        builder,
        compare: compare_config(&args, &out)?,
        gate: GateConfig {
            max_regression_pct: args.max_regression,
            step: None,
            metric: args.metric.metric(),
            force: false,
        },
        find: args.find,
        patches: match args.chain {
            Some(_) => "base".to_string(),
            None => args.patches.clone(),
        },
        out: out.clone(),
        flamegraphs: BTreeMap::new(),
        bar: bar.clone(),
    };
    let limits = Limits {
        find: args.find,
        budget: Some(positive_duration(&args.budget, "--budget")?),
    };
    let outcome = bisect::bisect(commits.len(), &mut judge, limits, &bar).await?;
    let diff_flamegraph = first_bad_diff(&outcome.found, &judge, &out)?;
    let report = BisectReport {
        commits,
        find: args.find,
        metric: format!("{:?}", args.metric).to_lowercase(),
        max_regression_pct: args.max_regression,
        outcome,
        diff_flamegraph,
    };
    if let Some(path) = &args.markdown {
        std::fs::write(path, report.markdown())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    emit(args.json, &report, |w| write!(w, "{}", report.table()))?;
    match report.outcome.found {
        Some(Found::FirstBad(_)) => Ok(()),
        _ => Err(Exit {
            status: INCONCLUSIVE_STATUS,
            message: format!("{} (exit status {INCONCLUSIVE_STATUS})", report.headline()),
        }
        .into()),
    }
}

fn build_config(args: &BisectArgs) -> Result<BuildConfig> {
    let binary = match (&args.binary_path, &args.chain) {
        (Some(path), _) => path.clone(),
        (None, None) => PathBuf::from("target/release/abcid"),
        (None, Some(chain)) => bail!(
            "--chain {chain}: say where the build leaves the chain's node binary, relative to the repository (--binary-path build/evmd)"
        ),
    };
    Ok(BuildConfig {
        repo: args.repo.clone(),
        work: match &args.work {
            Some(dir) => dir.clone(),
            None => default_work(&args.repo)?,
        },
        command: args.build.clone(),
        binary,
        timeout: positive_duration(&args.build_timeout, "--build-timeout")?,
    })
}

/// `$XDG_CACHE_HOME` (else `~/.cache`) `/feth/bisect/<name>-<hash>`: one
/// folder per repository, outside its working tree.
fn default_work(repo: &std::path::Path) -> Result<PathBuf> {
    let repo = std::fs::canonicalize(repo)
        .with_context(|| format!("--repo {}: no such folder", repo.display()))?;
    let cache = match (std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")) {
        (Some(dir), _) if !dir.is_empty() => PathBuf::from(dir),
        (_, Some(home)) => PathBuf::from(home).join(".cache"),
        _ => bail!("no XDG_CACHE_HOME or HOME to keep the builds under: give --work DIR"),
    };
    let name = repo
        .file_name()
        .map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned());
    let hash = alloy_primitives::keccak256(repo.as_os_str().as_encoded_bytes());
    let tag = hex::encode(&hash[..4]);
    Ok(cache
        .join("feth")
        .join("bisect")
        .join(format!("{name}-{tag}")))
}

/// Every probe's comparison: devnets of their own, rounds added until the
/// intervals are within half the threshold or the probe's budget is spent.
fn compare_config(args: &BisectArgs, out: &std::path::Path) -> Result<CompareConfig> {
    if args.max_rounds < 2 || !(args.seconds > 0.0 && args.seconds.is_finite()) {
        bail!("--max-rounds must be at least 2 and --seconds a positive number");
    }
    if !(args.max_busy > 0.0 && args.max_busy < 100.0) {
        bail!(
            "--max-busy must be a percentage above 0 and below 100, got {}",
            args.max_busy
        );
    }
    let search = args.search.search_config_over(compare_search_defaults());
    search.validate()?;
    let warmup = args.search.warmup()?;
    let chain = args.chain.as_deref().map(Recipe::find).transpose()?;
    let probe_budget = positive_duration(&args.probe_budget, "--probe-budget")?.as_secs_f64();
    Ok(CompareConfig {
        steps: Vec::new(),
        live: None,
        settings: Settings {
            kind: Kind::Builds,
            block_gas_limit: chain.is_none().then_some(devnet::DEFAULT_BLOCK_GAS_LIMIT),
            timeout_commit: match &chain {
                Some(_) => args.timeout_commit,
                None => Some(
                    args.timeout_commit
                        .unwrap_or(crate::bench::BENCH_TIMEOUT_COMMIT),
                ),
            },
            seconds: args.seconds,
            warmup_secs: warmup.as_secs_f64(),
            rounds: 0,
            senders: args.senders,
            workload: "transfer".to_string(),
            overload: 2.0,
            given_overload_tps: super::args::given_overload(args.overload_tps)?,
            fixed_rate: 0.0,
            floor: 0.02,
            search,
            until_resolved: Some((args.max_regression / 200.0, probe_budget)),
            max_lost: args.max_busy / 100.0,
            every_step: args.every_step.settings(chain.as_ref())?,
        },
        chain,
        rate: None,
        max_rounds: args.max_rounds,
        budget: None,
        warmup,
        profile_blocks: args.profile_blocks,
        reference: false,
        scenario: None,
        out: out.to_path_buf(),
        progress: !args.quiet,
    })
}

/// The first bad commit's differential flamegraph against its parent, when
/// both were profiled.
fn first_bad_diff(
    found: &Option<Found>,
    judge: &DevnetJudge,
    out: &std::path::Path,
) -> Result<Option<PathBuf>> {
    let Some(Found::FirstBad(k)) = found else {
        return Ok(None);
    };
    let (Some(before), Some(after)) = (judge.flamegraphs.get(&(k - 1)), judge.flamegraphs.get(k))
    else {
        return Ok(None);
    };
    let c = &judge.commits;
    let svg = out.join("first-bad-diff.svg");
    let title = format!(
        "{} → {}: red grew, blue shrank",
        c[k - 1].short(),
        c[*k].short()
    );
    compare::profile::diff(before, after, &svg, &title)?;
    Ok(Some(svg))
}

fn progress(quiet: bool, commits: &[commits::Commit]) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(1).with_style(
        ProgressStyle::with_template("{spinner} bisect probe {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(format!("{} commits", commits.len()));
    bar
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Bisect {
        #[command(flatten)]
        args: BisectArgs,
    }

    #[test]
    fn every_probes_devnets_share_the_settings_given_checked_against_the_recipe() {
        let parse = |extra: &[&str]| {
            let base = ["bisect", "--good", "a", "--bad", "b", "--build", "true"];
            let all = [
                &base[..],
                &["--chain", "kvstore", "--binary-path", "x"],
                extra,
            ];
            Bisect::try_parse_from(all.concat()).expect("parses").args
        };
        let out = std::path::Path::new("/tmp/feth-bisect-test");
        let given = parse(&["--var", "block_gas=30000000", "--set", "mempool.size=300"]);
        let cfg = compare_config(&given, out).unwrap();
        let want = ["var:block_gas=30000000", "comet:mempool.size=300"];
        assert_eq!(cfg.settings.every_step, want);
        let err = compare_config(&parse(&["--var", "patches=none"]), out).unwrap_err();
        assert!(
            err.to_string()
                .contains("recipe `kvstore` has no var `patches`"),
            "{err}"
        );
    }
}
