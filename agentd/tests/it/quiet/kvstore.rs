//! The kvstore reference: CometBFT's own kvstore node under the open-loop
//! sender: a modest step it commits, all valid, and one over the capacity
//! the test gives the node, which it cannot keep up with.

use std::time::Duration;

use feth::kvstore::{KvProbe, KvReferenceConfig};
use feth::saturate::{judge, Clock, Probe, SearchConfig, StepMeasure, Verdict};
use feth_comet::rpc::Rpc;

async fn mempool_txs(probe: &KvProbe) -> u64 {
    let rpc = Rpc::new(probe.rpc_url(), 1, 1).unwrap();
    rpc.mempool().await.unwrap().txs
}

/// 500 tx/s: the kvstore commits, all valid, and the window's count agrees
/// with its committed rate. How close committed and sent come to offered,
/// and the agent's schedule lag, are the machine's figures: printed here,
/// and `feth compare` prints the kvstore reference's rate.
fn assert_commits(m: &StepMeasure, seconds: f64) {
    eprintln!(
        "kvstore at {:.0} tx/s offered: sent {:.0}, committed {:.0} tx/s; schedule lag p99 {:.0} ms, slots busy {:.2}",
        m.offered_tps, m.sent_tps, m.committed_tps, m.schedule_lag_p99_ms, m.slots_busy
    );
    assert_eq!(m.clock, Clock::CometbftHeaders);
    assert!(m.last_height > m.first_height, "{m:?}");
    assert!(m.committed_tps > 0.0 && m.sent_tps > 0.0, "{m:?}");
    assert_eq!(m.invalid, Some(0), "{m:?}");
    // The header span of the window's blocks is the window give or take a
    // block interval.
    let expected = m.committed_tps * seconds;
    let slack = m.offered_tps * m.block_time_p95_ms / 1e3 + 0.05 * expected;
    assert!((m.valid as f64 - expected).abs() <= slack, "{m:?}");
    assert!(m.block_time_p50_ms > 0.0 && m.block_time_p95_ms >= m.block_time_p50_ms);
    assert!(m.node_cpu_us_per_tx.is_some_and(|us| us > 0.0), "{m:?}");
    assert!(m.agent_cpu_us_per_tx > 0.0, "{m:?}");
    assert!(m.mempool_start.is_some() && m.mempool_end.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kvstore_probe_commits_a_modest_rate_and_falls_behind_one_over_its_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = KvReferenceConfig::new(dir.path());
    // The node's capacity, set by the test rather than by this machine: a
    // block holds at most what the mempool holds (2,000 transactions) and
    // blocks come at least 300 ms apart, so at most 6,667 tx/s are
    // committed however fast the machine.
    cfg.node.timeout_commit = feth::devnet::GoDuration::from_millis(300);
    cfg.node.mempool_size = 2_000;
    cfg.warmup = Duration::from_secs(1);
    let mut probe = KvProbe::start(cfg).await.expect("kvstore node starts");

    let modest = probe.step(500.0, 4.0).await.expect("500 tx/s step");
    assert_commits(&modest, 4.0);
    let sends = probe.last_sends().expect("the step's sends");
    assert!(sends.accepted > 0 && sends.rejected.is_empty(), "{sends:?}");
    // Every accepted transaction was committed: none is left behind.
    assert_eq!(mempool_txs(&probe).await, 0, "drained after the step");

    // 20,000 tx/s is three times that capacity: under half is committed,
    // and the step is not judged kept up (the chain fell behind; on a
    // machine too slow to offer it, the agent did).
    let over = probe.step(20_000.0, 3.0).await.expect("20k tx/s step");
    eprintln!("kvstore over its capacity: {over:?}");
    assert!(over.committed_tps < 0.5 * over.offered_tps, "{over:?}");
    let search = SearchConfig {
        step_secs: 3.0,
        ..SearchConfig::default()
    };
    let verdict = judge(&over, &search);
    assert_ne!(verdict, Verdict::KeepsUp, "{over:?}");
    assert!(over.valid > 0, "it did commit: {over:?}");
    assert_eq!(mempool_txs(&probe).await, 0, "drained after the step");
}
