//! A comparison report for people: an aligned text table for a terminal and
//! the same as GitHub-flavoured Markdown for a CI comment, each followed by
//! the reference line and the machine and conditions it was measured under.

use super::report::{Change, CompareReport, Kind, StepSummary};
use crate::bench::stats::RatioEstimate;
use crate::saturate::Clock;

/// How a column's cells line up.
#[derive(Clone, Copy, PartialEq)]
enum Align {
    Left,
    Right,
}

/// The table's columns: header and alignment.
const COLUMNS: [(&str, Align); 11] = [
    ("step", Align::Left),
    ("patches", Align::Left),
    ("committed tx/s median (min–max)", Align::Right),
    ("mean (95 % CI)", Align::Right),
    ("× previous (95 % CI)", Align::Right),
    ("× first", Align::Right),
    ("change", Align::Left),
    ("block p50/p95 ms", Align::Right),
    ("valid/invalid", Align::Right),
    ("node µs/tx", Align::Right),
    ("knee tx/s", Align::Right),
];

/// The report as an aligned text table, then the reference, machine and conditions lines.
pub fn table(report: &CompareReport) -> String {
    let rows: Vec<[String; 11]> = report.steps.iter().map(cells).collect();
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([COLUMNS[c].0.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .zip(COLUMNS)
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
        line(COLUMNS.iter().map(|(h, _)| *h).collect()),
        rule.join("  "),
    ];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out.extend(footer(report));
    out.join("\n") + "\n"
}

/// The report as a GitHub-flavoured Markdown table, then the reference, machine and
/// conditions lines.
pub fn markdown(report: &CompareReport) -> String {
    let row = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut out = vec![
        row(COLUMNS.iter().map(|(h, _)| h.to_string()).collect()),
        row(COLUMNS
            .iter()
            .map(|(_, a)| match a {
                Align::Left => "---".to_string(),
                Align::Right => "---:".to_string(),
            })
            .collect()),
    ];
    for step in &report.steps {
        out.push(row(cells(step)
            .iter()
            .map(|c| c.replace('|', "\\|"))
            .collect()));
    }
    out.push(String::new());
    for line in footer(report) {
        out.push(format!("{line}  "));
    }
    out.join("\n") + "\n"
}

/// One step's cells, in the order of [`COLUMNS`].
fn cells(s: &StepSummary) -> [String; 11] {
    let m = &s.committed_tps_mean;
    let mean = match (m.ci95_low, m.ci95_high) {
        (Some(low), Some(high)) => format!("{} ({}–{})", tps(m.mean), tps(low), tps(high)),
        _ => format!("{} (one run)", tps(m.mean)),
    };
    [
        s.step.clone(),
        s.patches.clone(),
        format!(
            "{} ({}–{})",
            tps(s.committed_tps_median),
            tps(s.committed_tps_min),
            tps(s.committed_tps_max)
        ),
        mean,
        s.vs_previous.as_ref().map_or("—".to_string(), ratio),
        s.vs_first
            .as_ref()
            .map_or("—".to_string(), |r| format!("{:.3}", r.mean)),
        change_words(s.change).to_string(),
        format!("{:.0}/{:.0}", s.block_time_p50_ms, s.block_time_p95_ms),
        format!(
            "{}/{}",
            s.valid,
            s.invalid.map_or("?".to_string(), |i| i.to_string())
        ),
        s.node_cpu_us_per_tx
            .map_or("?".to_string(), |us| format!("{us:.1}")),
        s.knee_tps.map_or("—".to_string(), tps),
    ]
}

/// What a step's change says, in words a reader cannot miss.
fn change_words(change: Change) -> &'static str {
    match change {
        Change::First => "(first)",
        Change::Gain => "gain",
        Change::Loss => "LOSS",
        Change::NoClearChange => "no gain beyond noise",
        Change::OneRun => "one round: untested",
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

/// `1.500 (1.452–1.548)`, or the mean alone with one pair.
fn ratio(r: &RatioEstimate) -> String {
    match (r.ci95_low, r.ci95_high) {
        (Some(low), Some(high)) => format!("{:.3} ({low:.3}–{high:.3})", r.mean),
        _ => format!("{:.3}", r.mean),
    }
}

/// The reference, machine and conditions lines.
fn footer(report: &CompareReport) -> Vec<String> {
    let e = &report.environment;
    let s = &report.settings;
    let ladder = match s.kind {
        Kind::Patches => "patch-set ladder",
        Kind::Builds => "two builds",
        Kind::Live => "one running node",
    };
    let rate = s
        .fixed_rate
        .map_or("knee searched per run".to_string(), |r| {
            format!("fixed rate {} tx/s", tps(r))
        });
    let mut clocks: Vec<Clock> = Vec::new();
    for c in report.runs.iter().map(|r| r.measure.clock) {
        if !clocks.contains(&c) {
            clocks.push(c);
        }
    }
    let clocks: Vec<&str> = clocks.into_iter().map(clock_words).collect();
    vec![
        reference_line(report),
        format!(
            "machine: {}, {} cores, {:.1} GiB, host {}, kernel {}; feth {}, CometBFT {}",
            e.cpu_model,
            e.cores,
            e.memory_gib,
            e.host,
            e.kernel,
            e.feth_version,
            e.cometbft_version
        ),
        format!(
            "conditions: {ladder}, gas limit {}, timeout_commit {}, {} s per run, {} repeats interleaved, {} senders, workload {}, {rate}; clock: {}; {:.1} min in all",
            s.block_gas_limit,
            s.timeout_commit,
            s.seconds,
            s.repeat,
            s.senders,
            s.workload,
            if clocks.is_empty() { "none".to_string() } else { clocks.join(" + ") },
            report.wall_secs / 60.0
        ),
    ]
}

/// The kvstore ceiling and the best step as a share of it.
fn reference_line(report: &CompareReport) -> String {
    let Some(r) = &report.reference else {
        return "reference: none measured (CometBFT's kvstore ceiling not run)".to_string();
    };
    let knee = r
        .knee_tps
        .map_or(String::new(), |k| format!(" (knee {})", tps(k)));
    let ceiling = format!(
        "reference: {} commits {} tx/s{knee}",
        r.app,
        tps(r.measure.committed_tps)
    );
    let best = report
        .steps
        .iter()
        .max_by(|a, b| a.committed_tps_median.total_cmp(&b.committed_tps_median));
    match best.and_then(|b| b.ratio_to_reference.map(|share| (b, share))) {
        Some((b, share)) => format!(
            "{ceiling}; best step {} at {} = {:.1} % of it",
            b.step,
            tps(b.committed_tps_median),
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
    use crate::compare::report::Kind;
    use crate::compare::testing::{ladder, report};

    /// The char column where `needle` starts in `line`.
    fn column(line: &str, needle: &str) -> usize {
        let byte = line
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {line:?}"));
        line[..byte].chars().count()
    }

    #[test]
    fn the_table_says_what_each_step_did_in_aligned_columns() {
        let text = table(&ladder());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + 4 + 3, "{text}");
        let (header, rule, rows) = (lines[0], lines[1], &lines[2..6]);
        assert!(rule.chars().all(|c| c == '-' || c == ' '), "{rule}");
        assert_eq!(rule.chars().count(), header.chars().count(), "{text}");
        let first = [
            "none",
            "none",
            "100 (90–110)",
            "100 (75–125)",
            "—",
            "—",
            "(first)",
        ];
        let gain = [
            "+parallel",
            "150 (135–165)",
            "1.500 (1.500–1.500)",
            "1.500",
            "gain",
        ];
        let flat = [
            "+rwlock",
            "1.002 (0.918–1.086)",
            "no gain beyond noise",
            "9000/0",
        ];
        let loss = [
            "all",
            "120 (108–132)",
            "0.799 (0.732–0.865)",
            "1.200",
            "LOSS",
        ];
        for (row, cells) in rows.iter().zip([&first[..], &gain, &flat, &loss]) {
            for cell in cells {
                assert!(row.contains(cell), "{cell:?} not in {row:?}");
            }
            assert!(row.contains("510/620") && row.contains("250.0"), "{row}");
        }
        // Left-aligned columns start, right-aligned ones end, where their header does.
        for row in rows {
            assert_eq!(
                column(row, "510/620"),
                column(header, "block p50/p95 ms") + 16 - 7
            );
            assert_eq!(row.chars().count(), header.chars().count(), "{row}");
        }
        let change = column(header, "change");
        for (row, word) in rows.iter().zip(["(first)", "gain", "no gain", "LOSS"]) {
            assert_eq!(column(row, word), change, "{row}");
        }
        assert_eq!(
            lines[6],
            "reference: cometbft kvstore commits 1000 tx/s (knee 1050); best step +rwlock at 150 = 15.0 % of it"
        );
        assert!(
            lines[7].starts_with("machine: Test CPU @ 2.0GHz, 2 cores, 7.8 GiB"),
            "{}",
            lines[7]
        );
        for part in [
            "gas limit 150000000",
            "timeout_commit 500ms",
            "20 s per run",
            "3 repeats interleaved",
            "knee searched per run",
            "clock: CometBFT header times",
        ] {
            assert!(lines[8].contains(part), "{part:?} not in {}", lines[8]);
        }
    }

    #[test]
    fn one_round_unknowns_and_a_fixed_rate_say_so() {
        let mut r = report(Kind::Builds, &[("a", &[1234.0]), ("b", &[1300.0])], None);
        r.settings.fixed_rate = Some(1500.0);
        r.steps[1].invalid = None;
        r.steps[1].node_cpu_us_per_tx = None;
        r.steps[1].knee_tps = None;
        let text = table(&r);
        let b = text.lines().nth(3).unwrap_or_default();
        for cell in [
            "1300 (1300–1300)",
            "1300 (one run)",
            "1.053",
            "one round: untested",
        ] {
            assert!(b.contains(cell), "{cell:?} not in {b:?}");
        }
        assert!(
            b.contains("26000/?") && b.contains(" ? ") && b.ends_with('—'),
            "{b}"
        );
        assert!(text.contains("reference: none measured"), "{text}");
        assert!(
            text.contains("two builds") && text.contains("fixed rate 1500 tx/s"),
            "{text}"
        );
    }

    #[test]
    fn markdown_is_a_github_table_with_the_same_content() {
        let mut r = ladder();
        r.steps[0].step = "a|b".to_string();
        let text = markdown(&r);
        let lines: Vec<&str> = text.lines().collect();
        let bars = |l: &str| l.replace("\\|", "").matches('|').count();
        assert_eq!(bars(lines[0]), 12, "{text}");
        assert_eq!(
            lines[1],
            "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
        );
        assert!(
            lines[2].starts_with("| a\\|b | none | 100 (90–110) |"),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].contains("| 1.500 (1.500–1.500) | 1.500 | gain |"),
            "{}",
            lines[3]
        );
        assert!(
            lines[4].contains("| no gain beyond noise |"),
            "{}",
            lines[4]
        );
        assert!(lines[5].contains("| LOSS |"), "{}", lines[5]);
        assert!(lines[2..6].iter().all(|l| bars(l) == 12), "{text}");
        assert_eq!(lines[6], "");
        assert!(
            lines[7].starts_with("reference: cometbft kvstore commits 1000 tx/s"),
            "{text}"
        );
        assert!(
            lines[9].starts_with("conditions: patch-set ladder"),
            "{text}"
        );
    }
}
