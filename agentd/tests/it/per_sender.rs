//! `feth load --per-sender K`: one sender's consecutive nonces pipelined,
//! against abcid (`--patches all,nonce-queue`, behind a real CometBFT) and
//! against `geth --dev`. The chain holds every one of the sender's
//! transactions exactly once, in nonce order. Its committed rate, measured
//! from the blocks, is printed, not asserted: it is the machine's figure
//! (`feth load --senders 1 --per-sender 64` prints it on a devnet).

use std::collections::HashSet;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use feth::accounts::KeySet;
use feth::eth::EthClient;
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::report::AGENT_LAG_BOUND_MS;
use feth::load::{self, LoadReport, LoadSettings};

use crate::common::TestNet;
use crate::geth::GethDev;

/// Transactions in flight for the one sender: within both nodes' window of
/// 64 queued future nonces.
const K: usize = 64;
/// Seconds of sending.
const SECS: u64 = 10;

/// One sender, closed loop for [`SECS`] seconds with [`K`] in flight,
/// `per_request` of them per request.
async fn one_sender(url: &str, keys: KeySet, per_request: usize) -> LoadReport {
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, 1);
    plan.duration = Some(Duration::from_secs(SECS));
    plan.per_sender = K;
    plan.per_request = per_request;
    let mut settings = LoadSettings::new(url, plan);
    settings.wait = Duration::from_secs(30);
    load::run(settings, keys).await.unwrap()
}

/// Our sender's transactions in blocks `from..=to`: (height, hash, nonce).
async fn ours(client: &EthClient, sender: Address, from: u64, to: u64) -> Vec<(u64, B256, u64)> {
    let mut out = Vec::new();
    for h in from..=to {
        for tx in &crate::common::block_txs(client, h).await {
            let from: Address = tx["from"].as_str().unwrap().parse().unwrap();
            if from == sender {
                let hash: B256 = tx["hash"].as_str().unwrap().parse().unwrap();
                let nonce =
                    u64::from_str_radix(tx["nonce"].as_str().unwrap().trim_start_matches("0x"), 16)
                        .unwrap();
                out.push((h, hash, nonce));
            }
        }
    }
    out
}

