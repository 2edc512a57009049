//! Two independent samples (two reports measured apart, no pairing): Welch's
//! t on the logs of their figures, with the Welch–Satterthwaite degrees of
//! freedom kept fractional. Weaker than a pairing: a day's drift of the
//! machine counts as a code change, so the verdict says it was unpaired.

use super::paired::{LogRatio, Method};
use super::quantile::{t_quantile, t_two_sided_p};
use super::{mean, sample_sd};

/// The ratio `mean(b) / mean(a)` on the log scale with Welch's 95 %
/// interval; figures that are not positive and finite are left out. `None`
/// when a side has no usable figure; a point estimate when a side has one.
pub fn welch_log_ratio(a: &[f64], b: &[f64]) -> Option<LogRatio> {
    let logs = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .filter(|x| **x > 0.0 && x.is_finite())
            .map(|x| x.ln())
            .collect()
    };
    let (la, lb) = (logs(a), logs(b));
    let d = mean(&lb)? - mean(&la)?;
    let rounds = la.len().min(lb.len());
    let (Some(sa), Some(sb)) = (sample_sd(&la), sample_sd(&lb)) else {
        return Some(LogRatio::point(d.exp(), rounds, Method::Welch));
    };
    let (va, vb) = (sa.powi(2) / la.len() as f64, sb.powi(2) / lb.len() as f64);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(LogRatio::point(d.exp(), rounds, Method::Welch));
    }
    let df =
        se2.powi(2) / (va.powi(2) / (la.len() - 1) as f64 + vb.powi(2) / (lb.len() - 1) as f64);
    let se = se2.sqrt();
    let t = t_quantile(0.975, df)?;
    let power = t + t_quantile(0.8, df)?;
    Some(LogRatio {
        ratio: d.exp(),
        low: Some((d - t * se).exp()),
        high: Some((d + t * se).exp()),
        rounds,
        se: Some(se),
        df: Some(df),
        p_value: t_two_sided_p(d / se, df),
        mde: Some((power * se).exp() - 1.0),
        method: Method::Welch,
    })
}

#[cfg(test)]
mod tests {
    use super::welch_log_ratio;
    use crate::stats::quantile::t_quantile;
    use crate::stats::Method;

    #[test]
    fn welch_keeps_fractional_df() {
        // logs: a = ln 100, ln 110, ln 90; b = ln 80, ln 95.
        let a = [100.0, 110.0, 90.0];
        let b = [80.0, 95.0];
        let w = welch_log_ratio(&a, &b).unwrap();
        let la: Vec<f64> = a.iter().map(|x: &f64| x.ln()).collect();
        let lb: Vec<f64> = b.iter().map(|x: &f64| x.ln()).collect();
        let m = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let var = |v: &[f64]| {
            let mu = m(v);
            v.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / (v.len() - 1) as f64
        };
        let (va, vb) = (var(&la) / 3.0, var(&lb) / 2.0);
        let df = (va + vb).powi(2) / (va.powi(2) / 2.0 + vb.powi(2) / 1.0);
        assert!(df.fract() != 0.0, "{df}");
        assert!((w.df.unwrap() - df).abs() < 1e-9, "{w:?}");
        let half = t_quantile(0.975, df).unwrap() * (va + vb).sqrt();
        let d = m(&lb) - m(&la);
        assert!((w.low.unwrap() - (d - half).exp()).abs() < 1e-9);
        assert!((w.ratio - d.exp()).abs() < 1e-12);
        assert_eq!((w.method, w.rounds), (Method::Welch, 2));
    }

    #[test]
    fn one_figure_a_side_gives_no_interval() {
        let w = welch_log_ratio(&[100.0], &[90.0, 91.0]).unwrap();
        assert_eq!(w.low, None);
        assert!((w.ratio - 90.5f64.ln().exp() / 100.0).abs() < 0.01);
        assert_eq!(welch_log_ratio(&[], &[1.0]), None);
    }
}
