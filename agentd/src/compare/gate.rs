//! The regression gate: is a candidate report's committed TPS below a
//! baseline's by more than a threshold, and by more than noise?
//!
//! The two reports' runs are independent samples (different sessions, maybe
//! different days), so they are compared by Welch's two-sample t-test, not
//! by paired ratios. Reports measured under different conditions are refused
//! unless forced: a faster CPU or a lower gas limit is not a code change.

use std::fmt::Debug;

use anyhow::{anyhow, bail, Result};

use super::report::CompareReport;
use super::verdict::GateVerdict;

/// How the gate decides.
#[derive(Debug, Clone, PartialEq)]
pub struct GateConfig {
    /// Largest drop of mean committed TPS, in percent of the baseline's, that still passes.
    pub max_regression_pct: f64,
    /// The step whose runs are compared, in both reports. `None`: the last step of each
    /// report, i.e. what each report was made to measure: the full patch set (`all`) of a
    /// patch ladder, build `b` (the change) of a two-build comparison, so that two
    /// `a`-against-`b` reports are gated on their `b`s. When the two last steps are named
    /// differently, that counts as a difference between the reports (see `force`).
    pub step: Option<String>,
    /// Compare reports measured under different conditions anyway, listing the
    /// differences as warnings in the verdict instead of refusing.
    pub force: bool,
}

/// Gates `candidate` against `baseline`: refuses reports measured under different
/// conditions (unless `cfg.force`), then tests the chosen step's committed TPS.
pub fn gate(
    baseline: &CompareReport,
    candidate: &CompareReport,
    cfg: &GateConfig,
) -> Result<GateVerdict> {
    let pct = cfg.max_regression_pct;
    if !(pct.is_finite() && (0.0..100.0).contains(&pct)) {
        bail!("the largest regression allowed must be a percentage from 0 to below 100, got {pct}");
    }
    let (base_step, cand_step) = chosen_steps(baseline, candidate, cfg.step.as_deref())?;
    let mut differences = differences(baseline, candidate);
    if base_step != cand_step {
        differences.push(difference("step", base_step, cand_step));
    }
    if !differences.is_empty() && !cfg.force {
        bail!(
            "the reports were not measured alike, so their TPS cannot be compared:\n  - {}\ncompare anyway with --force",
            differences.join("\n  - ")
        );
    }
    let a = baseline.committed_tps(base_step);
    let b = candidate.committed_tps(cand_step);
    if a.is_empty() || b.is_empty() {
        bail!(
            "step {base_step:?} has no run in the baseline or {cand_step:?} none in the candidate"
        );
    }
    GateVerdict::decide(
        (base_step, &a),
        (cand_step, &b),
        pct,
        differences
            .into_iter()
            .map(|d| format!("compared although {d}"))
            .collect(),
    )
}

/// The names of the step compared in the baseline and in the candidate.
fn chosen_steps<'a>(
    baseline: &'a CompareReport,
    candidate: &'a CompareReport,
    step: Option<&str>,
) -> Result<(&'a str, &'a str)> {
    let pick = |report: &'a CompareReport, which: &str| -> Result<&'a str> {
        let names = report.step_names();
        let found = match step {
            Some(name) => names.iter().find(|n| **n == name).copied(),
            None => names.last().copied(),
        };
        found.ok_or_else(|| match step {
            Some(name) => {
                anyhow!("the {which} report has no step {name:?}; its steps are {names:?}")
            }
            None => anyhow!("the {which} report has no steps"),
        })
    };
    Ok((pick(baseline, "baseline")?, pick(candidate, "candidate")?))
}

