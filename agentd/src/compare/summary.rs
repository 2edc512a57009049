//! Per-step summaries of a comparison's rounds. For each figure, a step's
//! level (geometric mean over its usable rounds, 95 % interval) and its
//! paired log-ratios against the step before it and against the first,
//! paired within a round (interleaving makes a round the pairing unit: its
//! runs shared the machine's state of that moment). Each family of
//! comparisons over the ladder is decided with Holm's correction.
//!
//! Figures that are only lower bounds (a saturation window the node kept up
//! with, a step whose search found no knee) and fixed-rate windows the step
//! fell behind in are kept out of every estimate; the summary counts them.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};

use super::machine::MachineLoad;
use super::report::{CompareReport, Environment, ReferenceRun, Settings, SCHEMA};
use super::step::{Figure, Level, Metric, StepRun, StepSetup, StepSummary};

/// What the rounds measured, for [`CompareReport::assemble`].
#[derive(Debug, Clone, Default)]
pub struct Rounds {
    /// Each step's setup.
    pub setups: Vec<StepSetup>,
    /// Every run, in the order it ran.
    pub runs: Vec<StepRun>,
    /// The steps' names in ladder order.
    pub ladder: Vec<String>,
    /// Why the rounds stopped, with `--until-resolved` or `--budget`.
    pub stopped: Option<String>,
    /// The error that ended the rounds early.
    pub failed: Option<String>,
}
use crate::stats::holm::holm;
use crate::stats::{median, step_change, Change, LogRatio};

/// Significance level of every verdict.
pub const ALPHA: f64 = 0.05;

impl CompareReport {
    /// A report of the measured rounds, with its summaries computed by
    /// [`summarise`].
    pub fn assemble(
        environment: Environment,
        settings: Settings,
        rounds: Rounds,
        reference: Option<ReferenceRun>,
        wall_secs: f64,
    ) -> Result<Self> {
        let Rounds {
            setups,
            runs,
            ladder,
            stopped,
            failed,
        } = rounds;
        let mut steps = summarise(&runs, &ladder, &setups, reference.as_ref(), settings.floor)?;
        let machine = MachineLoad::of(&runs, settings.max_lost);
        if machine.is_busy() {
            busy_verdicts(&mut steps);
        }
        Ok(Self {
            schema: SCHEMA,
            environment,
            settings,
            setups,
            runs,
            steps,
            reference,
            stopped,
            failed,
            machine,
            wall_secs,
        })
    }
}

/// Every verdict but the first step's, measured on a busy machine: not
/// evidence about the chain.
fn busy_verdicts(steps: &mut [StepSummary]) {
    for figure in steps.iter_mut().skip(1).flat_map(|s| s.figures.iter_mut()) {
        figure.change = Change::MachineBusy;
        figure.change_vs_first = Change::MachineBusy;
    }
}

/// One summary per step of `ladder`, in its order. Every step needs at least
/// one run, and every run must belong to a step of the ladder.
pub fn summarise(
    runs: &[StepRun],
    ladder: &[String],
    setups: &[StepSetup],
    reference: Option<&ReferenceRun>,
    floor: f64,
) -> Result<Vec<StepSummary>> {
    if let Some(stray) = runs.iter().find(|r| !ladder.contains(&r.step)) {
        bail!(
            "run of step {:?} (round {}) is not in the ladder {ladder:?}",
            stray.step,
            stray.round
        );
    }
    let mut summaries = ladder
        .iter()
        .map(|name| {
            let of_step: Vec<&StepRun> = runs.iter().filter(|r| &r.step == name).collect();
            let knee = setups
                .iter()
                .find(|s| &s.step == name)
                .and_then(|s| s.knee_tps);
            basics(name, &of_step, knee)
                .ok_or_else(|| anyhow!("step {name:?} of the ladder has no run"))
        })
        .collect::<Result<Vec<StepSummary>>>()?;
    for metric in Metric::ALL {
        let figures = figures(runs, ladder, metric, floor);
        for (summary, figure) in summaries.iter_mut().zip(figures) {
            summary.figures.push(figure);
        }
    }
    let reference_tps = reference
        .map(|r| r.measure.committed_tps)
        .filter(|r| *r > 0.0);
    for s in &mut summaries {
        let level = s.figure(Metric::Tps).and_then(|f| f.level).map(|l| l.mean);
        s.ratio_to_reference = level.zip(reference_tps).map(|(l, r)| l / r);
    }
    Ok(summaries)
}

