//! `feth flamegraph diff BEFORE AFTER [-o OUT.svg]`: a differential flamegraph of two sets
//! of downloaded profiles (red grew, blue shrank), and a summary of the frames whose share
//! of self samples moved most.

use std::fs;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use feth_profiler_rpc::diff::{
    diff_flamegraph, load_profile_set, DiffOptions, DiffResult, FrameChange, ProfileSet,
};
use feth_profiler_rpc::RoleFilter;
use serde::Serialize;

/// Where the SVG goes by default.
pub const DEFAULT_OUTPUT: &str = "flamegraphs/diff.svg";
/// How many frames the summary lists by default.
pub const DEFAULT_TOP: usize = 10;

/// `feth flamegraph`: work on downloaded profiles.
#[derive(Clone, Debug, clap::Args)]
pub struct FlamegraphArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: FlamegraphCommand,
}

/// Subcommands of `feth flamegraph`.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum FlamegraphCommand {
    /// Differential flamegraph of two sets of profiles: red grew, blue shrank.
    Diff(DiffArgs),
}

/// `feth flamegraph diff BEFORE AFTER`.
#[derive(Clone, Debug, clap::Args)]
pub struct DiffArgs {
    /// Profiles before the change: a .folded file, a block directory, or a directory of
    /// block directories (e.g. `flamegraphs/<chain-id>`), merged.
    pub before: PathBuf,
    /// Profiles after the change, same forms.
    pub after: PathBuf,
    /// Output SVG.
    #[arg(short, long, default_value = DEFAULT_OUTPUT)]
    pub output: PathBuf,
    /// Threads to compare.
    #[arg(long, value_enum, default_value_t = RoleArg::All)]
    pub role: RoleArg,
    /// Compare absolute sample counts instead of scaling BEFORE to AFTER's total.
    #[arg(long)]
    pub no_normalize: bool,
    /// How many frames the summary lists.
    #[arg(long, default_value_t = DEFAULT_TOP)]
    pub top: usize,
    /// Print JSON instead of a readable summary.
    #[arg(long)]
    pub json: bool,
}

/// `--role`: the command-line spelling of [`RoleFilter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RoleArg {
    /// Every thread of the process, tagged or not.
    #[value(name = "all")]
    All,
    /// Threads tagged check_tx (the mempool connection).
    #[value(name = "check_tx")]
    CheckTx,
    /// Threads tagged deliver_tx (the consensus connection).
    #[value(name = "deliver_tx")]
    DeliverTx,
}

impl From<RoleArg> for RoleFilter {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::All => RoleFilter::All,
            RoleArg::CheckTx => RoleFilter::CheckTx,
            RoleArg::DeliverTx => RoleFilter::DeliverTx,
        }
    }
}

impl std::fmt::Display for RoleArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        RoleFilter::from(*self).fmt(f)
    }
}

/// What `feth flamegraph diff` did, printed as JSON with `--json`.
#[derive(Debug, Serialize)]
struct DiffReport {
    output: PathBuf,
    role: RoleFilter,
    normalized: bool,
    before: SetReport,
    after: SetReport,
    top_changes: Vec<FrameChange>,
}

#[derive(Debug, Serialize)]
struct SetReport {
    path: PathBuf,
    profiles: usize,
    samples: u64,
}

/// Runs `feth flamegraph …`.
pub async fn run(args: FlamegraphArgs) -> anyhow::Result<()> {
    match args.command {
        FlamegraphCommand::Diff(diff) => tokio::task::spawn_blocking(move || run_diff(&diff))
            .await
            .context("the diff task failed")?,
    }
}

fn run_diff(args: &DiffArgs) -> anyhow::Result<()> {
    let role = RoleFilter::from(args.role);
    let (before, after) = load_sets(args, role)?;
    let options = DiffOptions {
        normalize: !args.no_normalize,
        title: format!(
            "{} -> {} ({role})",
            args.before.display(),
            args.after.display()
        ),
        top: args.top,
    };
    let result = diff_flamegraph(&before.stacks, &after.stacks, &options)?;
    if let Some(parent) = args.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    fs::write(&args.output, &result.svg)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let report = diff_report(args, role, &options, (&before, &after), result);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_diff_report(&report);
    }
    Ok(())
}

/// Loads BEFORE and AFTER; both must hold samples of `role`.
fn load_sets(args: &DiffArgs, role: RoleFilter) -> anyhow::Result<(ProfileSet, ProfileSet)> {
    let before = load_profile_set(&args.before, role)
        .with_context(|| format!("loading BEFORE from {}", args.before.display()))?;
    let after = load_profile_set(&args.after, role)
        .with_context(|| format!("loading AFTER from {}", args.after.display()))?;
    if before.stacks.is_empty() || after.stacks.is_empty() {
        bail!(
            "no {role} samples in {}",
            if before.stacks.is_empty() {
                "BEFORE"
            } else {
                "AFTER"
            }
        );
    }
    Ok((before, after))
}

