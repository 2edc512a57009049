//! Read traffic beside the writes (`feth load --reads`): against abcid and
//! against `geth --dev`, the same workload: every method is answered and
//! checked, the mix is what was sent, and the chain agrees with what the
//! reads saw; against a node that answers every read with an error, every
//! read is counted as failed, none dropped.

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use feth::accounts::KeySet;
use feth::eth::EthClient;
use feth::load::metrics::LoadMetrics;
use feth::load::pick::RateSchedule;
use feth::load::plan::{LoadPlan, WorkloadKind};
use feth::load::reads::{self, ReadMethod, ReadPlan, ReadTargets};
use feth::load::report::ReadsReport;
use feth::load::{self, LoadSettings};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common::{funded, TestNet};
use crate::geth::GethDev;

/// Each method's count is its weight's share of all reads, to within one
/// cycle of the mix (the reads are picked in cycles of the weights' sum).
fn assert_mix(r: &ReadsReport, plan: &ReadPlan) {
    let total: u64 = r.methods.values().map(|m| m.due).sum();
    let weights: u64 = plan.mix.iter().map(|(_, w)| u64::from(*w)).sum();
    for (method, weight) in &plan.mix {
        let due = r.methods.get(method.name()).map_or(0, |m| m.due);
        let share = total as f64 * f64::from(*weight) / weights as f64;
        assert!(
            (due as f64 - share).abs() <= f64::from(*weight),
            "{}: {due} of {total} reads, its weight asks {share:.1}",
            method.name()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_beside_erc20_writes_are_answered_checked_and_in_their_mix() {
    let net =
        TestNet::start_with(|o| o.timeout_commit = feth::devnet::GoDuration::from_millis(300))
            .await;
    let (keys, _dir) = funded(&net, 8, 71).await;
    reads_beside_erc20_writes(&net.web3(), keys).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs geth: bash scripts/setup.sh --test"]
async fn reads_beside_erc20_writes_on_geth_dev_are_answered_checked_and_in_their_mix() {
    let geth = GethDev::start().await;
    let (keys, _dir) = geth.funded(8, 72).await;
    reads_beside_erc20_writes(geth.url(), keys).await;
}

/// ERC-20 transfers from `keys` at 40/s for 5 s on the node at `url`, with
/// wallet reads and token balances at 100/s beside them: every read due is
/// accounted for, answered and checked, in its mix; the chain's logs hold
/// the run's transfers; the writes all commit.
async fn reads_beside_erc20_writes(url: &str, keys: KeySet) {
    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(40.0), keys.len());
    plan.duration = Some(Duration::from_secs(5));
    plan.writes = WorkloadKind::Erc20.into();
    let mut settings = LoadSettings::new(url, plan);
    let mut read_plan = ReadPlan::wallets(100.0);
    read_plan.mix.push((ReadMethod::TokenBalance, 3));
    read_plan.mix.push((ReadMethod::Estimate, 2));
    settings.reads = Some(read_plan.clone());
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("series.jsonl");
    settings.series_out = Some(series.clone());
    let r = load::run(settings, keys.clone()).await.unwrap();
    let reads = r.reads.as_ref().expect("the report holds the reads");
    eprintln!("{reads:#?}");
    // Every read due is accounted for, and at the rate asked (the first
    // read is due at once: one more than rate × seconds).
    let due: u64 = reads.methods.values().map(|m| m.due).sum();
    let expected = reads.rate * reads.seconds;
    assert!(
        (due as f64 - expected).abs() <= 0.1 * expected + 2.0,
        "{due} reads due over {:.1} s at {}/s",
        reads.seconds,
        reads.rate
    );
    assert_mix(reads, &read_plan);
    // The series file holds every read in its seconds, and each method's
    // figures at its end.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&series)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let in_rows: u64 = lines
        .iter()
        .filter(|l| l["kind"] == "second")
        .filter_map(|l| l.get("reads"))
        .map(|x| {
            ["ok", "wrong", "failed", "skipped"]
                .iter()
                .map(|k| x[k].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(in_rows, due, "reads in the series file's seconds");
    let end = lines.last().unwrap();
    assert_eq!(end["kind"], "end");
    // (Counts compared: serde_json's float parsing does not round-trip.)
    for (name, m) in &reads.methods {
        let at_end = &end["reads"]["methods"][name];
        let counts = [m.due, m.ok, m.wrong, m.failed, m.skipped];
        let written = ["due", "ok", "wrong", "failed", "skipped"].map(|k| at_end[k].as_u64());
        assert_eq!(written, counts.map(Some), "{name} at the series file's end");
    }
    for (name, m) in &reads.methods {
        assert_eq!(
            m.ok + m.wrong + m.failed + m.skipped,
            m.due,
            "{name}: {m:?}"
        );
        assert_eq!((m.wrong, m.failed), (0, 0), "{name}: {m:?}");
        assert!(
            m.latency_ms.p99 >= m.latency_ms.p50 && m.latency_ms.p50 > 0.0,
            "{name}: {m:?}"
        );
    }
    // Receipts and logs were asked of blocks with our transactions, and
    // answered (receipts skip only until a block with transactions is seen).
    for method in [
        ReadMethod::Receipt,
        ReadMethod::Logs,
        ReadMethod::TokenBalance,
    ] {
        let m = &reads.methods[method.name()];
        assert!(m.ok * 2 > m.due, "{}: {m:?}", method.name());
    }
    // The logs the reads checked are the chain's: one Transfer event for
    // each token transfer of the run (and the hand-outs before it).
    let client = EthClient::new(url, Duration::from_secs(10)).unwrap();
    let logs: Vec<serde_json::Value> = client
        .call(
            "eth_getLogs",
            json!([{ "fromBlock": "0x1", "toBlock": format!("{:#x}", r.chain.last_block) }]),
        )
        .await
        .unwrap();
    let transfers = r.totals.included - r.totals.reverted;
    assert!(
        logs.len() as u64 >= transfers,
        "{} logs, {transfers} transfers",
        logs.len()
    );
    // The token's balanceOf view answers what its Transfer events add up
    // to, for the deployer and every sender.
    let token = feth::load::plan::token_of(&r.config.writes).unwrap();
    let by_events = balances_from_transfers(&logs, token);
    for who in &keys.addresses {
        let view = feth::load::erc20::balance_of(&client, token, *who)
            .await
            .unwrap();
        let events = by_events.get(who).copied().unwrap_or_default();
        assert_eq!(view, events, "balanceOf({who})");
    }
    // `feth report` shows them, one row per method.
    let page = feth::report::load_view::section(0, "reads", &r, None).unwrap();
    let receipts = &reads.methods["receipt"];
    let row = format!(
        "<tr><td>receipt</td><td>{:.1}</td>",
        receipts.answered_per_second
    );
    assert!(page.contains(&row), "{row:?} not in the report");
    // The writes went on: the run committed what it sent.
    assert_eq!(r.totals.included, r.totals.signed, "{:?}", r.totals);
}

/// Each holder's balance of `token` by its Transfer events (minted from the
/// zero address, moved between holders).
fn balances_from_transfers(
    logs: &[serde_json::Value],
    token: Address,
) -> std::collections::BTreeMap<Address, U256> {
    let transfer = alloy_primitives::keccak256("Transfer(address,address,uint256)");
    let mut balances = std::collections::BTreeMap::new();
    for log in logs {
        let at: Address = serde_json::from_value(log["address"].clone()).unwrap();
        let topics: Vec<B256> = serde_json::from_value(log["topics"].clone()).unwrap();
        if at != token || topics.first() != Some(&transfer) {
            continue;
        }
        let (from, to) = (Address::from_word(topics[1]), Address::from_word(topics[2]));
        let data: alloy_primitives::Bytes = serde_json::from_value(log["data"].clone()).unwrap();
        let value = U256::from_be_slice(&data);
        if !from.is_zero() {
            let b: &mut U256 = balances.entry(from).or_default();
            *b = b
                .checked_sub(value)
                .expect("a holder moved more than it held");
        }
        *balances.entry(to).or_default() += value;
    }
    balances
}

/// A node on 127.0.0.1 that answers every JSON-RPC request with the error
/// `busy` (code -32000); returns its URL.
async fn busy_node() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    let body =
                        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"busy"}}"#;
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if socket.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_a_node_refuses_are_counted_as_failed_never_dropped() {
    let url = busy_node().await;
    let client = Arc::new(EthClient::new(&url, Duration::from_secs(2)).unwrap());
    let plan = ReadPlan::wallets(50.0);
    let metrics = Arc::new(LoadMetrics::new());
    let senders = vec![Address::repeat_byte(1)];
    let targets = ReadTargets {
        senders,
        token: None,
        digest: None,
    };
    let traffic = reads::start(plan.clone(), client, targets, Some(metrics.clone())).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = traffic.finish().await;
    eprintln!("{r:#?}");
    assert_mix(&r, &plan);
    for (name, m) in &r.methods {
        assert_eq!(m.ok + m.wrong, 0, "{name}: {m:?}");
        assert_eq!(m.failed + m.skipped, m.due, "{name}: {m:?}");
        if name != ReadMethod::Receipt.name() {
            assert!(m.failed > 0, "{name}: {m:?}");
            assert!(m.examples[0].contains("busy"), "{name}: {m:?}");
        }
    }
    // Prometheus counts the same.
    let scrape = metrics.encode();
    let failed = &r.methods["balance"].failed;
    let line = format!("feth_load_reads_total{{method=\"balance\",outcome=\"failed\"}} {failed}\n");
    assert!(scrape.contains(&line), "{line:?} not in\n{scrape}");
    // No block was ever read, so no receipt could be asked: skipped, said so.
    let receipts = &r.methods[ReadMethod::Receipt.name()];
    assert_eq!(receipts.skipped, receipts.due);
    assert!(receipts.due > 0);
}
