//! The section of the page for one `feth saturate` search: the offered, sent
//! and committed rate of every step with the knee marked, each step's figures
//! and verdict, and how the search ended.

use std::path::Path;

use anyhow::Result;

use super::chart::{self, Series};
use super::html::{escape, figure, pairs, table};
use crate::saturate::{Outcome, SearchReport, Verdict};

/// Offered, sent and committed tx/s of every step, x = step number (from 1).
pub fn step_series(r: &SearchReport) -> Vec<Series> {
    let pick = |name: &str, f: fn(&crate::saturate::StepMeasure) -> f64| Series {
        name: name.to_string(),
        points: r
            .steps
            .iter()
            .enumerate()
            .map(|(i, (m, _))| ((i + 1) as f64, f(m)))
            .collect(),
    };
    vec![
        pick("offered", |m| m.offered_tps),
        pick("sent", |m| m.sent_tps),
        pick("committed", |m| m.committed_tps),
    ]
}

/// Step numbers (from 1) of the knee and of the first rate the chain fell
/// behind at, when the search found them.
pub fn knee_marks(r: &SearchReport) -> Vec<f64> {
    let Outcome::KneeFound {
        knee_tps,
        behind_tps,
        ..
    } = r.outcome
    else {
        return Vec::new();
    };
    [knee_tps, behind_tps]
        .iter()
        .filter_map(|rate| {
            r.steps
                .iter()
                .position(|(m, _)| m.offered_tps == *rate)
                .map(|i| (i + 1) as f64)
        })
        .collect()
}

/// One line saying how the search ended.
pub fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::KneeFound {
            knee_tps,
            committed_tps,
            behind_tps,
        } => format!("knee at {knee_tps:.0} tx/s offered ({committed_tps:.0} committed); behind at {behind_tps:.0}"),
        Outcome::AgentLimited { at_tps, why } => {
            format!("agent limited at {at_tps:.0} tx/s: {why} (no knee claimed)")
        }
        Outcome::NoRateKeptUp {
            lowest_tps: Some(lowest),
        } => format!("no rate kept up, not even {lowest:.0} tx/s"),
        Outcome::NoRateKeptUp { lowest_tps: None } => {
            "no rate kept up, not even the first".to_string()
        }
        Outcome::MaxReached {
            max_tps,
            committed_tps,
        } => format!("kept up at the highest rate allowed, {max_tps:.0} tx/s ({committed_tps:.0} committed)"),
        Outcome::StepsExhausted {
            kept_up_tps,
            committed_tps,
        } => format!("steps ran out; kept up at {kept_up_tps:.0} tx/s ({committed_tps:.0} committed)"),
    }
}

fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::KeepsUp => "keeps up".to_string(),
        Verdict::ChainBehind { why } => format!("chain behind: {why}"),
        Verdict::AgentBehind { why } => format!("agent behind: {why}"),
    }
}

fn steps_table(r: &SearchReport) -> String {
    let opt = |v: Option<u64>| v.map_or("–".to_string(), |n| n.to_string());
    let rows: Vec<Vec<String>> = r
        .steps
        .iter()
        .enumerate()
        .map(|(i, (m, v))| {
            vec![
                (i + 1).to_string(),
                format!("{:.0}", m.offered_tps),
                format!("{:.1}", m.sent_tps),
                format!("{:.1}", m.committed_tps),
                m.gas_per_sec
                    .map_or("–".to_string(), crate::units::mgas_figure),
                format!("{}–{}", m.first_height + 1, m.last_height),
                format!("{:.0} / {:.0}", m.block_time_p50_ms, m.block_time_p95_ms),
                format!("{} → {}", opt(m.mempool_start), opt(m.mempool_end)),
                format!("{:.0}", m.schedule_lag_p99_ms),
                verdict_text(v),
            ]
        })
        .collect();
    table(
        "steps",
        &[
            "step",
            "offered",
            "sent",
            "committed",
            "Mgas/s",
            "heights",
            "block time p50/p95 ms",
            "mempool",
            "schedule lag p99 ms",
            "verdict",
        ],
        &rows,
    )
}

