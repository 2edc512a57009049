//! What an estimate says.
//!
//! A step's change against the one before it, with a practical floor `f`
//! (changes smaller than `f` are "no change" however sure):
//! - too few rounds (fewer than [`MIN_ROUNDS`]): no verdict;
//! - the whole interval within `[1/(1+f), 1+f]`: **no change**, shown;
//! - "no change" rejected (by Holm over the ladder) and the estimate beyond
//!   the floor: **gain** or **loss**; rejected but within the floor: no change;
//! - otherwise **inconclusive**: the noise could not tell.
//!
//! The gate, with threshold θ and the ratio candidate / baseline oriented so
//! that higher is better:
//! - **pass** when the interval's low end is at least `1 − θ`;
//! - **regression** when the estimate is below `1 − θ` and the high end below 1;
//! - **inconclusive** otherwise, with the rounds that would likely settle it.

use serde::{Deserialize, Serialize};

use super::paired::{rounds_for, LogRatio};
use super::MIN_ROUNDS;

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Committed TPS, gas per second.
    Higher,
    /// CPU per transaction, latency.
    Lower,
}

/// What a step did against the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The first step: what the others are compared with.
    First,
    /// Better, beyond noise (Holm) and beyond the practical floor.
    Gain,
    /// Worse, beyond noise (Holm) and beyond the practical floor.
    Loss,
    /// Shown to be within the practical floor.
    NoChange,
    /// The noise could not tell.
    Inconclusive,
    /// Fewer rounds than a verdict needs.
    TooFewRounds,
    /// Measured while other processes (or the hypervisor) took more of the
    /// machine than a comparison allows: the figures may be the machine's.
    MachineBusy,
}

impl Change {
    /// The words a table shows.
    pub fn words(self) -> &'static str {
        match self {
            Change::First => "(first)",
            Change::Gain => "gain",
            Change::Loss => "LOSS",
            Change::NoChange => "no change",
            Change::Inconclusive => "inconclusive",
            Change::TooFewRounds => "too few rounds",
            Change::MachineBusy => "inconclusive: busy machine",
        }
    }
}

/// A step's change (see the module docs). `rejected` is Holm's verdict on
/// this comparison's p-value.
pub fn step_change(est: Option<&LogRatio>, rejected: bool, floor: f64, better: Better) -> Change {
    let Some(est) = est else {
        return Change::TooFewRounds;
    };
    let (Some(low), Some(high)) = (est.low, est.high) else {
        return Change::TooFewRounds;
    };
    if est.rounds < MIN_ROUNDS {
        return Change::TooFewRounds;
    }
    let band = (1.0 + floor).ln();
    if low.ln() >= -band && high.ln() <= band {
        return Change::NoChange;
    }
    if !rejected {
        return Change::Inconclusive;
    }
    if est.ratio.ln().abs() < band {
        return Change::NoChange;
    }
    match (est.ratio > 1.0, better) {
        (true, Better::Higher) | (false, Better::Lower) => Change::Gain,
        _ => Change::Loss,
    }
}

/// The gate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateAnswer {
    /// Shown not slower than allowed.
    Pass,
    /// Shown slower, by more than allowed on the estimate.
    Regression,
    /// The data cannot tell: run more rounds.
    Inconclusive,
}

