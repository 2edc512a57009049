//! The regression gate: is a candidate worse than its baseline by more than
//! a threshold, shown beyond noise?
//!
//! It decides on the candidate report's own paired comparison whenever it
//! has one: a report of two builds (`a` the last good one, `b` the
//! candidate) measured interleaved in the same run, so the machine's drift
//! cancels. Only a report without a pairing (one step, e.g. a live node) is
//! compared with a separate baseline report, by Welch's t on the logs, and
//! the verdict says so. Reports measured under different conditions are
//! refused unless forced: a faster CPU or a lower gas limit is not a code
//! change.

use std::fmt::Debug;

use anyhow::{anyhow, bail, Result};

use super::conditions::NodeConditions;
use super::report::CompareReport;
use super::step::Metric;
use super::verdict::{GateVerdict, Pairing};
use crate::stats::{welch_log_ratio, LogRatio};

/// The figures cannot decide at all: no round yielded a usable figure on
/// both sides (every one a lower bound, or every fixed-rate window behind).
/// A gate answers this as inconclusive, never as a pass.
#[derive(Debug, thiserror::Error)]
#[error("INCONCLUSIVE: {0}")]
pub struct Undecidable(pub String);

/// How the gate decides.
#[derive(Debug, Clone, PartialEq)]
pub struct GateConfig {
    /// Largest worsening of the figure, in percent, that still passes.
    pub max_regression_pct: f64,
    /// The candidate's step. `None`: the last step of the report (`b` of two
    /// builds, `all` of a patch ladder).
    pub step: Option<String>,
    /// The figure decided on (committed TPS by default).
    pub metric: Metric,
    /// Compare reports measured under different conditions anyway, listing
    /// the differences as warnings in the verdict instead of refusing.
    pub force: bool,
}

/// Gates `candidate`: on its own pairing (its chosen step against its first
/// step) when it has one, else against `baseline` (required then).
pub fn gate(
    baseline: Option<&CompareReport>,
    candidate: &CompareReport,
    cfg: &GateConfig,
) -> Result<GateVerdict> {
    let pct = cfg.max_regression_pct;
    if !(pct.is_finite() && (0.0..100.0).contains(&pct)) {
        bail!("the largest regression allowed must be a percentage from 0 to below 100, got {pct}");
    }
    let cand_step = pick(candidate, cfg.step.as_deref(), "candidate")?;
    let names = candidate.step_names();
    if names.len() >= 2 && names[0] != cand_step {
        let verdict = paired(candidate, names[0], cand_step, cfg, baseline.is_some())?;
        return Ok(busy_or(verdict, &[candidate]));
    }
    let Some(baseline) = baseline else {
        bail!(
            "the candidate report has no pairing for step {cand_step:?} (one step): give a --baseline report to compare it with"
        );
    };
    let verdict = unpaired(baseline, candidate, cand_step, cfg)?;
    Ok(busy_or(verdict, &[baseline, candidate]))
}

/// `verdict`, or inconclusive when one of `reports` was measured on a busy machine.
fn busy_or(verdict: GateVerdict, reports: &[&CompareReport]) -> GateVerdict {
    match reports.iter().find(|r| r.machine.is_busy()) {
        Some(busy) => verdict.on_busy_machine(&busy.machine.describe()),
        None => verdict,
    }
}

/// The step named `step`, or the last one.
fn pick<'a>(report: &'a CompareReport, step: Option<&str>, which: &str) -> Result<&'a str> {
    let names = report.step_names();
    let found = match step {
        Some(name) => names.iter().find(|n| **n == name).copied(),
        None => names.last().copied(),
    };
    found.ok_or_else(|| match step {
        Some(name) => anyhow!("the {which} report has no step {name:?}; its steps are {names:?}"),
        None => anyhow!("the {which} report has no steps"),
    })
}

