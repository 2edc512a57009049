//! Tendermint 0.34, CometBFT 0.37 and 1.0 nodes (plain and JSON logs),
//! checked height by height against each node's RPC, like the 0.38 tests.
//!
//! Ignored by default (`cargo test -- --include-ignored` runs them, as CI
//! does); they fail loudly when a binary is missing: install them with
//! `etl/scripts/install-extra-cometbft.sh` (into tools/bin/cometbft-v0.34,
//! -v0.37, -v1.0; or point FETH_COMETBFT_V034/_V037/_V1 at them).

use std::path::PathBuf;

use crate::common::*;

fn binary(var: &str, name: &str) -> PathBuf {
    tool(var, name, "etl/scripts/install-extra-cometbft.sh")
}

/// Runs a node, ingests its log with and without RPC, and compares.
async fn check(bin: PathBuf, format: LogFormat, app: &str, bad_txs: usize, software: &str) {
    let redis = Redis::start();
    let mut node = Node::init(&bin, format, app);
    node.start(None).await;
    node.send_txs("x", 25, bad_txs).await;
    node.wait_height(8).await;
    let h = node.height().await;
    node.wait_height(h + 2).await;
    // Copy a settled log: a live one can end between a height's commit line
    // (its txs) and its `executed block` line (valid/invalid), and the log
    // would then rightly know fewer results than the node's RPC.
    node.stop();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("node.log");
    std::fs::copy(&node.log, &log).expect("copy");
    node.start(None).await; // for RPC truth
    let chain = node.chain_id().await;
    let what = format!("{software} {format:?}");

    let out = ingest(&ingest_args(&redis.url, &[&log])).await;
    let f = &out.report.files[0];
    assert_eq!(f.malformed, 0, "{what}: {f:?}");
    assert!(
        f.detected.software.starts_with(software),
        "{what}: {:?}",
        f.detected
    );
    let top = out.report.heights.expect("heights").1;
    let truth = node.truth(top).await;
    let logs_know_results =
        software.starts_with("Tendermint 0.34") || software.starts_with("CometBFT 0.37");
    let s = stats(&stats_args(&redis.url, &chain)).await;
    assert_eq!(s.blocks, top, "{what}");
    assert_eq!(s.txs, truth.values().map(|t| t.0).sum::<u64>(), "{what}");
    if logs_know_results {
        assert_eq!(
            s.invalid,
            truth.values().map(|t| t.2).sum::<u64>(),
            "{what}: invalid from the log"
        );
        assert_eq!(s.results_unknown_blocks, 0, "{what}");
    } else {
        assert_eq!(s.results_unknown_blocks, top, "{what}");
    }
    if bad_txs > 0 {
        assert!(
            s.invalid > 0,
            "{what}: the rejected txs were counted invalid"
        );
    }
    assert_eq!(s.time_sources.commit_log, top - 1, "{what}");

    let _: () = redis.cmd(&["FLUSHALL"]).await;
    let mut args = ingest_args(&redis.url, &[&log]);
    args.comet_rpc = Some(node.rpc_url());
    ingest(&args).await;
    let snap = redis.snapshot().await;
    for h in 1..=top {
        let v: (Option<u64>, Option<u64>, Option<u64>, Option<i64>) = redis
            .cmd(&[
                "HMGET",
                &format!("feth:{chain}:block:{h}"),
                "txs",
                "valid",
                "invalid",
                "time_ns",
            ])
            .await;
        let t = truth[&h];
        assert_eq!(
            v,
            (Some(t.0), Some(t.1), Some(t.2), Some(t.3)),
            "{what}: height {h}"
        );
    }
    ingest(&args).await;
    assert_eq!(redis.snapshot().await, snap, "{what}: idempotent");
    let s = stats(&stats_args(&redis.url, &chain)).await;
    assert_eq!(s.time_sources.header_rpc, top - 1, "{what}");
    node.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Tendermint 0.34 / CometBFT 0.37 / 1.0: etl/scripts/install-extra-cometbft.sh"]
async fn tendermint_0_34() {
    let bin = binary("FETH_COMETBFT_V034", "cometbft-v0.34");
    for format in [LogFormat::Plain, LogFormat::Json] {
        check(
            bin.clone(),
            format,
            "persistent_kvstore",
            3,
            "Tendermint 0.34",
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Tendermint 0.34 / CometBFT 0.37 / 1.0: etl/scripts/install-extra-cometbft.sh"]
async fn cometbft_0_37() {
    let bin = binary("FETH_COMETBFT_V037", "cometbft-v0.37");
    for format in [LogFormat::Plain, LogFormat::Json] {
        check(
            bin.clone(),
            format,
            "persistent_kvstore",
            3,
            "CometBFT 0.37",
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Tendermint 0.34 / CometBFT 0.37 / 1.0: etl/scripts/install-extra-cometbft.sh"]
async fn cometbft_1_0() {
    let bin = binary("FETH_COMETBFT_V1", "cometbft-v1.0");
    for format in [LogFormat::Plain, LogFormat::Json] {
        check(bin.clone(), format, "kvstore", 0, "CometBFT 1.0").await;
    }
}
