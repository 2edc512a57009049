//! `feth load --metrics`: the run's live figures as Prometheus metrics
//! (prometheus-client, OpenMetrics text), brought up to date from the
//! run's [`Tally`] by [`LoadMetrics::sync`] (counters) and fed by the ledger
//! as transactions are sent and included (histograms), with the same
//! accounting as the final report, so the last scrape agrees with it.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use super::tally::Tally;
use crate::sync::lock;

/// The `reason` label of a rejection.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: String,
}

/// The labels of a read: its method and how it ended.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadLabels {
    method: String,
    outcome: String,
}

/// The `method` label of a read's latency.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: String,
}

/// What has been counted so far, to turn totals into counter increments.
#[derive(Debug, Default)]
struct Seen {
    sent: u64,
    accepted: u64,
    included: u64,
    rejected: HashMap<String, u64>,
    reverted: u64,
    resends: u64,
    fee_resends: u64,
    backoffs: u64,
}

/// The engine's retry counts so far (see [`crate::engine::Engine::retries`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retries {
    /// Resubmissions of the same signed bytes.
    pub resends: u64,
    /// Re-signings with a higher fee after a refusal for the fee.
    pub fee_resends: u64,
    /// Back-offs on a full mempool or a rate limit.
    pub backoffs: u64,
}

/// The live metrics of one load run.
pub struct LoadMetrics {
    registry: Registry,
    sent: Counter,
    accepted: Counter,
    included: Counter,
    reverted: Counter,
    rejected: Family<Reason, Counter>,
    resends: Counter,
    fee_resends: Counter,
    backoffs: Counter,
    backlog: Gauge,
    schedule_lag: Histogram,
    inclusion_latency: Histogram,
    reads: Family<ReadLabels, Counter>,
    read_latency: Family<MethodLabel, Histogram, fn() -> Histogram>,
    offered: Gauge<f64, AtomicU64>,
    seen: Mutex<Seen>,
}

impl std::fmt::Debug for LoadMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadMetrics").finish_non_exhaustive()
    }
}

