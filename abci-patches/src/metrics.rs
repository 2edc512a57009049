//! abcid's own Prometheus metrics (prometheus-client, OpenMetrics text),
//! served by `feth_metrics_http` when `abcid --metrics ADDR` is given.
//!
//! Every name starts with `abcid_` and is in base units:
//!
//! - `abcid_blocks_committed_total`, `abcid_height`: blocks this process
//!   committed since it started, and the last committed height;
//! - `abcid_transactions_total{result="valid"|"invalid"}`: transactions of
//!   the committed blocks with code 0 (executed, successful or reverted) and
//!   with a non-zero code (rejected by FinalizeBlock's checks);
//! - `abcid_check_tx_duration_seconds{type="new"|"recheck"}`: CheckTx as
//!   CometBFT waits for it (waiting to enter the application included);
//!   with `app-mempool`, the new ones as web3 runs them (waiting for the
//!   pool included), the pool's recheck being part of Commit;
//! - `abcid_finalize_block_duration_seconds`: FinalizeBlock's execution
//!   (the block log line's `finalize_ms`);
//! - `abcid_store_commit_duration_seconds`: Commit's write of the block to
//!   redb (the durable part of `commit_ms`; with `async-commit`, handing
//!   the block to the background writer);
//! - `abcid_sender_recoveries_total`: ECDSA sender recoveries done (what
//!   `sender-cache` saves);
//! - `abcid_check_state_transactions`: transactions CheckTx admitted (or,
//!   with `nonce-queue`, queued) since the last Commit, new and rechecked,
//!   i.e. what the check state holds (CometBFT does not run CheckTx during its Commit, so the reset at
//!   Commit and the admissions do not interleave);
//! - `abcid_speculations_used_total`, `abcid_speculations_dropped_total`:
//!   with `optimistic-execution`, executions of an accepted proposal that
//!   FinalizeBlock took, and that it dropped (another proposal was decided,
//!   or the speculation failed);
//! - `abcid_build_info{version,patches} 1`: the version and the patches in
//!   force, spelled as in `web3_clientVersion`.
//!
//! A scrape sees whole blocks: a block's figures are recorded and encoded
//! under one lock, so the block metrics of a scrape always agree with each
//! other.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::{text::encode, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use crate::blocklog::BlockLine;
use crate::mempool::CheckKind;
use crate::node::Speculations;
use crate::patches::Patches;

/// `abcid_transactions_total`'s label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TxResult {
    result: &'static str,
}

/// `abcid_proposals_total`'s label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProposalVerdict {
    verdict: &'static str,
}

/// What ProcessProposal made of a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// This node's own, accepted unchecked.
    Own,
    /// Checked and accepted.
    Accepted,
    /// Checked and rejected.
    Rejected,
}

/// `abcid_check_tx_duration_seconds`'s label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckType {
    r#type: &'static str,
}

/// `abcid_build_info`'s labels.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildInfo {
    version: String,
    patches: String,
}

/// The web3 server's subscription notifications, counted.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    /// Handed to a subscriber's connection.
    pub sent: Counter,
    /// Dropped: the subscriber's connection had no room for them.
    pub dropped: Counter,
    /// Subscriptions closed because their subscriber fell behind.
    pub closed_slow: Counter,
    /// A block's notifications of one kind (its header, its logs) made and
    /// encoded: once per block, whatever the number of subscribers.
    pub blocks_encoded: Counter,
}

