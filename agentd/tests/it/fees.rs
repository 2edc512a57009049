//! The agent against nodes that push back in the ways real chains do: a base
//! fee that rises under the load (abcid's opt-in fee market), a node that
//! accepts faster than it commits, and a CometBFT RPC whose first `/status`
//! connection is reset.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use feth::accounts::KeySet;
use feth::eth::EthClient;
use feth::load::metrics::LoadMetrics;
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::{self, LoadSettings};
use feth::report::load_view;
use feth::saturate::{find_knee, EvmProbe, EvmProbeConfig, SearchConfig};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use crate::common::{funded, TestNet};

/// Gas of one transfer.
const TRANSFER: u64 = 21_000;
/// abcid's genesis base fee (the fee market's floor).
const GWEI: u128 = 1_000_000_000;

/// The highest base fee of blocks `from..=to`, read from the chain.
async fn highest_base_fee(client: &EthClient, from: u64, to: u64) -> u128 {
    let mut highest = 0;
    for h in from..=to {
        let block = client.block(h).await.unwrap().expect("block exists");
        highest = highest.max(block.base_fee_per_gas.expect("EIP-1559 block").to::<u128>());
    }
    highest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rising_base_fee_is_followed_and_underpriced_transactions_are_re_signed() {
    // 16 transfers per block, a target of 8, about 50 tx/s at most: an open
    // loop at 100 tx/s fills every block, each raising the base fee by 1/8.
    // (A closed loop given its whole count at once would have it all
    // accepted before the base fee moved.)
    let net = TestNet::start_with(|o| {
        o.fee_market = true;
        o.block_gas_limit = 16 * TRANSFER;
        o.timeout_commit = feth::devnet::GoDuration::from_millis(300);
    })
    .await;
    let client = net.client();
    let (keys, _dir) = funded(&net, 40, 61).await;
    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(100.0), keys.len());
    plan.duration = Some(Duration::from_secs(4));
    // Max fee = the latest block's base fee + tip: sent after a full block,
    // it is below the next block's base fee, the node refuses it, and the
    // agent re-signs it.
    plan.fees.multiplier = 1.0;
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.wait = Duration::from_secs(90);
    let metrics = Arc::new(LoadMetrics::new());
    settings.metrics = Some(metrics.clone());
    let r = load::run(settings, keys.clone()).await.unwrap();
    let t = &r.totals;
    // The base fee did rise under the load.
    let top = highest_base_fee(&client, r.chain.first_block, r.chain.last_block).await;
    eprintln!(
        "fee market: {} signed, {} included, {} fee resends, base fee up to {top} wei over blocks {}..={}",
        t.signed, t.included, t.fee_resends, r.chain.first_block, r.chain.last_block
    );
    assert!(top > GWEI, "base fee never rose: {top} wei; {r:#?}");
    // Gas per second is read from the same blocks: transfers only, 21,000 each.
    assert_eq!(
        r.chain.gas_used,
        TRANSFER * r.chain.all_txs,
        "{:?}",
        r.chain
    );
    let gas_rate = r.chain.gas_used as f64 / r.chain.seconds;
    assert!(
        (r.chain.gas_per_second - gas_rate).abs() < 1e-6,
        "{:?}",
        r.chain
    );
    // None lost, none rejected (for its fee or anything else), some re-signed.
    assert!(t.signed >= 300, "{t:#?}");
    assert_eq!(t.included, t.signed, "{t:#?}");
    assert_eq!((t.rejected, t.unresolved), (0, 0), "{t:#?}");
    assert!(t.fee_resends > 0, "{t:#?}");
    assert!(r.config.fee.contains("1 × base fee"), "{}", r.config.fee);
    // Prometheus and `feth report` show them too.
    let scrape = metrics.encode();
    let resends = format!("feth_load_fee_resends_total {}\n", t.fee_resends);
    assert!(scrape.contains(&resends), "{resends:?} not in\n{scrape}");
    let page = load_view::section(0, "fees", &r, None).unwrap();
    let shown = format!(
        "{} fee resends (re-signed above a risen base fee)",
        t.fee_resends
    );
    assert!(page.contains(&shown), "{shown:?} not in the report");
    // Every nonce committed once: the senders' committed nonces add up to
    // the count (a nonce used twice cannot be; one skipped would stop its
    // sender), and the blocks hold exactly that many of theirs.
    let mut nonces = 0;
    for a in &keys.addresses {
        nonces += client.nonce(*a, false).await.unwrap();
    }
    assert_eq!(nonces, t.signed);
    assert_eq!(
        ours_in_blocks(&client, &keys, r.chain.first_block, r.chain.last_block).await,
        t.signed
    );
}

