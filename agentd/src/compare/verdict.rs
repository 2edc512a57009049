//! What the regression gate decided, with the figures behind it and a
//! sentence a person can act on.
//!
//! The rules, for a drop of the candidate's mean committed TPS below the
//! baseline's by more than the threshold:
//! - with two runs or more on each side, Welch's test decides whether a
//!   difference is beyond noise (its 95 % interval excludes 0); a drop beyond
//!   the threshold that is not beyond noise passes as "within noise", with
//!   the advice to measure more runs;
//! - with one run on a side (or runs that never varied) no noise can be
//!   measured: a drop beyond the threshold then FAILS untested (a gate must
//!   not pass a 50 % drop because it was measured once), anything else passes
//!   as "within noise", saying it was untested.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::render::tps;
use crate::bench::stats::{MeanEstimate, WelchTest};

/// The gate's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Slower by more than the threshold, beyond noise (or measured once on a side).
    Regression,
    /// Slower beyond noise, but by no more than the threshold.
    SlowerWithinThreshold,
    /// No difference beyond noise could be shown.
    WithinNoise,
    /// Faster, beyond noise.
    Improvement,
}

impl Outcome {
    /// Whether a gate with this outcome lets the change through.
    pub fn passes(self) -> bool {
        self != Outcome::Regression
    }
}

/// The gate's decision, the figures behind it and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// The decision.
    pub outcome: Outcome,
    /// The step compared in the baseline report.
    pub baseline_step: String,
    /// The step compared in the candidate report.
    pub candidate_step: String,
    /// Mean committed TPS of the baseline's runs of the step, with its own interval.
    pub baseline: MeanEstimate,
    /// Mean committed TPS of the candidate's runs of the step, with its own interval.
    pub candidate: MeanEstimate,
    /// Candidate mean over baseline mean.
    pub ratio: f64,
    /// `(ratio − 1) × 100`: negative when the candidate is slower.
    pub change_pct: f64,
    /// Welch's test of candidate against baseline: the difference of the means (tx/s),
    /// its 95 % interval, t and degrees of freedom. `None` when no test was possible
    /// (one run on a side, or no run varied at all).
    pub test: Option<WelchTest>,
    /// Largest drop allowed, percent.
    pub max_regression_pct: f64,
    /// How the compared reports differed, when compared anyway.
    pub warnings: Vec<String>,
    /// The decision in one sentence ([`GateVerdict::explain`]).
    pub explanation: String,
}

impl GateVerdict {
    /// Decides on the committed TPS samples of the baseline's and the candidate's step
    /// (each named, not empty), with `max_regression_pct` allowed.
    pub fn decide(
        (baseline_step, a): (&str, &[f64]),
        (candidate_step, b): (&str, &[f64]),
        max_regression_pct: f64,
        warnings: Vec<String>,
    ) -> Result<Self> {
        let (Some(baseline), Some(candidate)) = (MeanEstimate::of(a), MeanEstimate::of(b)) else {
            bail!("the gate needs at least one run on each side");
        };
        if baseline.mean.is_nan() || baseline.mean <= 0.0 {
            bail!("the baseline's step {baseline_step:?} committed nothing: no ratio to gate on");
        }
        let ratio = candidate.mean / baseline.mean;
        let change_pct = (ratio - 1.0) * 100.0;
        let test = WelchTest::of(a, b);
        let too_slow = -change_pct > max_regression_pct;
        let outcome = match test {
            Some(t) if t.significant() && t.difference < 0.0 && too_slow => Outcome::Regression,
            Some(t) if t.significant() && t.difference < 0.0 => Outcome::SlowerWithinThreshold,
            Some(t) if t.significant() => Outcome::Improvement,
            Some(_) => Outcome::WithinNoise,
            None if too_slow => Outcome::Regression,
            None => Outcome::WithinNoise,
        };
        let mut verdict = Self {
            outcome,
            baseline_step: baseline_step.to_string(),
            candidate_step: candidate_step.to_string(),
            baseline,
            candidate,
            ratio,
            change_pct,
            test,
            max_regression_pct,
            warnings,
            explanation: String::new(),
        };
        verdict.explanation = verdict.explain();
        Ok(verdict)
    }

