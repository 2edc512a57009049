//! Small-sample statistics for "is it faster?": paired ratios and their confidence
//! intervals (interleaved pairs, ABBA … in one run), means with their intervals.
//! `feth compare` decides on log-ratios instead ([`crate::stats`]).

use serde::{Deserialize, Serialize};

/// The mean of paired ratios, with a 95 % Student-t confidence interval (honest for a few
/// pairs: two pairs give a wide interval, one gives none).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioEstimate {
    /// Mean of the pairs' ratios.
    pub mean: f64,
    /// Lower end of the 95 % confidence interval of the mean (absent with one pair).
    pub ci95_low: Option<f64>,
    /// Upper end of the 95 % confidence interval of the mean (absent with one pair).
    pub ci95_high: Option<f64>,
    /// Pairs.
    pub pairs: usize,
}

impl RatioEstimate {
    /// Whether the ratio meets `floor`: at 95 % confidence, by its mean only, or not.
    pub fn verdict_at_least(&self, floor: f64) -> &'static str {
        if self.surely_at_least(floor) {
            "met (whole 95 % CI above)"
        } else if self.mean >= floor {
            "mean meets it, CI reaches below"
        } else {
            "NOT met"
        }
    }

    /// Estimates the mean of `ratios` (one per pair); `None` without ratios.
    pub fn of(ratios: &[f64]) -> Option<Self> {
        let (mean, half) = mean_and_half_width(ratios)?;
        Some(Self {
            mean,
            ci95_low: half.map(|h| mean - h),
            ci95_high: half.map(|h| mean + h),
            pairs: ratios.len(),
        })
    }

    /// Whether the whole confidence interval lies at or above `floor`.
    pub fn surely_at_least(&self, floor: f64) -> bool {
        self.ci95_low.is_some_and(|low| low >= floor)
    }

    /// Whether the confidence interval holds `value`.
    pub fn holds(&self, value: f64) -> bool {
        matches!((self.ci95_low, self.ci95_high), (Some(l), Some(h)) if l <= value && value <= h)
    }

    /// `0.995 (95 % CI 0.982–1.008, 10 pairs)`.
    pub fn describe(&self) -> String {
        match (self.ci95_low, self.ci95_high) {
            (Some(low), Some(high)) => format!(
                "{:.3} (95 % CI {low:.3}–{high:.3}, {} pairs)",
                self.mean, self.pairs
            ),
            _ => format!("{:.3} (one pair: no interval)", self.mean),
        }
    }
}

/// The mean of independent measurements, with a 95 % Student-t confidence interval (absent
/// with one measurement).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanEstimate {
    /// Mean of the measurements.
    pub mean: f64,
    /// Lower end of the 95 % confidence interval of the mean (absent with one measurement).
    pub ci95_low: Option<f64>,
    /// Upper end of the 95 % confidence interval of the mean (absent with one measurement).
    pub ci95_high: Option<f64>,
    /// Measurements.
    pub samples: usize,
}

impl MeanEstimate {
    /// Estimates the mean of `values`; `None` without values.
    pub fn of(values: &[f64]) -> Option<Self> {
        let (mean, half) = mean_and_half_width(values)?;
        Some(Self {
            mean,
            ci95_low: half.map(|h| mean - h),
            ci95_high: half.map(|h| mean + h),
            samples: values.len(),
        })
    }
}

/// Mean and variance of the mean (s² / n) of a sample of two or more values.
fn mean_and_variance_of_mean(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, variance / n as f64))
}

/// Mean of `values` and the half width of its 95 % Student-t interval (absent with one
/// value); `None` without values.
fn mean_and_half_width(values: &[f64]) -> Option<(f64, Option<f64>)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let half = mean_and_variance_of_mean(values).map(|(_, v)| t95(n - 1) * v.sqrt());
    Some((mean, half))
}

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom
/// (infinite at 0: no interval).
fn t95(df: usize) -> f64 {
    crate::stats::t_quantile(0.975, df as f64).unwrap_or(f64::INFINITY)
}

#[cfg(test)]
mod tests {
    use super::{t95, MeanEstimate, RatioEstimate};

    #[test]
    fn a_floor_is_met_only_when_the_whole_interval_is_above_it() {
        let tight = RatioEstimate::of(&[0.99, 1.0, 1.01, 1.0]).unwrap();
        assert_eq!(tight.verdict_at_least(0.97), "met (whole 95 % CI above)");
        let wide = RatioEstimate::of(&[0.90, 1.10, 0.95, 1.05]).unwrap();
        assert_eq!(
            wide.verdict_at_least(0.97),
            "mean meets it, CI reaches below"
        );
        assert_eq!(tight.verdict_at_least(1.05), "NOT met");
    }

    #[test]
    fn the_interval_holds_the_mean_and_narrows_with_more_pairs() {
        let few = [0.95, 1.05, 0.98, 1.02];
        let many: Vec<f64> = few.iter().cycle().take(64).copied().collect();
        let a = RatioEstimate::of(&few).unwrap();
        let b = RatioEstimate::of(&many).unwrap();
        assert!((a.mean - 1.0).abs() < 1e-12 && (b.mean - 1.0).abs() < 1e-12);
        // sd of `few` = sqrt(0.0058 / 3); half width = t95(3) × sd / sqrt(4).
        let half = t95(3) * (0.0058f64 / 3.0).sqrt() / 2.0;
        assert!((a.ci95_high.unwrap() - 1.0 - half).abs() < 1e-9, "{a:?}");
        assert!(a.holds(1.0) && !a.holds(1.1));
        let width = |r: &RatioEstimate| r.ci95_high.unwrap() - r.ci95_low.unwrap();
        assert!(width(&b) < width(&a) / 3.0, "{a:?} {b:?}");
        assert!(b.surely_at_least(0.97) && !a.surely_at_least(0.97));
    }

    #[test]
    fn one_pair_gives_no_interval_and_none_give_nothing() {
        let one = RatioEstimate::of(&[0.97]).unwrap();
        assert_eq!((one.ci95_low, one.ci95_high), (None, None));
        assert!(!one.surely_at_least(0.5) && !one.holds(0.97));
        assert_eq!(RatioEstimate::of(&[]), None);
    }

    #[test]
    fn means_and_their_intervals() {
        let m = MeanEstimate::of(&[0.95, 1.05, 0.98, 1.02]).unwrap();
        let r = RatioEstimate::of(&[0.95, 1.05, 0.98, 1.02]).unwrap();
        assert_eq!(
            (m.mean, m.ci95_low, m.ci95_high),
            (r.mean, r.ci95_low, r.ci95_high)
        );
        assert_eq!(m.samples, 4);
        let one = MeanEstimate::of(&[7.0]).unwrap();
        assert_eq!((one.mean, one.ci95_low, one.samples), (7.0, None, 1));
        assert_eq!(MeanEstimate::of(&[]), None);
    }
}
