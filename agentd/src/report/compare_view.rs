//! The section of the page for one `feth compare` ladder: its conditions and
//! machine, the ladder table and bar chart, every run overlaid by round, and
//! each step's (differential) flamegraph.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::chart::{self, Series};
use super::html::{escape, figure, flamegraph, note, pairs, table};
use crate::bench::stats::RatioEstimate;
use crate::compare::report::CompareReport;

/// Median committed TPS per step, in ladder order.
pub fn step_medians(c: &CompareReport) -> (Vec<String>, Vec<f64>) {
    c.steps
        .iter()
        .map(|s| (s.step.clone(), s.committed_tps_median))
        .unzip()
}

/// Committed TPS of every run, one series per step, x = round (from 1).
pub fn rounds(c: &CompareReport) -> Vec<Series> {
    c.steps
        .iter()
        .map(|s| Series {
            name: s.step.clone(),
            points: c
                .runs
                .iter()
                .filter(|r| r.step == s.step)
                .map(|r| ((r.round + 1) as f64, r.measure.committed_tps))
                .collect(),
        })
        .collect()
}

fn ratio(r: &Option<RatioEstimate>) -> String {
    match r {
        None => "–".into(),
        Some(r) => match (r.ci95_low, r.ci95_high) {
            (Some(lo), Some(hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.mean),
            _ => format!("{:.3}", r.mean),
        },
    }
}

fn conditions(c: &CompareReport) -> String {
    let (s, e) = (&c.settings, &c.environment);
    pairs(&[
        ("steps differ by", format!("{:?}", s.kind).to_lowercase()),
        ("block gas limit", s.block_gas_limit.to_string()),
        ("timeout_commit", s.timeout_commit.clone()),
        ("seconds per run", s.seconds.to_string()),
        ("runs per step", s.repeat.to_string()),
        ("senders", s.senders.to_string()),
        ("workload", s.workload.clone()),
        (
            "offered rate",
            s.fixed_rate
                .map_or("each run at its own knee".into(), |r| format!("{r} tx/s")),
        ),
        ("CPU", format!("{} ({} cores)", e.cpu_model, e.cores)),
        ("memory", format!("{:.1} GiB", e.memory_gib)),
        ("host, kernel", format!("{}, {}", e.host, e.kernel)),
        (
            "feth, CometBFT",
            format!("{}, {}", e.feth_version, e.cometbft_version),
        ),
        ("wall time", format!("{:.0} s", c.wall_secs)),
    ])
}

fn ladder_table(c: &CompareReport) -> String {
    let rows: Vec<Vec<String>> = c
        .steps
        .iter()
        .map(|s| {
            vec![
                s.step.clone(),
                s.patches.clone(),
                s.runs.to_string(),
                format!("{:.1}", s.committed_tps_median),
                format!("{:.1}–{:.1}", s.committed_tps_min, s.committed_tps_max),
                ratio(&s.vs_previous),
                format!("{:?}", s.change).to_lowercase(),
                format!("{:.0} / {:.0}", s.block_time_p50_ms, s.block_time_p95_ms),
                s.valid.to_string(),
                s.invalid.map_or("unknown".into(), |n| n.to_string()),
            ]
        })
        .collect();
    table(
        "ladder",
        &[
            "step",
            "patches",
            "runs",
            "median TPS",
            "min–max",
            "vs previous [95 %]",
            "change",
            "block time p50/p95 ms",
            "valid",
            "invalid",
        ],
        &rows,
    )
}

/// `path` as written in the report, else beside the report file.
fn locate(path: &Path, report_file: &Path) -> PathBuf {
    if path.is_absolute() || path.exists() {
        return path.to_path_buf();
    }
    report_file
        .parent()
        .map_or(path.to_path_buf(), |d| d.join(path))
}

fn flamegraphs(c: &CompareReport, file: &Path) -> String {
    let mut out = String::new();
    for s in &c.steps {
        let run = c.runs.iter().find(|r| r.step == s.step);
        if let Some(p) = run.and_then(|r| r.diff_flamegraph.as_ref()) {
            out.push_str(&flamegraph(
                &format!(
                    "{}: differential flamegraph against the previous step",
                    s.step
                ),
                &locate(p, file),
            ));
        } else if let Some(p) = run.and_then(|r| r.flamegraph.as_ref()) {
            out.push_str(&flamegraph(
                &format!("{}: flamegraph", s.step),
                &locate(p, file),
            ));
        }
    }
    if out.is_empty() {
        out = note("No flamegraph in this comparison (it ran without --profile-blocks).");
    }
    out
}

/// The section of comparison `index`, read from `file`.
pub fn section(index: usize, file: &Path, c: &CompareReport) -> Result<String> {
    let (labels, medians) = step_medians(c);
    let bars = chart::bars("Median committed TPS per step", "tx/s", &labels, &medians)?;
    let overlaid = chart::lines(
        "Committed TPS of every run, by round",
        ("round", "tx/s"),
        &rounds(c),
        &[],
    )?;
    Ok(format!(
        "<section class=\"compare\" id=\"compare{index}\"><h2>Comparison: {}</h2>\n<h3>Conditions and machine</h3>\n{}<h3>Ladder</h3>\n{}{}{}<h3>Flamegraphs</h3>\n{}</section>\n",
        escape(&file.display().to_string()),
        conditions(c),
        ladder_table(c),
        figure(&format!("compare{index}-ladder"), &bars, "median committed TPS of each step's runs"),
        figure(&format!("compare{index}-rounds"), &overlaid, "runs were interleaved: one round runs every step once"),
        flamegraphs(c, file),
    ))
}