/// `metric` of every step: levels, paired ratios and Holm's verdicts.
fn figures(runs: &[StepRun], ladder: &[String], metric: Metric, floor: f64) -> Vec<Figure> {
    let by_round: Vec<BTreeMap<usize, f64>> =
        ladder.iter().map(|s| rounds(runs, s, metric)).collect();
    let versus = |i: usize, j: usize| -> Option<LogRatio> {
        let pairs: Vec<(f64, f64)> = by_round[i]
            .iter()
            .filter_map(|(round, v)| by_round[j].get(round).map(|b| (*b, *v)))
            .collect();
        LogRatio::paired(&pairs)
    };
    let previous: Vec<Option<LogRatio>> = (0..ladder.len())
        .map(|i| i.checked_sub(1).and_then(|j| versus(i, j)))
        .collect();
    let first: Vec<Option<LogRatio>> = (0..ladder.len())
        .map(|i| (i > 0).then(|| versus(i, 0)).flatten())
        .collect();
    let decide = |family: &[Option<LogRatio>]| -> Vec<Change> {
        let p: Vec<Option<f64>> = family.iter().map(|e| e.and_then(|e| e.p_value)).collect();
        let rejected = holm(&p, ALPHA);
        family
            .iter()
            .enumerate()
            .map(|(i, e)| match i {
                0 => Change::First,
                _ => step_change(e.as_ref(), rejected[i], floor, metric.better()),
            })
            .collect()
    };
    let (changes, changes_first) = (decide(&previous), decide(&first));
    (0..ladder.len())
        .map(|i| Figure {
            metric,
            level: level(&by_round[i].values().copied().collect::<Vec<f64>>()),
            vs_previous: previous[i],
            vs_first: first[i],
            change: changes[i],
            change_vs_first: changes_first[i],
        })
        .collect()
}

/// The geometric mean of `values` with its 95 % interval.
fn level(values: &[f64]) -> Option<Level> {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let est = LogRatio::from_logs(&logs)?;
    Some(Level {
        mean: est.ratio,
        low: est.low,
        high: est.high,
        rounds: est.rounds,
    })
}

/// `metric` of `step`'s runs by round (the first run of a round when it has several).
fn rounds(runs: &[StepRun], step: &str, metric: Metric) -> BTreeMap<usize, f64> {
    let mut by_round = BTreeMap::new();
    for run in runs.iter().filter(|r| r.step == step) {
        if let Some(v) = metric.of(run) {
            by_round.entry(run.round).or_insert(v);
        }
    }
    by_round
}

/// Everything but the figures; `None` without runs.
fn basics(name: &str, runs: &[&StepRun], knee_tps: Option<f64>) -> Option<StepSummary> {
    let med = |f: fn(&StepRun) -> f64| median(&runs.iter().map(|r| f(r)).collect::<Vec<f64>>());
    let mut clocks = Vec::new();
    for run in runs {
        if !clocks.contains(&run.measure.clock) {
            clocks.push(run.measure.clock);
        }
    }
    Some(StepSummary {
        step: name.to_string(),
        patches: runs.first()?.patches.clone(),
        comet: runs.first()?.comet.clone(),
        runs: runs.len(),
        lower_bounds: runs.iter().filter(|r| r.lower_bound.is_some()).count(),
        figures: Vec::with_capacity(Metric::ALL.len()),
        block_time_p50_ms: med(|r| r.measure.block_time_p50_ms)?,
        block_time_p95_ms: med(|r| r.measure.block_time_p95_ms)?,
        valid: runs.iter().map(|r| r.measure.valid).sum(),
        invalid: runs.iter().map(|r| r.measure.invalid).sum(),
        agent_cpu_us_per_tx: med(|r| r.measure.agent_cpu_us_per_tx)?,
        knee_tps,
        clocks,
        ratio_to_reference: None,
    })
}

#[cfg(test)]
mod tests {
    use super::summarise;
    use crate::compare::step::Metric;
    use crate::compare::testing::{ladder, run};
    use crate::saturate::Clock;
    use crate::stats::Change;

