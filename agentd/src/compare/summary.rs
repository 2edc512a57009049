//! Per-step summaries of a comparison's runs: spread, mean and interval over
//! the repeats, and ratios paired within a round (interleaving makes a round
//! the pairing unit: its runs shared the machine's state of that moment).

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};

use super::report::{
    Change, CompareReport, Environment, ReferenceRun, Settings, StepRun, StepSummary, SCHEMA,
};
use crate::bench::stats::{median, MeanEstimate, RatioEstimate};

impl CompareReport {
    /// A report of `runs` (in the order they ran) over `ladder` (the steps'
    /// names in ladder order), with its summaries computed by [`summarise`].
    pub fn assemble(
        environment: Environment,
        settings: Settings,
        runs: Vec<StepRun>,
        ladder: &[String],
        reference: Option<ReferenceRun>,
        wall_secs: f64,
    ) -> Result<Self> {
        let steps = summarise(&runs, ladder, reference.as_ref())?;
        Ok(Self {
            schema: SCHEMA,
            environment,
            settings,
            runs,
            steps,
            reference,
            wall_secs,
        })
    }
}

/// One summary per step of `ladder`, in its order. Every step needs at least
/// one run, and every run must belong to a step of the ladder.
pub fn summarise(
    runs: &[StepRun],
    ladder: &[String],
    reference: Option<&ReferenceRun>,
) -> Result<Vec<StepSummary>> {
    if let Some(stray) = runs.iter().find(|r| !ladder.contains(&r.step)) {
        bail!(
            "run of step {:?} (round {}) is not in the ladder {ladder:?}",
            stray.step,
            stray.round
        );
    }
    let by_round: Vec<BTreeMap<usize, f64>> = ladder.iter().map(|s| rounds(runs, s)).collect();
    let reference_tps = reference.map(|r| r.measure.committed_tps);
    ladder
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let of_step: Vec<&StepRun> = runs.iter().filter(|r| &r.step == name).collect();
            let mut summary = summarise_step(name, &of_step, reference_tps)
                .ok_or_else(|| anyhow!("step {name:?} of the ladder has no run"))?;
            if i > 0 {
                summary.vs_previous = paired(&by_round[i], &by_round[i - 1]);
                summary.vs_first = paired(&by_round[i], &by_round[0]);
                summary.change = change(summary.vs_previous.as_ref());
            }
            Ok(summary)
        })
        .collect()
}

/// Committed TPS of `step`'s runs by round (the first run of a round when it has several).
fn rounds(runs: &[StepRun], step: &str) -> BTreeMap<usize, f64> {
    let mut by_round = BTreeMap::new();
    for run in runs.iter().filter(|r| r.step == step) {
        by_round
            .entry(run.round)
            .or_insert(run.measure.committed_tps);
    }
    by_round
}

/// The mean of `step / base` over the rounds both ran (and `base` committed something).
fn paired(step: &BTreeMap<usize, f64>, base: &BTreeMap<usize, f64>) -> Option<RatioEstimate> {
    let ratios: Vec<f64> = step
        .iter()
        .filter_map(|(round, tps)| base.get(round).filter(|b| **b > 0.0).map(|b| tps / b))
        .collect();
    RatioEstimate::of(&ratios)
}

/// What a ratio to the previous step says.
fn change(vs_previous: Option<&RatioEstimate>) -> Change {
    match vs_previous {
        Some(r) if r.ci95_low.is_some_and(|low| low > 1.0) => Change::Gain,
        Some(r) if r.ci95_high.is_some_and(|high| high < 1.0) => Change::Loss,
        Some(r) if r.holds(1.0) => Change::NoClearChange,
        _ => Change::OneRun,
    }
}

/// The summary of one step's runs as the first step of a ladder (no ratios to
/// other steps); `None` without runs.
fn summarise_step(
    name: &str,
    runs: &[&StepRun],
    reference_tps: Option<f64>,
) -> Option<StepSummary> {
    let of = |f: fn(&StepRun) -> f64| runs.iter().map(|r| f(r)).collect::<Vec<f64>>();
    let med = |f: fn(&StepRun) -> f64| median(&of(f));
    let known = |f: fn(&StepRun) -> Option<f64>| {
        median(&runs.iter().filter_map(|r| f(r)).collect::<Vec<f64>>())
    };
    let tps = of(|r| r.measure.committed_tps);
    let committed_tps_median = median(&tps)?;
    let mut clocks = Vec::new();
    for run in runs {
        if !clocks.contains(&run.measure.clock) {
            clocks.push(run.measure.clock);
        }
    }
    Some(StepSummary {
        step: name.to_string(),
        patches: runs.first()?.patches.clone(),
        runs: runs.len(),
        committed_tps_median,
        committed_tps_min: tps.iter().copied().fold(f64::INFINITY, f64::min),
        committed_tps_max: tps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        committed_tps_mean: MeanEstimate::of(&tps)?,
        vs_previous: None,
        vs_first: None,
        change: Change::First,
        block_time_p50_ms: med(|r| r.measure.block_time_p50_ms)?,
        block_time_p95_ms: med(|r| r.measure.block_time_p95_ms)?,
        valid: runs.iter().map(|r| r.measure.valid).sum(),
        invalid: runs.iter().map(|r| r.measure.invalid).sum(),
        node_cpu_us_per_tx: known(|r| r.measure.node_cpu_us_per_tx),
        agent_cpu_us_per_tx: med(|r| r.measure.agent_cpu_us_per_tx)?,
        schedule_lag_p99_ms: of(|r| r.measure.schedule_lag_p99_ms)
            .into_iter()
            .fold(0.0, f64::max),
        knee_tps: known(|r| r.knee_tps),
        clocks,
        ratio_to_reference: reference_tps
            .filter(|r| *r > 0.0)
            .map(|r| committed_tps_median / r),
    })
}