/// The gate's answer for `est` (candidate / baseline, higher is better)
/// and threshold `theta` (0.05: 5 %), with the rounds in all that would
/// likely settle an inconclusive answer (`None` when it is settled, or when
/// no spread was measured).
pub fn gate_rule(est: &LogRatio, theta: f64) -> (GateAnswer, Option<usize>) {
    let floor = 1.0 - theta;
    let settled = est.rounds >= MIN_ROUNDS;
    if let (true, Some(low), Some(high)) = (settled, est.low, est.high) {
        if low >= floor {
            return (GateAnswer::Pass, None);
        }
        if est.ratio < floor && high < 1.0 {
            return (GateAnswer::Regression, None);
        }
    }
    // The half-width that would decide: the distance from the estimate to
    // the boundary it is nearer to deciding at.
    let target = if est.ratio >= floor {
        (est.ratio / floor).ln()
    } else {
        -est.ratio.ln()
    };
    let needed = est
        .se
        .and_then(|se| rounds_for(se * (est.rounds as f64).sqrt(), target))
        .map(|n| n.max(MIN_ROUNDS).max(est.rounds + 1));
    (GateAnswer::Inconclusive, needed)
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr_free::normal;

    use super::{gate_rule, step_change, Better, Change, GateAnswer};
    use crate::stats::holm::holm;
    use crate::stats::LogRatio;

    /// Rounds at the default count the compare uses.
    const ROUNDS: usize = 8;
    const RUNS: usize = 2_000;

    /// Normal deviates without another crate: Box–Muller over `rand`.
    mod rand_distr_free {
        use rand::Rng;
        pub fn normal(rng: &mut impl Rng, sd: f64) -> f64 {
            let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
            let u2: f64 = rng.gen_range(0.0..1.0);
            sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
    }

    /// `rounds` paired rounds whose true ratio is `ratio`, each round's
    /// log-ratio normal with sd `sd` (the design's "synthetic rounds at the
    /// noise measured here").
    fn simulate(rng: &mut StdRng, ratio: f64, sd: f64, rounds: usize) -> LogRatio {
        let logs: Vec<f64> = (0..rounds).map(|_| ratio.ln() + normal(rng, sd)).collect();
        LogRatio::from_logs(&logs).unwrap()
    }

    fn shares(ratio: f64, sd: f64, rounds: usize, seed: u64) -> [f64; 3] {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut counts = [0usize; 3];
        for _ in 0..RUNS {
            let (answer, _) = gate_rule(&simulate(&mut rng, ratio, sd, rounds), 0.05);
            counts[answer as usize] += 1;
        }
        counts.map(|c| c as f64 / RUNS as f64)
    }

    #[test]
    fn a_20_percent_regression_is_called_regression() {
        for (sd, seed) in [(0.03, 1), (0.05, 2), (0.08, 3)] {
            let [pass, regression, _] = shares(0.8, sd, ROUNDS, seed);
            assert!(regression >= 0.95, "sd {sd}: regression {regression}");
            assert_eq!(pass, 0.0, "sd {sd}");
        }
    }

    #[test]
    fn an_unchanged_candidate_passes_at_this_machines_noise() {
        // 3 % per round: node CPU per transaction varied about 3.5 % run
        // to run here.
        let [pass, regression, _] = shares(1.0, 0.03, ROUNDS, 4);
        assert!(pass >= 0.95, "pass {pass}");
        assert!(regression <= 0.01, "regression {regression}");
    }

    #[test]
    fn too_much_noise_is_inconclusive_never_a_pass_of_a_regression() {
        // 30 % noise per round: a real 20 % regression is not passed.
        let [pass, _, inconclusive] = shares(0.8, 0.30, ROUNDS, 5);
        assert!(pass <= 0.01, "pass {pass}");
        assert!(inconclusive >= 0.5, "inconclusive {inconclusive}");
        // Two rounds are never enough for an answer.
        let [pass2, regression2, _] = shares(0.8, 0.03, 2, 6);
        assert_eq!((pass2, regression2), (0.0, 0.0));
    }

    #[test]
    fn an_inconclusive_answer_says_how_many_rounds_would_settle_it() {
        let mut rng = StdRng::seed_from_u64(7);
        let est = simulate(&mut rng, 0.96, 0.06, 5);
        let (answer, needed) = gate_rule(&est, 0.05);
        if answer == GateAnswer::Inconclusive {
            assert!(needed.unwrap() > 5, "{est:?} {needed:?}");
        }
        let settled = simulate(&mut rng, 1.0, 0.001, 8);
        assert_eq!(gate_rule(&settled, 0.05), (GateAnswer::Pass, None));
    }

    #[test]
    fn ladder_verdicts_with_holm() {
        // Nine steps: eight unchanged, one 10 % gain, rounds at 3 % noise.
        let mut rng = StdRng::seed_from_u64(8);
        let (mut ladders_wrong, mut gains_found) = (0, 0);
        let ladders = 2_000;
        for _ in 0..ladders {
            let ests: Vec<LogRatio> = (0..9)
                .map(|i| simulate(&mut rng, if i == 4 { 1.10 } else { 1.0 }, 0.03, ROUNDS))
                .collect();
            let rejected = holm(&ests.iter().map(|e| e.p_value).collect::<Vec<_>>(), 0.05);
            let mut wrong = false;
            for (i, est) in ests.iter().enumerate() {
                let change = step_change(Some(est), rejected[i], 0.02, Better::Higher);
                match (i, change) {
                    (4, Change::Gain) => gains_found += 1,
                    (4, _) => {}
                    (_, Change::Gain | Change::Loss) => wrong = true,
                    _ => {}
                }
            }
            ladders_wrong += usize::from(wrong);
        }
        // Holm keeps the family-wise error (a ladder with any unchanged step
        // called changed) at 5 %, the floor lowers it more; 2,000 ladders
        // estimate it within ±1 % (two standard errors).
        let fwer = ladders_wrong as f64 / ladders as f64;
        assert!(fwer <= 0.06, "family-wise error {fwer}");
        assert!(gains_found as f64 / ladders as f64 >= 0.95, "{gains_found}");
    }

    #[test]
    fn step_changes_read_the_floor_and_the_direction() {
        let est = |ratio: f64, low: f64, high: f64| LogRatio {
            low: Some(low),
            high: Some(high),
            rounds: 8,
            ..LogRatio::point(ratio, 8, crate::stats::Method::StudentT)
        };
        let tight = est(1.005, 0.995, 1.015);
        assert_eq!(
            step_change(Some(&tight), true, 0.02, Better::Higher),
            Change::NoChange
        );
        let gain = est(1.2, 1.1, 1.3);
        assert_eq!(
            step_change(Some(&gain), true, 0.02, Better::Higher),
            Change::Gain
        );
        assert_eq!(
            step_change(Some(&gain), true, 0.02, Better::Lower),
            Change::Loss
        );
        assert_eq!(
            step_change(Some(&gain), false, 0.02, Better::Higher),
            Change::Inconclusive
        );
        let few = LogRatio { rounds: 3, ..gain };
        assert_eq!(
            step_change(Some(&few), true, 0.02, Better::Higher),
            Change::TooFewRounds
        );
        assert_eq!(
            step_change(None, true, 0.02, Better::Higher),
            Change::TooFewRounds
        );
    }
}
