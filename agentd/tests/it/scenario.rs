//! Scenario files run as written (`--scenario`): on abcid and on `geth
//! --dev`, the same file of four write kinds with reads beside them. Each
//! kind's count is its share within statistical bounds; the chain holds
//! exactly the transactions of each kind the run says it sent, at their
//! contracts, all succeeded; the heavy view's answers are checked. Under
//! the saturation probe, every step runs the scenario, reads included, on
//! contracts deployed once.

use std::collections::BTreeMap;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use feth::accounts::KeySet;
use feth::eth::EthClient;
use feth::load::pick::RateSchedule;
use feth::load::plan::{LoadPlan, Workload, WorkloadKind};
use feth::load::reads::ReadMethod;
use feth::load::scenario::Scenario;
use feth::load::{self, LoadReport, LoadSettings};
use feth::saturate::{EvmProbe, EvmProbeConfig, Probe};
use serde_json::{json, Value};

use crate::common::{funded, TestNet};
use crate::geth::GethDev;

const FILE: &str = r#"
[writes]
transfer = 0.4
erc20 = 0.2
store = 0.2
swap = 0.2

[reads]
rate = 40
mix = { digest = 3, receipt = 1, token_balance = 1 }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_file_s_mix_is_what_abcid_commits() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 8, 81).await;
    a_scenario_runs_as_written(&net.web3(), keys).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs geth: bash scripts/setup.sh --test"]
async fn a_scenario_file_s_mix_is_what_geth_dev_commits() {
    let geth = GethDev::start().await;
    let (keys, _dir) = geth.funded(8, 82).await;
    a_scenario_runs_as_written(geth.url(), keys).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_saturation_step_runs_the_scenario_on_contracts_deployed_once() {
    let net = TestNet::start().await;
    let (keys, _dir) = funded(&net, 8, 83).await;
    let deployer = keys.addresses[0];
    let mut cfg = EvmProbeConfig::new(vec![net.web3()], keys);
    cfg.warmup = Duration::from_secs(1);
    cfg.scenario = Some(Scenario::parse("mixed", FILE).unwrap());
    let mut probe = EvmProbe::connect(cfg).await.unwrap();
    for rate in [30.0, 60.0] {
        let m = probe.step(rate, 3.0).await.unwrap();
        let reads = m.reads.as_ref().expect("the step's reads");
        eprintln!("{rate}: {}", reads.one_line());
        for (name, f) in &reads.methods {
            assert_eq!((f.wrong, f.failed), (0, 0), "{name}: {f:?}");
        }
        assert!(reads.methods["digest"].ok > 0, "{reads:?}");
        // Every committed transaction burns at least a transfer's 21,000
        // gas, the contract calls more.
        assert!(
            m.gas_per_sec
                .is_some_and(|g| g > m.committed_tps * 21_000.0),
            "{m:?}"
        );
    }
    // Three contracts (token, store, pool), created once for both steps.
    let creations = chain_txs(&net.web3())
        .await
        .iter()
        .filter(|tx| tx["to"].is_null() && address(&tx["from"]) == deployer)
        .count();
    assert_eq!(creations, 3);
}

/// [`FILE`] at 60 tx/s for 6 s from `keys` on the node at `url`.
async fn a_scenario_runs_as_written(url: &str, keys: KeySet) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mix.toml");
    std::fs::write(&path, FILE).unwrap();
    let scenario = Scenario::load(path.to_str().unwrap()).unwrap();
    let plan = LoadPlan {
        duration: Some(Duration::from_secs(6)),
        ..LoadPlan::transfers(RateSchedule::Fixed(60.0), keys.len())
    };
    let mut settings = LoadSettings::new(url, scenario.apply(plan, keys.len()));
    settings.reads = scenario.reads.clone();
    let r = load::run(settings, keys.clone()).await.unwrap();
    eprintln!("{:?}\n{:?}", r.sent_by_kind, r.totals);
    assert_eq!(r.totals.included, r.totals.signed, "{:?}", r.totals);
    assert_eq!(r.totals.reverted, 0, "every kind's call succeeds");
    assert_shares(&r);
    let on_chain = kinds_on_chain(url, &r, &keys).await;
    assert_eq!(on_chain, r.sent_by_kind, "the chain's transactions by kind");
    let reads = r.reads.as_ref().unwrap();
    let digest = &reads.methods[ReadMethod::Digest.name()];
    assert!(digest.ok > 0, "{digest:?}");
    assert_eq!((digest.wrong, digest.failed), (0, 0), "{digest:?}");
}