#[cfg(test)]
mod tests {
    use super::summarise;
    use crate::compare::report::Change;
    use crate::compare::testing::{ladder, run};
    use crate::saturate::Clock;

    #[test]
    fn steps_are_summarised_with_ratios_paired_within_a_round() {
        let r = ladder();
        let s = &r.steps;
        assert_eq!(s.len(), 4);
        assert_eq!((s[0].step.as_str(), s[0].change), ("none", Change::First));
        assert_eq!((s[0].vs_previous, s[0].vs_first), (None, None));
        assert_eq!(
            (s[0].committed_tps_median, s[0].committed_tps_min),
            (100.0, 90.0)
        );
        assert_eq!((s[0].committed_tps_max, s[0].runs), (110.0, 3));
        assert!((s[0].committed_tps_mean.mean - 100.0).abs() < 1e-9);
        // sd 10 over 3 runs: half width t95(2) × 10 / √3.
        let half = 4.303 * 10.0 / 3f64.sqrt();
        assert!((s[0].committed_tps_mean.ci95_high.unwrap() - 100.0 - half).abs() < 1e-9);
        // Exactly 1.5 × in every round: an interval of no width above 1.
        let p = s[1].vs_previous.unwrap();
        assert!((p.mean - 1.5).abs() < 1e-12 && p.pairs == 3, "{p:?}");
        assert_eq!(s[1].change, Change::Gain);
        // 1.0, 0.970, 1.037 against +parallel: no clear change; still 1.5 × the first.
        assert_eq!(s[2].change, Change::NoClearChange, "{:?}", s[2].vs_previous);
        assert!(
            (s[2].vs_first.unwrap().mean - (1.5 + 160.0 / 110.0 + 140.0 / 90.0) / 3.0).abs()
                < 1e-12
        );
        assert_eq!(s[3].change, Change::Loss, "{:?}", s[3].vs_previous);
        assert!((s[3].ratio_to_reference.unwrap() - 0.12).abs() < 1e-12);
        assert_eq!(s[3].patches, "all");
    }

    #[test]
    fn one_round_gives_no_verdict_and_unknowns_stay_unknown() {
        let mut runs = vec![run("a", 0, 100.0), run("b", 0, 150.0), run("b", 1, 170.0)];
        runs[1].measure.invalid = None;
        runs[1].measure.node_cpu_us_per_tx = None;
        runs[2].measure.node_cpu_us_per_tx = Some(300.0);
        runs[2].measure.clock = Clock::Web3Timestamps;
        runs[2].measure.schedule_lag_p99_ms = 9.0;
        runs[2].knee_tps = None;
        let ladder = ["a".to_string(), "b".to_string()];
        let s = summarise(&runs, &ladder, None).unwrap();
        assert_eq!(s[1].change, Change::OneRun);
        assert_eq!(s[1].vs_previous.unwrap().pairs, 1);
        assert_eq!(s[1].committed_tps_median, 160.0);
        assert_eq!((s[1].invalid, s[0].invalid), (None, Some(0)));
        assert_eq!(s[1].valid, 3000 + 3400);
        assert_eq!(s[1].node_cpu_us_per_tx, Some(300.0));
        assert_eq!(
            s[1].clocks,
            vec![Clock::CometbftHeaders, Clock::Web3Timestamps]
        );
        assert_eq!(s[1].schedule_lag_p99_ms, 9.0);
        assert_eq!(s[1].knee_tps, Some(165.0));
        assert_eq!(s[1].ratio_to_reference, None);
        assert_eq!(s[0].committed_tps_mean.ci95_low, None);
    }

    #[test]
    fn runs_and_ladder_must_agree() {
        let ladder = ["a".to_string(), "b".to_string()];
        let stray = summarise(&[run("a", 0, 1.0), run("c", 0, 1.0)], &ladder, None);
        assert!(format!("{:#}", stray.unwrap_err()).contains("\"c\""));
        let missing = summarise(&[run("a", 0, 1.0)], &ladder, None);
        assert!(
            format!("{:#}", missing.unwrap_err()).contains("step \"b\" of the ladder has no run")
        );
    }
}