fn paired(
    report: &CompareReport,
    base: &str,
    cand: &str,
    cfg: &GateConfig,
    baseline_given: bool,
) -> Result<GateVerdict> {
    let summary = report
        .steps
        .iter()
        .find(|s| s.step == cand)
        .and_then(|s| s.figure(cfg.metric))
        .ok_or_else(|| anyhow!("step {cand:?} has no {} figure", cfg.metric.label()))?;
    let estimate = summary.vs_first.ok_or_else(|| {
        Undecidable(format!(
            "step {cand:?} shares no round with {base:?} in which both yielded a usable {} (lower bounds and windows behind the fixed rate are kept out): nothing to decide on; see the report's warnings",
            cfg.metric.label()
        ))
    })?;
    let mut warnings = Vec::new();
    if baseline_given {
        warnings.push(
            "decided on the candidate report's own interleaved pairing; the --baseline report was not needed"
                .to_string(),
        );
    }
    Ok(GateVerdict::decide(
        cfg.metric,
        Pairing::Paired,
        (base, cand),
        estimate,
        cfg.max_regression_pct,
        warnings,
    ))
}

fn unpaired(
    baseline: &CompareReport,
    candidate: &CompareReport,
    cand_step: &str,
    cfg: &GateConfig,
) -> Result<GateVerdict> {
    let base_step = pick(baseline, cfg.step.as_deref(), "baseline")?;
    let mut differences = differences(baseline, candidate);
    if base_step != cand_step {
        differences.push(difference("step", base_step, cand_step));
    }
    differences.extend(node_differences(
        conditions(baseline, base_step),
        conditions(candidate, cand_step),
    ));
    if !differences.is_empty() && !cfg.force {
        bail!(
            "the reports were not measured alike, so their figures cannot be compared:\n  - {}\ncompare anyway with --force",
            differences.join("\n  - ")
        );
    }
    let a = figures(baseline, base_step, cfg.metric);
    let b = figures(candidate, cand_step, cfg.metric);
    let estimate: LogRatio = welch_log_ratio(&a, &b).ok_or_else(|| {
        anyhow!(
            "step {base_step:?} of the baseline or {cand_step:?} of the candidate has no usable {} figure",
            cfg.metric.label()
        )
    })?;
    let mut warnings = vec![
        "unpaired: two reports measured apart (Welch's t on the logs); the machine's drift between them counts as a change".to_string(),
    ];
    warnings.extend(
        differences
            .into_iter()
            .map(|d| format!("compared although {d}")),
    );
    Ok(GateVerdict::decide(
        cfg.metric,
        Pairing::Unpaired,
        (base_step, cand_step),
        estimate,
        cfg.max_regression_pct,
        warnings,
    ))
}

/// The usable figures of every run of `step`.
fn figures(report: &CompareReport, step: &str, metric: Metric) -> Vec<f64> {
    report
        .runs
        .iter()
        .filter(|r| r.step == step)
        .filter_map(|r| metric.of(r))
        .collect()
}

/// Every condition the two reports differ in, one line each.
fn differences(baseline: &CompareReport, candidate: &CompareReport) -> Vec<String> {
    let (a, b) = (&baseline.settings, &candidate.settings);
    let (ea, eb) = (&baseline.environment, &candidate.environment);
    [
        check("kind", &a.kind, &b.kind),
        check("cpu_model", &ea.cpu_model, &eb.cpu_model),
        check("cores", &ea.cores, &eb.cores),
        check("feth_version", &ea.feth_version, &eb.feth_version),
        check(
            "cometbft_version",
            &ea.cometbft_version,
            &eb.cometbft_version,
        ),
        check("block_gas_limit", &a.block_gas_limit, &b.block_gas_limit),
        check("timeout_commit", &a.timeout_commit, &b.timeout_commit),
        check("seconds", &a.seconds, &b.seconds),
        check("warmup_secs", &a.warmup_secs, &b.warmup_secs),
        check("workload", &a.workload, &b.workload),
        check("senders", &a.senders, &b.senders),
        check("overload", &a.overload, &b.overload),
        check(
            "given overload",
            &a.given_overload_tps,
            &b.given_overload_tps,
        ),
        check("fixed_rate", &a.fixed_rate, &b.fixed_rate),
        check("search", &a.search, &b.search),
        check("every step's settings", &a.every_step, &b.every_step),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What `step`'s node ran under, as its setup read it.
fn conditions<'a>(report: &'a CompareReport, step: &str) -> Option<&'a NodeConditions> {
    let setup = report.setups.iter().find(|s| s.step == step)?;
    setup.conditions.as_ref()
}