/// Checks the run against the chain and prints the sender's committed
/// rate: its transactions in the blocks after the first that holds one, up
/// to the last that does, over the time between those two blocks (CometBFT's
/// ns header times when the node names its CometBFT, else web3 timestamps).
async fn check_every_nonce(client: &EthClient, sender: Address, before: u64, r: &LoadReport) {
    let t = &r.totals;
    assert_eq!((t.rejected, t.unresolved), (0, 0), "{t:?}");
    let after = client.nonce(sender, false).await.unwrap();
    assert_eq!(
        after - before,
        t.included,
        "the nonce advanced by the count"
    );
    let txs = ours(client, sender, r.chain.first_block, r.chain.last_block).await;
    let hashes: HashSet<B256> = txs.iter().map(|x| x.1).collect();
    assert_eq!(hashes.len(), txs.len(), "an included hash twice");
    let nonces: Vec<u64> = txs.iter().map(|x| x.2).collect();
    assert_eq!(
        nonces,
        (before..after).collect::<Vec<_>>(),
        "every nonce once, in order"
    );
    let (first, last) = (txs[0].0, txs[txs.len() - 1].0);
    let counted = txs.iter().filter(|x| x.0 > first).count() as f64;
    let (comet, _) = feth::blocks::discover_comet(client, None).await.unwrap();
    let time = |h: u64| {
        let comet = comet.as_ref();
        async move {
            let (secs, ns) = feth::load::scan::block_time(client, comet, h)
                .await
                .unwrap();
            ns.map_or(secs as f64, |ns| ns as f64 / 1e9)
        }
    };
    let seconds = time(last).await - time(first).await;
    let rate = counted / seconds;
    eprintln!(
        "one sender, K = {K}: {} transactions in blocks {first}..={last}; {counted} after block {first} in {seconds:.3} s = {rate:.0} tx/s (agent's own figure: {:.0})",
        txs.len(),
        r.chain.committed_tps
    );
    assert!(seconds >= SECS as f64 - 2.0, "sending lasted {seconds} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pipelined_sender_commits_every_nonce_in_order_on_abcid_with_the_nonce_queue() {
    let net = TestNet::start_with(|o| o.patches = "all,nonce-queue".to_string()).await;
    // 100 ether: with abcid's own pool one sender sends about 5,000
    // transfers a second, 1 ether's worth in 5 s.
    let dir = tempfile::tempdir().unwrap();
    let (keys, _) = feth::fund::fund_seeded(
        &net.client(),
        &net.root,
        B256::repeat_byte(21),
        1,
        U256::from(10u64).pow(U256::from(20u64)),
        &dir.path().join("keys.txt"),
    )
    .await
    .unwrap();
    let client = net.client();
    let sender = keys.addresses[0];
    let before = client.nonce(sender, false).await.unwrap();
    // Parallel requests: one ordered batch at a time would wait for each
    // batch's CheckTx.
    let report = one_sender(&net.web3(), keys, 1).await;
    check_every_nonce(&client, sender, before, &report).await;
}

/// geth, with one sender funded through `feth fund`; its nonce before.
async fn geth_sender() -> (GethDev, KeySet, u64, tempfile::TempDir) {
    let geth = GethDev::start().await;
    let (keys, dir) = geth.funded(1, 22).await;
    let before = geth.client().nonce(keys.addresses[0], false).await.unwrap();
    (geth, keys, before, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs geth: bash scripts/setup.sh --test"]
async fn one_pipelined_sender_commits_every_nonce_in_order_on_geth_dev_in_parallel_requests() {
    let (geth, keys, before, _dir) = geth_sender().await;
    let sender = keys.addresses[0];
    let report = one_sender(geth.url(), keys, 1).await;
    check_every_nonce(&geth.client(), sender, before, &report).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs geth: bash scripts/setup.sh --test"]
async fn one_pipelined_sender_commits_every_nonce_in_order_on_geth_dev_in_one_ordered_batch() {
    let (geth, keys, before, _dir) = geth_sender().await;
    let sender = keys.addresses[0];
    // All K in one request, in nonce order: geth runs a batch's calls in order.
    let report = one_sender(geth.url(), keys, K).await;
    check_every_nonce(&geth.client(), sender, before, &report).await;
}

/// Closed loop: `count` transactions from each of `keys` with `k` in flight
/// per sender, all `k` in one ordered request.
fn ordered(net: &TestNet, senders: usize, count: u64, k: usize) -> LoadSettings {
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, senders);
    plan.per_account = Some(count);
    plan.per_sender = k;
    plan.per_request = k;
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.wait = Duration::from_secs(60);
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_mempool_mid_run_backs_off_and_resends_the_rest_in_order() {
    // 20 transactions fill CometBFT's mempool: ordered runs of 8 nonces from
    // 4 senders are refused part-way and go again from the refused one on.
    let net = TestNet::start_with(|o| {
        o.patches = "all,nonce-queue".to_string();
        o.mempool_size = 20;
        o.timeout_commit = feth::devnet::GoDuration::from_millis(500);
    })
    .await;
    let (keys, _dir) = crate::common::funded(&net, 4, 23).await;
    let client = net.client();
    let mut before = Vec::new();
    for a in &keys.addresses {
        before.push(client.nonce(*a, false).await.unwrap());
    }
    let t0 = std::time::Instant::now();
    let report = load::run(ordered(&net, 4, 25, 8), keys.clone())
        .await
        .unwrap();
    eprintln!(
        "full mempool run: {:.1} s, {} back-offs, {} resends, {} resyncs, send {:.1} s, latency {:?}",
        t0.elapsed().as_secs_f64(),
        report.backoffs,
        report.resends,
        report.resyncs,
        report.send_seconds,
        report.latency_ms.to_observed
    );
    let t = &report.totals;
    assert!(report.backoffs > 0, "a 20-transaction mempool must fill up");
    assert_eq!(
        (t.signed, t.included, t.rejected, t.unresolved),
        (100, 100, 0, 0),
        "{t:?}"
    );
    for (a, n) in keys.addresses.iter().zip(before) {
        let txs = ours(
            &client,
            *a,
            report.chain.first_block,
            report.chain.last_block,
        )
        .await;
        let nonces: Vec<u64> = txs.iter().map(|x| x.2).collect();
        assert_eq!(
            nonces,
            (n..n + 25).collect::<Vec<_>>(),
            "{a}: every nonce once, in order"
        );
        assert_eq!(client.nonce(*a, false).await.unwrap(), n + 25);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_transaction_in_flight_per_hot_sender_is_reported_as_the_agents_limit() {
    let net = TestNet::start_with(|o| o.patches = "all,nonce-queue".to_string()).await;
    let (keys, _dir) = crate::common::funded(&net, 1, 24).await;
    // The node made slow on purpose: 10 ms added each way, so a round trip
    // takes at least 20 ms on any machine and one transaction in flight
    // sends at most 50 tx/s of the 200 offered.
    let slow = net.slow_web3(10).await;
    let run = |k: usize| {
        let mut plan = LoadPlan::transfers(RateSchedule::Fixed(200.0), 1);
        plan.duration = Some(Duration::from_secs(2));
        plan.per_sender = k;
        let mut settings = LoadSettings::new(slow.url(), plan);
        settings.wait = Duration::from_secs(60);
        load::run(settings, keys.clone())
    };
    let one = run(1).await.unwrap();
    eprintln!(
        "one in flight: schedule lag {:?}, {:?}",
        one.schedule_lag_ms, one.agent_limited
    );
    let limited = one
        .agent_limited
        .as_ref()
        .expect("the agent limited the run");
    // 400 due over 2 s, sent at most 50 a second: the last ones leave
    // seconds late, far past the bound.
    assert!(limited.schedule_lag_ms > AGENT_LAG_BOUND_MS, "{limited:?}");
    assert!(limited.reason.contains("--per-sender 1"), "{limited:?}");
    // Due at 5 ms steps over 2 s: 400, or 399 when the last one falls on
    // the end; all of them committed.
    let all = |t: &feth::load::report::Totals| t.signed >= 399 && t.included == t.signed;
    assert!(all(&one.totals), "{:?}", one.totals);
    // 64 in flight (the nonce queue's window) over the same link send up to
    // 3,200 tx/s: the chain, not the agent, sets the pace.
    let pipelined = run(64).await.unwrap();
    assert_eq!(
        pipelined.agent_limited, None,
        "{:?}",
        pipelined.schedule_lag_ms
    );
    assert!(all(&pipelined.totals), "{:?}", pipelined.totals);
    let json = serde_json::to_value(&one).unwrap();
    assert!(
        json["agent_limited"]["max_backlog"].as_u64().unwrap() > 1,
        "{json:?}"
    );
    assert!(serde_json::to_value(&pipelined)
        .unwrap()
        .get("agent_limited")
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_zipf_benchmark_runs_small() {
    // Tiny numbers, to keep `feth bench zipf` from rotting; its figures are
    // measured by hand (docs/MEASUREMENTS.md).
    let r = feth::bench::zipf(feth::bench::ZipfBenchPlan {
        senders: 20,
        rate: 50.0,
        duration_secs: 2.0,
        accounts: "zipf:1.1,2".to_string(),
        per_sender: 4,
        per_request: 1,
        timeout_commit: feth::devnet::GoDuration::from_millis(300),
        patches: "all,nonce-queue".to_string(),
        block_gas_limit: 150_000_000,
    })
    .await
    .unwrap();
    let [signed, included, rejected, unresolved] = r.totals;
    assert!(signed >= 90, "{:?}", r.totals);
    assert_eq!((included, rejected, unresolved), (signed, 0, 0));
    assert!(
        r.client_version.ends_with("patches=all,nonce-queue"),
        "{}",
        r.client_version
    );
    assert!(
        r.committed_tps > 0.0 && r.block_ms > 0.0 && r.p99_blocks > 0.0,
        "{r:?}"
    );
    assert_eq!(r.agent_limited, None);
}
