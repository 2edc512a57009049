//! Small-sample statistics for "is it faster?": paired ratios and their confidence
//! intervals (interleaved pairs, ABBA … in one run), means with their intervals, medians,
//! and Welch's two-sample t-test for independent samples (two separate runs).

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

/// The median of `values` (the mean of the middle two for an even count); `None` without
/// values.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Welch's two-sample t-test of `b` against `a`: independent samples whose variances may
/// differ (two separate runs of a benchmark). The 95 % interval of `mean(b) − mean(a)` uses
/// the t quantile at the Welch–Satterthwaite degrees of freedom rounded down, which widens
/// it slightly: conservative.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WelchTest {
    /// Mean of the first sample.
    pub mean_a: f64,
    /// Mean of the second sample.
    pub mean_b: f64,
    /// `mean_b − mean_a`.
    pub difference: f64,
    /// Lower end of the 95 % confidence interval of the difference.
    pub ci95_low: f64,
    /// Upper end of the 95 % confidence interval of the difference.
    pub ci95_high: f64,
    /// The t statistic: the difference over its standard error.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (fractional).
    pub df: f64,
}

impl WelchTest {
    /// Tests `b` against `a`. `None` when a sample has fewer than two values, or when
    /// neither varies at all: there is then no noise to measure a difference against.
    pub fn of(a: &[f64], b: &[f64]) -> Option<Self> {
        let (mean_a, va) = mean_and_variance_of_mean(a)?;
        let (mean_b, vb) = mean_and_variance_of_mean(b)?;
        let se2 = va + vb;
        if se2 <= 0.0 || !se2.is_finite() {
            return None;
        }
        let df =
            se2.powi(2) / (va.powi(2) / (a.len() - 1) as f64 + vb.powi(2) / (b.len() - 1) as f64);
        let se = se2.sqrt();
        let difference = mean_b - mean_a;
        // Welch's df is at least min(n_a, n_b) − 1 ≥ 1; the floor keeps the table's conservative side.
        let half = t95(df.floor().max(1.0) as usize) * se;
        Some(Self {
            mean_a,
            mean_b,
            difference,
            ci95_low: difference - half,
            ci95_high: difference + half,
            t: difference / se,
            df,
        })
    }

    /// Whether the 95 % interval of the difference excludes 0.
    pub fn significant(&self) -> bool {
        self.ci95_low > 0.0 || self.ci95_high < 0.0
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
    use super::{median, t95, MeanEstimate, RatioEstimate, WelchTest};

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

    #[test]
    fn welch_matches_the_textbook_example() {
        // The worked example of Welch's t-test on Wikipedia (samples A1 and A2 of 15 each):
        // t = −2.46, ν ≈ 24.99, p = 0.021. The exact figures below were computed from the
        // same formulas with Python's `statistics` module: t = −2.455356398286006,
        // ν = 24.98852929023142, standard error 0.8824245100137552.
        let a1 = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let a2 = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let w = WelchTest::of(&a2, &a1).unwrap();
        assert!((w.mean_a - 22.986666666666668).abs() < 1e-9, "{w:?}");
        assert!((w.mean_b - 20.82).abs() < 1e-9, "{w:?}");
        assert!((w.t - -2.455356398286006).abs() < 1e-9, "{w:?}");
        assert!((w.df - 24.98852929023142).abs() < 1e-9, "{w:?}");
        // 24.99 degrees of freedom round down to 24: t95(24) = 2.064.
        let half = 2.064 * 0.8824245100137552;
        assert!((w.ci95_low - (w.difference - half)).abs() < 1e-9, "{w:?}");
        assert!((w.ci95_high - (w.difference + half)).abs() < 1e-9, "{w:?}");
        assert!(w.significant(), "p = 0.021 < 0.05: {w:?}");
        // Swapping the samples flips the sign and nothing else.
        let back = WelchTest::of(&a1, &a2).unwrap();
        assert!((back.t + w.t).abs() < 1e-12 && (back.df - w.df).abs() < 1e-12);
    }

    #[test]
    fn welch_with_unequal_sizes_and_variances() {
        // a = [10, 12, 14] (mean 12, s² = 4), b = [20, 30] (mean 25, s² = 50):
        // se² = 4/3 + 25 = 26.3333…; ν = se⁴ / ((4/3)²/2 + 25²/1) = 693.444… / 625.888… = 1.10794;
        // t = 13 / 5.13160 = 2.53332. One degree of freedom: t95 = 12.706, the interval holds 0.
        let w = WelchTest::of(&[10.0, 12.0, 14.0], &[20.0, 30.0]).unwrap();
        assert!((w.difference - 13.0).abs() < 1e-12);
        assert!(
            (w.t - 13.0 / (4.0f64 / 3.0 + 25.0).sqrt()).abs() < 1e-9,
            "{w:?}"
        );
        assert!((w.df - 1.10794).abs() < 1e-4, "{w:?}");
        let half = 12.706 * (4.0f64 / 3.0 + 25.0).sqrt();
        assert!((w.ci95_high - 13.0 - half).abs() < 1e-9, "{w:?}");
        assert!(!w.significant(), "{w:?}");
    }

    #[test]
    fn welch_needs_two_values_a_side_and_some_noise() {
        assert_eq!(WelchTest::of(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(WelchTest::of(&[1.0, 2.0], &[]), None);
        assert_eq!(WelchTest::of(&[5.0, 5.0], &[3.0, 3.0, 3.0]), None);
        // One side without noise is fine: the other's carries the test.
        let w = WelchTest::of(&[5.0, 5.0], &[3.0, 3.1, 2.9]).unwrap();
        assert!(w.significant() && w.t < 0.0, "{w:?}");
    }

    #[test]
    fn means_and_medians() {
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
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
