//! The paired log-ratio: for rounds r = 1..n with figures `a_r` (before) and
//! `b_r` (after), `d_r = ln(b_r / a_r)`; the ratio is `exp(mean d)` and its
//! 95 % interval `exp(mean d ± t(0.975, n − 1) · s / √n)`.
//!
//! Where the `d_r` hold an outlier (a modified z-score, |d − median| /
//! (1.4826 · MAD), above 3.5: Iglewicz and Hoaglin's rule), the interval is
//! a round-level bootstrap instead: the rounds resampled with replacement
//! 10,000 times, the 2.5 % and 97.5 % percentiles of the mean log-ratio. The
//! estimate says which method gave it.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::quantile::{t_quantile, t_two_sided_p};
use super::{mean, sample_sd};

/// Bootstrap resamples.
const RESAMPLES: usize = 10_000;
/// Modified z-score above which a round is an outlier.
const OUTLIER_Z: f64 = 3.5;
/// Power the minimum detectable effect is stated at.
const POWER: f64 = 0.8;

/// How an interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Student t on the mean log-ratio.
    StudentT,
    /// Percentiles of a round-level bootstrap (an outlier round was seen).
    Bootstrap,
    /// Welch's t on two independent samples' logs (no pairing).
    Welch,
}

/// A ratio `after / before` estimated from paired rounds, on the log scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogRatio {
    /// `exp(mean log-ratio)`: the geometric mean of the rounds' ratios.
    pub ratio: f64,
    /// Lower end of the 95 % interval (absent below two rounds).
    pub low: Option<f64>,
    /// Upper end of the 95 % interval.
    pub high: Option<f64>,
    /// Rounds (pairs), or the smaller sample with [`Method::Welch`].
    pub rounds: usize,
    /// Standard error of the mean log-ratio.
    pub se: Option<f64>,
    /// Degrees of freedom (fractional with Welch).
    pub df: Option<f64>,
    /// Two-sided p-value of "no change" (t test, or the bootstrap's tail).
    pub p_value: Option<f64>,
    /// Smallest relative change this run's noise would have let it see
    /// (α = 0.05 two-sided, power 0.8): `exp((t.975 + t.80) · se) − 1`.
    pub mde: Option<f64>,
    /// How the interval was computed.
    pub method: Method,
}

impl LogRatio {
    /// From `(before, after)` pairs; pairs with a figure that is not
    /// positive and finite are left out. `None` when no pair is left.
    pub fn paired(pairs: &[(f64, f64)]) -> Option<Self> {
        let logs: Vec<f64> = pairs
            .iter()
            .filter(|(a, b)| usable(*a) && usable(*b))
            .map(|(a, b)| (b / a).ln())
            .collect();
        Self::from_logs(&logs)
    }

    /// From the rounds' log-ratios.
    pub fn from_logs(d: &[f64]) -> Option<Self> {
        let m = mean(d)?;
        let n = d.len();
        let Some(s) = sample_sd(d) else {
            return Some(Self::point(m.exp(), n, Method::StudentT));
        };
        let se = s / (n as f64).sqrt();
        let df = (n - 1) as f64;
        let t = t_quantile(0.975, df)?;
        let mde = detectable(se, df);
        if has_outlier(d) {
            let (low, high, p) = bootstrap(d);
            return Some(Self {
                ratio: m.exp(),
                low: Some(low.exp()),
                high: Some(high.exp()),
                rounds: n,
                se: Some(se),
                df: Some(df),
                p_value: Some(p),
                mde,
                method: Method::Bootstrap,
            });
        }
        let p_value = if se > 0.0 {
            t_two_sided_p(m / se, df)
        } else {
            Some(if m == 0.0 { 1.0 } else { 0.0 })
        };
        Some(Self {
            ratio: m.exp(),
            low: Some((m - t * se).exp()),
            high: Some((m + t * se).exp()),
            rounds: n,
            se: Some(se),
            df: Some(df),
            p_value,
            mde,
            method: Method::StudentT,
        })
    }

    /// An estimate without an interval (one round).
    pub fn point(ratio: f64, rounds: usize, method: Method) -> Self {
        Self {
            ratio,
            low: None,
            high: None,
            rounds,
            se: None,
            df: None,
            p_value: None,
            mde: None,
            method,
        }
    }

    /// The same comparison the other way round (A/B instead of B/A).
    pub fn inverse(&self) -> Self {
        Self {
            ratio: 1.0 / self.ratio,
            low: self.high.map(|h| 1.0 / h),
            high: self.low.map(|l| 1.0 / l),
            ..*self
        }
    }