    /// The decision in one sentence: what was compared, by how much it changed,
    /// whether that is beyond noise and the threshold, and what to do next.
    pub fn explain(&self) -> String {
        let allowed = format!("the {} % allowed", self.max_regression_pct);
        let beyond = self.test.map(|t| {
            format!(
                "95 % CI of the difference {} to {} tx/s",
                signed(t.ci95_low),
                signed(t.ci95_high)
            )
        });
        let head = self.outcome_words();
        let why = match (self.outcome, beyond) {
            (Outcome::Regression, Some(ci)) => format!("more than {allowed}, and beyond noise ({ci})"),
            (Outcome::Regression, None) => format!(
                "more than {allowed}; with one run on a side (or runs that never varied) no noise could be measured, so a drop this size fails untested: rerun with --repeat 3 or more to test it against noise"
            ),
            (Outcome::SlowerWithinThreshold, Some(ci)) => format!("beyond noise ({ci}) but within {allowed}"),
            (Outcome::Improvement, Some(ci)) => format!("beyond noise ({ci})"),
            (Outcome::WithinNoise, Some(ci)) if -self.change_pct > self.max_regression_pct => format!(
                "more than {allowed}, but not beyond noise ({ci}): cannot tell, add --repeat"
            ),
            (Outcome::WithinNoise, Some(ci)) => format!("not beyond noise ({ci} holds 0)"),
            (_, None) => format!(
                "untested: with one run on a side (or runs that never varied) no noise could be measured; within {allowed}"
            ),
        };
        format!(
            "{head}: {} commits {} tx/s ({}) against {} ({}) before, {}{why}.",
            self.step_words(),
            tps(self.candidate.mean),
            runs_words(self.candidate.samples),
            tps(self.baseline.mean),
            runs_words(self.baseline.samples),
            change_words(self.change_pct),
        )
    }

    /// The sentence, both means with their intervals, the difference with its test,
    /// and the warnings: what `feth compare` prints.
    pub fn describe(&self) -> String {
        let mut lines = vec![self.explanation.clone()];
        for (side, step, m) in [
            ("baseline ", &self.baseline_step, &self.baseline),
            ("candidate", &self.candidate_step, &self.candidate),
        ] {
            lines.push(format!(
                "  {side}  step {step}: {} tx/s mean over {} ({})",
                tps(m.mean),
                runs_words(m.samples),
                interval(m)
            ));
        }
        lines.push(format!("  difference {}", self.difference_words()));
        lines.extend(self.warnings.iter().map(|w| format!("  warning: {w}")));
        lines.join("\n") + "\n"
    }

    /// The verdict as GitHub-flavoured Markdown, for a CI comment.
    pub fn markdown(&self) -> String {
        let mut lines = vec![
            format!("### feth compare gate: {}", self.outcome_words()),
            String::new(),
            self.explanation.clone(),
            String::new(),
            "| | step | runs | mean tx/s | interval |".to_string(),
            "|---|---|---:|---:|---:|".to_string(),
        ];
        for (side, step, m) in [
            ("baseline", &self.baseline_step, &self.baseline),
            ("candidate", &self.candidate_step, &self.candidate),
        ] {
            lines.push(format!(
                "| {side} | {} | {} | {} | {} |",
                step.replace('|', "\\|"),
                m.samples,
                tps(m.mean),
                interval(m)
            ));
        }
        lines.push(String::new());
        lines.push(format!("difference {}", self.difference_words()));
        lines.extend(self.warnings.iter().map(|w| format!("\n> warning: {w}")));
        lines.join("\n") + "\n"
    }

    /// `REGRESSION`, `within noise`, …
    fn outcome_words(&self) -> &'static str {
        match self.outcome {
            Outcome::Regression => "REGRESSION",
            Outcome::SlowerWithinThreshold => "slower, within the threshold",
            Outcome::WithinNoise => "within noise",
            Outcome::Improvement => "improvement",
        }
    }

    /// `−188 tx/s (95 % CI −230 to −146; Welch t = −8.10, 3.9 degrees of freedom)`.
    fn difference_words(&self) -> String {
        let d = self.candidate.mean - self.baseline.mean;
        match self.test {
            Some(t) => format!(
                "{} tx/s (95 % CI {} to {}; Welch t = {}, {:.1} degrees of freedom)",
                signed(d),
                signed(t.ci95_low),
                signed(t.ci95_high),
                format!("{:.2}", t.t).replace('-', "−"),
                t.df
            ),
            None => format!("{} tx/s (no test: no noise could be measured)", signed(d)),
        }
    }

    /// `step all`, or `step b (baseline: a)` when the reports' steps differ.
    fn step_words(&self) -> String {
        if self.baseline_step == self.candidate_step {
            format!("step {}", self.candidate_step)
        } else {
            format!(
                "step {} (baseline: {})",
                self.candidate_step, self.baseline_step
            )
        }
    }
}

