//! `feth compare`: is the chain faster after a change, by how much, and is
//! that more than noise? Gate mode: `--baseline OLD.json --candidate NEW.json
//! --max-regression PCT` compares two saved reports and exits with
//! [`REGRESSION_STATUS`] on a regression.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::args::emit;
use super::Exit;
use crate::compare::{self, render, CompareReport, GateConfig, GateVerdict};

/// Exit status of `feth compare` when the gate finds a regression: 1 is any
/// ordinary error (unreadable report, mismatched conditions) and 2 clap's
/// usage error, so a CI job can tell "slower" from "broken".
pub const REGRESSION_STATUS: i32 = 3;

/// `feth compare …`
#[derive(Debug, Args)]
pub struct CompareArgs {
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