    /// Half the interval's width on the log scale (≈ its relative
    /// half-width): `ln(high / low) / 2`.
    pub fn half_width(&self) -> Option<f64> {
        Some((self.high? / self.low?).ln() / 2.0)
    }

    /// Whether the interval holds `value`.
    pub fn holds(&self, value: f64) -> bool {
        matches!((self.low, self.high), (Some(l), Some(h)) if l <= value && value <= h)
    }

    /// Rounds that would likely give a half-width of `target` (log scale),
    /// solving `n = (t(0.975, n − 1) · s / target)²` by iteration from this
    /// estimate's spread; `None` without a spread.
    pub fn rounds_for(&self, target: f64) -> Option<usize> {
        let s = self.se? * (self.rounds as f64).sqrt();
        rounds_for(s, target)
    }

    /// `1.084 (95 % CI 1.052–1.117)`, or the ratio alone with one round.
    pub fn describe(&self) -> String {
        match (self.low, self.high) {
            (Some(l), Some(h)) => format!("{:.3} (95 % CI {l:.3}–{h:.3})", self.ratio),
            _ => format!("{:.3} (one round: no interval)", self.ratio),
        }
    }
}

/// Rounds for a half-width `target` with per-round log-ratio sd `s`: the
/// least n with `t(0.975, n − 1) · s / √n ≤ target`, iterated upwards from
/// the normal approximation (a lower bound, since t ≥ z).
pub fn rounds_for(s: f64, target: f64) -> Option<usize> {
    if !(s.is_finite() && s >= 0.0 && target > 0.0) {
        return None;
    }
    let z = 1.959_963_984_540_054;
    let from = (((z * s / target).powi(2)).ceil() as usize).max(2);
    for n in from..from + 10_000 {
        let t = t_quantile(0.975, (n - 1) as f64)?;
        if t * s / (n as f64).sqrt() <= target {
            return Some(n);
        }
    }
    None
}

fn usable(x: f64) -> bool {
    x > 0.0 && x.is_finite()
}

/// `exp((t(0.975, df) + t(0.8, df)) · se) − 1`.
fn detectable(se: f64, df: f64) -> Option<f64> {
    let t = t_quantile(0.975, df)? + t_quantile(POWER, df)?;
    Some((t * se).exp() - 1.0)
}

/// Whether some round's modified z-score exceeds [`OUTLIER_Z`] (from five
/// rounds on: fewer cannot show an outlier).
fn has_outlier(d: &[f64]) -> bool {
    if d.len() < 5 {
        return false;
    }
    let Some(med) = super::median(d) else {
        return false;
    };
    let deviations: Vec<f64> = d.iter().map(|x| (x - med).abs()).collect();
    let mad = super::median(&deviations).unwrap_or(0.0) * 1.4826;
    mad > 0.0 && deviations.iter().any(|dev| dev / mad > OUTLIER_Z)
}

