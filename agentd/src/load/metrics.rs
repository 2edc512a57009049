//! `feth load --metrics`: the run's live figures as Prometheus metrics
//! (prometheus-client, OpenMetrics text), brought up to date from the
//! engine's ledger and the block scanner by [`LoadMetrics::sync`], with the
//! same accounting as the final report, so the last scrape agrees with it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use alloy_primitives::B256;
use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use super::ledger::TxEntry;
use super::report;
use super::scan::ScanState;

/// The `reason` label of a rejection.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Reason {
    reason: String,
}

/// What has been counted so far, to turn totals into counter increments.
#[derive(Debug, Default)]
struct Seen {
    sent: u64,
    accepted: u64,
    included: u64,
    rejected: HashMap<String, u64>,
    resends: u64,
    backoffs: u64,
    /// Ledger entries whose schedule lag was observed.
    lag_cursor: usize,
    /// Included hashes whose latency was observed.
    latency: HashSet<B256>,
}

/// The live metrics of one load run.
pub struct LoadMetrics {
    registry: Registry,
    sent: Counter,
    accepted: Counter,
    included: Counter,
    rejected: Family<Reason, Counter>,
    resends: Counter,
    backoffs: Counter,
    schedule_lag: Histogram,
    inclusion_latency: Histogram,
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
            rejected: Family::default(),
            resends: Counter::default(),
            backoffs: Counter::default(),
            // 1 ms to ~65 s.
            schedule_lag: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
            // 50 ms to ~13 min.
            inclusion_latency: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
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
            "backoffs",
            "Back-offs on a full mempool or a rate limit",
            m.backoffs.clone(),
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

    /// Brings the metrics up to `ledger` and `scan` (the run began at
    /// `run_start_unix`) and the engine's `resends` and `backoffs`.
    pub fn sync(
        &self,
        ledger: &[TxEntry],
        scan: &ScanState,
        run_start_unix: f64,
        retries: (u64, u64),
    ) {
        let a = report::account(ledger, scan, run_start_unix, 0);
        let accepted: u64 = a.series.iter().map(|s| s.accepted).sum();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let seen = &mut *seen;
        bump(&self.sent, &mut seen.sent, a.totals.signed);
        bump(&self.accepted, &mut seen.accepted, accepted);
        bump(&self.included, &mut seen.included, a.totals.included);
        for (reason, &n) in &a.totals.rejected_by_reason {
            let counter = self.rejected.get_or_create(&Reason {
                reason: reason.clone(),
            });
            bump(
                &counter,
                seen.rejected.entry(reason.clone()).or_default(),
                n,
            );
        }
        bump(&self.resends, &mut seen.resends, retries.0);
        bump(&self.backoffs, &mut seen.backoffs, retries.1);
        for e in ledger.iter().skip(seen.lag_cursor) {
            self.schedule_lag
                .observe((e.first_sent - e.intended).max(0.0));
        }
        seen.lag_cursor = ledger.len();
        let newly: Vec<(B256, usize)> = scan
            .included
            .iter()
            .filter(|(h, _)| !seen.latency.contains(*h))
            .map(|(h, b)| (*h, *b))
            .collect();
        if newly.is_empty() {
            return;
        }
        let intended: HashMap<B256, f64> = ledger.iter().map(|e| (e.hash, e.intended)).collect();
        for (hash, block) in newly {
            if let Some(at) = intended.get(&hash) {
                let latency = scan.blocks[block].seen - at;
                self.inclusion_latency.observe(latency.max(0.0));
                seen.latency.insert(hash);
            }
        }
    }
}

/// Adds to `counter` what `now` has over `seen` (counters never go down).
fn bump(counter: &Counter, seen: &mut u64, now: u64) {
    if now > *seen {
        counter.inc_by(now - *seen);
        *seen = now;
    }
}

/// The engine's resends and back-offs so far.
pub fn retries(c: &super::engine::Counters) -> (u64, u64) {
    (
        c.resends.load(Ordering::Relaxed),
        c.backoffs.load(Ordering::Relaxed),
    )
}