/// abcid's metrics, updated by the ABCI calls and encoded on a scrape.
pub struct Metrics {
    registry: Registry,
    blocks: Counter,
    height: Gauge,
    txs: Family<TxResult, Counter>,
    proposals: Family<ProposalVerdict, Counter>,
    check_tx: Family<CheckType, Histogram>,
    finalize_block: Histogram,
    store_commit: Histogram,
    check_state: Gauge,
    notifications: Notifications,
    /// Held while a block is recorded and while the registry is encoded.
    block_lock: Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Registers every metric under the `abcid_` prefix, for a node running
    /// `patches` whose speculations `speculations` counts.
    pub fn new(patches: Patches, speculations: Speculations) -> Self {
        let mut registry = Registry::with_prefix("abcid");
        // 10 µs to ~0.33 s.
        let check_tx = Family::<CheckType, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(1e-5, 2.0, 16))
        });
        let m = Self {
            blocks: Counter::default(),
            height: Gauge::default(),
            txs: Family::default(),
            proposals: Family::default(),
            check_tx,
            // 100 µs to ~13 s.
            finalize_block: Histogram::new(exponential_buckets(1e-4, 2.0, 18)),
            // 100 µs to ~3.3 s.
            store_commit: Histogram::new(exponential_buckets(1e-4, 2.0, 16)),
            check_state: Gauge::default(),
            notifications: Notifications::default(),
            block_lock: Mutex::new(()),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "blocks_committed",
            "Blocks committed since this process started",
            m.blocks.clone(),
        );
        r.register("height", "Last committed height", m.height.clone());
        r.register(
            "transactions",
            "Transactions of committed blocks, valid (code 0) or invalid",
            m.txs.clone(),
        );
        r.register(
            "proposals",
            "Proposals ProcessProposal judged: own (this node's, unchecked), accepted or rejected",
            m.proposals.clone(),
        );
        r.register_with_unit(
            "check_tx_duration",
            "CheckTx duration, new or recheck, waiting for the application included",
            Unit::Seconds,
            m.check_tx.clone(),
        );
        r.register_with_unit(
            "finalize_block_duration",
            "FinalizeBlock execution time",
            Unit::Seconds,
            m.finalize_block.clone(),
        );
        r.register_with_unit(
            "store_commit_duration",
            "Time Commit spends writing the block to the store",
            Unit::Seconds,
            m.store_commit.clone(),
        );
        r.register(
            "sender_recoveries",
            "ECDSA sender recoveries",
            crate::tx::SENDER_RECOVERIES.clone(),
        );
        r.register(
            "check_state_transactions",
            "Transactions CheckTx admitted since the last Commit",
            m.check_state.clone(),
        );
        r.register(
            "speculations_used",
            "Executions of an accepted proposal that FinalizeBlock took",
            speculations.used,
        );
        r.register(
            "speculations_dropped",
            "Executions of an accepted proposal that FinalizeBlock dropped",
            speculations.dropped,
        );
        m.register_notifications(r);
        let info = Family::<BuildInfo, Gauge>::default();
        info.get_or_create(&BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            patches: patches.to_string(),
        })
        .set(1);
        r.register("build_info", "Version and patches in force", info);
        Self { registry, ..m }
    }

    fn register_notifications(&self, r: &mut Registry) {
        let n = &self.notifications;
        r.register(
            "web3_notifications_sent",
            "Subscription notifications handed to their connections",
            n.sent.clone(),
        );
        r.register(
            "web3_notifications_dropped",
            "Subscription notifications dropped: the connection had no room",
            n.dropped.clone(),
        );
        r.register(
            "web3_subscriptions_closed_slow",
            "Subscriptions closed because their subscriber fell behind",
            n.closed_slow.clone(),
        );
        r.register(
            "web3_block_notifications_encoded",
            "Block notifications (a header, a block's logs) made, once per block and kind",
            n.blocks_encoded.clone(),
        );
    }

    /// The web3 server's notification counters (registered here).
    pub fn notifications(&self) -> Notifications {
        self.notifications.clone()
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _block = self.block_lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = encode(&mut out, &self.registry) {
            tracing::warn!("cannot encode the metrics: {e}");
        }
        out
    }

    /// One CheckTx of `kind` took `took`; `admitted` when its verdict was.
    pub fn check_tx(&self, kind: CheckKind, took: Duration, admitted: bool) {
        let r#type = match kind {
            CheckKind::New => "new",
            CheckKind::Recheck => "recheck",
        };
        self.check_tx
            .get_or_create(&CheckType { r#type })
            .observe(took.as_secs_f64());
        if admitted {
            self.check_state.inc();
        }
    }

    /// ProcessProposal judged a proposal.
    pub fn proposal(&self, verdict: Verdict) {
        let verdict = match verdict {
            Verdict::Own => "own",
            Verdict::Accepted => "accepted",
            Verdict::Rejected => "rejected",
        };
        self.proposals
            .get_or_create(&ProposalVerdict { verdict })
            .inc();
    }

    /// A block was committed, as its log line reports it.
    pub fn block(&self, line: &BlockLine) {
        let _block = self.block_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.blocks.inc();
        self.height
            .set(i64::try_from(line.height).unwrap_or(i64::MAX));
        for (result, n) in [("valid", line.valid), ("invalid", line.invalid)] {
            self.txs
                .get_or_create(&TxResult { result })
                .inc_by(n as u64);
        }
        self.finalize_block.observe(line.finalize.as_secs_f64());
        self.store_commit.observe(line.store.as_secs_f64());
        self.check_state.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::B256;

    fn value<'a>(text: &'a str, series: &str) -> Option<&'a str> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
    }

    #[test]
    fn blocks_and_check_tx_reach_the_encoding() {
        let speculations = Speculations::default();
        let m = Metrics::new(Patches::NONE, speculations.clone());
        speculations.dropped.inc();
        m.check_tx(CheckKind::New, Duration::from_micros(30), true);
        m.check_tx(CheckKind::New, Duration::from_micros(30), false);
        m.check_tx(CheckKind::Recheck, Duration::from_micros(5), true);
        let text = m.encode();
        assert_eq!(value(&text, "abcid_check_state_transactions"), Some("2"));
        assert_eq!(
            value(
                &text,
                r#"abcid_check_tx_duration_seconds_count{type="new"}"#
            ),
            Some("2")
        );
        let line = BlockLine {
            height: 7,
            valid: 3,
            invalid: 1,
            finalize: Duration::from_millis(2),
            commit: Duration::from_millis(3),
            store: Duration::from_millis(1),
            recheck: Duration::ZERO,
            recheck_dropped: 0,
            time_secs: 0,
            time_nanos: 0,
            app_hash: B256::ZERO,
        };
        m.block(&line);
        m.block(&BlockLine { height: 8, ..line });
        let text = m.encode();
        assert_eq!(value(&text, "abcid_blocks_committed_total"), Some("2"));
        assert_eq!(value(&text, "abcid_height"), Some("8"));
        assert_eq!(
            value(&text, r#"abcid_transactions_total{result="valid"}"#),
            Some("6")
        );
        assert_eq!(
            value(&text, r#"abcid_transactions_total{result="invalid"}"#),
            Some("2")
        );
        assert_eq!(value(&text, "abcid_check_state_transactions"), Some("0"));
        assert_eq!(
            value(&text, "abcid_store_commit_duration_seconds_count"),
            Some("2")
        );
        let info = format!(
            r#"abcid_build_info{{version="{}",patches="none"}}"#,
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(value(&text, &info), Some("1"), "{text}");
        assert_eq!(
            value(&text, "abcid_speculations_dropped_total"),
            Some("1"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
