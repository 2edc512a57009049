//! Which account sends next: uniform, or Zipf-Mandelbrot activity (a few hot
//! accounts, a long tail), as in the Vryx devnet report.

use std::str::FromStr;

use anyhow::{bail, Context, Result};
use rand::Rng;

/// How senders are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AccountDist {
    /// Every account equally likely.
    Uniform,
    /// `p(rank k) ∝ 1 / (k + v)^s`, ranks 1…N.
    Zipf {
        /// Exponent `s` (> 0).
        s: f64,
        /// Offset `v` (≥ 0).
        v: f64,
    },
}

impl FromStr for AccountDist {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> Result<Self> {
        if text == "uniform" {
            return Ok(Self::Uniform);
        }
        let Some(params) = text.strip_prefix("zipf:") else {
            bail!("--accounts {text}: expected `uniform` or `zipf:S,V` (e.g. zipf:1.1,2.7)");
        };
        let (s, v) = params
            .split_once(',')
            .with_context(|| format!("--accounts {text}: expected zipf:S,V"))?;
        let s: f64 = s
            .trim()
            .parse()
            .with_context(|| format!("--accounts {text}: S is not a number"))?;
        let v: f64 = v
            .trim()
            .parse()
            .with_context(|| format!("--accounts {text}: V is not a number"))?;
        if !(s > 0.0 && s.is_finite() && v >= 0.0 && v.is_finite()) {
            bail!("--accounts {text}: need S > 0 and V ≥ 0");
        }
        Ok(Self::Zipf { s, v })
    }
}

/// Draws account indices from a distribution over `n` accounts.
#[derive(Debug, Clone, PartialEq)]
pub struct Picker {
    n: usize,
    /// Cumulative probabilities (Zipf only).
    cdf: Vec<f64>,
}

impl Picker {
    /// A picker over `n` accounts (n ≥ 1).
    pub fn new(dist: AccountDist, n: usize) -> Self {
        let cdf = match dist {
            AccountDist::Uniform => Vec::new(),
            AccountDist::Zipf { s, v } => {
                let mut acc = 0.0;
                let mut cdf: Vec<f64> = (1..=n)
                    .map(|k| {
                        acc += 1.0 / (k as f64 + v).powf(s);
                        acc
                    })
                    .collect();
                for c in &mut cdf {
                    *c /= acc;
                }
                cdf
            }
        };
        Self { n, cdf }
    }

    /// The next sender's index.
    pub fn pick(&self, rng: &mut impl Rng) -> usize {
        if self.cdf.is_empty() {
            return rng.gen_range(0..self.n);
        }
        let u: f64 = rng.r#gen();
        self.cdf.partition_point(|c| *c < u).min(self.n - 1)
    }
}

/// The target send rate over time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateSchedule {
    /// As fast as the senders go (closed loop).
    Closed,
    /// A fixed rate, transactions per second.
    Fixed(f64),
    /// `start`, plus `step` every `interval` seconds (the Factom test's ramp).
    Ramp {
        /// Initial rate.
        start: f64,
        /// Increase per interval.
        step: f64,
        /// Interval, seconds.
        interval: f64,
    },
}

impl RateSchedule {
    /// Parses `--ramp START:STEP:INTERVAL`.
    pub fn parse_ramp(text: &str) -> Result<Self> {
        let parts: Vec<&str> = text.split(':').collect();
        let [start, step, interval] = parts[..] else {
            bail!("--ramp {text}: expected START:STEP:INTERVAL, e.g. 1:500:30");
        };
        let num = |s: &str| -> Result<f64> {
            s.trim_end_matches('s')
                .parse::<f64>()
                .with_context(|| format!("--ramp {text}: {s:?} is not a number"))
        };
        let (start, step, interval) = (num(start)?, num(step)?, num(interval)?);
        if start <= 0.0 || step < 0.0 || interval <= 0.0 {
            bail!("--ramp {text}: need START > 0, STEP ≥ 0, INTERVAL > 0");
        }
        Ok(Self::Ramp {
            start,
            step,
            interval,
        })
    }

    /// The rate in force `t` seconds into the run (`None` for closed loop).
    pub fn rate_at(&self, t: f64) -> Option<f64> {
        match *self {
            Self::Closed => None,
            Self::Fixed(r) => Some(r),
            Self::Ramp {
                start,
                step,
                interval,
            } => Some(start + step * (t / interval).floor()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zipf_is_skewed_and_uniform_is_not() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let n = 100;
        let draw = |p: &Picker, rng: &mut rand::rngs::StdRng| {
            let mut counts = vec![0u32; n];
            for _ in 0..100_000 {
                counts[p.pick(rng)] += 1;
            }
            counts
        };
        let zipf = draw(&Picker::new("zipf:1.1,2.7".parse().unwrap(), n), &mut rng);
        assert!(zipf[0] > 10 * zipf[n - 1], "{} vs {}", zipf[0], zipf[n - 1]);
        let uni = draw(&Picker::new(AccountDist::Uniform, n), &mut rng);
        assert!(uni.iter().all(|c| (700..1300).contains(c)));
        assert!("zipf:0,1".parse::<AccountDist>().is_err());
        assert!("normal".parse::<AccountDist>().is_err());
    }

    #[test]
    fn ramp_steps() {
        let r = RateSchedule::parse_ramp("1:500:30").unwrap();
        assert_eq!(r.rate_at(0.0), Some(1.0));
        assert_eq!(r.rate_at(29.9), Some(1.0));
        assert_eq!(r.rate_at(30.0), Some(501.0));
        assert_eq!(r.rate_at(95.0), Some(1501.0));
        assert!(RateSchedule::parse_ramp("1:2").is_err());
    }
}
