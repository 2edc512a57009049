//! The bisection on a model of the gate: each probe's rounds are simulated
//! at this machine's noise and decided by the gate's own rule
//! ([`Find::class`]); "inconclusive" buys rounds up to a per-probe most,
//! then the probe is skipped.

use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::search::{Class, Find, Found};
use super::{bisect, Judge, Limits, Probe, Ratio};
use crate::stats::LogRatio;

/// One round's log-ratio sd of committed TPS here: the A/A run's ±6.3 %
/// half-width over 8 rounds (docs/MEASUREMENTS.md) is t(7) · sd / √8.
const TPS_SD: f64 = 0.063 * 2.828 / 2.365;

/// A chain whose commit `i` runs at `ratios[i]` of the good one's speed.
struct Model {
    ratios: Vec<f64>,
    sd: f64,
    /// Rounds of a probe's first comparison, and the most it may reach.
    rounds: (usize, usize),
    threshold: f64,
    find: Find,
    rng: StdRng,
}

impl Model {
    fn new(ratios: Vec<f64>, seed: u64) -> Self {
        Self {
            ratios,
            sd: TPS_SD,
            rounds: (8, 48),
            threshold: 0.05,
            find: Find::Slower,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    fn normal(&mut self) -> f64 {
        let u1: f64 = self.rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = self.rng.gen_range(0.0..1.0);
        self.sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

impl Model {
    /// One comparison's figure for commit `index` against the good one, as
    /// the real judge's comparison makes it (`until_resolved`): rounds are
    /// added until the interval's half-width is within half the threshold
    /// or the most rounds are spent, and only then does the gate decide.
    fn compare(&mut self, index: usize) -> (Class, LogRatio) {
        let truth = self.ratios[index].ln();
        let (first, most) = self.rounds;
        let mut logs: Vec<f64> = Vec::new();
        let mut want = first;
        let est = loop {
            while logs.len() < want {
                let x = truth + self.normal();
                logs.push(x);
            }
            let est = LogRatio::from_logs(&logs).expect("rounds");
            let narrow = est.half_width().is_some_and(|h| h <= self.threshold / 2.0);
            if narrow || want >= most {
                break est;
            }
            want = (want * 2).min(most);
        };
        (self.find.class(&est, self.threshold), est)
    }
}

impl Judge for Model {
    /// The probe and, in the same rounds, the bad endpoint.
    async fn judge(&mut self, index: usize) -> anyhow::Result<Probe> {
        let last = self.ratios.len() - 1;
        let (endpoint, ..) = self.compare(last);
        let (class, est) = self.compare(index);
        let class = match (index == last, endpoint) {
            (true, _) | (false, Class::Bad) => class,
            (false, _) => Class::Skip,
        };
        Ok(Probe {
            index,
            class,
            endpoint: Some(endpoint),
            ratio: Some(Ratio {
                ratio: est.ratio,
                low: est.low,
                high: est.high,
            }),
            rounds: est.rounds,
            why: format!("{class:?}"),
            seconds: 0.0,
            report: None,
        })
    }
}

fn run(model: &mut Model) -> super::Outcome {
    let limits = Limits {
        find: model.find,
        budget: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(bisect(
        model.ratios.len(),
        model,
        limits,
        &ProgressBar::hidden(),
    ))
    .expect("bisect")
}

/// 16 commits, the change (to `after` of the good one's committed TPS) at
/// commit `k`.
fn step_at(k: usize, after: f64) -> Vec<f64> {
    (0..16).map(|i| if i >= k { after } else { 1.0 }).collect()
}

#[test]
fn a_regression_at_commit_k_of_16_is_found_at_k_in_95_percent_of_bisections() {
    found_at_k(Find::Slower, 0.85);
}

#[test]
fn a_speed_up_at_commit_k_of_16_is_found_at_k_in_95_percent_of_bisections() {
    found_at_k(Find::Faster, 1.0 / 0.85);
}

/// 400 bisections for a change to `after` at commit k of 16 (k = 1 … 15).
fn found_at_k(find: Find, after: f64) {
    let trials = 400;
    let mut found = 0;
    let mut wrong = Vec::new();
    for t in 0..trials {
        let k = 1 + t % 15;
        let mut model = Model::new(step_at(k, after), t as u64);
        model.find = find;
        let outcome = run(&mut model);
        match outcome.found {
            Some(Found::FirstBad(i)) if i == k => found += 1,
            Some(Found::FirstBad(i)) => wrong.push((k, i)),
            _ => {}
        }
    }
    let share = found as f64 / trials as f64;
    eprintln!("found at k in {share:.3} of {trials} bisections; wrong commit named: {wrong:?}");
    assert!(share >= 0.95, "found at k in {share:.3}; wrong: {wrong:?}");
    // A wrong commit named is worse than a range: it must be rarer still.
    assert!(
        wrong.len() * 100 <= trials,
        "wrong commits named: {wrong:?}"
    );
}

#[test]
fn an_inconclusive_probe_is_skipped_never_called_good_or_bad() {
    // Commit 3 runs halfway between "no change" and the threshold: within
    // the probe's rounds the gate can show it neither slower by more than
    // 5 % nor within 5 %.
    let ratios = vec![1.0, 1.0, 1.0, 0.975, 0.85, 0.85, 0.85];
    let mut model = Model::new(ratios, 7);
    model.rounds = (8, 12);
    let outcome = run(&mut model);
    let probe = outcome
        .probes
        .iter()
        .find(|p| p.index == 3)
        .expect("commit 3 was probed");
    assert_eq!(probe.class, Class::Skip, "{probe:?}");
    assert_eq!(probe.rounds, 12, "it bought rounds up to the most first");
    match outcome.found {
        Some(Found::Range { skipped, .. }) => assert!(skipped.contains(&3)),
        Some(Found::FirstBad(i)) => assert!(i == 3 || i == 4, "named {i}"),
        None => panic!("stopped: {:?}", outcome.stopped),
    }
}

#[test]
fn a_bad_endpoint_not_shown_slower_stops_the_bisection() {
    let mut model = Model::new(vec![1.0; 8], 3);
    let outcome = run(&mut model);
    assert_eq!(
        outcome.probes.len(),
        1,
        "only the endpoint was probed: {:?}",
        outcome.probes
    );
    assert_eq!(outcome.probes[0].endpoint, Some(Class::Good));
    assert!(outcome.found.is_none());
    let why = outcome.stopped.expect("it says why it stopped");
    assert!(why.contains("not shown slower"), "{why}");
}

#[test]
fn a_slower_new_endpoint_is_not_a_speed_up_to_bisect() {
    let mut model = Model::new(step_at(9, 0.85), 5);
    model.find = Find::Faster;
    let outcome = run(&mut model);
    assert_eq!(outcome.probes.len(), 1, "{:?}", outcome.probes);
    assert_eq!(outcome.probes[0].endpoint, Some(Class::Good));
    let why = outcome.stopped.expect("it says why it stopped");
    assert!(why.contains("not shown faster"), "{why}");
}
