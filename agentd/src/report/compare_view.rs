//! The section of the page for one `feth compare` ladder: its conditions and
//! machine, the ladder table and bar chart, every run overlaid by round, and
//! each step's (differential) flamegraph.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::chart::{self, Series};
use super::html::{escape, figure, flamegraph, note, pairs, table};
use crate::compare::report::CompareReport;
use crate::compare::step::{Metric, StepRun};
use crate::go_profile::roles::FrameRole;
use crate::stats::LogRatio;

/// Committed TPS level (geometric mean over the rounds) per step, in ladder
/// order; 0 for a step without one.
pub fn step_levels(c: &CompareReport) -> (Vec<String>, Vec<f64>) {
    c.steps
        .iter()
        .map(|s| {
            let level = s
                .figure(Metric::Tps)
                .and_then(|f| f.level)
                .map_or(0.0, |l| l.mean);
            (s.step.clone(), level)
        })
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

fn ratio(r: Option<LogRatio>) -> String {
    match r {
        None => "–".into(),
        Some(r) => match (r.low, r.high) {
            (Some(lo), Some(hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.ratio),
            _ => format!("{:.3}", r.ratio),
        },
    }
}

fn conditions(c: &CompareReport) -> String {
    let (s, e) = (&c.settings, &c.environment);
    let mut rows = vec![("steps differ by", format!("{:?}", s.kind).to_lowercase())];
    for setup in &c.setups {
        let block_ms = c
            .steps
            .iter()
            .find(|x| x.step == setup.step)
            .map(|x| x.block_time_p50_ms);
        if let Some(node) = &setup.conditions {
            rows.push((
                "node (read from it)",
                format!("{}: {}", setup.step, node.describe(block_ms)),
            ));
        }
    }
    rows.extend([
        ("seconds per window", s.seconds.to_string()),
        ("rounds", s.rounds.to_string()),
        ("senders", s.senders.to_string()),
        ("workload", s.workload.clone()),
        (
            "saturation windows",
            match s.given_overload_tps {
                Some(rate) => format!("from {rate:.0} tx/s given, no knee searched"),
                None => format!("{:.2} × the highest rate a step fell behind at", s.overload),
            },
        ),
        ("fixed rate", format!("{:.0} tx/s", s.fixed_rate)),
        ("CPU", format!("{} ({} cores)", e.cpu_model, e.cores)),
        ("memory", format!("{:.1} GiB", e.memory_gib)),
        ("host, kernel", format!("{}, {}", e.host, e.kernel)),
        ("feth", e.feth_version.clone()),
        ("machine load", c.machine.describe()),
        ("wall time", format!("{:.0} s", c.wall_secs)),
    ]);
    pairs(&rows)
}

fn ladder_table(c: &CompareReport) -> String {
    let rows: Vec<Vec<String>> =
        c.steps
            .iter()
            .map(|s| {
                let mut row = vec![s.step.clone(), s.node_settings(), s.runs.to_string()];
                for m in [Metric::Tps, Metric::CpuPerTx] {
                    let f = s.figure(m);
                    row.push(f.and_then(|f| f.level).map_or("–".into(), |l| {
                        match (l.low, l.high) {
                            (Some(lo), Some(hi)) => format!("{:.1} [{lo:.1}, {hi:.1}]", l.mean),
                            _ => format!("{:.1}", l.mean),
                        }
                    }));
                    row.push(ratio(f.and_then(|f| f.vs_previous)));
                    row.push(f.map_or("–", |f| f.change.words()).to_string());
                }
                row.push(format!(
                    "{:.0} / {:.0}",
                    s.block_time_p50_ms, s.block_time_p95_ms
                ));
                row.push(s.valid.to_string());
                row.push(s.invalid.map_or("unknown".into(), |n| n.to_string()));
                row
            })
            .collect();
    table(
        "ladder",
        &[
            "step",
            "patches; CometBFT",
            "runs",
            "committed TPS [95 %]",
            "vs previous [95 %]",
            "change",
            "node µs/tx [95 %]",
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
        if let Some(p) = run.and_then(|r| r.node_diff_flamegraph.as_ref()) {
            out.push_str(&flamegraph(
                &format!(
                    "{}: the whole node (abcid and CometBFT, CPU time) against the previous step",
                    s.step
                ),
                &locate(p, file),
            ));
        } else if let Some(p) = run.and_then(|r| r.node_profile.as_ref()) {
            out.push_str(&flamegraph(
                &format!("{}: the whole node (abcid and CometBFT, CPU time)", s.step),
                &locate(&p.join("node.svg"), file),
            ));
        }
        out.push_str(&go_flamegraph(&s.step, run, file));
    }
    if out.is_empty() {
        out = note("No flamegraph in this comparison (it ran without --profile-blocks).");
    }
    out
}

/// A Go node's per-block profile by role: against the previous step's
/// when drawn, else its own.
fn go_flamegraph(step: &str, run: Option<&StepRun>, file: &Path) -> String {
    let Some(run) = run else {
        return String::new();
    };
    match (&run.go_diff_flamegraph, &run.go_profile) {
        (Some(p), _) => flamegraph(
            &format!("{step}: the Go node by role, against the previous step"),
            &locate(p, file),
        ),
        (None, Some(g)) => flamegraph(
            &format!("{step}: the Go node by role"),
            &locate(&g.dir.join("all.svg"), file),
        ),
        (None, None) => String::new(),
    }
}

/// Each step's Go node CPU by role (first round's per-block profile).
fn role_table(c: &CompareReport) -> String {
    let header: Vec<&str> = std::iter::once("step")
        .chain(std::iter::once("blocks"))
        .chain(FrameRole::ALL.iter().map(|r| r.as_str()))
        .collect();
    let rows: Vec<Vec<String>> =
        c.runs
            .iter()
            .filter(|r| r.round == 0)
            .filter_map(|r| {
                let g = r.go_profile.as_ref()?;
                let mut row = vec![r.step.clone(), format!("{}–{}", g.heights.0, g.heights.1)];
                row.extend(FrameRole::ALL.iter().map(|role| {
                    format!("{:.1} %", g.role_shares.get(role).copied().unwrap_or(0.0))
                }));
                Some(row)
            })
            .collect();
    match rows.is_empty() {
        true => String::new(),
        false => format!(
            "<h3>CPU by role (the Go node, first round's profiled blocks)</h3>\n{}",
            table("roles", &header, &rows)
        ),
    }
}

/// The section of comparison `index`, read from `file`.
pub fn section(index: usize, file: &Path, c: &CompareReport) -> Result<String> {
    let (labels, levels) = step_levels(c);
    let bars = chart::bars(
        "Committed TPS per step (geometric mean of the rounds)",
        "tx/s",
        &labels,
        &levels,
    )?;
    let overlaid = chart::lines(
        "Committed TPS of every run, by round",
        ("round", "tx/s"),
        &rounds(c),
        &[],
    )?;
    Ok(format!(
        "<section class=\"compare\" id=\"compare{index}\"><h2>Comparison: {}</h2>\n<h3>Conditions and machine</h3>\n{}<h3>Ladder</h3>\n{}{}{}{}<h3>Flamegraphs</h3>\n{}</section>\n",
        escape(&file.display().to_string()),
        conditions(c),
        ladder_table(c),
        figure(&format!("compare{index}-ladder"), &bars, "committed TPS of each step, geometric mean over its rounds"),
        figure(&format!("compare{index}-rounds"), &overlaid, "runs were interleaved: one round runs every step once"),
        role_table(c),
        flamegraphs(c, file),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::testing;
    use crate::go_profile::StepGoProfile;

    #[test]
    fn each_steps_cpu_by_role_is_a_row_and_its_go_flamegraph_is_drawn() {
        let mut c = testing::ladder();
        assert_eq!(role_table(&c), "", "no per-block profile, no table");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("all.svg"), "<svg>by role</svg>").unwrap();
        let first = c.runs.iter_mut().find(|r| r.round == 0).unwrap();
        let step = first.step.clone();
        first.go_profile = Some(StepGoProfile {
            dir: dir.path().to_path_buf(),
            heights: (10, 12),
            samples: 300,
            role_shares: [(FrameRole::CheckTx, 25.0), (FrameRole::DeliverTx, 75.0)]
                .into_iter()
                .collect(),
        });
        let table = role_table(&c);
        assert!(table.contains("CPU by role"), "{table}");
        assert!(
            table.contains(&format!(
                "<td>{step}</td><td>10–12</td><td>25.0 %</td><td>0.0 %</td><td>75.0 %</td>"
            )),
            "{table}"
        );
        let run = c.runs.iter().find(|r| r.round == 0);
        let drawn = go_flamegraph(&step, run, Path::new("report.json"));
        assert!(drawn.contains("the Go node by role"), "{drawn}");
    }
}