impl Default for LoadMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadMetrics {
    /// Registers every metric under the `feth_load_` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("feth_load");
        let m = Self {
            sent: Counter::default(),
            accepted: Counter::default(),
            included: Counter::default(),
            reverted: Counter::default(),
            rejected: Family::default(),
            resends: Counter::default(),
            fee_resends: Counter::default(),
            backoffs: Counter::default(),
            backlog: Gauge::default(),
            // 1 ms to ~65 s.
            schedule_lag: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
            // 50 ms to ~13 min.
            inclusion_latency: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            reads: Family::default(),
            read_latency: Family::new_with_constructor(read_histogram),
            offered: Gauge::default(),
            seen: Mutex::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "sent",
            "Transactions submitted (first submissions, one per hash)",
            m.sent.clone(),
        );
        r.register(
            "accepted",
            "Transactions a node accepted",
            m.accepted.clone(),
        );
        r.register(
            "included",
            "Transactions found in a committed block",
            m.included.clone(),
        );
        r.register(
            "reverted",
            "Included transactions whose receipt status is 0",
            m.reverted.clone(),
        );
        r.register(
            "rejected",
            "Transactions refused and in no block, by reason",
            m.rejected.clone(),
        );
        r.register(
            "resends",
            "Resubmissions of the same signed bytes",
            m.resends.clone(),
        );
        r.register(
            "fee_resends",
            "Transactions re-signed with the same nonce and a higher fee after a refusal for their fee",
            m.fee_resends.clone(),
        );
        r.register(
            "backoffs",
            "Back-offs on a full mempool or a rate limit",
            m.backoffs.clone(),
        );
        r.register(
            "backlog_transactions",
            "Accepted by a node and not yet included: grows when the node accepts faster than it commits",
            m.backlog.clone(),
        );
        r.register_with_unit(
            "schedule_lag",
            "First submission minus intended send time (open loop)",
            Unit::Seconds,
            m.schedule_lag.clone(),
        );
        r.register_with_unit(
            "inclusion_latency",
            "Intended send time to the agent first reading the including block",
            Unit::Seconds,
            m.inclusion_latency.clone(),
        );
        r.register(
            "reads",
            "Web3 reads due beside the writes (--reads), by method and outcome (ok, wrong, failed, skipped)",
            m.reads.clone(),
        );
        r.register_with_unit(
            "read_latency",
            "Request to answer of the reads answered (--reads), by method",
            Unit::Seconds,
            m.read_latency.clone(),
        );
        r.register(
            "offered_rate_transactions_per_second",
            "The rate the schedule offers now (0: closed loop or sending ended)",
            m.offered.clone(),
        );
        Self { registry, ..m }
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Err(e) = encode(&mut out, &self.registry) {
            tracing::warn!("cannot encode the metrics: {e}");
        }
        out
    }

    /// Sets the offered rate, tx/s.
    pub fn set_offered(&self, rate: f64) {
        self.offered.set(rate);
    }

    /// Records a schedule lag, seconds.
    pub fn observe_lag(&self, seconds: f64) {
        self.schedule_lag.observe(seconds.max(0.0));
    }

    /// Counts a read of `method` that ended as `outcome`, answered after
    /// `took` when it was answered.
    pub fn observe_read(&self, method: &str, outcome: &str, took: Option<Duration>) {
        let labels = ReadLabels {
            method: method.to_string(),
            outcome: outcome.to_string(),
        };
        self.reads.get_or_create(&labels).inc();
        if let Some(took) = took {
            let label = MethodLabel {
                method: method.to_string(),
            };
            self.read_latency
                .get_or_create(&label)
                .observe(took.as_secs_f64());
        }
    }

    /// Records an inclusion latency (intended send → block seen), seconds.
    pub fn observe_inclusion(&self, seconds: f64) {
        self.inclusion_latency.observe(seconds.max(0.0));
    }

    /// Brings the counters and the backlog up to the `tally` and the
    /// engine's `retries` (the histograms are fed as the ledger goes).
    pub fn sync(&self, tally: &Tally, retries: Retries) {
        let mut seen = lock(&self.seen);
        let seen = &mut *seen;
        let t = &tally.totals;
        bump(&self.sent, &mut seen.sent, t.signed);
        bump(&self.accepted, &mut seen.accepted, tally.accepted);
        bump(&self.included, &mut seen.included, t.included);
        bump(&self.reverted, &mut seen.reverted, t.reverted);
        for (reason, &n) in &t.rejected_by_reason {
            let counter = self.rejected.get_or_create(&Reason {
                reason: reason.clone(),
            });
            bump(
                &counter,
                seen.rejected.entry(reason.clone()).or_default(),
                n,
            );
        }
        bump(&self.resends, &mut seen.resends, retries.resends);
        bump(
            &self.fee_resends,
            &mut seen.fee_resends,
            retries.fee_resends,
        );
        bump(&self.backoffs, &mut seen.backoffs, retries.backoffs);
        let backlog = tally.accepted.saturating_sub(t.included);
        self.backlog.set(i64::try_from(backlog).unwrap_or(i64::MAX));
    }
}

/// A read latency histogram: 0.5 ms to ~16 s.
fn read_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// Adds to `counter` what `now` has over `seen` (counters never go down).
fn bump(counter: &Counter, seen: &mut u64, now: u64) {
    if now > *seen {
        counter.inc_by(now - *seen);
        *seen = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pick::RateSchedule;
    use crate::tally::TallyConfig;

    /// The value of the sample line named `name` in `text`.
    fn sample(text: &str, name: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
    }

    #[test]
    fn fee_resends_and_the_backlog_follow_the_run() {
        let mut tally = Tally::new(TallyConfig {
            run_start_unix: 0.0,
            schedule: RateSchedule::Closed,
            window_blocks: None,
            start_time: 0.0,
            start_timestamp: 0,
        });
        let m = LoadMetrics::new();
        for _ in 0..7 {
            tally.accepted(0.5);
        }
        tally.totals.included = 2;
        let retries = Retries {
            resends: 1,
            fee_resends: 3,
            backoffs: 0,
        };
        m.sync(&tally, retries);
        let text = m.encode();
        assert_eq!(sample(&text, "feth_load_fee_resends_total"), 3.0);
        assert_eq!(sample(&text, "feth_load_backlog_transactions"), 5.0);
        // The backlog is a gauge: it falls as the node catches up.
        tally.totals.included = 7;
        m.sync(
            &tally,
            Retries {
                fee_resends: 4,
                ..retries
            },
        );
        let text = m.encode();
        assert_eq!(sample(&text, "feth_load_fee_resends_total"), 4.0);
        assert_eq!(sample(&text, "feth_load_backlog_transactions"), 0.0);
    }
}
