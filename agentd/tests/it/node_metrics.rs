//! The devnet's two Prometheus endpoints, abcid's (`abcid --metrics`) and
//! CometBFT's (`instrumentation.prometheus`), scraped during a real load:
//! both parse as Prometheus text, and abcid's figures agree with the chain
//! read over web3 and CometBFT's RPC at the very height of the scrape.

use std::process::Command;
use std::time::{Duration, Instant};

use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::{self, LoadSettings};
use serde_json::{json, Value};

use crate::common::{funded, TestNet};
use crate::prom::{histogram_count, scrape, value};

/// Accounts funded before the load (one valid transaction each).
const FUNDED: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abcid_and_cometbft_metrics_agree_with_the_chain_under_load() {
    let net = TestNet::start().await;
    let state = &net.devnet.state;
    let abcid_url = state.metrics_url().expect("this abcid has --metrics");
    let comet_url = state.cometbft_metrics_url();

    // `feth devnet status --json` names both endpoints.
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(["devnet", "status", "--json", "--dir"])
        .arg(&state.options.dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["metrics"], json!(abcid_url));
    assert_eq!(status["cometbft_metrics"], json!(comet_url));

    let (keys, _dir) = funded(&net, FUNDED, 11).await;
    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(150.0), keys.len());
    plan.duration = Some(Duration::from_secs(4));
    let running = load::start(LoadSettings::new(&net.web3(), plan), keys)
        .await
        .unwrap();

    // A scrape of abcid between two equal web3 heights, at that height,
    // once the load's transactions are being committed.
    let client = net.client();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (height, abcid) = loop {
        let before = client.block_number().await.unwrap();
        let s = scrape(&abcid_url).await;
        let after = client.block_number().await.unwrap();
        let valid = value(&s, "abcid_transactions_total", &[("result", "valid")]);
        if before == after
            && value(&s, "abcid_height", &[]) == before as f64
            && valid > FUNDED as f64
        {
            break (before, s);
        }
        assert!(
            Instant::now() < deadline,
            "no scrape at a steady height with load transactions in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // CometBFT's, bracketed the same way: its consensus height is the one
    // being decided, one past its last block, which abcid commits first.
    let before = client.block_number().await.unwrap();
    let comet = scrape(&comet_url).await;
    let after = client.block_number().await.unwrap();
    let r = running.finish().await.unwrap();
    assert!(r.totals.included > 0, "{:?}", r.totals);

    let consensus = value(&comet, "cometbft_consensus_height", &[]);
    assert!(
        (before as f64..=(after + 1) as f64).contains(&consensus),
        "CometBFT at height {consensus}, web3 went from {before} to {after}"
    );

    // abcid's counters against blocks 1..=height, as the chain tells them.
    let (mut valid, mut invalid) = (0u64, 0u64);
    let http = reqwest::Client::new();
    for n in 1..=height {
        let block = client.block(n).await.unwrap().expect("a committed block");
        valid += block.transactions.len() as u64;
        let results: Value = http
            .get(format!("{}/block_results?height={n}", state.rpc_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let codes = results["result"]["txs_results"].as_array().cloned();
        invalid += codes
            .unwrap_or_default()
            .iter()
            .filter(|t| t["code"].as_u64().unwrap_or(0) != 0)
            .count() as u64;
    }
    // A new chain: this abcid committed every block since the first.
    let blocks = value(&abcid, "abcid_blocks_committed_total", &[]);
    assert_eq!(blocks, height as f64);
    let counted = |result| value(&abcid, "abcid_transactions_total", &[("result", result)]);
    assert_eq!(counted("valid"), valid as f64);
    assert_eq!(counted("invalid"), invalid as f64);
    for histogram in [
        "abcid_finalize_block_duration_seconds",
        "abcid_store_commit_duration_seconds",
    ] {
        assert_eq!(histogram_count(&abcid, histogram), height, "{histogram}");
    }
    // Every valid transaction came through CheckTx and had its sender
    // recovered (once, with `sender-cache`) by this abcid.
    assert!(histogram_count(&abcid, "abcid_check_tx_duration_seconds") >= valid);
    assert!(value(&abcid, "abcid_sender_recoveries_total", &[]) >= valid as f64);
    assert!(abcid
        .samples
        .iter()
        .any(|x| x.metric == "abcid_check_state_transactions"));

    // The build info says what web3_clientVersion says.
    let version: String = client.call("web3_clientVersion", json!([])).await.unwrap();
    let info = abcid
        .samples
        .iter()
        .find(|x| x.metric == "abcid_build_info")
        .expect("abcid_build_info");
    let label = |k| info.labels.get(k).unwrap_or_default().to_string();
    assert_eq!(
        format!("abcid/v{}/patches={}", label("version"), label("patches")),
        version
    );
    assert_eq!(value(&abcid, "abcid_build_info", &[]), 1.0);
}
