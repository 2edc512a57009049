//! `feth fund` on a real devnet: the batch path through the disperse
//! contract, killed mid-way and re-run, pays every account exactly once;
//! the transfer path still works; batches stay within their gas bound.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use feth::accounts::KeySet;
use feth::eth::EthClient;
use feth::fund::disperse;
use serde_json::Value;

use crate::common::TestNet;

const ETH: u64 = 1_000_000_000_000_000_000;

fn fund_command(net: &TestNet, keys: &Path, seed: &str, count: usize, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_feth"));
    let count = count.to_string();
    let root_key = net.devnet.state.root_key();
    cmd.args([
        "fund",
        "--network",
        &net.web3(),
        "--count",
        &count,
        "--amount",
        "1eth",
    ])
    .arg("--root-key")
    .arg(root_key)
    .args(["--wait", "120", "--json"])
    .args(extra);
    if keys.exists() {
        cmd.arg("--load").arg(keys);
    } else {
        cmd.arg("--out").arg(keys).args(["--seed", seed]);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn report_of(child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "feth fund failed: {stderr}");
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["report"].clone()
}

async fn balances(client: &EthClient, keys: &Path, count: usize) -> Vec<U256> {
    let keys = KeySet::load(keys).unwrap();
    let results = client.balances(&keys.addresses[..count]).await;
    results.into_iter().map(Result::unwrap).collect()
}

/// Every batch to `contract` in the chain used no more gas than its bound.
async fn assert_batches_within_gas_bound(client: &EthClient, contract: Address) -> usize {
    let head = client.block_number().await.unwrap();
    let mut batches = 0;
    for h in 1..=head {
        for tx in &crate::common::block_txs(client, h).await {
            if tx["to"].as_str().and_then(|t| t.parse::<Address>().ok()) != Some(contract) {
                continue;
            }
            let input =
                hex::decode(tx["input"].as_str().unwrap().trim_start_matches("0x")).unwrap();
            let recipients = (input.len() - 4 - 4 * 32) / 64;
            let hash = tx["hash"].as_str().unwrap().parse().unwrap();
            let receipt = client.receipt(hash).await.unwrap().unwrap();
            assert_eq!(
                receipt.status.map(|s| s.to::<u64>()),
                Some(1),
                "batch {hash} failed"
            );
            let used = receipt.gas_used.to::<u64>();
            assert!(
                used <= disperse::BatchGas::DEFAULT.gas(recipients),
                "{used} gas for {recipients} recipients"
            );
            batches += 1;
        }
    }
    batches
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_funding_killed_midway_and_rerun_pays_everyone_exactly_once() {
    let net = TestNet::start().await;
    let client = net.client();
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys.txt");
    let journal = dir.path().join("keys.txt.funding.json");
    const COUNT: usize = 3000;

    // 150 batches of 20: sent one after another while blocks commit them.
    let root_nonce_before = client.nonce(net.root_address, false).await.unwrap();
    let contract = net.root_address.create(root_nonce_before);
    let batches = ["--batch-size", "20"];
    let mut first = fund_command(&net, &keys, "batches", COUNT, &batches)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The deployment, then at least two batches are in the node's
        // mempool (its pending nonce): killed while it is still sending
        // (CheckTx answers in a few ms, so all 150 are sent within a block
        // or two, before many are committed).
        let nonce = client.nonce(net.root_address, true).await.unwrap();
        if journal.exists() && nonce >= root_nonce_before + 3 {
            break;
        }
        assert!(
            first.try_wait().unwrap().is_none(),
            "the funder ended before it was killed"
        );
        assert!(Instant::now() < deadline, "no batch sent within 60 s");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(journal.exists(), "an interrupted run leaves its journal");
    // Let what was already sent land, then look: some paid, some not.
    net.wait_blocks(3).await;
    let midway = balances(&client, &keys, COUNT).await;
    let paid = midway.iter().filter(|b| !b.is_zero()).count();
    assert!(
        paid > 0 && paid < COUNT,
        "killed mid-way: {paid} of {COUNT} paid"
    );

    // The re-run settles the journal: the same signed batches, none new.
    let mut rerun = fund_command(&net, &keys, "batches", COUNT, &batches);
    let report = report_of(rerun.spawn().unwrap());
    assert!(!journal.exists(), "a settled journal is deleted");
    let after = balances(&client, &keys, COUNT).await;
    let exact = after.iter().filter(|b| **b == U256::from(ETH)).count();
    assert_eq!(exact, COUNT, "every account holds exactly 1 eth: {report}");
    assert_eq!(report["resumed"], COUNT - paid, "{report}");
    assert_eq!(report["paid"], 0, "{report}");
    let batches_seen = assert_batches_within_gas_bound(&client, contract).await;
    assert_eq!(
        batches_seen,
        COUNT / 20,
        "one transaction per batch of the journal"
    );

    // The transfer path, on fresh accounts of another keys file.
    let plain = dir.path().join("plain.txt");
    let mut cmd = fund_command(&net, &plain, "transfers", 40, &["--via", "transfers"]);
    let report = report_of(cmd.spawn().unwrap());
    assert_eq!(report["via"], "transfers", "{report}");
    assert_eq!(report["root_txs"], 40, "{report}");
    assert!(balances(&client, &plain, 40)
        .await
        .iter()
        .all(|b| *b == U256::from(ETH)));
}