/// `1 run`, `3 runs`.
fn runs_words(n: usize) -> String {
    if n == 1 {
        "1 run".to_string()
    } else {
        format!("{n} runs")
    }
}

/// `95 % CI 950–1050`, or `one run: no interval`.
fn interval(m: &MeanEstimate) -> String {
    match (m.ci95_low, m.ci95_high) {
        (Some(low), Some(high)) => format!("95 % CI {}–{}", tps(low), tps(high)),
        _ => "one run: no interval".to_string(),
    }
}

/// `18.8 % slower, `, `2.0 % faster, ` or `unchanged, `.
fn change_words(change_pct: f64) -> String {
    if change_pct < 0.0 {
        format!("{:.1} % slower, ", -change_pct)
    } else if change_pct > 0.0 {
        format!("{change_pct:.1} % faster, ")
    } else {
        "unchanged, ".to_string()
    }
}

/// A difference with its sign: `+12.5`, `−30`.
fn signed(value: f64) -> String {
    if value < 0.0 {
        format!("−{}", tps(-value))
    } else {
        format!("+{}", tps(value))
    }
}

#[cfg(test)]
mod tests {
    use super::{GateVerdict, Outcome};

    #[test]
    fn the_verdict_reads_as_text_markdown_and_json() {
        let v = GateVerdict::decide(
            ("all", &[1000.0, 1010.0, 990.0]),
            ("all", &[800.0, 810.0, 790.0]),
            5.0,
            vec!["compared although cores: baseline 2, candidate 8".into()],
        )
        .unwrap();
        assert_eq!(v.outcome, Outcome::Regression);
        let text = v.describe();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert_eq!(lines[0], v.explanation);
        assert_eq!(
            lines[1],
            "  baseline   step all: 1000 tx/s mean over 3 runs (95 % CI 975–1025)"
        );
        assert_eq!(
            lines[2],
            "  candidate  step all: 800 tx/s mean over 3 runs (95 % CI 775–825)"
        );
        assert_eq!(
            lines[3],
            "  difference −200 tx/s (95 % CI −223 to −177; Welch t = −24.49, 4.0 degrees of freedom)"
        );
        assert_eq!(
            lines[4],
            "  warning: compared although cores: baseline 2, candidate 8"
        );
        let md = v.markdown();
        assert!(
            md.starts_with("### feth compare gate: REGRESSION\n\nREGRESSION: step all"),
            "{md}"
        );
        assert!(
            md.contains("| baseline | all | 3 | 1000 | 95 % CI 975–1025 |"),
            "{md}"
        );
        assert!(
            md.contains("| candidate | all | 3 | 800 | 95 % CI 775–825 |"),
            "{md}"
        );
        assert!(md.contains("\n> warning: compared although cores"), "{md}");
        let back: GateVerdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn one_run_a_side_says_there_is_no_interval() {
        let v = GateVerdict::decide(("all", &[1000.0]), ("b", &[990.0]), 5.0, vec![]).unwrap();
        assert_eq!((v.outcome, v.test), (Outcome::WithinNoise, None));
        assert!(v.explanation.starts_with("within noise: step b (baseline: all) commits 990 tx/s (1 run) against 1000 (1 run) before, 1.0 % slower, untested"), "{}", v.explanation);
        let text = v.describe();
        assert!(
            text.contains("mean over 1 run (one run: no interval)"),
            "{text}"
        );
        assert!(
            text.contains("difference −10 tx/s (no test: no noise could be measured)"),
            "{text}"
        );
        assert!(GateVerdict::decide(("all", &[]), ("b", &[990.0]), 5.0, vec![]).is_err());
    }
}