fn diff_report(
    args: &DiffArgs,
    role: RoleFilter,
    options: &DiffOptions,
    (before, after): (&ProfileSet, &ProfileSet),
    result: DiffResult,
) -> DiffReport {
    DiffReport {
        output: args.output.clone(),
        role,
        normalized: options.normalize,
        before: SetReport {
            path: args.before.clone(),
            profiles: before.sources.len(),
            samples: result.before_samples,
        },
        after: SetReport {
            path: args.after.clone(),
            profiles: after.sources.len(),
            samples: result.after_samples,
        },
        top_changes: result.top_changes,
    }
}

fn print_diff_report(report: &DiffReport) {
    println!(
        "differential flamegraph ({}): {}",
        report.role,
        report.output.display()
    );
    for (name, set) in [("before", &report.before), ("after ", &report.after)] {
        println!(
            "  {name}: {} samples from {} profile(s) in {}",
            set.samples,
            set.profiles,
            set.path.display()
        );
    }
    if report.top_changes.is_empty() {
        println!("  no frame changed its share of self samples");
    } else {
        println!("  largest moves in share of self samples:");
        for change in &report.top_changes {
            println!(
                "  {:>+7.2} pp  {:>6.2}% -> {:>6.2}%  {}",
                change.delta_pp, change.before_pct, change.after_pct, change.frame
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::Parser;

    use super::*;
    use crate::cmd::{Cli, Command};

    /// Parses `feth flamegraph diff ARGS…` with the real command line.
    fn parse_diff(args: &[&str]) -> Result<DiffArgs, clap::Error> {
        let argv = ["feth", "flamegraph", "diff"]
            .into_iter()
            .chain(args.iter().copied());
        match Cli::try_parse_from(argv)?.command {
            Command::Flamegraph(FlamegraphArgs {
                command: FlamegraphCommand::Diff(diff),
            }) => Ok(diff),
            other => panic!("`feth flamegraph diff` parsed as {other:?}"),
        }
    }

    fn path(p: &Path) -> &str {
        p.to_str().expect("utf-8 temp path")
    }

    /// BEFORE spends its check_tx time in one function, AFTER in another; deliver_tx is
    /// the same in both.
    fn write_sets(dir: &Path) -> (PathBuf, PathBuf) {
        let before = dir.join("before.folded");
        let after = dir.join("after.folded");
        fs::write(
            &before,
            "check_tx;main;feth_old_check 30\ndeliver_tx;main;feth_exec 10\n",
        )
        .expect("write before");
        fs::write(
            &after,
            "check_tx;main;feth_new_check 30\ndeliver_tx;main;feth_exec 10\n",
        )
        .expect("write after");
        (before, after)
    }

    #[test]
    fn no_optional_flag_gives_the_defaults() {
        let args = parse_diff(&["a", "b"]).expect("two sets parse");
        assert_eq!((args.before, args.after), ("a".into(), "b".into()));
        assert_eq!(args.output, PathBuf::from(DEFAULT_OUTPUT));
        assert_eq!(args.role, RoleArg::All);
        assert_eq!(args.top, DEFAULT_TOP);
        assert!(!args.no_normalize && !args.json);
    }

    #[test]
    fn roles_are_spelled_as_on_the_wire() {
        for (name, role) in [
            ("all", RoleFilter::All),
            ("check_tx", RoleFilter::CheckTx),
            ("deliver_tx", RoleFilter::DeliverTx),
        ] {
            let args = parse_diff(&["a", "b", "--role", name]).expect("known role");
            assert_eq!(RoleFilter::from(args.role), role);
            assert_eq!(args.role.to_string(), name);
        }
        assert!(parse_diff(&["a", "b", "--role", "checktx"]).is_err());
        assert!(parse_diff(&["a"]).is_err(), "AFTER is required");
    }

    #[test]
    fn diff_writes_the_role_s_differential_flamegraph() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (before, after) = write_sets(dir.path());
        let output = dir.path().join("out/nested/diff.svg");
        let args = parse_diff(&[
            path(&before),
            path(&after),
            "-o",
            path(&output),
            "--role",
            "check_tx",
            "--json",
        ])
        .expect("parse");
        run_diff(&args).expect("diff runs");
        let svg = fs::read_to_string(&output).expect("the SVG is written");
        assert!(svg.contains("feth_new_check"), "AFTER's frame is drawn");
        assert!(
            !svg.contains("feth_exec"),
            "--role check_tx leaves deliver_tx out"
        );
    }

    #[test]
    fn diff_names_the_set_that_is_missing_or_lacks_the_role() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (before, after) = write_sets(dir.path());
        let output = dir.path().join("diff.svg");
        let missing = dir.path().join("nothing-here");
        let args = parse_diff(&[path(&missing), path(&after), "-o", path(&output)]).expect("parse");
        let error = format!("{:#}", run_diff(&args).expect_err("missing BEFORE"));
        assert!(error.contains("BEFORE"), "{error}");

        let only_check = dir.path().join("only-check.folded");
        fs::write(&only_check, "check_tx;main;f 3\n").expect("write");
        let args = parse_diff(&[
            path(&only_check),
            path(&before),
            "-o",
            path(&output),
            "--role",
            "deliver_tx",
        ])
        .expect("parse");
        let error = format!(
            "{:#}",
            run_diff(&args).expect_err("no deliver_tx in BEFORE")
        );
        assert_eq!(error, "no deliver_tx samples in BEFORE");
        assert!(!output.exists(), "nothing is written on failure");
    }
}
