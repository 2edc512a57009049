//! Paired ratios and their confidence intervals, for comparisons measured as interleaved
//! pairs (ABBA …) in one run.

use serde::Serialize;

/// The mean of paired ratios, with a 95 % Student-t confidence interval (honest for a few
/// pairs: two pairs give a wide interval, one gives none).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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
    /// Estimates the mean of `ratios` (one per pair); `None` without ratios.
    pub fn of(ratios: &[f64]) -> Option<Self> {
        let n = ratios.len();
        if n == 0 {
            return None;
        }
        let mean = ratios.iter().sum::<f64>() / n as f64;
        let half = (n > 1).then(|| {
            let variance = ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t95(n - 1) * (variance / n as f64).sqrt()
        });
        Some(Self {
            mean,
            ci95_low: half.map(|h| mean - h),
            ci95_high: half.map(|h| mean + h),
            pairs: n,
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

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        // Within 0.002 of the exact quantile beyond 30 degrees of freedom.
        _ => 1.96 + 2.37 / df as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::{t95, RatioEstimate};

    #[test]
    fn the_interval_holds_the_mean_and_narrows_with_more_pairs() {
        let few = [0.95, 1.05, 0.98, 1.02];
        let many: Vec<f64> = few.iter().cycle().take(64).copied().collect();
        let a = RatioEstimate::of(&few).unwrap();
        let b = RatioEstimate::of(&many).unwrap();
        assert!((a.mean - 1.0).abs() < 1e-12 && (b.mean - 1.0).abs() < 1e-12);
        // sd of `few` = sqrt(0.0058 / 3); half width = t95(3) × sd / sqrt(4).
        let half = 3.182 * (0.0058f64 / 3.0).sqrt() / 2.0;
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
    fn t_quantiles_fall_towards_the_normal_one() {
        assert!((t95(1) - 12.706).abs() < 1e-9);
        assert!((t95(30) - 2.042).abs() < 1e-9);
        assert!((t95(60) - 2.000).abs() < 0.002);
        assert!((t95(120) - 1.980).abs() < 0.002);
        assert!(t95(31) < t95(30));
    }
}