/// The section of search `index`, read from `file`.
pub fn section(index: usize, file: &Path, r: &SearchReport) -> Result<String> {
    let rates = chart::lines(
        "Offered, sent and committed TPS of each search step",
        ("step", "tx/s"),
        &step_series(r),
        &knee_marks(r),
    )?;
    let c = &r.config;
    let settings = pairs(&[
        ("outcome", outcome_text(&r.outcome)),
        ("clock", format!("{:?}", r.clock)),
        (
            "start, max",
            format!("{:.0}, {:.0} tx/s", c.start_tps, c.max_tps),
        ),
        ("seconds per step", format!("{}", c.step_secs)),
        ("tolerance", format!("{:.0} %", c.tolerance * 100.0)),
        ("resolution", format!("{:.0} %", c.resolution * 100.0)),
    ]);
    Ok(format!(
        "<section class=\"saturate\" id=\"saturate{index}\"><h2>Saturation search: {}</h2>\n{settings}{}<h3>Steps</h3>\n{}</section>\n",
        escape(&file.display().to_string()),
        figure(
            &format!("saturate{index}-steps"),
            &rates,
            "each point is one step's measured window; the marks are the knee and the first rate behind"
        ),
        steps_table(r),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::saturate::{Clock, SearchConfig, StepMeasure};

    fn step(offered: f64, committed: f64) -> StepMeasure {
        StepMeasure {
            offered_tps: offered,
            sent_tps: offered,
            committed_tps: committed,
            clock: Clock::CometbftHeaders,
            first_height: 10,
            last_height: 20,
            block_time_p50_ms: 500.0,
            block_time_p95_ms: 600.0,
            mempool_start: Some(0),
            mempool_end: Some(3),
            schedule_lag_p50_ms: 1.0,
            schedule_lag_p99_ms: 2.0,
            agent_lag_p99_ms: 1.0,
            agent_cpu_us_per_tx: 50.0,
            slots_busy: 0.1,
            backoffs: 0,
            node_cpu_us_per_tx: None,
            valid: 100,
            invalid: Some(0),
            gas_per_sec: Some(2_100_000.0),
            reads: None,
            machine: None,
            backlog: None,
        }
    }

    /// 200 and 400 kept up, 800 behind, 566 kept up: knee 566, behind 800.
    fn search() -> SearchReport {
        let behind = Verdict::ChainBehind {
            why: "backlog grew".into(),
        };
        SearchReport {
            config: SearchConfig::default(),
            steps: vec![
                (step(200.0, 199.0), Verdict::KeepsUp),
                (step(400.0, 398.0), Verdict::KeepsUp),
                (step(800.0, 610.0), behind),
                (step(566.0, 560.0), Verdict::KeepsUp),
            ],
            outcome: Outcome::KneeFound {
                knee_tps: 566.0,
                committed_tps: 560.0,
                behind_tps: 800.0,
            },
            clock: Clock::CometbftHeaders,
            rpc_retries: 0,
        }
    }

    #[test]
    fn steps_are_drawn_and_tabled_with_the_knee_marked() {
        let r = search();
        let series = step_series(&r);
        assert_eq!(series[2].name, "committed");
        assert_eq!(
            series[2].points,
            vec![(1.0, 199.0), (2.0, 398.0), (3.0, 610.0), (4.0, 560.0)]
        );
        assert_eq!(knee_marks(&r), vec![4.0, 3.0]);
        let html = section(0, Path::new("sat.json"), &r).unwrap();
        assert!(html.contains("id=\"saturate0-steps\""), "{html}");
        assert!(html.contains("knee at 566 tx/s offered (560 committed); behind at 800"));
        assert!(html.contains("chain behind: backlog grew"));
        // 2.1 Mgas/s committed in each step's window.
        assert!(html.contains("<td>2.10</td>"), "{html}");
        // The steps table: a header row and one row per step.
        let steps = &html[html.find("<table class=\"steps\">").expect("a steps table")..];
        assert_eq!(steps.matches("<tr>").count(), 1 + r.steps.len(), "{html}");
    }

    #[test]
    fn a_saturate_json_file_becomes_a_page_and_a_summary() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sat.json");
        std::fs::write(&file, serde_json::to_string(&search()).unwrap()).unwrap();
        let written = crate::report::write(&crate::report::ReportConfig {
            inputs: vec![file],
            out: dir.path().join("out"),
            ..Default::default()
        })
        .unwrap();
        let page = std::fs::read_to_string(written.html).unwrap();
        assert!(page.contains("Saturation search"), "{page}");
        let summary = std::fs::read_to_string(written.markdown).unwrap();
        assert!(summary.contains("knee at 566 tx/s offered"), "{summary}");
        assert_eq!(summary.matches("| keeps up |").count(), 3, "{summary}");
    }
}