/// Each kind's count is within 4.5 standard deviations of its share of all
/// (a binomial count; about one run in 150,000 falls outside by chance).
fn assert_shares(r: &LoadReport) {
    let n: u64 = r.sent_by_kind.values().sum();
    assert_eq!(n, r.totals.signed, "every first submission has a kind");
    assert!(n >= 200, "{n} transactions sent");
    for w in &r.config.writes {
        let kind = w.workload.kind();
        let got = r.sent_by_kind.get(&kind).copied().unwrap_or(0) as f64;
        let (mean, sd) = (
            n as f64 * w.share,
            (n as f64 * w.share * (1.0 - w.share)).sqrt(),
        );
        assert!(
            (got - mean).abs() <= 4.5 * sd,
            "{}: {got} of {n}, its share {} asks {mean:.1} ± {sd:.1}",
            kind.name(),
            w.share
        );
    }
}

/// The run's transactions in the chain, by kind: calls to each contract
/// (token transfers of the run's value, not the hand-outs), and value
/// transfers from a sender without calldata.
async fn kinds_on_chain(url: &str, r: &LoadReport, keys: &KeySet) -> BTreeMap<WorkloadKind, u64> {
    let contracts: BTreeMap<Address, WorkloadKind> = r
        .config
        .writes
        .iter()
        .filter_map(|w| match w.workload {
            Workload::Transfer => None,
            Workload::Erc20 { token: a }
            | Workload::Store { contract: a }
            | Workload::Swap { contract: a } => Some((a, w.workload.kind())),
        })
        .collect();
    let mut counts = BTreeMap::new();
    for tx in chain_txs(url).await {
        if let Some(kind) = kind_of(&tx, &contracts, keys) {
            *counts.entry(kind).or_insert(0) += 1;
        }
    }
    counts
}

/// Every transaction of the chain at `url`, block 1 to the latest.
async fn chain_txs(url: &str) -> Vec<Value> {
    let client = EthClient::new(url, Duration::from_secs(10)).unwrap();
    let last = client.block_number().await.unwrap();
    let mut txs = Vec::new();
    for height in 1..=last {
        let block: Value = client
            .call(
                "eth_getBlockByNumber",
                json!([format!("{height:#x}"), true]),
            )
            .await
            .unwrap();
        txs.extend(block["transactions"].as_array().unwrap().iter().cloned());
    }
    txs
}

fn address(v: &Value) -> Address {
    serde_json::from_value(v.clone()).unwrap()
}

fn kind_of(
    tx: &Value,
    contracts: &BTreeMap<Address, WorkloadKind>,
    keys: &KeySet,
) -> Option<WorkloadKind> {
    let from = address(&tx["from"]);
    let to: Option<Address> = serde_json::from_value(tx["to"].clone()).unwrap();
    let input = tx["input"].as_str().unwrap();
    if !keys.addresses.contains(&from) {
        return None;
    }
    match to.and_then(|to| contracts.get(&to)) {
        // A hand-out moves 10^9 tokens; the run's transfers move 1.
        Some(WorkloadKind::Erc20) => {
            let amount = U256::from_str_radix(&input[input.len() - 64..], 16).unwrap();
            (amount == U256::from(1u64)).then_some(WorkloadKind::Erc20)
        }
        Some(kind) => Some(*kind),
        None if to.is_some() && input == "0x" => Some(WorkloadKind::Transfer),
        None => None,
    }
}