    #[test]
    fn steps_are_summarised_with_log_ratios_paired_within_a_round() {
        let r = ladder();
        let s = &r.steps;
        assert_eq!(s.len(), 4);
        let tps = |i: usize| s[i].figure(Metric::Tps).unwrap();
        assert_eq!((s[0].step.as_str(), tps(0).change), ("none", Change::First));
        assert_eq!((tps(0).vs_previous, tps(0).vs_first), (None, None));
        // Exactly 1.5 × in every round: a gain beyond any floor.
        let p = tps(1).vs_previous.unwrap();
        assert!((p.ratio - 1.5).abs() < 1e-12 && p.rounds == 6, "{p:?}");
        assert_eq!(tps(1).change, Change::Gain);
        // Ratios around 1 with a few percent of noise: the noise cannot tell.
        assert!(
            matches!(tps(2).change, Change::Inconclusive | Change::NoChange),
            "{:?}",
            tps(2).vs_previous
        );
        assert_eq!(tps(3).change, Change::Loss, "{:?}", tps(3).vs_previous);
        // CPU per transaction: lower is better, so the 1.5 × TPS step's
        // two-thirds CPU is a gain too.
        let cpu = s[1].figure(Metric::CpuPerTx).unwrap();
        assert!(cpu.vs_previous.unwrap().ratio < 0.7);
        assert_eq!(cpu.change, Change::Gain);
        assert!(s[3].ratio_to_reference.is_some());
        assert_eq!(s[3].patches, "all");
    }

    #[test]
    fn lower_bounds_and_off_rate_windows_are_kept_out() {
        let mut runs: Vec<_> = (0..6)
            .flat_map(|r| [run("a", r, 100.0 + r as f64), run("b", r, 120.0 + r as f64)])
            .collect();
        runs[1].lower_bound = Some("kept up with the overload".into());
        runs[3].fixed.as_mut().unwrap().off_rate = Some("behind".into());
        runs[3].measure.clock = Clock::Web3Timestamps;
        let ladder = ["a".to_string(), "b".to_string()];
        let s = summarise(&runs, &ladder, &[], None, 0.02).unwrap();
        assert_eq!(s[1].lower_bounds, 1);
        assert_eq!(
            s[1].figure(Metric::Tps)
                .unwrap()
                .vs_previous
                .unwrap()
                .rounds,
            5
        );
        assert_eq!(
            s[1].figure(Metric::CpuPerTx)
                .unwrap()
                .vs_previous
                .unwrap()
                .rounds,
            5
        );
        assert_eq!(
            s[1].clocks,
            vec![Clock::CometbftHeaders, Clock::Web3Timestamps]
        );
    }

    #[test]
    fn windows_begun_on_a_backlog_are_kept_out() {
        let mut runs: Vec<_> = (0..6)
            .flat_map(|r| [run("a", r, 100.0 + r as f64), run("b", r, 120.0 + r as f64)])
            .collect();
        runs[5].backlog = Some("began on a backlog".into());
        runs[7].fixed.as_mut().unwrap().backlog = Some("began on a backlog".into());
        let ladder = ["a".to_string(), "b".to_string()];
        let s = summarise(&runs, &ladder, &[], None, 0.02).unwrap();
        for metric in [Metric::Tps, Metric::CpuPerTx] {
            let est = s[1].figure(metric).unwrap().vs_previous.unwrap();
            assert_eq!(est.rounds, 5, "{metric:?}");
        }
        // Not a lower bound: the run counts for what it is, its window does not.
        assert_eq!(s[1].lower_bounds, 0);
        assert_eq!(s[1].runs, 6);
    }

    #[test]
    fn runs_and_ladder_must_agree() {
        let ladder = ["a".to_string(), "b".to_string()];
        let stray = summarise(
            &[run("a", 0, 1.0), run("c", 0, 1.0)],
            &ladder,
            &[],
            None,
            0.02,
        );
        assert!(format!("{:#}", stray.unwrap_err()).contains("\"c\""));
        let missing = summarise(&[run("a", 0, 1.0)], &ladder, &[], None, 0.02);
        assert!(
            format!("{:#}", missing.unwrap_err()).contains("step \"b\" of the ladder has no run")
        );
    }
}
