//! What the regression gate decided, with the figures behind it and a
//! sentence a person can act on. Three answers ([`crate::stats::decide`]):
//! **pass** only when the interval shows the candidate not slower than the
//! threshold; **regression** when it shows it slower; **inconclusive**
//! otherwise, with its own exit status and the rounds that would likely
//! settle it. A gate never passes what it could not measure.

use serde::{Deserialize, Serialize};

use super::step::Metric;
use crate::stats::decide::Better;
use crate::stats::{gate_rule, GateAnswer, LogRatio, Method, MIN_ROUNDS};

/// How the two sides were paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pairing {
    /// Rounds of one run, interleaved: the machine's drift cancels.
    Paired,
    /// Two reports measured apart: Welch's t on the logs; a day's drift of the
    /// machine counts as a change.
    Unpaired,
}

/// The gate's decision, the figures behind it and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// The decision.
    pub outcome: GateAnswer,
    /// The figure decided on.
    pub metric: Metric,
    /// Paired rounds of one report, or two reports.
    pub pairing: Pairing,
    /// The baseline's step.
    pub baseline_step: String,
    /// The candidate's step.
    pub candidate_step: String,
    /// Candidate over baseline for the figure, with its 95 % interval.
    pub estimate: LogRatio,
    /// The same oriented so that above 1 is better (the inverse for CPU
    /// per transaction and latency): what the threshold applies to.
    pub oriented: LogRatio,
    /// Largest worsening allowed, percent.
    pub max_regression_pct: f64,
    /// Rounds in all that would likely settle an inconclusive answer.
    pub rounds_needed: Option<usize>,
    /// How the compared reports differed, when compared anyway.
    pub warnings: Vec<String>,
    /// The decision in one sentence.
    pub explanation: String,
}

impl GateVerdict {
    /// Decides on `estimate` (candidate / baseline of `metric`).
    pub fn decide(
        metric: Metric,
        pairing: Pairing,
        (baseline_step, candidate_step): (&str, &str),
        estimate: LogRatio,
        max_regression_pct: f64,
        warnings: Vec<String>,
    ) -> Self {
        let oriented = match metric.better() {
            Better::Higher => estimate,
            Better::Lower => estimate.inverse(),
        };
        let (outcome, rounds_needed) = gate_rule(&oriented, max_regression_pct / 100.0);
        let mut v = Self {
            outcome,
            metric,
            pairing,
            baseline_step: baseline_step.to_string(),
            candidate_step: candidate_step.to_string(),
            estimate,
            oriented,
            max_regression_pct,
            rounds_needed,
            warnings,
            explanation: String::new(),
        };
        v.explanation = v.explain();
        v
    }

    /// The decision in one sentence, with what to do next.
    pub fn explain(&self) -> String {
        let what = self.measured();
        let allowed = format!("{} %", self.max_regression_pct);
        match self.outcome {
            GateAnswer::Pass => format!("pass: {what}; shown no more than {allowed} worse"),
            GateAnswer::Regression => {
                format!("REGRESSION: {what}; shown worse, by more than the {allowed} allowed")
            }
            GateAnswer::Inconclusive => format!(
                "INCONCLUSIVE: {what}; the data cannot show it is within {allowed}, nor that it is worse; {}",
                self.advice()
            ),
        }
    }

    /// What was measured, without the decision: the steps, the figure, the
    /// change with its interval, the rounds and the method.
    pub fn measured(&self) -> String {
        let change = (self.oriented.ratio - 1.0) * 100.0;
        let how = if change < 0.0 { "worse" } else { "better" };
        let interval = match (self.oriented.low, self.oriented.high) {
            (Some(l), Some(h)) => {
                format!("{:+.1} % to {:+.1} %", (l - 1.0) * 100.0, (h - 1.0) * 100.0)
            }
            _ => "no interval".to_string(),
        };
        format!(
            "step {} against {} ({}): {:.1} % {how} (95 % CI {interval}; {} rounds, {})",
            self.candidate_step,
            self.baseline_step,
            self.metric.label(),
            change.abs(),
            self.oriented.rounds,
            self.method_words()
        )
    }

