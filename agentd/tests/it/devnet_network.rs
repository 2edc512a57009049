//! A devnet of several nodes (CometBFT validators and full nodes, each with
//! its own abcid, links through toxiproxy, all on 127.0.0.1): blocks are
//! committed by 4 validators; injected link latency raises the block time;
//! one validator cut off leaves 3 of 4 going, two halt the chain, healing
//! resumes it with nothing accepted lost; a validator and a full node killed
//! and restarted under load catch up, and the agent's accounting adds up;
//! with `app-mempool`, the nodes' pools are shared through the links.

use std::time::Duration;

use alloy_primitives::{Address, Bytes, B256, U256};
use feth::accounts::KeySet;
use feth::blocks;
use feth::devnet::links::LinkShape;
use feth::devnet::network::{Network, NetworkOptions, NodeRole};
use feth::eth::EthClient;
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::{self, LoadSettings};
use feth::sign::{self, Fee, TxRequest};
use feth_comet::rpc::Rpc;
use secp256k1::SecretKey;

use crate::common::wait_until;

const GWEI: u128 = 1_000_000_000;

struct TestNetwork {
    net: Network,
    root: SecretKey,
    _dir: tempfile::TempDir,
}

impl TestNetwork {
    async fn start(validators: usize, full_nodes: usize) -> Self {
        Self::start_with(validators, full_nodes, |_| {}).await
    }

    async fn start_with(
        validators: usize,
        full_nodes: usize,
        tweak: impl Fn(&mut NetworkOptions),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let net = Network::start_private(dir.path(), validators, full_nodes, tweak)
            .await
            .expect("network starts");
        let root = feth::keys::read_key_file(&net.state.root_key()).unwrap();
        Self {
            net,
            root,
            _dir: dir,
        }
    }

    fn client(&self, node: &str) -> EthClient {
        let url = self.net.state.node(node).unwrap().state.web3_url();
        EthClient::new(&url, Duration::from_secs(5)).unwrap()
    }

    fn rpc(&self, node: &str) -> Rpc {
        Rpc::new(&self.net.state.node(node).unwrap().state.rpc_url(), 20, 4).unwrap()
    }

    /// Node `node`'s CometBFT height (0 while it does not answer).
    async fn height(&self, node: &str) -> u64 {
        self.rpc(node).status().await.map_or(0, |s| s.latest_height)
    }

    /// Waits until `node` is `n` blocks past its height now.
    async fn advance(&self, node: &str, n: u64, limit: Duration) {
        let start = self.height(node).await;
        wait_until(
            &format!("{node} passes height {}", start + n),
            limit,
            || async { self.height(node).await >= start + n },
        )
        .await;
    }

    /// Mean block time in ms of the next `n` blocks on v0, from CometBFT's
    /// header times (ns).
    async fn block_time_ms(&self, n: u64) -> f64 {
        let rpc = self.rpc("v0");
        let first = blocks::next_block(&rpc, self.height("v0").await)
            .await
            .unwrap();
        let mut last = first;
        while last < first + n {
            last = blocks::next_block(&rpc, last).await.unwrap();
        }
        let w = blocks::comet_window(&rpc, first, first + n, false)
            .await
            .unwrap();
        w.seconds() * 1000.0 / n as f64
    }
}

