//! The Markdown summary written beside the page, for CI comments and pull
//! requests: each run's headline figures, each comparison's ladder and each
//! saturation search's steps.

use super::input::RunFile;
use super::saturate_view;
use crate::compare::step::Metric;
use crate::saturate::Verdict;

fn row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |\n", cells.join(" | "))
}

fn header(cells: &[&str]) -> String {
    let owned: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
    format!("{}|{}\n", row(&owned), "---|".repeat(cells.len()))
}

/// The summary of `files`; `page` is the HTML page's file name.
pub fn summary(files: &[RunFile], page: &str) -> String {
    let mut out = format!("# feth report\n\nCharts, flamegraphs and parameters: `{page}`.\n\n");
    let loads: Vec<_> = files
        .iter()
        .filter_map(|f| match f {
            RunFile::Load { path, report } => Some((path, report)),
            _ => None,
        })
        .collect();
    if !loads.is_empty() {
        out.push_str("## Runs\n\n");
        out.push_str(&header(&[
            "run",
            "schedule",
            "node",
            "committed TPS",
            "Mgas/s",
            "send rate",
            "latency p50 / p99 ms",
            "included / signed",
            "rejected",
        ]));
        for (path, r) in loads {
            let l = &r.latency_ms.to_observed;
            out.push_str(&row(&[
                path.display().to_string(),
                r.config.schedule.clone(),
                r.environment.node.clone(),
                format!("{:.1}", r.chain.committed_tps),
                crate::units::mgas_figure(r.chain.gas_per_second),
                format!("{:.1}", r.send_rate),
                format!("{:.0} / {:.0}", l.p50, l.p99),
                format!("{} / {}", r.totals.included, r.totals.signed),
                r.totals.rejected.to_string(),
            ]));
        }
        out.push('\n');
    }
    for f in files {
        if let RunFile::Compare { path, report } = f {
            out.push_str(&format!("## Comparison {}\n\n", path.display()));
            out.push_str(&header(&[
                "step",
                "patches; CometBFT",
                "runs",
                "committed TPS",
                "vs previous (95 % CI)",
                "change",
            ]));
            for s in &report.steps {
                let tps = s.figure(Metric::Tps);
                out.push_str(&row(&[
                    s.step.clone(),
                    s.node_settings(),
                    s.runs.to_string(),
                    tps.and_then(|f| f.level)
                        .map_or("–".into(), |l| format!("{:.1}", l.mean)),
                    tps.and_then(|f| f.vs_previous)
                        .map_or("–".into(), |v| v.describe()),
                    tps.map_or("–", |f| f.change.words()).to_string(),
                ]));
            }
            out.push('\n');
        }
    }
    for f in files {
        if let RunFile::Saturate { path, report } = f {
            out.push_str(&format!(
                "## Saturation search {}

{}

",
                path.display(),
                saturate_view::outcome_text(&report.outcome)
            ));
            out.push_str(&header(&[
                "step",
                "offered",
                "committed",
                "Mgas/s",
                "verdict",
            ]));
            for (i, (m, v)) in report.steps.iter().enumerate() {
                let verdict = match v {
                    Verdict::KeepsUp => "keeps up",
                    Verdict::ChainBehind { .. } => "chain behind",
                    Verdict::AgentBehind { .. } => "agent behind",
                };
                out.push_str(&row(&[
                    (i + 1).to_string(),
                    format!("{:.0}", m.offered_tps),
                    format!("{:.1}", m.committed_tps),
                    m.gas_per_sec.map_or("–".into(), crate::units::mgas_figure),
                    verdict.to_string(),
                ]));
            }
            out.push('\n');
        }
    }
    out
}