/// Every condition the two reports differ in, one line each.
fn differences(baseline: &CompareReport, candidate: &CompareReport) -> Vec<String> {
    let (a, b) = (&baseline.settings, &candidate.settings);
    let (ea, eb) = (&baseline.environment, &candidate.environment);
    [
        check("schema", &baseline.schema, &candidate.schema),
        check("kind", &a.kind, &b.kind),
        check("cpu_model", &ea.cpu_model, &eb.cpu_model),
        check("cores", &ea.cores, &eb.cores),
        check("block_gas_limit", &a.block_gas_limit, &b.block_gas_limit),
        check("timeout_commit", &a.timeout_commit, &b.timeout_commit),
        check("seconds", &a.seconds, &b.seconds),
        check("workload", &a.workload, &b.workload),
        check("fixed_rate", &a.fixed_rate, &b.fixed_rate),
        check("senders", &a.senders, &b.senders),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `Some(difference)` when `a` and `b` differ.
fn check<T: PartialEq + Debug>(name: &str, a: &T, b: &T) -> Option<String> {
    (a != b).then(|| difference(name, a, b))
}

/// `cores: baseline 8, candidate 2`.
fn difference<T: Debug + ?Sized>(name: &str, a: &T, b: &T) -> String {
    format!("{name}: baseline {a:?}, candidate {b:?}")
}

#[cfg(test)]
mod tests {
    use super::{gate, GateConfig};
    use crate::compare::report::{CompareReport, Kind};
    use crate::compare::testing::report;
    use crate::compare::verdict::{GateVerdict, Outcome};

    /// A patch ladder whose last step `all` committed `all`.
    fn ladder(all: &[f64]) -> CompareReport {
        let none: Vec<f64> = all.iter().map(|t| t / 2.0).collect();
        report(Kind::Patches, &[("none", &none), ("all", all)], None)
    }

    fn cfg(pct: f64) -> GateConfig {
        GateConfig {
            max_regression_pct: pct,
            step: None,
            force: false,
        }
    }

    fn verdict(base: &[f64], cand: &[f64]) -> GateVerdict {
        gate(&ladder(base), &ladder(cand), &cfg(5.0)).unwrap()
    }

    #[test]
    fn a_drop_beyond_threshold_and_noise_is_a_regression() {
        let v = verdict(&[1000.0, 1010.0, 990.0], &[800.0, 810.0, 790.0]);
        assert_eq!(v.outcome, Outcome::Regression);
        assert!(!v.outcome.passes());
        assert_eq!(
            (v.baseline_step.as_str(), v.candidate_step.as_str()),
            ("all", "all")
        );
        assert_eq!((v.baseline.mean, v.candidate.mean), (1000.0, 800.0));
        assert!((v.ratio - 0.8).abs() < 1e-12 && (v.change_pct + 20.0).abs() < 1e-9);
        let t = v.test.unwrap();
        // se = √(100/3 + 100/3); 4 degrees of freedom: t95 = 2.776.
        let se = (200.0f64 / 3.0).sqrt();
        assert!(
            (t.df - 4.0).abs() < 1e-9 && (t.t + 200.0 / se).abs() < 1e-9,
            "{t:?}"
        );
        assert!((t.ci95_high - (-200.0 + 2.776 * se)).abs() < 1e-9, "{t:?}");
        assert_eq!(
            v.explanation,
            format!(
                "REGRESSION: step all commits 800 tx/s (3 runs) against 1000 (3 runs) before, \
                 20.0 % slower, more than the 5 % allowed, and beyond noise (95 % CI of the \
                 difference −{:.0} to −{:.0} tx/s).",
                200.0 + 2.776 * se,
                200.0 - 2.776 * se
            )
        );
    }

    #[test]
    fn small_noisy_and_upward_changes_pass_with_their_reason() {
        let base = [1000.0, 1010.0, 990.0];
        let v = verdict(&base, &[970.0, 980.0, 960.0]);
        assert_eq!(
            v.outcome,
            Outcome::SlowerWithinThreshold,
            "{}",
            v.explanation
        );
        assert!(
            v.explanation.contains("3.0 % slower, beyond noise"),
            "{}",
            v.explanation
        );
        assert!(
            v.explanation.contains("but within the 5 % allowed"),
            "{}",
            v.explanation
        );
        let v = verdict(&[1000.0, 1200.0, 800.0], &[900.0, 1100.0, 700.0]);
        assert_eq!(v.outcome, Outcome::WithinNoise, "{}", v.explanation);
        assert!(
            v.explanation
                .contains("10.0 % slower, more than the 5 % allowed, but not beyond noise"),
            "{}",
            v.explanation
        );
        assert!(
            v.explanation.ends_with("cannot tell, add --repeat."),
            "{}",
            v.explanation
        );
        let v = verdict(&base, &[1001.0, 1020.0, 985.0]);
        assert_eq!(v.outcome, Outcome::WithinNoise, "{}", v.explanation);
        assert!(v.explanation.contains("holds 0"), "{}", v.explanation);
        let v = verdict(&base, &[1100.0, 1110.0, 1090.0]);
        assert_eq!(v.outcome, Outcome::Improvement, "{}", v.explanation);
        assert!(
            v.explanation
                .starts_with("improvement: step all commits 1100 tx/s"),
            "{}",
            v.explanation
        );
        assert!(v.outcome.passes());
    }

    #[test]
    fn one_run_fails_a_big_drop_untested_and_passes_the_rest_untested() {
        let v = verdict(&[1000.0], &[500.0]);
        assert_eq!((v.outcome, v.test), (Outcome::Regression, None));
        assert!(
            v.explanation
                .contains("50.0 % slower, more than the 5 % allowed; with one run"),
            "{}",
            v.explanation
        );
        assert!(
            v.explanation
                .contains("fails untested: rerun with --repeat 3 or more"),
            "{}",
            v.explanation
        );
        let v = verdict(&[1000.0, 1000.0], &[1000.0, 1000.0]);
        assert_eq!((v.outcome, v.test), (Outcome::WithinNoise, None));
        assert!(
            v.explanation.contains("unchanged, untested"),
            "{}",
            v.explanation
        );
        let v = verdict(&[1000.0, 990.0], &[970.0]);
        assert_eq!(v.outcome, Outcome::WithinNoise, "{}", v.explanation);
        assert!(
            v.explanation.contains("(1 run) against 995 (2 runs)"),
            "{}",
            v.explanation
        );
        assert!(v.explanation.contains("untested"), "{}", v.explanation);
    }

    #[test]
    fn different_conditions_are_refused_each_named_unless_forced() {
        let base = ladder(&[1000.0, 1010.0]);
        let mut cand = ladder(&[1000.0, 1010.0]);
        cand.environment.cores = 8;
        cand.environment.cpu_model = "Other".to_string();
        cand.settings.block_gas_limit = 10_000_000_000;
        cand.settings.fixed_rate = Some(900.0);
        cand.environment.host = "elsewhere".to_string();
        let err = format!("{:#}", gate(&base, &cand, &cfg(5.0)).unwrap_err());
        for line in [
            "cpu_model: baseline \"Test CPU @ 2.0GHz\", candidate \"Other\"",
            "cores: baseline 2, candidate 8",
            "block_gas_limit: baseline 150000000, candidate 10000000000",
            "fixed_rate: baseline None, candidate Some(900.0)",
            "--force",
        ] {
            assert!(err.contains(line), "{line:?} not in {err}");
        }
        assert!(!err.contains("host"), "the host may differ: {err}");
        let forced = GateConfig {
            force: true,
            ..cfg(5.0)
        };
        let v = gate(&base, &cand, &forced).unwrap();
        assert_eq!(v.outcome, Outcome::WithinNoise);
        assert_eq!(v.warnings.len(), 4, "{:?}", v.warnings);
        assert_eq!(
            v.warnings[1],
            "compared although cores: baseline 2, candidate 8"
        );
        assert!(
            v.describe().contains("  warning: compared although cores"),
            "{}",
            v.describe()
        );
    }

    #[test]
    fn the_step_is_the_last_of_each_or_the_one_named() {
        let base = report(
            Kind::Patches,
            &[("none", &[500.0, 510.0]), ("all", &[1000.0, 1010.0])],
            None,
        );
        let cand = report(
            Kind::Patches,
            &[("none", &[400.0, 410.0]), ("+rwlock", &[1000.0, 1010.0])],
            None,
        );
        let err = format!("{:#}", gate(&base, &cand, &cfg(5.0)).unwrap_err());
        assert!(
            err.contains("step: baseline \"all\", candidate \"+rwlock\""),
            "{err}"
        );
        let none = GateConfig {
            step: Some("none".to_string()),
            ..cfg(5.0)
        };
        let v = gate(&base, &cand, &none).unwrap();
        assert_eq!((v.outcome, v.candidate.mean), (Outcome::Regression, 405.0));
        let missing = GateConfig {
            step: Some("all".to_string()),
            ..cfg(5.0)
        };
        let err = format!("{:#}", gate(&base, &cand, &missing).unwrap_err());
        assert!(
            err.contains(
                "the candidate report has no step \"all\"; its steps are [\"none\", \"+rwlock\"]"
            ),
            "{err}"
        );
        // Two builds: each report's `b` (the change).
        let base = report(
            Kind::Builds,
            &[("a", &[900.0, 910.0]), ("b", &[1000.0, 1010.0])],
            None,
        );
        let cand = report(
            Kind::Builds,
            &[("a", &[1000.0, 1010.0]), ("b", &[700.0, 710.0])],
            None,
        );
        let v = gate(&base, &cand, &cfg(5.0)).unwrap();
        assert_eq!(
            (v.candidate_step.as_str(), v.outcome),
            ("b", Outcome::Regression)
        );
    }

    #[test]
    fn bad_thresholds_and_empty_baselines_are_refused() {
        let r = ladder(&[1000.0, 1010.0]);
        for pct in [-1.0, 100.0, f64::NAN] {
            let err = gate(&r, &r, &cfg(pct)).unwrap_err().to_string();
            assert!(err.contains("percentage from 0 to below 100"), "{err}");
        }
        let zero = ladder(&[0.0, 0.0]);
        let err = gate(&zero, &r, &cfg(5.0)).unwrap_err().to_string();
        assert!(err.contains("committed nothing"), "{err}");
    }
}
