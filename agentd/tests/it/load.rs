//! feth fund and feth load against a real devnet: accounting that adds up and
//! agrees with the chain, recovery from nonce gaps, full mempools and a node
//! restart.

use std::time::Duration;

use crate::common::{funded, wait_until, TestNet};
use alloy_primitives::U256;
use feth::accounts::KeySet;
use feth::eth::EthClient;
use feth::fund::{self, FundPlan};
use feth::load::pick::RateSchedule;
use feth::load::plan::{LoadPlan, WorkloadKind};
use feth::load::{self, LoadReport, LoadSettings};
use feth::sign::Fee;

const ETH: u64 = 1_000_000_000_000_000_000;

fn settings(
    net: &TestNet,
    schedule: RateSchedule,
    count: Option<u64>,
    secs: Option<u64>,
    senders: usize,
) -> LoadSettings {
    let mut plan = LoadPlan::transfers(schedule, senders);
    plan.per_account = count;
    plan.duration = secs.map(Duration::from_secs);
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.timeout = Duration::from_secs(5);
    settings
}

/// The chain's own count of our transactions: the senders' committed nonces.
async fn committed_by(client: &EthClient, keys: &KeySet) -> u64 {
    let mut sum = 0;
    for a in &keys.addresses {
        sum += client.nonce(*a, false).await.unwrap();
    }
    sum
}

/// Our senders' transactions in the blocks of the run's window, counted from
/// the chain (full blocks, `from` of each transaction).
async fn ours_in_window(client: &EthClient, keys: &KeySet, r: &LoadReport) -> u64 {
    let ours: std::collections::HashSet<_> = keys.addresses.iter().copied().collect();
    let mut n = 0;
    for h in r.chain.first_block..=r.chain.last_block {
        for tx in &crate::common::block_txs(client, h).await {
            let from: alloy_primitives::Address = tx["from"].as_str().unwrap().parse().unwrap();
            n += u64::from(ours.contains(&from));
        }
    }
    n
}

