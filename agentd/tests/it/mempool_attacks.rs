//! abcid's mempool under hostile senders, behind a real CometBFT
//! (`--patches all,nonce-queue`): what a real EVM pool does, asserted.

use std::time::Duration;

use alloy_primitives::{Address, U256};
use feth::eth::EthClient;
use feth::sign::{sign, Fee, TxRequest};
use secp256k1::SecretKey;

use crate::common::{funded, wait_until, TestNet};

/// A transfer of 1 wei from `key` at `nonce` claiming `gas_limit`, with a
/// fee cap of `fee` and a tip of 1 wei.
fn transfer(chain_id: u64, key: &SecretKey, nonce: u64, gas_limit: u64, fee: u128) -> Vec<u8> {
    paying(chain_id, key, nonce, gas_limit, fee, 1)
}

/// A transfer of 1 wei claiming `gas_limit`, with fee cap `fee` and `tip`.
fn paying(
    chain_id: u64,
    key: &SecretKey,
    nonce: u64,
    gas_limit: u64,
    fee: u128,
    tip: u128,
) -> Vec<u8> {
    let request = TxRequest {
        chain_id,
        nonce,
        to: Some(Address::repeat_byte(0x42)),
        value: U256::from(1),
        gas_limit,
        fee: Fee::Eip1559 { max_fee: fee, tip },
        input: Default::default(),
    };
    sign(key, &request).raw.to_vec()
}

/// Eight future nonces, each claiming 30 M gas, jammed every block once:
/// CometBFT reaps its mempool by the gas CheckTx says a transaction wants,
/// and the gapped ones filled that budget before the proposal dropped them.
/// Now they wait in `queued`, claim no room in the next block, and a
/// victim's transfer is included within a few blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn future_nonces_claiming_whole_blocks_do_not_stop_inclusion() {
    // CometBFT's mempool, then the node's own pool (CometBFT's off).
    for patches in ["all,nonce-queue,-app-mempool", "all,nonce-queue"] {
        let net = TestNet::start_with(|o| o.patches = patches.to_string()).await;
        jam_then_victim(&net, patches).await;
    }
}

async fn jam_then_victim(net: &TestNet, patches: &str) {
    let client: EthClient = net.client();
    let (keys, _dir) = funded(net, 2, 0x44).await;
    let (attacker, victim) = (&keys.keys[0], &keys.keys[1]);
    let chain_id = client.chain_id().await.unwrap();
    let fee = 2 * client.gas_price().await.unwrap();
    for nonce in 1..=8 {
        let raw = transfer(chain_id, attacker, nonce, 30_000_000, fee);
        client.send_raw(&raw).await.expect("queued");
    }
    let status: serde_json::Value = client
        .call("txpool_status", serde_json::json!([]))
        .await
        .unwrap();
    assert_eq!(status["queued"], "0x8", "{patches}: {status}");
    let sent_at = client.block_number().await.unwrap();
    let hash = client
        .send_raw(&transfer(chain_id, victim, 0, 21_000, fee))
        .await
        .expect("admitted");
    wait_until(
        "the victim's transfer is included",
        Duration::from_secs(15),
        || async { client.receipt(hash).await.ok().flatten().is_some() },
    )
    .await;
    let attacker_address = keys.addresses[0];
    assert_eq!(client.nonce(attacker_address, false).await.unwrap(), 0);
    let receipt = client.receipt(hash).await.unwrap().expect("a receipt");
    let waited = receipt.block_number.to::<u64>().saturating_sub(sent_at);
    // The figure docs/MEASUREMENTS.md reports (`--nocapture`).
    eprintln!("{patches}: 8 gapped nonces queued; the victim included {waited} block(s) after the head it was sent at");
}

/// Forty transfers claiming 30 M gas each at a tip of 1 wei (eight blocks'
/// worth of claimed gas, a fraction of it used), then a victim paying as
/// they do, which it replaces by one paying 100 × the base fee: the
/// replacement is in one of the next blocks while stuffing still waits, and
/// the first one is dropped as replaced. Before, the replacement was refused
/// and the victim waited for all of it: CometBFT reaped by the gas limits in
/// arrival order, and the node's own pool reaped in arrival order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_claiming_unused_gas_do_not_delay_a_paying_one() {
    // CometBFT's mempool (its reap counts the gas CheckTx says, capped),
    // then the node's own pool.
    for patches in ["all,-app-mempool", "all"] {
        let net = TestNet::start_with(|o| o.patches = patches.to_string()).await;
        stuffing_then_victim(&net, patches).await;
    }
}