/// Our senders' transactions in blocks `from..=to`, by their `from`.
async fn ours_in_blocks(client: &EthClient, keys: &KeySet, from: u64, to: u64) -> u64 {
    let ours: std::collections::HashSet<_> = keys.addresses.iter().copied().collect();
    let mut n = 0;
    for h in from..=to {
        for tx in &crate::common::block_txs(client, h).await {
            let sender: alloy_primitives::Address = tx["from"].as_str().unwrap().parse().unwrap();
            n += u64::from(ours.contains(&sender));
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fee_cap_below_the_base_fee_is_a_rejection_of_its_kind() {
    let net =
        TestNet::start_with(|o| o.timeout_commit = feth::devnet::GoDuration::from_millis(300))
            .await;
    let (keys, _dir) = funded(&net, 2, 62).await;
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, keys.len());
    plan.per_account = Some(2);
    // The node's base fee is 1 gwei; the cap allows half of it.
    plan.fees.cap = Some(GWEI / 2);
    let mut settings = LoadSettings::new(&net.web3(), plan);
    settings.wait = Duration::from_secs(5);
    let r = load::run(settings, keys).await.unwrap();
    let t = &r.totals;
    assert_eq!((t.signed, t.included, t.rejected), (4, 0, 4), "{t:#?}");
    assert_eq!(t.rejected_by_reason["fee below base fee"], 4, "{t:#?}");
    let texts = &t.rejected_texts["fee below base fee"];
    assert!(
        texts[0].contains("max fee per gas less than block base fee"),
        "{texts:?}"
    );
    assert_eq!(t.fee_resends, 0);
    // The JSON keeps the kind and the node's own text.
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["totals"]["rejected_by_reason"]["fee below base fee"],
        4
    );
    assert!(json["totals"]["rejected_texts"]["fee below base fee"][0]
        .as_str()
        .unwrap()
        .contains("baseFee: 1000000000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_against_a_node_that_accepts_faster_than_it_commits_is_flagged() {
    // 10 transfers per block: the mempool takes hundreds a second. It
    // holds far more than the run can send (CI once saw 32 senders fill the
    // default 10,000 in the first half; a full mempool's backlog is flat,
    // and the run is no longer the drain this test is about).
    let net = TestNet::start_with(|o| {
        o.block_gas_limit = 10 * TRANSFER;
        o.timeout_commit = feth::devnet::GoDuration::from_millis(500);
        o.mempool_size = 200_000;
    })
    .await;
    let (keys, _dir) = funded(&net, 32, 63).await;
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, keys.len());
    plan.duration = Some(Duration::from_secs(8));
    let mut settings = LoadSettings::new(&net.web3(), plan);
    // The backlog takes minutes to drain: not waited for.
    settings.wait = Duration::from_secs(2);
    let metrics = Arc::new(LoadMetrics::new());
    settings.metrics = Some(metrics.clone());
    let r = load::run(settings, keys).await.unwrap();
    let b = r
        .closed_loop_backlog
        .as_ref()
        .expect("a closed loop reports its backlog");
    eprintln!(
        "closed loop against a slow committer: {b:?}, committed {:.1} tx/s",
        r.chain.committed_tps
    );
    assert!(b.growing, "{b:#?}");
    assert!(b.end > b.mid, "{b:#?}");
    assert!(
        b.growth_per_second > 0.25 * b.committed_per_second,
        "{b:#?}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["closed_loop_backlog"]["growing"], true);
    // Prometheus carries the backlog left when the run ended (accepted −
    // included), `feth report` the warning.
    let accepted = r.accepted.expect("a new report counts acceptances");
    let left = format!(
        "feth_load_backlog_transactions {}\n",
        accepted - r.totals.included
    );
    let scrape = metrics.encode();
    assert!(scrape.contains(&left), "{left:?} not in\n{scrape}");
    assert!(accepted - r.totals.included > 0, "{r:#?}");
    let page = load_view::section(0, "backlog", &r, None).unwrap();
    let warning = format!(
        "the backlog (accepted − committed) grew from {} to {}",
        b.mid, b.end
    );
    assert!(page.contains(&warning), "{warning:?} not in the report");
}

/// A TCP proxy on 127.0.0.1 in front of `upstream` that resets (RST) the
/// first connection whose first request asks for `/status`; the others go
/// through. Returns its URL and whether it has reset one.
async fn resetting_proxy(upstream: String) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let reset = Arc::new(AtomicBool::new(false));
    let flag = reset.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (upstream, flag) = (upstream.clone(), flag.clone());
            tokio::spawn(async move {
                let mut first = vec![0u8; 64 * 1024];
                let Ok(n) = client.read(&mut first).await else {
                    return;
                };
                let asks_status = String::from_utf8_lossy(&first[..n]).contains("/status");
                if asks_status && !flag.swap(true, Ordering::SeqCst) {
                    // Linger 0: close() sends RST, as a peer's reset does.
                    #[allow(deprecated)]
                    let _ = client.set_linger(Some(Duration::ZERO));
                    drop(client);
                    return;
                }
                let Ok(mut server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                use tokio::io::AsyncWriteExt;
                if server.write_all(&first[..n]).await.is_ok() {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (url, reset)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_status_connection_does_not_end_a_saturation_search() {
    let net =
        TestNet::start_with(|o| o.timeout_commit = feth::devnet::GoDuration::from_millis(500))
            .await;
    let (keys, _dir) = funded(&net, 20, 64).await;
    let upstream = net
        .devnet
        .state
        .rpc_url()
        .trim_start_matches("http://")
        .to_string();
    let (proxy, reset) = resetting_proxy(upstream).await;
    let mut cfg = EvmProbeConfig::new(vec![net.web3()], keys);
    cfg.comet_rpc = Some(proxy);
    cfg.warmup = Duration::from_secs(1);
    cfg.drain = Duration::from_secs(20);
    let mut probe = EvmProbe::connect(cfg).await.unwrap();
    let search = SearchConfig {
        start_tps: 20.0,
        max_tps: 40.0,
        step_secs: 2.0,
        max_steps: 2,
        ..SearchConfig::default()
    };
    let r = find_knee(&mut probe, &search, |_| {}).await.unwrap();
    eprintln!(
        "saturate through a resetting proxy: {} step(s), {} RPC retries",
        r.steps.len(),
        r.rpc_retries
    );
    assert!(
        reset.load(Ordering::SeqCst),
        "the proxy reset no connection"
    );
    assert!(!r.steps.is_empty());
    assert!(r.rpc_retries >= 1, "{r:#?}");
    // Both ends of every step's mempool are known (CometBFT answers).
    assert!(r.steps.iter().all(|(m, _)| m.mempool_start.is_some()));
}
