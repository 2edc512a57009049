//! `feth bench stages` end to end, on its own real devnet, in miniature: a
//! few blocks of the whole node profiled under a closed-loop load, their
//! CPU put in stages by both processes' real frames, abcid's calls' wall
//! time read from its counters, and the whole node's flamegraph written.

use feth::bench::stages::{stages, Stage, StagesBenchPlan};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_transactions_cost_is_split_by_stage_on_a_real_devnet() {
    let out = tempfile::tempdir().unwrap();
    // The "before" node: its CheckTx and FinalizeBlock recover senders with
    // the pure-Rust library, so a few blocks hold samples of both. abcid's
    // smaller stages (CheckTx's own work, execution) cost a few µs a
    // transaction: 8 blocks at 997 Hz give them about ten samples each,
    // where 4 blocks at 499 Hz gave two or three, and none one run in ten.
    let r = stages(
        StagesBenchPlan {
            accounts: 100,
            blocks: 8,
            frequency_hz: 997,
            patches: "none".into(),
            timeout_commit: feth::devnet::GoDuration::from_millis(300),
            comet_set: vec![],
        },
        out.path(),
    )
    .await
    .expect("the benchmark runs");

    assert_eq!(r.heights.1, r.heights.0 + 7, "{:?}", r.heights);
    assert!(r.committed > 0 && r.committed_tps > 0.0, "{r:?}");
    let cpu = |stage: Stage| r.cpu.get(&stage).cloned().unwrap_or_default();
    // abcid's sender recovery, CheckTx and execution; CometBFT's ABCI
    // client and Go's scheduler. (CometBFT's consensus work, 1–7 µs a
    // transaction, is one sample or none of Go's 100 Hz over these blocks:
    // `classify` is tested on its frames in the unit tests.)
    assert!(cpu(Stage::SenderRecovery).abcid_us > 0.0, "{:?}", r.cpu);
    assert!(cpu(Stage::CheckTx).abcid_us > 0.0, "{:?}", r.cpu);
    assert!(cpu(Stage::Execution).abcid_us > 0.0, "{:?}", r.cpu);
    assert!(cpu(Stage::Runtime).cometbft_us > 0.0, "{:?}", r.cpu);
    assert!(cpu(Stage::AbciTransport).cometbft_us > 0.0, "{:?}", r.cpu);
    // The rules know most of the node's work.
    assert!(cpu(Stage::Other).share_pct < 50.0, "{:?}", r.cpu);
    let shares: f64 = r.cpu.values().map(|c| c.share_pct).sum();
    assert!((shares - 100.0).abs() < 1e-6, "{shares}");
    // The counters: CheckTx ran on the mempool connection, FinalizeBlock on
    // the consensus one, for a share of the span no larger than all of it.
    let wall = |call: &str| r.wall.iter().find(|w| w.call == call).unwrap().clone();
    for call in ["CheckTx (new)", "FinalizeBlock"] {
        let w = wall(call);
        assert!(
            w.us_per_tx > 0.0 && w.busy_pct > 0.0 && w.busy_pct <= 100.0,
            "{w:?}"
        );
    }
    assert!(
        ["mempool", "consensus"].contains(&r.busiest.0),
        "{:?}",
        r.busiest
    );
    let svg = std::fs::read_to_string(r.profile_dir.join("node.svg")).unwrap();
    assert!(svg.contains("abcid") && svg.contains("cometbft"));
    let mut text = Vec::new();
    r.write_summary(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("CPU per committed transaction, by stage"),
        "{text}"
    );
}