async fn stuffing_then_victim(net: &TestNet, patches: &str) {
    let client: EthClient = net.client();
    let (keys, _dir) = funded(net, 5, 0x45).await;
    let chain_id = client.chain_id().await.unwrap();
    let base_fee = client.gas_price().await.unwrap();
    for stuffer in &keys.keys[..4] {
        for nonce in 0..10 {
            let raw = transfer(chain_id, stuffer, nonce, 30_000_000, 2 * base_fee);
            client.send_raw(&raw).await.expect("admitted");
        }
    }
    // The victim first pays as the stuffing does, then replaces its
    // transfer by one paying 100 × the base fee.
    let victim_key = &keys.keys[4];
    let low = transfer(chain_id, victim_key, 0, 21_000, 2 * base_fee);
    let low_hash = client.send_raw(&low).await.expect("admitted");
    let sent_at = client.block_number().await.unwrap();
    let victim = paying(
        chain_id,
        victim_key,
        0,
        21_000,
        101 * base_fee,
        100 * base_fee,
    );
    let hash = client.send_raw(&victim).await.expect("replaced by fee");
    wait_until(
        "the victim's transfer is included",
        Duration::from_secs(15),
        || async { client.receipt(hash).await.ok().flatten().is_some() },
    )
    .await;
    let receipt = client.receipt(hash).await.unwrap().expect("a receipt");
    let included_at = receipt.block_number.to::<u64>();
    assert!(
        included_at <= sent_at + 3,
        "{patches}: sent at {sent_at}, included at {included_at}"
    );
    // The victim overtook stuffing that had arrived before it.
    let mut stuffed = 0;
    for h in 1..=included_at {
        for tx in crate::common::block_txs(&client, h).await {
            let from: Address = tx["from"].as_str().unwrap().parse().unwrap();
            stuffed += usize::from(keys.addresses[..4].contains(&from));
        }
    }
    assert!(
        stuffed < 40,
        "{patches}: all 40 stuffed transactions went first"
    );
    assert!(
        client.receipt(low_hash).await.unwrap().is_none(),
        "{patches}"
    );
    let why: serde_json::Value = client
        .call("txpool_dropped", serde_json::json!([low_hash]))
        .await
        .unwrap();
    assert_eq!(why["kind"], "replaced", "{patches}: {why}");
    let waited = included_at.saturating_sub(sent_at);
    eprintln!("{patches}: the victim included {waited} block(s) after the head it was sent at, after {stuffed} of the 40 stuffed");
}

/// With `app-mempool` (in `all`), what abcid accepted survives its restart, by SIGKILL
/// or by SIGTERM: CometBFT is down, so nothing is included and every
/// accepted transfer waits in abcid's own pool; abcid is stopped with them
/// there; after the devnet's restart every one is committed (the pool's
/// journal, read back and admitted again). Before, all were lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_transactions_survive_a_sigkill_and_a_graceful_restart() {
    const SENDERS: usize = 8;
    const EACH: u64 = 5;
    let mut net = TestNet::start().await;
    let (keys, _dir) = funded(&net, SENDERS, 0x46).await;
    let client = net.client();
    let chain_id = client.chain_id().await.unwrap();
    let fee = 2 * client.gas_price().await.unwrap();
    for (round, how) in [(0, "SIGKILL"), (1, "SIGTERM")] {
        net.kill_cometbft();
        let mut hashes = Vec::new();
        for key in &keys.keys {
            for nonce in round * EACH..(round + 1) * EACH {
                let raw = transfer(chain_id, key, nonce, 21_000, fee);
                hashes.push(client.send_raw(&raw).await.expect("accepted into the pool"));
            }
        }
        let status: serde_json::Value = client
            .call("txpool_status", serde_json::json!([]))
            .await
            .unwrap();
        let pooled = format!("0x{:x}", SENDERS as u64 * EACH);
        assert_eq!(status["pending"], pooled, "{how}: {status}");
        if how == "SIGKILL" {
            net.kill_abcid();
        }
        // Stops what runs (abcid by SIGTERM, with its grace) and starts both.
        net.devnet.restart().await.unwrap();
        let client = net.client();
        wait_until(
            &format!("every transfer accepted before the {how} is committed"),
            Duration::from_secs(60),
            || async {
                for hash in &hashes {
                    if client.receipt(*hash).await.ok().flatten().is_none() {
                        return false;
                    }
                }
                true
            },
        )
        .await;
        for address in &keys.addresses {
            let nonce = client.nonce(*address, false).await.unwrap();
            assert_eq!(nonce, (round + 1) * EACH, "{how}: {address}");
        }
    }
}