/// Percentile bootstrap of the mean: (2.5 %, 97.5 %, two-sided p of 0),
/// seeded from the data so a report recomputes to the same interval.
fn bootstrap(d: &[f64]) -> (f64, f64, f64) {
    let seed = d.iter().fold(0xfe7u64, |h, x| {
        h.rotate_left(13) ^ x.to_bits().wrapping_mul(0x9e37_79b9_7f4a_7c15)
    });
    let mut rng = StdRng::seed_from_u64(seed);
    let n = d.len();
    let mut means: Vec<f64> = (0..RESAMPLES)
        .map(|_| (0..n).map(|_| d[rng.gen_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    let below = means.iter().filter(|m| **m <= 0.0).count() as f64 / RESAMPLES as f64;
    let p = (2.0 * below.min(1.0 - below)).clamp(0.0, 1.0);
    (at(0.025), at(0.975), p)
}

#[cfg(test)]
mod tests {
    use super::{rounds_for, LogRatio, Method};
    use crate::stats::quantile::t_quantile;

    #[test]
    fn the_interval_is_the_t_interval_of_the_logs() {
        let pairs = [
            (100.0, 110.0),
            (100.0, 105.0),
            (100.0, 108.0),
            (100.0, 112.0),
        ];
        let r = LogRatio::paired(&pairs).unwrap();
        let d: Vec<f64> = pairs
            .iter()
            .map(|(a, b): &(f64, f64)| (b / a).ln())
            .collect();
        let m = d.iter().sum::<f64>() / 4.0;
        let s = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 3.0).sqrt();
        let half = t_quantile(0.975, 3.0).unwrap() * s / 2.0;
        assert_eq!(r.method, Method::StudentT);
        assert!((r.ratio - m.exp()).abs() < 1e-12);
        assert!((r.low.unwrap() - (m - half).exp()).abs() < 1e-12, "{r:?}");
        assert!((r.high.unwrap() - (m + half).exp()).abs() < 1e-12, "{r:?}");
        assert!((r.half_width().unwrap() - half).abs() < 1e-12);
        assert_eq!((r.rounds, r.df), (4, Some(3.0)));
        assert!(r.p_value.unwrap() < 0.05 && !r.holds(1.0));
    }

    #[test]
    fn intervals_are_inverse_consistent_and_never_negative() {
        // Wild spread: a linear interval would go below zero.
        let pairs = [(100.0, 20.0), (100.0, 300.0), (100.0, 90.0), (100.0, 150.0)];
        let ba = LogRatio::paired(&pairs).unwrap();
        let flipped: Vec<(f64, f64)> = pairs.iter().map(|(a, b)| (*b, *a)).collect();
        let ab = LogRatio::paired(&flipped).unwrap();
        assert!(ba.low.unwrap() > 0.0, "{ba:?}");
        assert!((ab.ratio * ba.ratio - 1.0).abs() < 1e-12);
        assert!((ab.low.unwrap() * ba.high.unwrap() - 1.0).abs() < 1e-9);
        assert!((ab.high.unwrap() * ba.low.unwrap() - 1.0).abs() < 1e-9);
        let inv = ba.inverse();
        assert!((inv.low.unwrap() - ab.low.unwrap()).abs() < 1e-9);
        assert!((inv.p_value.unwrap() - ab.p_value.unwrap()).abs() < 1e-12);
    }

    #[test]
    fn an_outlier_round_switches_to_the_bootstrap() {
        let mut d = vec![0.02, 0.025, 0.018, 0.022, 0.021, 0.019, 0.024, 0.02];
        let t = LogRatio::from_logs(&d).unwrap();
        assert_eq!(t.method, Method::StudentT);
        d.push(-0.4);
        let b = LogRatio::from_logs(&d).unwrap();
        assert_eq!(b.method, Method::Bootstrap);
        // The bootstrap interval holds the mean and is reproducible.
        let m = d.iter().sum::<f64>() / d.len() as f64;
        assert!(
            b.low.unwrap() < m.exp() && m.exp() < b.high.unwrap(),
            "{b:?}"
        );
        assert_eq!(LogRatio::from_logs(&d).unwrap(), b);
    }

    #[test]
    fn one_round_has_no_interval_and_bad_figures_are_left_out() {
        let one = LogRatio::paired(&[(100.0, 120.0), (0.0, 5.0), (f64::NAN, 1.0)]).unwrap();
        assert_eq!((one.rounds, one.low, one.mde), (1, None, None));
        assert!((one.ratio - 1.2).abs() < 1e-12);
        assert!(!one.holds(1.2));
        assert_eq!(LogRatio::paired(&[]), None);
    }

    #[test]
    fn the_detectable_effect_and_rounds_needed_follow_the_noise() {
        // Rounds with 3 % spread: a few percent is detectable at 10 rounds.
        let d: Vec<f64> = (0..10)
            .map(|i| if i % 2 == 0 { 0.03 } else { -0.03 })
            .collect();
        let r = LogRatio::from_logs(&d).unwrap();
        let se = r.se.unwrap();
        let want =
            ((t_quantile(0.975, 9.0).unwrap() + t_quantile(0.8, 9.0).unwrap()) * se).exp() - 1.0;
        assert!((r.mde.unwrap() - want).abs() < 1e-12);
        assert!(r.mde.unwrap() > 0.02 && r.mde.unwrap() < 0.05, "{r:?}");
        // n = (t · s / h)²: with s = 3 % and h = 1 %, about 38 rounds.
        let s = se * 10f64.sqrt();
        let n = rounds_for(s, 0.01).unwrap();
        let t = t_quantile(0.975, (n - 1) as f64).unwrap();
        assert!((t * s / (n as f64).sqrt()) <= 0.01 + 1e-12, "{n}");
        let t_less = t_quantile(0.975, (n - 2) as f64).unwrap();
        assert!(
            t_less * s / ((n - 1) as f64).sqrt() > 0.01,
            "{n} is not the least"
        );
        assert_eq!(r.rounds_for(0.5), Some(2));
    }
}