/// Every condition the two steps' nodes differ in (none when either report
/// predates the reading).
fn node_differences(a: Option<&NodeConditions>, b: Option<&NodeConditions>) -> Vec<String> {
    let (Some(a), Some(b)) = (a, b) else {
        return Vec::new();
    };
    a.comparable()
        .into_iter()
        .zip(b.comparable())
        .filter_map(|((name, a), (_, b))| {
            (a != b).then(|| format!("node {name}: baseline {a}, candidate {b}"))
        })
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
    use crate::compare::conditions::NodeConditions;
    use crate::compare::report::{CompareReport, Kind};
    use crate::compare::step::{Metric, StepSetup};
    use crate::compare::summary::Rounds;
    use crate::compare::testing::report;
    use crate::compare::verdict::Pairing;
    use crate::saturate::MachineShare;
    use crate::stats::{Change, GateAnswer};

    fn setup(step: &str, gas: i64) -> StepSetup {
        StepSetup {
            step: step.into(),
            search: "kept up at 400 tx/s, behind at 800".into(),
            knee_tps: Some(400.0),
            behind_tps: Some(800.0),
            overload_tps: 1600.0,
            lower_bound: None,
            conditions: Some(NodeConditions {
                client: "evmd/0.7.0".into(),
                cometbft: Some("0.39.3".into()),
                block_max_gas: Some(gas),
                ..NodeConditions::default()
            }),
        }
    }

    fn cfg() -> GateConfig {
        GateConfig {
            max_regression_pct: 5.0,
            step: None,
            metric: Metric::Tps,
            force: false,
        }
    }

    fn builds(a: &[f64], b: &[f64]) -> CompareReport {
        report(Kind::Builds, &[("a", a), ("b", b)], None)
    }

    #[test]
    fn the_candidates_own_pairing_decides() {
        let a = [1000.0, 1040.0, 960.0, 1010.0, 990.0, 1000.0];
        let slower: Vec<f64> = a.iter().map(|x| x * 0.8).collect();
        let v = gate(None, &builds(&a, &slower), &cfg()).unwrap();
        assert_eq!(
            (v.outcome, v.pairing),
            (GateAnswer::Regression, Pairing::Paired)
        );
        assert!((v.estimate.ratio - 0.8).abs() < 1e-9);
        let same: Vec<f64> = a.iter().map(|x| x * 1.001).collect();
        let v = gate(None, &builds(&a, &same), &cfg()).unwrap();
        assert_eq!(v.outcome, GateAnswer::Pass, "{}", v.explanation);
        // A day's drift does not matter: a baseline report is not used.
        let v = gate(
            Some(&builds(&[1.0; 6], &[1.0; 6])),
            &builds(&a, &same),
            &cfg(),
        )
        .unwrap();
        assert_eq!(v.outcome, GateAnswer::Pass);
        assert!(
            v.warnings[0].contains("own interleaved pairing"),
            "{:?}",
            v.warnings
        );
    }

    #[test]
    fn two_rounds_are_inconclusive_never_a_pass() {
        // The old rule's case: 950, 1080 against 760, 870 passed "within noise".
        let v = gate(None, &builds(&[950.0, 1080.0], &[760.0, 870.0]), &cfg()).unwrap();
        assert_eq!(v.outcome, GateAnswer::Inconclusive, "{}", v.explanation);
    }

    #[test]
    fn one_step_reports_fall_back_to_welch_and_say_so() {
        let one = |t: &[f64]| report(Kind::Live, &[("node", t)], None);
        let base = one(&[1000.0, 1010.0, 990.0, 1005.0, 995.0]);
        let cand = one(&[800.0, 810.0, 790.0, 805.0, 795.0]);
        let v = gate(Some(&base), &cand, &cfg()).unwrap();
        assert_eq!(
            (v.outcome, v.pairing),
            (GateAnswer::Regression, Pairing::Unpaired)
        );
        assert!(v.warnings[0].starts_with("unpaired"), "{:?}", v.warnings);
        assert!(gate(None, &cand, &cfg()).is_err());
    }

    #[test]
    fn different_conditions_are_refused_each_named_unless_forced() {
        let one = |t: &[f64]| report(Kind::Live, &[("node", t)], None);
        let base = one(&[1000.0, 1010.0, 990.0, 1000.0, 1000.0]);
        let mut cand = one(&[1000.0, 1010.0, 990.0, 1000.0, 1000.0]);
        cand.environment.cores = 8;
        cand.environment.cometbft_version = "v1.0.1".into();
        cand.settings.search.resolution = 0.2;
        cand.settings.warmup_secs = 1.0;
        cand.settings.every_step = vec!["comet:mempool.size=300".into()];
        let err = format!("{:#}", gate(Some(&base), &cand, &cfg()).unwrap_err());
        for what in [
            "cores",
            "cometbft_version",
            "search",
            "warmup_secs",
            "every step's settings: baseline [], candidate [\"comet:mempool.size=300\"]",
        ] {
            assert!(err.contains(what), "{what} not in {err}");
        }
        let forced = GateConfig {
            force: true,
            ..cfg()
        };
        let v = gate(Some(&base), &cand, &forced).unwrap();
        assert!(v
            .warnings
            .iter()
            .any(|w| w.contains("compared although cores")));
    }

    #[test]
    fn a_busy_machine_makes_any_verdict_inconclusive() {
        let a = [1000.0, 1040.0, 960.0, 1010.0, 990.0, 1000.0];
        let slower: Vec<f64> = a.iter().map(|x| x * 0.8).collect();
        let mut hogged = builds(&a, &slower);
        hogged.runs[2].measure.machine = Some(MachineShare {
            outside: Some(0.5),
            steal: 0.0,
        });
        let hogged = CompareReport::assemble(
            hogged.environment.clone(),
            hogged.settings.clone(),
            Rounds {
                setups: hogged.setups.clone(),
                runs: hogged.runs.clone(),
                ladder: vec!["a".into(), "b".into()],
                stopped: None,
                failed: None,
            },
            None,
            1.0,
        )
        .unwrap();
        assert!(hogged.machine.is_busy());
        assert_eq!(
            hogged.steps[1].figure(Metric::Tps).unwrap().change,
            Change::MachineBusy
        );
        // Without the busy window the same figures are a regression.
        assert_eq!(
            gate(None, &builds(&a, &slower), &cfg()).unwrap().outcome,
            GateAnswer::Regression
        );
        let v = gate(None, &hogged, &cfg()).unwrap();
        assert_eq!(v.outcome, GateAnswer::Inconclusive, "{}", v.explanation);
        assert!(v.explanation.contains("busy machine"), "{}", v.explanation);
        assert!(
            v.explanation.contains("b round 2 saturation: 50 %"),
            "{}",
            v.explanation
        );
    }

    #[test]
    fn nodes_that_ran_under_other_conditions_are_refused() {
        let one = |t: &[f64], gas: i64| {
            let mut r = report(Kind::Live, &[("node", t)], None);
            r.setups = vec![setup("node", gas)];
            r
        };
        let t = [1000.0, 1010.0, 990.0, 1000.0, 1000.0];
        let err = format!(
            "{:#}",
            gate(Some(&one(&t, 10_000_000)), &one(&t, 30_000_000), &cfg()).unwrap_err()
        );
        assert!(
            err.contains("node block_max_gas: baseline Some(10000000), candidate Some(30000000)"),
            "{err}"
        );
        assert!(gate(Some(&one(&t, 10_000_000)), &one(&t, 10_000_000), &cfg()).is_ok());
    }

    #[test]
    fn bad_thresholds_and_steps_are_refused() {
        let r = builds(&[1.0; 5], &[1.0; 5]);
        let bad = GateConfig {
            max_regression_pct: 100.0,
            ..cfg()
        };
        assert!(gate(None, &r, &bad).is_err());
        let missing = GateConfig {
            step: Some("zz".into()),
            ..cfg()
        };
        assert!(format!("{:#}", gate(None, &r, &missing).unwrap_err()).contains("no step \"zz\""));
    }
}