    fn method_words(&self) -> &'static str {
        match (self.pairing, self.oriented.method) {
            (Pairing::Unpaired, _) | (_, Method::Welch) => {
                "unpaired: two reports, Welch's t on the logs"
            }
            (Pairing::Paired, Method::Bootstrap) => "paired rounds, bootstrap interval",
            (Pairing::Paired, Method::StudentT) => "paired rounds, t interval",
        }
    }

    /// The same decision measured on a busy machine: inconclusive whatever
    /// the figures said, with why (`load` is the report's busy-machine line).
    pub fn on_busy_machine(mut self, load: &str) -> Self {
        self.outcome = GateAnswer::Inconclusive;
        self.rounds_needed = None;
        self.explanation = format!(
            "INCONCLUSIVE: step {} against {} ({}): measured on a busy machine. {load}. The figures alone said: {}",
            self.candidate_step,
            self.baseline_step,
            self.metric.label(),
            self.explanation
        );
        self
    }

    fn advice(&self) -> String {
        if self.oriented.rounds < MIN_ROUNDS {
            return format!("a verdict needs at least {MIN_ROUNDS} rounds; run more (--rounds)");
        }
        match self.rounds_needed {
            Some(n) if n <= 1000 => format!(
                "about {} more rounds would likely settle it (--rounds {n}, or --until-resolved)",
                n.saturating_sub(self.oriented.rounds)
            ),
            Some(_) => {
                "the estimate sits on the threshold: no practical number of rounds settles it"
                    .to_string()
            }
            None => "run more rounds".to_string(),
        }
    }

    /// Several lines: the sentence, the estimate, the warnings.
    pub fn describe(&self) -> String {
        let mut lines = vec![
            self.explanation.clone(),
            format!(
                "  {} {} / {}: {}",
                self.metric.label(),
                self.candidate_step,
                self.baseline_step,
                self.estimate.describe()
            ),
        ];
        if let Some(mde) = self.oriented.mde {
            lines.push(format!(
                "  this run could see changes of ±{:.1} % (α 0.05, power 0.8)",
                mde * 100.0
            ));
        }
        lines.extend(self.warnings.iter().map(|w| format!("  warning: {w}")));
        lines.join("\n") + "\n"
    }

    /// A Markdown section for a CI comment.
    pub fn markdown(&self) -> String {
        let head = match self.outcome {
            GateAnswer::Pass => "pass",
            GateAnswer::Regression => "REGRESSION",
            GateAnswer::Inconclusive => "INCONCLUSIVE",
        };
        let mut out = format!(
            "### feth compare gate: {head}\n\n{}\n\n| figure | candidate / baseline (95 % CI) | rounds |\n| --- | ---: | ---: |\n| {} | {} | {} |\n",
            self.explanation,
            self.metric.label(),
            self.estimate.describe(),
            self.estimate.rounds
        );
        for w in &self.warnings {
            out.push_str(&format!("\n> warning: {w}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{GateVerdict, Pairing};
    use crate::compare::step::Metric;
    use crate::stats::{GateAnswer, LogRatio};

    fn est(logs: &[f64]) -> LogRatio {
        LogRatio::from_logs(logs).unwrap()
    }

    #[test]
    fn three_answers_read_as_text_markdown_and_json() {
        let slower: Vec<f64> = [0.80, 0.81, 0.79, 0.80, 0.82, 0.78]
            .iter()
            .map(|r: &f64| r.ln())
            .collect();
        let v = GateVerdict::decide(
            Metric::Tps,
            Pairing::Paired,
            ("a", "b"),
            est(&slower),
            5.0,
            vec![],
        );
        assert_eq!(v.outcome, GateAnswer::Regression);
        assert!(
            v.explanation
                .starts_with("REGRESSION: step b against a (committed tx/s): 20.0 % worse"),
            "{}",
            v.explanation
        );
        assert!(v
            .markdown()
            .starts_with("### feth compare gate: REGRESSION"));
        let back: GateVerdict = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);

        let same: Vec<f64> = [1.0, 1.005, 0.995, 1.002, 0.998, 1.0]
            .iter()
            .map(|r: &f64| r.ln())
            .collect();
        let v = GateVerdict::decide(
            Metric::Tps,
            Pairing::Paired,
            ("a", "b"),
            est(&same),
            5.0,
            vec![],
        );
        assert_eq!(v.outcome, GateAnswer::Pass, "{}", v.explanation);

        let noisy: Vec<f64> = [0.8, 1.2].iter().map(|r: &f64| r.ln()).collect();
        let v = GateVerdict::decide(
            Metric::Tps,
            Pairing::Paired,
            ("a", "b"),
            est(&noisy),
            5.0,
            vec!["w".into()],
        );
        assert_eq!(v.outcome, GateAnswer::Inconclusive);
        assert!(
            v.explanation.contains("at least 5 rounds"),
            "{}",
            v.explanation
        );
        assert!(v.describe().contains("  warning: w"));
    }

    #[test]
    fn cpu_per_transaction_is_oriented_lower_is_better() {
        // CPU per transaction 20 % higher: worse.
        let more_cpu: Vec<f64> = [1.2, 1.21, 1.19, 1.2, 1.22]
            .iter()
            .map(|r: &f64| r.ln())
            .collect();
        let v = GateVerdict::decide(
            Metric::CpuPerTx,
            Pairing::Paired,
            ("a", "b"),
            est(&more_cpu),
            5.0,
            vec![],
        );
        assert_eq!(v.outcome, GateAnswer::Regression, "{}", v.explanation);
        assert!(v.oriented.ratio < 0.85);
    }
}
