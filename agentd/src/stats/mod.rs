//! Deciding "faster or not" from a few noisy rounds.
//!
//! The unit of replication is the round: every step measured once, adjacent
//! in time. Two steps' figures in one round make a pair, and a pair's
//! log-ratio `ln(b / a)` is the sample: logs make intervals
//! inverse-consistent (B/A against A/B), never negative, and fit the
//! multiplicative effects a code change has.
//!
//! - [`quantile`]: exact Student-t quantiles and tail probabilities at
//!   fractional degrees of freedom (statrs, never a table).
//! - [`paired`]: the paired log-ratio with its 95 % interval (Student t, or a
//!   round-level bootstrap when the rounds look far from normal), its
//!   p-value, the minimum detectable effect and the rounds a target
//!   half-width needs.
//! - [`welch`]: two independent samples (two reports without a pairing),
//!   Welch's t on the logs with the Welch–Satterthwaite df kept fractional.
//! - [`holm`]: Holm's step-down correction over a ladder's steps.
//! - [`decide`]: what an estimate says — a step's change against a
//!   practical floor, and the gate's three answers.

pub mod decide;
pub mod holm;
pub mod paired;
pub mod quantile;
pub mod welch;

pub use decide::{gate_rule, step_change, Change, GateAnswer};
pub use paired::{LogRatio, Method};
pub use quantile::{t_quantile, t_two_sided_p};
pub use welch::welch_log_ratio;

/// Rounds below which no verdict is given: with fewer, the t quantile is so
/// large (12.7 at one degree of freedom, 2.78 at four) that an interval is
/// useless or, from a lucky pair, falsely narrow.
pub const MIN_ROUNDS: usize = 5;

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

/// Mean of `values`; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation (n − 1); `None` below two values.
pub fn sample_sd(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let m = mean(values)?;
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    Some((ss / (n - 1) as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