/// What the agent counts agrees with the chain: its included transactions
/// are exactly those of the window's blocks (a transaction counted twice, or
/// a hash in no block, makes them differ).
async fn assert_agrees_with_chain(client: &EthClient, keys: &KeySet, r: &LoadReport) {
    let t = &r.totals;
    assert!(r.chain.last_block >= r.chain.first_block, "{:?}", r.chain);
    assert_eq!(ours_in_window(client, keys, r).await, t.included, "{t:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_accounts_fixed_rate_for_30s_adds_up_with_the_chain() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 1000, 1).await;
    // Funding is idempotent: a second run pays nobody.
    let again = fund::fund(
        &net.client(),
        &net.root,
        &keys.addresses,
        &FundPlan {
            wait: Duration::from_secs(30),
            ..FundPlan::new(U256::from(ETH))
        },
        &_dir.path().join("keys.txt.funding.json"),
    )
    .await
    .unwrap();
    assert_eq!((again.paid, again.skipped), (0, 1000));

    let report = load::run(
        settings(&net, RateSchedule::Fixed(150.0), None, Some(30), 1000),
        keys.clone(),
    )
    .await
    .unwrap();
    assert_agrees_with_chain(&net.client(), &keys, &report).await;
    let t = &report.totals;
    assert!(t.signed >= 150 * 28, "the schedule was kept: {}", t.signed);
    assert_eq!(t.unresolved, 0, "{t:?}");
    assert_eq!(t.rejected, 0, "{t:?}");
    assert_eq!(t.included, committed_by(&net.client(), &keys).await);
    // Everything signed was committed (above); the rate it was committed
    // at is the machine's figure, printed by `feth load`.
    assert!(report.chain.committed_tps > 0.0, "{:?}", report.chain);
    assert!(report.chain.committed_tps_all >= report.chain.committed_tps);
    assert!(report.latency_ms.to_observed.p50 > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nonce_gap_made_behind_the_agents_back_is_recovered() {
    const PER_SENDER: u64 = 300;
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 4, 2).await;
    let client = net.client();
    // Someone else uses account 0's key after the agent read its nonce.
    // With 300 a sender the agent is still sending account 0's when the
    // thief takes the next ones (a node that admits fast, abcid's own
    // pool, took 30 a sender before the first was committed).
    let mut settings = settings(&net, RateSchedule::Closed, Some(PER_SENDER), None, 4);
    settings.plan.max_parallelism = 4;
    let stolen = 3u64;
    let load = {
        let keys = keys.clone();
        tokio::spawn(async move { load::run(settings, keys).await })
    };
    // Steal only once the agent is sending with account 0.
    let first = keys.addresses[0];
    wait_until(
        "account 0's first load transaction is committed",
        Duration::from_secs(30),
        || {
            let c = &client;
            async move { c.nonce(first, false).await.unwrap_or(0) >= 1 }
        },
    )
    .await;
    for i in 0..stolen {
        loop {
            let pending = client.nonce(keys.addresses[0], true).await.unwrap();
            let tx = feth::sign::sign(
                &keys.keys[0],
                &feth::sign::TxRequest {
                    chain_id: 9000,
                    nonce: pending,
                    to: Some(keys.addresses[1]),
                    value: U256::from(7u64 + i),
                    gas_limit: 21_000,
                    fee: Fee::Eip1559 {
                        max_fee: 2_000_000_000,
                        tip: 1,
                    },
                    input: Default::default(),
                },
            );
            if client.send_raw(&tx.raw).await.is_ok() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let report = load.await.unwrap().unwrap();
    let t = &report.totals;
    // The thief's transactions are from one of our senders, in the window.
    assert_eq!(
        ours_in_window(&client, &keys, &report).await,
        t.included + stolen
    );
    assert_eq!(t.unresolved, 0, "{t:?}");
    assert!(
        report.resyncs >= 1 && t.rejected >= 1,
        "the stolen nonces collided with the agent's own: {t:?}, {} resyncs",
        report.resyncs
    );
    // Every transaction the agent lost to the stolen nonces is accounted for
    // as a rejection; the rest are on chain.
    let on_chain = committed_by(&client, &keys).await;
    assert_eq!(t.included + stolen, on_chain, "{t:?}");
    assert!(t.included >= 4 * PER_SENDER - 2 * stolen, "{t:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_mempool_backs_off_per_sender_and_loses_nothing() {
    let net = TestNet::start_with(|o| {
        o.mempool_size = 20;
        o.timeout_commit = feth::devnet::GoDuration::from_millis(500);
    })
    .await;
    let (keys, _dir) = funded(&net, 40, 3).await;
    let mut s = settings(&net, RateSchedule::Closed, Some(10), None, 40);
    s.plan.max_parallelism = 40;
    let report = load::run(s, keys.clone()).await.unwrap();
    assert_agrees_with_chain(&net.client(), &keys, &report).await;
    assert!(report.backoffs > 0, "a 20-transaction mempool must fill up");
    assert_eq!(report.totals.included, 400, "{:?}", report.totals);
    assert_eq!(committed_by(&net.client(), &keys).await, 400);
}

/// Starts a load in a task and returns once `landed` of its transactions
/// are committed.
async fn start_landing(
    net: &TestNet,
    s: LoadSettings,
    keys: &KeySet,
    landed: u64,
) -> tokio::task::JoinHandle<anyhow::Result<LoadReport>> {
    let load = {
        let keys = keys.clone();
        tokio::spawn(async move { load::run(s, keys).await })
    };
    let watcher = net.client();
    wait_until(
        "the load's first transactions are committed",
        Duration::from_secs(30),
        || {
            let w = &watcher;
            async move { committed_by(w, keys).await >= landed }
        },
    )
    .await;
    load
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abcid_restarted_mid_run_every_tx_is_accounted_for() {
    let mut net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 50, 4).await;
    let mut s = settings(&net, RateSchedule::Fixed(100.0), None, Some(20), 50);
    s.wait = Duration::from_secs(90);
    // Kill once the run's transactions are landing (it sends for 20 s).
    let load = start_landing(&net, s, &keys, 50).await;
    net.kill_abcid();
    net.devnet.restart().await.unwrap();
    let report = load.await.unwrap().unwrap();
    assert_agrees_with_chain(&net.client(), &keys, &report).await;
    let t = &report.totals;
    assert!(
        report.resends > 0,
        "the restart made the agent resend: {t:?}"
    );
    assert_eq!(t.unresolved, 0, "{t:?}");
    assert_eq!(
        t.included,
        committed_by(&net.client(), &keys).await,
        "{t:?}"
    );
}

/// A node that cannot take transactions for more than a minute mid-run:
/// its CometBFT is down, so abcid, still serving web3, answers every send
/// `consensus node unavailable` (EIP-1474's -32002), as it does for a moment
/// after a restart. The agent neither counts those as rejections, nor stops,
/// nor hammers the node (each sender backs off to one try per 5 s: at most
/// about 20 resends each over the outage, where one per 100 ms would be
/// 650), and once it is back every transaction is accounted for from the
/// chain. (abcid itself down, the other way a node fails, is
/// `abcid_restarted_mid_run_every_tx_is_accounted_for`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_down_for_over_a_minute_is_waited_for_not_hammered() {
    const SENDERS: u64 = 50;
    const OUTAGE: Duration = Duration::from_secs(65);
    // CometBFT's mempool path: with CometBFT down web3 refuses every send
    // (with abcid's own pool it takes them; `mempool_attacks.rs`).
    let mut net = TestNet::start_with(|o| o.patches = "all,-app-mempool".into()).await;
    let (keys, _dir) = funded(&net, SENDERS as usize, 7).await;
    let mut s = settings(
        &net,
        RateSchedule::Fixed(100.0),
        None,
        Some(80),
        SENDERS as usize,
    );
    s.wait = Duration::from_secs(120);
    let load = start_landing(&net, s, &keys, SENDERS).await;
    net.kill_cometbft();
    // abcid serves web3 still, and answers a send that it cannot forward.
    match net.client().send_raw(&[0xc0]).await {
        Err(feth::eth::RpcError::Rpc { code, message }) => {
            assert_eq!(code, -32002, "{message}")
        }
        other => panic!("abcid without its CometBFT answered {other:?}"),
    }
    // The fault itself: the node stays down this long.
    tokio::time::sleep(OUTAGE).await;
    assert!(!load.is_finished(), "the load gave up during the outage");
    net.devnet.restart().await.unwrap();
    let report = load.await.unwrap().unwrap();
    assert_agrees_with_chain(&net.client(), &keys, &report).await;
    let t = &report.totals;
    assert_eq!((t.unresolved, t.rejected), (0, 0), "{t:?}");
    assert_eq!(t.included, committed_by(&net.client(), &keys).await);
    assert!(
        t.signed >= 100 * 78,
        "the schedule's transactions were all sent: {t:?}"
    );
    let per_sender = report.resends / SENDERS;
    assert!(
        report.resends > 0 && per_sender <= 30,
        "{} resends over a {OUTAGE:?} outage ({per_sender} per sender)",
        report.resends
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erc20_workload_deploys_hands_out_and_transfers() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 20, 5).await;
    let mut s = settings(&net, RateSchedule::Closed, Some(10), None, 20);
    s.plan.writes = WorkloadKind::Erc20.into();
    let report = load::run(s, keys.clone()).await.unwrap();
    assert_agrees_with_chain(&net.client(), &keys, &report).await;
    assert_eq!(report.totals.included, 200, "{:?}", report.totals);
    let client = net.client();
    let deployer = keys.addresses[0];
    let token = deployer.create(0);
    // Holders got 10^9 tokens each and sent 10 of them.
    for holder in &keys.addresses[1..] {
        let balance = feth::load::erc20::balance_of(&client, token, *holder)
            .await
            .unwrap();
        assert_eq!(balance, U256::from(1_000_000_000u64 - 10));
    }
    // The deployer: 20 prepare transactions (deploy + 19 hand-outs) + its 10.
    assert_eq!(client.nonce(deployer, false).await.unwrap(), 30);
}

/// Transfers of more tokens than a sender still holds revert (receipt
/// status 0): they are included, counted apart as reverted, in the totals
/// and per second, as the chain's receipts say; latency is read from
/// CometBFT's ns header times, which the devnet's abcid names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erc20_transfers_past_the_balance_revert_and_are_counted_apart() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 5, 6).await;
    let mut s = settings(&net, RateSchedule::Closed, Some(4), None, 5);
    s.plan.writes = WorkloadKind::Erc20.into();
    // Each sender holds 10^9 tokens: two transfers of 4·10^8 go through,
    // the next two revert.
    s.plan.value = U256::from(400_000_000u64);
    let report = load::run(s, keys.clone()).await.unwrap();
    assert_agrees_with_chain(&net.client(), &keys, &report).await;
    let t = &report.totals;
    assert_eq!((t.included, t.reverted, t.rejected), (20, 10, 0), "{t:?}");
    let per_second: u64 = report.series.iter().map(|s| s.reverted).sum();
    assert_eq!(per_second, 10);
    let window_reverted = reverted_in_window(&net.client(), &keys, &report).await;
    assert_eq!(window_reverted, 10, "the chain's receipts");
    let token = keys.addresses[0].create(0);
    for holder in &keys.addresses {
        let balance = feth::load::erc20::balance_of(&net.client(), token, *holder)
            .await
            .unwrap();
        assert_eq!(balance, U256::from(200_000_000u64), "{holder}");
    }
    // Header times in ns, from the CometBFT RPC abcid names.
    assert!(
        report.latency_ms.block_time_resolution_ms < 1.0,
        "{}",
        report.block_clock
    );
    assert!(
        report.latency_ms.to_block_time.p50 > 0.0,
        "{:?}",
        report.latency_ms
    );
}

/// Our transactions in the run's window whose receipt has status 0.
async fn reverted_in_window(client: &EthClient, keys: &KeySet, r: &LoadReport) -> u64 {
    let ours: std::collections::HashSet<_> = keys.addresses.iter().copied().collect();
    let mut n = 0;
    for h in r.chain.first_block..=r.chain.last_block {
        let receipts: Vec<serde_json::Value> = client
            .call(
                "eth_getBlockReceipts",
                serde_json::json!([format!("0x{h:x}")]),
            )
            .await
            .unwrap();
        for receipt in receipts {
            let from: alloy_primitives::Address =
                receipt["from"].as_str().unwrap().parse().unwrap();
            n += u64::from(ours.contains(&from) && receipt["status"] == "0x0");
        }
    }
    n
}
