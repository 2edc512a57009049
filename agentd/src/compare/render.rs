//! A comparison report for people: aligned text tables for a terminal and
//! the same as GitHub-flavoured Markdown for a CI comment. The first table
//! is the verdict (committed TPS and node CPU per transaction, each step
//! against the one before it and against the first, every ratio with its
//! interval); the second the other figures; then what the run could see
//! (the minimum detectable effect), the reference and the conditions.

use super::report::{CompareReport, Kind};
use super::step::{Figure, Level, Metric, StepSummary};
use crate::saturate::Clock;
use crate::stats::{median, LogRatio};

/// How a column's cells line up.
#[derive(Clone, Copy, PartialEq)]
enum Align {
    Left,
    Right,
}

/// A table: headers with their alignment, then rows of cells.
struct Table {
    columns: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

/// The verdict table's columns.
const VERDICT: [(&str, Align); 9] = [
    ("step", Align::Left),
    ("committed tx/s (95 % CI)", Align::Right),
    ("× previous (95 % CI)", Align::Right),
    ("change", Align::Left),
    ("× first (95 % CI)", Align::Right),
    ("node µs/tx (95 % CI)", Align::Right),
    ("× previous (95 % CI)", Align::Right),
    ("change", Align::Left),
    ("× first (95 % CI)", Align::Right),
];

/// The other figures' columns.
const DETAIL: [(&str, Align); 9] = [
    ("step", Align::Left),
    ("patches; CometBFT", Align::Left),
    ("latency p50 ms", Align::Right),
    ("latency p99 ms", Align::Right),
    ("Mgas/s", Align::Right),
    ("block p50/p95 ms", Align::Right),
    ("valid/invalid", Align::Right),
    ("agent µs/tx", Align::Right),
    ("knee tx/s", Align::Right),
];

/// The report as aligned text tables, then the lines below them.
pub fn table(report: &CompareReport) -> String {
    let mut out = Vec::new();
    for t in tables(report) {
        out.extend(aligned(&t));
        out.push(String::new());
    }
    out.extend(footer(report));
    out.join("\n") + "\n"
}

/// The report as GitHub-flavoured Markdown tables, then the lines below them.
pub fn markdown(report: &CompareReport) -> String {
    let mut out = Vec::new();
    for t in tables(report) {
        out.extend(github(&t));
        out.push(String::new());
    }
    out.extend(footer(report).into_iter().map(|l| format!("{l}  ")));
    out.join("\n") + "\n"
}

fn tables(report: &CompareReport) -> [Table; 2] {
    [
        Table {
            columns: VERDICT.to_vec(),
            rows: report.steps.iter().map(verdict_cells).collect(),
        },
        Table {
            columns: DETAIL.to_vec(),
            rows: report.steps.iter().map(detail_cells).collect(),
        },
    ]
}

fn aligned(t: &Table) -> Vec<String> {
    let widths: Vec<usize> = (0..t.columns.len())
        .map(|c| {
            t.rows
                .iter()
                .map(|r| r[c].chars().count())
                .chain([t.columns[c].0.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .zip(&t.columns)
            .map(|((text, width), (_, align))| {
                let pad = " ".repeat(width - text.chars().count());
                match align {
                    Align::Left => format!("{text}{pad}"),
                    Align::Right => format!("{pad}{text}"),
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let mut out = vec![
        line(t.columns.iter().map(|(h, _)| *h).collect()),
        rule.join("  "),
    ];
    out.extend(
        t.rows
            .iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out
}

fn github(t: &Table) -> Vec<String> {
    let row = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut out = vec![
        row(t.columns.iter().map(|(h, _)| h.to_string()).collect()),
        row(t
            .columns
            .iter()
            .map(|(_, a)| if *a == Align::Left { "---" } else { "---:" }.to_string())
            .collect()),
    ];
    for cells in &t.rows {
        out.push(row(cells.iter().map(|c| c.replace('|', "\\|")).collect()));
    }
    out
}

fn verdict_cells(s: &StepSummary) -> Vec<String> {
    let mut cells = vec![s.step.clone()];
    for metric in [Metric::Tps, Metric::CpuPerTx] {
        let f = s.figure(metric);
        let digits = if metric == Metric::Tps { 0 } else { 1 };
        cells.push(
            f.and_then(|f| f.level)
                .map_or("—".into(), |l| level(&l, digits)),
        );
        cells.push(
            f.and_then(|f| f.vs_previous)
                .map_or("—".into(), |r| ratio(&r)),
        );
        cells.push(f.map_or("—", |f| f.change.words()).to_string());
        cells.push(f.and_then(|f| f.vs_first).map_or("—".into(), |r| ratio(&r)));
    }
    cells
}

fn detail_cells(s: &StepSummary) -> Vec<String> {
    let lvl = |m: Metric, scale: f64, digits: usize| {
        s.figure(m)
            .and_then(|f| f.level)
            .map_or("—".to_string(), |l| level(&scaled(&l, scale), digits))
    };
    vec![
        s.step.clone(),
        s.node_settings(),
        lvl(Metric::LatencyP50, 1.0, 0),
        lvl(Metric::LatencyP99, 1.0, 0),
        lvl(Metric::GasPerSec, 1e-6, 1),
        format!("{:.0}/{:.0}", s.block_time_p50_ms, s.block_time_p95_ms),
        format!(
            "{}/{}",
            s.valid,
            s.invalid.map_or("?".to_string(), |i| i.to_string())
        ),
        format!("{:.1}", s.agent_cpu_us_per_tx),
        s.knee_tps.map_or("—".to_string(), tps),
    ]
}

fn scaled(l: &Level, k: f64) -> Level {
    Level {
        mean: l.mean * k,
        low: l.low.map(|v| v * k),
        high: l.high.map(|v| v * k),
        rounds: l.rounds,
    }
}

/// `2,351 (2,310–2,393)`, or the mean alone with one round.
fn level(l: &Level, digits: usize) -> String {
    let n = |v: f64| format!("{v:.digits$}");
    match (l.low, l.high) {
        (Some(lo), Some(hi)) => format!("{} ({}–{})", n(l.mean), n(lo), n(hi)),
        _ => format!("{} (1 round)", n(l.mean)),
    }
}

/// A rate in tx/s: whole numbers from 10 up, one decimal below.
pub(super) fn tps(value: f64) -> String {
    if value.abs() >= 10.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// `1.500 (1.452–1.548)`, or the ratio alone with one round.
fn ratio(r: &LogRatio) -> String {
    match (r.low, r.high) {
        (Some(low), Some(high)) => format!("{:.3} ({low:.3}–{high:.3})", r.ratio),
        _ => format!("{:.3}", r.ratio),
    }
}

/// What the run could see, the reference, machine and conditions lines.
fn footer(report: &CompareReport) -> Vec<String> {
    let mut lines = detectable(report);
    lines.extend(lower_bounds(report));
    lines.extend(backlogs(report));
    lines.push(reference_line(report));
    lines.push(retries_line(report));
    lines.extend(reads_line(report));
    lines.push(report.machine.describe());
    lines.extend(cpu_unmeasured(report));
    lines.extend(conditions(report));
    lines.extend(node_lines(report));
    lines.extend(role_lines(report));
    lines
}

/// Each step's Go node CPU by role, from its first round's per-block
/// profile, when it was taken.
fn role_lines(report: &CompareReport) -> Vec<String> {
    report
        .runs
        .iter()
        .filter(|r| r.round == 0)
        .filter_map(|r| {
            let g = r.go_profile.as_ref()?;
            Some(format!(
                "CPU by role, step {} (blocks {}–{}, {} samples, round 1 only, no interval): {}",
                r.step,
                g.heights.0,
                g.heights.1,
                g.samples,
                crate::go_profile::describe_shares(&g.role_shares)
            ))
        })
        .collect()
}

/// Why node CPU per transaction is missing, when no step has it.
fn cpu_unmeasured(report: &CompareReport) -> Option<String> {
    let measured = report.steps.iter().any(|s| {
        s.figure(Metric::CpuPerTx)
            .is_some_and(|f| f.level.is_some())
    });
    let why = match report.settings.kind {
        Kind::Live => "a node given by URL: give --node-pid PID when it runs on this machine",
        _ => "no fixed-rate window was kept up",
    };
    (!measured).then(|| format!("node CPU per transaction: not measured ({why})"))
}

/// What each step's node ran under, read from it: one line when every step's
/// node says the same, else one per step; then what could not be read.
fn node_lines(report: &CompareReport) -> Vec<String> {
    let described: Vec<(&str, String)> = report
        .setups
        .iter()
        .filter_map(|setup| {
            let c = setup.conditions.as_ref()?;
            let block_ms = report
                .steps
                .iter()
                .find(|s| s.step == setup.step)
                .map(|s| s.block_time_p50_ms);
            Some((setup.step.as_str(), c.describe(block_ms)))
        })
        .collect();
    let mut lines: Vec<String> = match described.first() {
        None => vec!["node: its conditions were not read".to_string()],
        Some((_, first)) if described.iter().all(|(_, d)| d == first) => {
            vec![format!("node (every step, read from it): {first}")]
        }
        Some(_) => described
            .iter()
            .map(|(step, d)| format!("node of step {step} (read from it): {d}"))
            .collect(),
    };
    for setup in &report.setups {
        for why in setup.conditions.iter().flat_map(|c| &c.unread) {
            lines.push(format!("note: step {}: not read: {why}", setup.step));
        }
    }
    lines
}

/// Node reads retried over the measured runs, per step.
fn retries_line(report: &CompareReport) -> String {
    let per_step: Vec<String> = report
        .steps
        .iter()
        .map(|s| {
            let n: u64 = report
                .runs
                .iter()
                .filter(|r| r.step == s.step)
                .map(|r| r.rpc_retries)
                .sum();
            format!("{} {n}", s.step)
        })
        .collect();
    format!(
        "node reads retried after a reset, refusal or timeout: {}",
        per_step.join(", ")
    )
}

/// The reads beside the writes of the saturation runs (a scenario with
/// reads), per step: medians over the runs of the reads answered per
/// second and of the slowest method's p99, and every wrong or failed read.
fn reads_line(report: &CompareReport) -> Option<String> {
    let mut parts = Vec::new();
    for s in &report.steps {
        let reads: Vec<_> = report
            .runs
            .iter()
            .filter(|r| r.step == s.step)
            .filter_map(|r| r.measure.reads.as_ref())
            .collect();
        let answered: Vec<f64> = reads.iter().map(|r| r.answered_per_second()).collect();
        let p99: Vec<f64> = reads
            .iter()
            .map(|r| r.slowest_p99().map_or(0.0, |(_, p99)| p99))
            .collect();
        let (Some(answered), Some(p99)) = (median(&answered), median(&p99)) else {
            continue;
        };
        let bad: u64 = reads.iter().map(|r| r.wrong_or_failed()).sum();
        parts.push(format!(
            "{} {answered:.0}/s answered, slowest p99 {p99:.1} ms, {bad} wrong or failed",
            s.step,
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "reads beside the writes (saturation windows' loads, medians over the rounds): {}",
            parts.join("; ")
        )
    })
}

/// The minimum detectable effect of each comparison with the previous step.
fn detectable(report: &CompareReport) -> Vec<String> {
    let mde = |f: Option<&Figure>| {
        f.and_then(|f| f.vs_previous)
            .and_then(|r| r.mde.map(|m| (m, r.rounds, r.method)))
    };
    let mut lines = vec![format!(
        "what this run could see (minimum detectable change against the previous step, α 0.05, power 0.8; floor {:.0} %):",
        report.settings.floor * 100.0
    )];
    for s in report.steps.iter().skip(1) {
        let part = |m: Metric| match mde(s.figure(m)) {
            Some((v, n, method)) => {
                format!("{} ±{:.1} % ({n} rounds, {method:?})", m.label(), v * 100.0)
            }
            None => format!("{} — (too few rounds)", m.label()),
        };
        lines.push(format!(
            "  {}: {}; {}",
            s.step,
            part(Metric::Tps),
            part(Metric::CpuPerTx)
        ));
    }
    if let Some(why) = &report.stopped {
        lines.push(format!("rounds: {why}"));
    }
    if let Some(why) = &report.failed {
        let rounds = report.settings.rounds;
        lines.push(format!(
            "STOPPED EARLY after {rounds} whole round(s), by: {why}"
        ));
    }
    lines
}

/// Steps or runs whose saturation figure was only a lower bound.
fn lower_bounds(report: &CompareReport) -> Vec<String> {
    let mut lines: Vec<String> = report
        .setups
        .iter()
        .filter_map(|s| {
            s.lower_bound
                .as_ref()
                .map(|why| format!("note: step {}: the search found no knee ({why}); the overload was raised until every step fell behind it", s.step))
        })
        .collect();
    for s in report.steps.iter().filter(|s| s.lower_bounds > 0) {
        lines.push(format!(
            "note: step {}: {} of {} runs kept up with the overload (lower bounds), kept out of its TPS",
            s.step, s.lower_bounds, s.runs
        ));
    }
    lines
}

/// Windows kept out of the estimates because they began on a backlog.
fn backlogs(report: &CompareReport) -> Vec<String> {
    let windows = report.runs.iter().flat_map(|r| {
        let fixed = r.fixed.as_ref().and_then(|f| f.backlog.as_ref());
        [("saturation", r.backlog.as_ref()), ("fixed rate", fixed)]
            .into_iter()
            .filter_map(move |(kind, why)| Some((r, kind, why?)))
    });
    windows
        .map(|(r, kind, why)| {
            format!(
                "note: {} round {} {kind} window kept out of the estimates: it {why}",
                r.step,
                r.round + 1
            )
        })
        .collect()
}

fn conditions(report: &CompareReport) -> Vec<String> {
    let e = &report.environment;
    let s = &report.settings;
    let kind = match s.kind {
        Kind::Patches => "patch-set ladder",
        Kind::Builds => "builds of the node",
        Kind::Live => "one running node",
    };
    let mut clocks: Vec<Clock> = Vec::new();
    for c in report.runs.iter().map(|r| r.measure.clock) {
        if !clocks.contains(&c) {
            clocks.push(c);
        }
    }
    let clocks: Vec<&str> = clocks.into_iter().map(clock_words).collect();
    let placed = match s.given_overload_tps {
        Some(rate) => format!("from {} tx/s given, no knee searched", tps(rate)),
        None => format!("{:.2} × the highest rate a step fell behind at", s.overload),
    };
    let mut lines = vec![
        format!(
            "machine: {}, {} cores, {:.1} GiB, host {}, kernel {}; feth {}",
            e.cpu_model, e.cores, e.memory_gib, e.host, e.kernel, e.feth_version
        ),
        format!(
            "conditions: {kind}, {} rounds interleaved, per run {} s saturated at {} tx/s offered ({placed}, raised by the pilot while a step kept up) and {} s at a fixed {} tx/s, {} s warm-up each, {} senders, workload {}; clock: {}; {:.1} min in all",
            s.rounds,
            s.seconds,
            report.setups.first().map_or("?".to_string(), |x| tps(x.overload_tps)),
            s.seconds,
            tps(s.fixed_rate),
            s.warmup_secs,
            s.senders,
            s.workload,
            if clocks.is_empty() { "none".to_string() } else { clocks.join(" + ") },
            report.wall_secs / 60.0
        ),
    ];
    if !s.every_step.is_empty() {
        lines.push(format!(
            "every step's devnet, beyond its recipe: {}",
            s.every_step.join(", ")
        ));
    }
    lines
}

/// The kvstore ceiling and the best step as a share of it.
fn reference_line(report: &CompareReport) -> String {
    let Some(r) = &report.reference else {
        return "reference: none measured (CometBFT's kvstore ceiling not run)".to_string();
    };
    let ceiling = match r.knee_tps {
        Some(k) => format!(
            "reference: {} commits {} tx/s (knee {})",
            r.app,
            tps(r.measure.committed_tps),
            tps(k)
        ),
        None => format!(
            "reference: {} commits ≥ {} tx/s (no knee within the search: a lower bound)",
            r.app,
            tps(r.measure.committed_tps)
        ),
    };
    let best = report
        .steps
        .iter()
        .filter_map(|s| Some((s, s.ratio_to_reference?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((b, share)) => format!(
            "{ceiling}; best step {} at {:.1} % of it",
            b.step,
            share * 100.0
        ),
        None => ceiling,
    }
}

/// How a clock is named in the conditions line.
fn clock_words(clock: Clock) -> &'static str {
    match clock {
        Clock::CometbftHeaders => "CometBFT header times",
        Clock::Web3Timestamps => "web3 timestamps (1 s resolution)",
    }
}

#[cfg(test)]
mod tests {
    use super::{markdown, table};
    use crate::compare::testing::ladder;

    #[test]
    fn the_table_says_what_each_step_did_with_intervals() {
        let text = table(&ladder());
        let lines: Vec<&str> = text.lines().collect();
        let (header, rows) = (lines[0], &lines[2..6]);
        assert!(header.starts_with("step") && header.contains("× previous (95 % CI)"));
        assert!(
            rows[0].starts_with("none") && rows[0].contains("(first)"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].contains("1.500 (1.500–1.500)") && rows[1].contains("gain"),
            "{}",
            rows[1]
        );
        assert!(
            rows[3].contains("0.800 (0.800–0.800)") && rows[3].contains("LOSS"),
            "{}",
            rows[3]
        );
        // Every row as wide as the header: the columns line up.
        for row in rows {
            assert_eq!(row.chars().count(), header.chars().count(), "{row}");
        }
        for part in [
            "what this run could see",
            "+rwlock: committed tx/s ±",
            "reference: cometbft kvstore commits 1000 tx/s",
            "machine: Test CPU @ 2.0GHz, 2 cores",
            "6 rounds interleaved",
            "clock: CometBFT header times",
        ] {
            assert!(text.contains(part), "{part:?} not in\n{text}");
        }
    }

    #[test]
    fn the_conditions_say_how_the_overload_was_placed() {
        let mut report = ladder();
        let searched = "(1.25 × the highest rate a step fell behind at, raised by the pilot";
        assert!(table(&report).contains(searched), "{}", table(&report));
        report.settings.given_overload_tps = Some(8000.0);
        let text = table(&report);
        assert!(!text.contains(searched), "{text}");
        assert!(
            text.contains("(from 8000 tx/s given, no knee searched, raised by the pilot"),
            "{text}"
        );
        let shared = "every step's devnet, beyond its recipe:";
        assert!(!text.contains(shared), "none given: {text}");
        report.settings.every_step = vec!["var:block_gas=30000000".into()];
        let text = table(&report);
        let said = format!("{shared} var:block_gas=30000000");
        assert!(text.contains(&said), "{text}");
    }

    #[test]
    fn windows_kept_out_for_a_backlog_are_named() {
        let mut report = ladder();
        assert!(!table(&report).contains("kept out of the estimates"));
        report.runs[1].backlog = Some("began on a backlog of 900 transactions".into());
        let text = table(&report);
        let said = format!(
            "note: {} round {} saturation window kept out of the estimates: it began on a backlog of 900 transactions",
            report.runs[1].step,
            report.runs[1].round + 1
        );
        assert!(text.contains(&said), "{text}");
    }

    #[test]
    fn each_steps_node_is_described_as_read_and_what_was_not_read_is_named() {
        use crate::compare::conditions::NodeConditions;
        use crate::compare::report::Kind;
        use crate::compare::step::StepSetup;
        use crate::compare::testing::report;
        let node = |gas: i64, timeout: Option<&str>| NodeConditions {
            client: "evmd/0.7.0".into(),
            cometbft: Some("0.39.3".into()),
            block_max_gas: Some(gas),
            block_max_bytes: Some(-1),
            timeout_commit: timeout.map(str::to_string),
            ..NodeConditions::default()
        };
        let setup = |step: &str, c: NodeConditions| StepSetup {
            step: step.into(),
            search: String::new(),
            knee_tps: None,
            behind_tps: None,
            overload_tps: 800.0,
            lower_bound: None,
            conditions: Some(c),
        };
        let t = [100.0, 101.0, 99.0, 100.0, 100.0];
        let mut live = report(Kind::Live, &[("node", &t)], None);
        for run in &mut live.runs {
            run.fixed.as_mut().unwrap().measure.node_cpu_us_per_tx = None;
        }
        live = crate::compare::CompareReport::assemble(
            live.environment.clone(),
            live.settings.clone(),
            crate::compare::summary::Rounds {
                setups: vec![setup("node", node(10_000_000, None))],
                runs: live.runs.clone(),
                ladder: vec!["node".into()],
                stopped: None,
                failed: None,
            },
            None,
            1.0,
        )
        .unwrap();
        let text = table(&live);
        for part in [
            "node (every step, read from it): evmd/0.7.0; CometBFT 0.39.3",
            "block gas 10000000, bytes no limit (/consensus_params)",
            "blocks every 510 ms (median, measured)",
            "node CPU per transaction: not measured (a node given by URL: give --node-pid",
            "machine: quiet",
        ] {
            assert!(text.contains(part), "{part:?} not in\n{text}");
        }
        assert!(
            !text.contains("150000000"),
            "a devnet default stated as a fact:\n{text}"
        );
        // Two steps whose nodes differ: a line each, and the unread named.
        let mut two = ladder();
        let mut b = node(30_000_000, Some("1s"));
        b.unread.push("/abci_info: refused".into());
        two.setups = vec![setup("none", node(10_000_000, Some("1s"))), setup("all", b)];
        let text = table(&two);
        for part in [
            "node of step none (read from it): evmd/0.7.0",
            "node of step all (read from it): evmd/0.7.0; CometBFT 0.39.3; app ?; block gas 30000000",
            "timeout_commit 1s (config.toml)",
            "note: step all: not read: /abci_info: refused",
        ] {
            assert!(text.contains(part), "{part:?} not in\n{text}");
        }
    }

    #[test]
    fn retried_reads_are_counted_per_step() {
        let mut r = ladder();
        let second = r.steps[1].step.clone();
        let mut retried = 0;
        for run in r.runs.iter_mut().filter(|x| x.step == second) {
            run.rpc_retries = 2;
            retried += 2;
        }
        assert!(retried > 0);
        let text = table(&r);
        let want = format!(
            "node reads retried after a reset, refusal or timeout: {} 0, {second} {retried},",
            r.steps[0].step
        );
        assert!(text.contains(&want), "{want:?} not in\n{text}");
    }

    #[test]
    fn reads_are_summarised_per_step_when_the_runs_read() {
        use crate::load::report::{MethodFigures, ReadsReport};
        let mut r = ladder();
        assert!(!table(&r).contains("reads beside the writes"));
        let first = r.steps[0].step.clone();
        for (i, run) in r.runs.iter_mut().filter(|x| x.step == first).enumerate() {
            let figures = |per_second: f64, p99: f64, failed: u64| MethodFigures {
                answered_per_second: per_second,
                ok: 10,
                failed,
                latency_ms: crate::load::report::Latency {
                    p99,
                    ..Default::default()
                },
                ..Default::default()
            };
            let methods = [
                ("receipt".to_string(), figures(100.0 + i as f64, 10.0, 0)),
                ("digest".to_string(), figures(20.0, 30.0 + i as f64, 1)),
            ];
            run.measure.reads = Some(ReadsReport {
                rate: 130.0,
                seconds: 10.0,
                methods: methods.into_iter().collect(),
            });
        }
        let runs = r.runs.iter().filter(|x| x.step == first).count();
        let text = table(&r);
        let round = crate::stats::median(&(0..runs).map(|i| i as f64).collect::<Vec<_>>()).unwrap();
        let want = format!(
            "reads beside the writes (saturation windows' loads, medians over the rounds): {first} {:.0}/s answered, slowest p99 {:.1} ms, {runs} wrong or failed",
            120.0 + round,
            30.0 + round
        );
        assert!(text.contains(&want), "{want:?} not in\n{text}");
    }

    #[test]
    fn markdown_is_github_tables_with_the_same_content() {
        let mut r = ladder();
        r.steps[0].step = "a|b".to_string();
        let text = markdown(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].starts_with("| --- | ---: | ---: | --- |"),
            "{}",
            lines[1]
        );
        assert!(lines[2].starts_with("| a\\|b |"), "{}", lines[2]);
        assert!(
            lines[3].contains("| 1.500 (1.500–1.500) | gain |"),
            "{}",
            lines[3]
        );
        assert!(text.contains("| latency p50 ms |"), "{text}");
    }
}
