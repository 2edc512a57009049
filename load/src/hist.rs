//! A log-bucketed histogram of delays (milliseconds): percentiles within
//! 0.5 % in constant memory, however many values a run records. Histograms
//! of several runs add up ([`LogHist::merge`]), so agents' percentiles are
//! merged from their histograms (saved in their reports), never averaged.

use serde::{Deserialize, Serialize};

/// Percentiles of a delay, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

/// Values at or below this (ms) share the first bucket.
const FLOOR_MS: f64 = 0.001;
/// Relative width of a bucket.
const GROWTH: f64 = 1.01;

/// Counts of values in buckets `[FLOOR·GROWTHⁱ⁻¹, FLOOR·GROWTHⁱ)`, with the
/// exact maximum. A delay of a day needs about 2,600 buckets (21 KB).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "SavedHist", try_from = "SavedHist")]
pub struct LogHist {
    counts: Vec<u64>,
    total: u64,
    max: f64,
}

/// A histogram as saved in a report: its non-empty buckets, with the
/// bucket layout they assume.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SavedHist {
    floor_ms: f64,
    growth: f64,
    /// (bucket, count) of the non-empty buckets.
    buckets: Vec<(usize, u64)>,
    max: f64,
}

impl From<LogHist> for SavedHist {
    fn from(h: LogHist) -> Self {
        Self {
            floor_ms: FLOOR_MS,
            growth: GROWTH,
            buckets: h
                .counts
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| (i, n))
                .collect(),
            max: h.max,
        }
    }
}

impl TryFrom<SavedHist> for LogHist {
    type Error = String;

    fn try_from(s: SavedHist) -> Result<Self, String> {
        if s.floor_ms != FLOOR_MS || s.growth != GROWTH {
            return Err(format!(
                "a histogram with buckets from {} ms growing by {} (this feth uses {FLOOR_MS} ms and {GROWTH}): written by another feth version",
                s.floor_ms, s.growth
            ));
        }
        let mut h = LogHist {
            max: s.max,
            ..LogHist::default()
        };
        for (i, n) in s.buckets {
            if i > 100_000 {
                return Err(format!("histogram bucket {i} is out of range"));
            }
            if h.counts.len() <= i {
                h.counts.resize(i + 1, 0);
            }
            h.counts[i] += n;
            h.total += n;
        }
        Ok(h)
    }
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

    /// Adds what `other` recorded (another agent's histogram of the same
    /// delay): the result is the histogram of both runs' values.
    pub fn merge(&mut self, other: &LogHist) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
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
    fn merged_histograms_are_the_histogram_of_all_values_and_round_trip() {
        // Two agents with different delays: the merged median is the median
        // of all 300 values (between the two), not an average of medians.
        let (mut a, mut b, mut all) = (LogHist::default(), LogHist::default(), LogHist::default());
        for v in 1..=100 {
            a.record(v as f64);
            all.record(v as f64);
        }
        for v in 1001..=1200 {
            b.record(v as f64);
            all.record(v as f64);
        }
        let mut merged = a.clone();
        merged.merge(&b);
        assert_eq!(merged, all);
        assert_eq!(merged.count(), 300);
        assert!(
            (merged.quantile(0.5) - 1050.0).abs() < 10.0,
            "{}",
            merged.quantile(0.5)
        );
        let text = serde_json::to_string(&merged).unwrap();
        let back: LogHist = serde_json::from_str(&text).unwrap();
        assert_eq!(back, merged);
        let other = text.replace("\"growth\":1.01", "\"growth\":1.02");
        let e = serde_json::from_str::<LogHist>(&other)
            .unwrap_err()
            .to_string();
        assert!(e.contains("another feth version"), "{e}");
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
