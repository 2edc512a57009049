//! A log-bucketed histogram of delays (milliseconds): percentiles within
//! 0.5 % in constant memory, however many values a run records.

use super::report::Latency;

/// Values at or below this (ms) share the first bucket.
const FLOOR_MS: f64 = 0.001;
/// Relative width of a bucket.
const GROWTH: f64 = 1.01;

/// Counts of values in buckets `[FLOOR·GROWTHⁱ⁻¹, FLOOR·GROWTHⁱ)`, with the
/// exact maximum. A delay of a day needs about 2,600 buckets (21 KB).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogHist {
    counts: Vec<u64>,
    total: u64,
    max: f64,
}

fn bucket(v: f64) -> usize {
    if v <= FLOOR_MS || !v.is_finite() {
        0
    } else {
        1 + ((v / FLOOR_MS).ln() / GROWTH.ln()) as usize
    }
}

/// The middle (geometric) of bucket `i`.
fn middle(i: usize) -> f64 {
    if i == 0 {
        0.0
    } else {
        FLOOR_MS * GROWTH.powf(i as f64 - 0.5)
    }
}

impl LogHist {
    /// Records `v` ms (negative values count as 0).
    pub fn record(&mut self, v: f64) {
        let v = v.max(0.0);
        let i = bucket(v);
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q` quantile (0–1), nearest rank, within half a bucket (0.5 %);
    /// 0 when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((self.total - 1) as f64 * q.clamp(0.0, 1.0)).round() as u64;
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen > rank {
                return middle(i).min(self.max);
            }
        }
        self.max
    }

    /// p50, p90, p99 and the exact maximum.
    pub fn latency(&self) -> Latency {
        Latency {
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            max: self.max,
        }
    }

    /// What was recorded after `earlier` (a copy of this histogram taken
    /// before), for figures over a stretch of the run; the maximum is that of
    /// the later values' buckets.
    pub fn since(&self, earlier: &LogHist) -> LogHist {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, n)| n - earlier.counts.get(i).copied().unwrap_or(0).min(*n))
            .collect();
        let top = counts.iter().rposition(|&n| n > 0);
        LogHist {
            total: counts.iter().sum(),
            max: top.map_or(0.0, |i| {
                let upper = FLOOR_MS * GROWTH.powi(i as i32);
                upper.min(self.max)
            }),
            counts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_half_a_percent_and_the_max_is_exact() {
        let mut h = LogHist::default();
        for v in 1..=1000 {
            h.record(v as f64);
        }
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.006;
        assert!(close(h.quantile(0.5), 500.0), "{}", h.quantile(0.5));
        assert!(close(h.quantile(0.99), 990.0), "{}", h.quantile(0.99));
        assert_eq!(h.latency().max, 1000.0);
        assert_eq!(h.count(), 1000);
        assert_eq!(LogHist::default().latency(), Latency::default());
    }

    #[test]
    fn since_keeps_only_the_later_values() {
        let mut h = LogHist::default();
        h.record(5.0);
        let before = h.clone();
        h.record(2000.0);
        h.record(3000.0);
        let later = h.since(&before);
        assert_eq!(later.count(), 2);
        assert!((later.quantile(0.0) - 2000.0).abs() < 20.0);
        assert_eq!(later.latency().max, 3000.0);
        h.record(0.0);
        assert_eq!(h.quantile(0.0), 0.0);
    }
}
