//! A bisection for people (a table, Markdown for a CI comment) and for
//! machines (JSON).

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::commits::Commit;
use super::search::{Find, Found};
use super::{minutes, Outcome, Probe};

/// Everything a bisection reports.
#[derive(Debug, Clone, Serialize)]
pub struct BisectReport {
    /// The commits searched, good endpoint first.
    pub commits: Vec<Commit>,
    /// The change looked for.
    pub find: Find,
    /// The figure decided on (`tps` or `cpu`).
    pub metric: String,
    /// The threshold, percent: the largest slowdown that counts as "not
    /// slower" (or, looking for a speed-up, the old endpoint's largest
    /// slowdown against a probe that counts as "not faster").
    pub max_regression_pct: f64,
    /// The search.
    pub outcome: Outcome,
    /// The first bad commit against its parent (red grew, blue shrank),
    /// when both were profiled.
    pub diff_flamegraph: Option<PathBuf>,
}

impl BisectReport {
    /// The answer in one line.
    pub fn headline(&self) -> String {
        let c = &self.commits;
        let changed = self.find.word();
        let what = match self.find {
            Find::Slower => "BAD",
            Find::Faster => "FASTER",
        };
        match &self.outcome.found {
            None => format!(
                "NOT BISECTED: {}",
                self.outcome.stopped.as_deref().unwrap_or("stopped")
            ),
            Some(Found::FirstBad(i)) => format!(
                "FIRST {what} COMMIT: {} {} (its parent {} is not {changed})",
                c[*i].short(),
                c[*i].subject,
                c[i - 1].short()
            ),
            Some(Found::Range {
                last_good,
                first_bad,
                skipped,
            }) => format!(
                "CANNOT NARROW FURTHER: the first {} commit is after {} and at or before {} ({} commit(s) between; skipped: {})",
                what.to_lowercase(),
                c[*last_good].short(),
                c[*first_bad].short(),
                first_bad - last_good - 1,
                if skipped.is_empty() {
                    "none, the budget ran out".to_string()
                } else {
                    skipped.iter().map(|i| c[*i].short()).collect::<Vec<_>>().join(", ")
                }
            ),
        }
    }

    /// The probes as a table, then the answer.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>5}  {:<10}  {:<5}  {:>22}  {:>6}  {:>7}  why",
            "#",
            "commit",
            "class",
            self.metric_label(),
            "rounds",
            "time"
        );
        for p in &self.outcome.probes {
            let _ = writeln!(
                out,
                "{:>5}  {:<10}  {:<5}  {:>22}  {:>6}  {:>7}  {}",
                p.index,
                self.commits[p.index].short(),
                self.find.class_word(p.class),
                ratio_text(p),
                p.rounds,
                minutes(p.seconds),
                p.why
            );
        }
        let _ = writeln!(out, "{}", self.headline());
        if let Some(svg) = &self.diff_flamegraph {
            let _ = writeln!(out, "differential flamegraph: {}", svg.display());
        }
        let _ = writeln!(out, "wall time: {}", minutes(self.outcome.seconds));
        out
    }

    /// GitHub-flavoured Markdown, for a CI comment.
    pub fn markdown(&self) -> String {
        let mut out = format!("### feth bisect\n\n**{}**\n\n", self.headline());
        let _ = writeln!(
            out,
            "| # | commit | subject | class | {} | rounds |\n| ---: | --- | --- | --- | ---: | ---: |",
            self.metric_label()
        );
        for p in &self.outcome.probes {
            let c = &self.commits[p.index];
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} | {} |",
                p.index,
                c.short(),
                c.subject.replace('|', "\\|"),
                self.find.class_word(p.class),
                ratio_text(p),
                p.rounds
            );
        }
        let pct = self.max_regression_pct;
        let rule = match self.find {
            Find::Slower => format!("good when shown within {pct} % of the good endpoint, bad when shown slower than that"),
            Find::Faster => format!("fast when the old endpoint is shown slower than it by more than {pct} %, slow when shown within that"),
        };
        let _ = writeln!(
            out,
            "\nA probe is {rule}, and skipped when its rounds could not tell."
        );
        out
    }

    fn metric_label(&self) -> &'static str {
        match self.metric.as_str() {
            "cpu" => "speed (1/CPU per tx)",
            _ => "committed TPS ratio",
        }
    }
}

/// `0.84 (0.80–0.88)`, or `-` when not measured.
fn ratio_text(p: &Probe) -> String {
    match p.ratio {
        Some(r) => match (r.low, r.high) {
            (Some(l), Some(h)) => format!("{:.3} ({l:.3}–{h:.3})", r.ratio),
            _ => format!("{:.3}", r.ratio),
        },
        None => "-".to_string(),
    }
}