fn transfer(key: &SecretKey, nonce: u64, to: Address) -> Bytes {
    sign::sign(
        key,
        &TxRequest {
            chain_id: feth::devnet::DEFAULT_CHAIN_ID,
            nonce,
            to: Some(to),
            value: U256::from(1u64),
            gas_limit: 21_000,
            fee: Fee::Eip1559 {
                max_fee: 2 * GWEI,
                tip: 1,
            },
            input: Bytes::new(),
        },
    )
    .raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_validators_commit_and_300ms_links_raise_the_block_time() {
    let mut t = TestNetwork::start(4, 0).await;
    let validators = t
        .net
        .state
        .nodes
        .iter()
        .filter(|n| n.role == NodeRole::Validator);
    assert_eq!(validators.count(), 4);
    let genesis: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            t.net.state.nodes[0]
                .state
                .options
                .dir
                .join("cometbft/config/genesis.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(genesis["validators"].as_array().unwrap().len(), 4);
    for node in ["v0", "v1", "v2", "v3"] {
        t.advance(node, 2, Duration::from_secs(30)).await;
    }
    let clear = t.block_time_ms(8).await;
    let slow = LinkShape {
        latency_ms: 300,
        ..LinkShape::default()
    };
    t.net.state.slow(&[], slow).await.unwrap();
    // The block being decided when the links changed is a mix: skip it.
    t.advance("v0", 1, Duration::from_secs(30)).await;
    let slowed = t.block_time_ms(5).await;
    eprintln!("4 validators: block time {clear:.0} ms at 0 ms links, {slowed:.0} ms at 300 ms");
    // Between one height's precommits and the next's, the proposal and the
    // prevotes each cross a link: at least 2 × 300 ms a block, whatever the
    // machine (a busy one only adds to it). Against the clear links' time
    // it is printed, not asserted: CPU-bound steps overlap the waits, so
    // how much the links add depends on the machine (150 ms links on a
    // loaded one measured 953 → 1,125 ms).
    assert!(
        slowed >= 600.0,
        "300 ms links should slow blocks to 600 ms or more: {clear:.0} ms → {slowed:.0} ms"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_one_cut_off_goes_on_two_halt_and_healing_loses_nothing() {
    let mut t = TestNetwork::start(4, 0).await;
    let v1 = t.client("v1");
    let root = feth::keys::address_of(&t.root);
    let base = v1.nonce(root, true).await.unwrap();

    // One validator cut off: 3 of 4 hold more than 2/3 of the power.
    t.net.state.partition(&["v3".to_string()]).await.unwrap();
    t.advance("v0", 3, Duration::from_secs(30)).await;
    let stuck = t.height("v3").await;
    assert!(t.height("v0").await > stuck, "v3 is cut off");

    // Transactions accepted by v1, then two validators cut off: 2 of 4 halt.
    let mut hashes = Vec::new();
    for i in 0..20u64 {
        let to = Address::repeat_byte(0x40 + i as u8);
        hashes.push(v1.send_raw(&transfer(&t.root, base + i, to)).await.unwrap());
    }
    t.net.state.partition(&["v2".to_string()]).await.unwrap();
    // For 4 s (8 block times with all links up), the chain commits at most
    // the block being decided at the cut: 2 of 4 decide nothing.
    let cut = t.height("v0").await;
    let watch = std::time::Instant::now() + Duration::from_secs(4);
    while std::time::Instant::now() < watch {
        let h = t.height("v0").await.max(t.height("v1").await);
        assert!(h <= cut + 1, "2 of 4 validators went on from {cut} to {h}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    t.net.state.heal(&[]).await.unwrap();
    for node in ["v0", "v1", "v2", "v3"] {
        t.advance(node, 2, Duration::from_secs(60)).await;
    }
    for hash in hashes {
        let r = v1.receipt(hash).await.unwrap();
        let status = r.and_then(|r| r.status).map(|s| s.to::<u64>());
        assert_eq!(status, Some(1), "{hash} was accepted before the partition");
    }
    assert_eq!(v1.nonce(root, false).await.unwrap(), base + 20);
    let v3 = t.client("v3");
    wait_until(
        "v3 has the transactions",
        Duration::from_secs(30),
        || async { v3.nonce(root, false).await.unwrap_or(0) == base + 20 },
    )
    .await;
}

/// The chain's own count of our transactions: the senders' committed nonces.
async fn committed_by(client: &EthClient, keys: &KeySet) -> u64 {
    let mut sum = 0;
    for a in &keys.addresses {
        sum += client.nonce(*a, false).await.unwrap();
    }
    sum
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_and_a_full_node_killed_under_load_catch_up_and_the_load_adds_up() {
    let mut t = TestNetwork::start(4, 1).await;
    let v0 = t.client("v0");
    let dir = tempfile::tempdir().unwrap();
    let (keys, _) = feth::fund::fund_seeded(
        &v0,
        &t.root,
        B256::repeat_byte(7),
        20,
        U256::from(10u64).pow(U256::from(18u64)),
        &dir.path().join("keys.txt"),
    )
    .await
    .unwrap();
    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(40.0), 20);
    plan.duration = Some(Duration::from_secs(20));
    let mut settings = LoadSettings::new(v0.url(), plan);
    settings.timeout = Duration::from_secs(5);
    settings.wait = Duration::from_secs(60);
    let run = {
        let keys = keys.clone();
        tokio::spawn(async move { load::run(settings, keys).await })
    };
    wait_until(
        "the load's first transactions are committed",
        Duration::from_secs(30),
        || async { committed_by(&v0, &keys).await >= 20 },
    )
    .await;

    assert_eq!(
        t.net.state.kill("v3").unwrap(),
        2,
        "CometBFT and abcid were killed"
    );
    assert_eq!(t.net.state.kill("f0").unwrap(), 2);
    t.advance("v0", 5, Duration::from_secs(30)).await;
    let behind = t.height("v0").await;
    t.net.state.restart("v3").await.unwrap();
    t.net.state.restart("f0").await.unwrap();
    for node in ["v3", "f0"] {
        wait_until(
            &format!("{node} catches up"),
            Duration::from_secs(60),
            || async { t.height(node).await > behind },
        )
        .await;
    }

    let report = run.await.unwrap().unwrap();
    let totals = &report.totals;
    assert_eq!(totals.unresolved, 0, "{totals:?}");
    assert!(totals.included > 20, "{totals:?}");
    assert_eq!(
        totals.included,
        committed_by(&v0, &keys).await,
        "{totals:?}"
    );
    // The restarted nodes hold the same accounts as the node the agent used.
    let f0 = t.client("f0");
    let tip = t.height("v0").await;
    wait_until("f0 reaches the tip", Duration::from_secs(30), || async {
        t.height("f0").await >= tip
    })
    .await;
    assert_eq!(committed_by(&f0, &keys).await, totals.included);
}

/// A transaction's receipt status through `client`, once it has one.
async fn committed(client: &EthClient, hash: B256) -> bool {
    let receipt = client.receipt(hash).await.ok().flatten();
    receipt.and_then(|r| r.status).map(|s| s.to::<u64>()) == Some(1)
}

/// `app-mempool` takes CometBFT's mempool off, so only the nodes' own
/// forwarding shares a transaction: one sent to any node of 4 validators
/// and a full node (which never proposes) behind 50 ms links is committed;
/// one sent to the full node while it is cut off is committed once it is
/// healed, with nothing sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_app_mempool_a_transaction_sent_to_any_node_is_committed() {
    let mut t = TestNetwork::start_with(4, 1, |o| {
        o.node.patches = "all,app-mempool".to_string();
        o.links = LinkShape {
            latency_ms: 50,
            ..LinkShape::default()
        };
    })
    .await;
    let v0 = t.client("v0");
    let dir = tempfile::tempdir().unwrap();
    let names = ["v0", "v1", "v2", "v3", "f0"];
    let (keys, _) = feth::fund::fund_seeded(
        &v0,
        &t.root,
        B256::repeat_byte(9),
        names.len(),
        U256::from(10u64).pow(U256::from(18u64)),
        &dir.path().join("keys.txt"),
    )
    .await
    .unwrap();
    let to = Address::repeat_byte(0x51);
    // Each node admits its sender's transfer once it has the funding block.
    for (name, address) in names.iter().zip(&keys.addresses) {
        let client = t.client(name);
        let what = format!("{name} has its sender's funds");
        wait_until(&what, Duration::from_secs(60), || async {
            client.balance(*address).await.is_ok_and(|b| b > U256::ZERO)
        })
        .await;
    }
    let mut sent = Vec::new();
    for (name, key) in names.iter().zip(&keys.keys) {
        let hash = t
            .client(name)
            .send_raw(&transfer(key, 0, to))
            .await
            .unwrap();
        sent.push((name, hash));
    }
    for (name, hash) in sent {
        let what = format!("the transaction sent to {name} is committed");
        wait_until(&what, Duration::from_secs(60), || committed(&v0, hash)).await;
    }
    let f0 = t.client("f0");
    let status: serde_json::Value = f0
        .call("txpool_status", serde_json::json!([]))
        .await
        .unwrap();
    assert!(status["forwarded"]["sent"].as_u64() >= Some(1), "{status}");

    let (key, address) = (&keys.keys[4], keys.addresses[4]);
    wait_until("f0 has the block", Duration::from_secs(30), || async {
        f0.nonce(address, false).await.unwrap_or(0) == 1
    })
    .await;
    t.net.state.partition(&["f0".to_string()]).await.unwrap();
    let hash = f0.send_raw(&transfer(key, 1, to)).await.unwrap();
    let cut = t.height("v0").await;
    t.advance("v0", 4, Duration::from_secs(30)).await;
    assert!(!committed(&v0, hash).await, "f0 is cut off since {cut}");
    t.net.state.heal(&[]).await.unwrap();
    wait_until(
        "f0's pool reaches the others after healing",
        Duration::from_secs(30),
        || committed(&v0, hash),
    )
    .await;
}
