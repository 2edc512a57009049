//! Student-t quantiles and tail probabilities from a maintained library
//! (`statrs`), at fractional degrees of freedom: Welch's df is rarely whole,
//! and flooring it (1.9 → 1) turns t = 2.9 into t = 12.7.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The `p` quantile of Student's t with `df` degrees of freedom (`df` may be
/// fractional); `None` unless `0 < p < 1` and `df > 0` is finite.
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0 && df > 0.0 && df.is_finite()) {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = t.inverse_cdf(p);
    q.is_finite().then_some(q)
}

/// Two-sided p-value of the statistic `t` at `df` degrees of freedom;
/// `None` for a non-finite `t` or a bad `df`.
pub fn t_two_sided_p(t: f64, df: f64) -> Option<f64> {
    if !(t.is_finite() && df > 0.0 && df.is_finite()) {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * dist.sf(t.abs())).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::{t_quantile, t_two_sided_p};

    /// The t density integrated by Simpson's rule from 0 to `x`, plus 1/2:
    /// an independent check of statrs at fractional df.
    fn cdf_by_integration(x: f64, df: f64) -> f64 {
        let ln_gamma = |z: f64| statrs::function::gamma::ln_gamma(z);
        let c = (ln_gamma((df + 1.0) / 2.0) - ln_gamma(df / 2.0)).exp()
            / (df * std::f64::consts::PI).sqrt();
        let pdf = |t: f64| c * (1.0 + t * t / df).powf(-(df + 1.0) / 2.0);
        let n = 20_000;
        let h = x / n as f64;
        let mut sum = pdf(0.0) + pdf(x);
        for i in 1..n {
            let w = if i % 2 == 1 { 4.0 } else { 2.0 };
            sum += w * pdf(i as f64 * h);
        }
        0.5 + sum * h / 3.0
    }

    #[test]
    fn whole_df_quantiles_match_closed_forms_and_published_values() {
        // df 1 is Cauchy: tan(π (p − ½)); df 2: (2p − 1) / √(2p(1 − p)).
        for p in [0.8, 0.9, 0.975, 0.995] {
            let cauchy = (std::f64::consts::PI * (p - 0.5)).tan();
            assert!((t_quantile(p, 1.0).unwrap() - cauchy).abs() < 1e-6 * cauchy.max(1.0));
            let two = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
            assert!((t_quantile(p, 2.0).unwrap() - two).abs() < 1e-6 * two.max(1.0));
        }
        // Published tables (R's qt): qt(.975, 4), qt(.975, 10), qt(.8, 7).
        assert!((t_quantile(0.975, 4.0).unwrap() - 2.776_445_105).abs() < 1e-6);
        assert!((t_quantile(0.975, 10.0).unwrap() - 2.228_138_852).abs() < 1e-6);
        assert!((t_quantile(0.8, 7.0).unwrap() - 0.896_029_210).abs() < 1e-6);
        assert!((t_quantile(0.025, 4.0).unwrap() + 2.776_445_105).abs() < 1e-6);
    }

    #[test]
    fn fractional_df_quantiles_invert_the_integrated_density() {
        for df in [1.5, 1.9, 2.5, 4.3, 7.7, 24.988_529] {
            for p in [0.8, 0.975] {
                let q = t_quantile(p, df).unwrap();
                let back = cdf_by_integration(q, df);
                assert!((back - p).abs() < 1e-6, "df {df}, p {p}: q {q}, cdf {back}");
            }
        }
        // Between its whole neighbours, never floored to the lower one.
        let (q1, q19, q2) = (
            t_quantile(0.975, 1.0).unwrap(),
            t_quantile(0.975, 1.9).unwrap(),
            t_quantile(0.975, 2.0).unwrap(),
        );
        assert!(q2 < q19 && q19 < q1 && q19 < 5.0, "{q1} {q19} {q2}");
    }

    #[test]
    fn p_values_are_the_tails_of_the_same_distribution() {
        let q = t_quantile(0.975, 6.4).unwrap();
        assert!((t_two_sided_p(q, 6.4).unwrap() - 0.05).abs() < 1e-9);
        assert!((t_two_sided_p(-q, 6.4).unwrap() - 0.05).abs() < 1e-9);
        assert!((t_two_sided_p(0.0, 3.0).unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn nonsense_arguments_give_none() {
        assert_eq!(t_quantile(0.0, 3.0), None);
        assert_eq!(t_quantile(1.0, 3.0), None);
        assert_eq!(t_quantile(0.5, 0.0), None);
        assert_eq!(t_quantile(0.5, f64::NAN), None);
        assert_eq!(t_two_sided_p(f64::INFINITY, 3.0), None);
        assert_eq!(t_two_sided_p(1.0, -1.0), None);
    }
}
