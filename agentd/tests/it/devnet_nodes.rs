//! Tools on a devnet of several nodes, each addressed by its name: the etl
//! ingests every node's logs in one command, the profiler arms one node by
//! name and its flamegraphs land, and a link's bandwidth cap slows what
//! crosses it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use alloy_primitives::{B256, U256};
use feth::devnet::links::LinkShape;
use feth::devnet::network::{Network, NetworkOptions};
use feth::eth::EthClient;
use feth::load::pick::RateSchedule;
use feth::load::plan::LoadPlan;
use feth::load::{self, LoadSettings};
use feth_comet::rpc::Rpc;
use feth_etl::local_redis::LocalRedis;
use feth_etl::store::Store;
use feth_profiler_rpc::api::ProfileKind;
use feth_profiler_rpc::api::ProfileSummary;
use feth_profiler_rpc::{ProfilerClient, RoleFilter, Work};

use crate::common::wait_until;

struct Nodes {
    net: Network,
    dir: tempfile::TempDir,
}

impl Nodes {
    async fn start(
        validators: usize,
        full_nodes: usize,
        tweak: impl Fn(&mut NetworkOptions),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let net = Network::start_private(dir.path(), validators, full_nodes, tweak)
            .await
            .expect("network starts");
        Self { net, dir }
    }

    fn web3(&self, node: &str) -> String {
        self.net.state.node(node).unwrap().state.web3_url()
    }

    fn client(&self, node: &str) -> EthClient {
        EthClient::new(&self.web3(node), Duration::from_secs(5)).unwrap()
    }

    async fn height(&self, node: &str) -> u64 {
        let url = self.net.state.node(node).unwrap().state.rpc_url();
        match Rpc::new(&url, 10, 1) {
            Ok(rpc) => rpc.status().await.map_or(0, |s| s.latest_height),
            Err(_) => 0,
        }
    }

    /// `count` accounts funded through v0, in `keys.txt`.
    async fn funded(&self, count: usize) -> feth::accounts::KeySet {
        let root = feth::keys::read_key_file(&self.net.state.root_key()).unwrap();
        feth::fund::fund_seeded(
            &self.client("v0"),
            &root,
            B256::repeat_byte(0x3c),
            count,
            U256::from(10u64).pow(U256::from(18u64)),
            &self.dir.path().join("keys.txt"),
        )
        .await
        .unwrap()
        .0
    }

    fn dir(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }
}

fn feth(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "feth {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etl_ingests_every_node_of_a_devnet_in_one_command() {
    let t = Nodes::start(1, 1, |_| {}).await;
    let redis = LocalRedis::start().expect("redis-server starts");
    for node in ["v0", "f0"] {
        wait_until(
            &format!("{node} passes height 5"),
            Duration::from_secs(30),
            || async { t.height(node).await >= 5 },
        )
        .await;
    }
    let (v0, f0) = (t.height("v0").await, t.height("f0").await);
    // A node's RPC reports a block once stored; it logs it once applied,
    // which a block-syncing node does just after. Once it stores the next
    // one, the block reached now is in its log.
    for (node, reached) in [("v0", v0), ("f0", f0)] {
        wait_until(
            &format!("{node} passes {reached}"),
            Duration::from_secs(30),
            || async { t.height(node).await > reached },
        )
        .await;
    }
    let out = feth(&[
        "etl",
        "--devnet",
        t.dir(),
        "--redis",
        &redis.url,
        "--chain-id",
        "feth-devnet-9000",
        "--no-progress",
        "--json",
    ]);
    let reports: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).expect("one JSON array");
    assert_eq!(reports.len(), 2, "one ingest per node");

    let store = Store::connect(&redis.url, "feth-devnet-9000", Duration::from_secs(5))
        .await
        .unwrap();
    let mut nodes = store.nodes().await.unwrap();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["f0", "v0"], "each node under its own name");
    // Each node's log holds every height it had reached when asked.
    for (n, reached) in [(&nodes[0], f0), (&nodes[1], v0)] {
        assert!(
            n.heights >= reached,
            "{}: {} heights in Redis, at height {reached}",
            n.name,
            n.heights
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_profiler_arms_one_node_by_name_and_its_flamegraphs_land() {
    // The default patch set `all`: senders are recovered on the web3
    // workers ahead of CheckTx (`web3-recover`), so the admission work the
    // profiles must count as check_tx runs on threads named `web3`.
    let t = Nodes::start(2, 0, |o| o.node.patches = "all".to_string()).await;
    let keys = t.funded(50).await;
    // Sends until the profiling is over (at most 90 s), so the armed
    // blocks are loaded however long the wait for a full block takes.
    let mut plan = LoadPlan::transfers(RateSchedule::Fixed(300.0), 50);
    plan.duration = Some(Duration::from_secs(90));
    let mut settings = LoadSettings::new(&t.web3("v1"), plan);
    settings.wait = Duration::from_secs(30);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    settings.stop = Some(stopped);
    let load = tokio::spawn(load::run(settings, keys));
    let v1 = t.client("v1");
    wait_until(
        "a block holds 30 of the load's transactions",
        Duration::from_secs(30),
        || async {
            let block: serde_json::Value = v1
                .call("eth_getBlockByNumber", serde_json::json!(["latest", false]))
                .await
                .unwrap_or_default();
            block["transactions"]
                .as_array()
                .is_some_and(|t| t.len() >= 30)
        },
    )
    .await;

    let dir = t.dir();
    feth(&[
        "profiler",
        "--node",
        "v1",
        "--dir",
        dir,
        "--enable",
        "--blocks",
        "2",
        "--frequency-hz",
        "997",
    ]);
    let out = t.dir.path().join("flamegraphs");
    feth(&[
        "profiler",
        "--node",
        "v1",
        "--dir",
        dir,
        "--out",
        out.to_str().unwrap(),
        "--timeout-secs",
        "60",
    ]);
    stop.send(true).unwrap();
    load.await.unwrap().unwrap();

    let url = |n: &str| t.net.state.node(n).unwrap().state.profiler_url();
    let v1_profiles = ProfilerClient::new(&url("v1"), None)
        .unwrap()
        .list()
        .await
        .unwrap();
    assert_eq!(v1_profiles.len(), 2, "{v1_profiles:?}");
    let v0 = ProfilerClient::new(&url("v0"), None).unwrap();
    assert!(v0.list().await.unwrap().is_empty(), "v0 was not armed");
    assert!(!v0.status().await.unwrap().armed);
    check_work_by_what_it_is(&v1_profiles, &out);
    for p in &v1_profiles {
        assert!(p.samples > 0, "block {} holds no sample: {p:?}", p.height);
        let svg = out
            .join(&p.chain_id)
            .join(p.height.to_string())
            .join(ProfileKind::Svg.file_name(RoleFilter::All));
        let text =
            std::fs::read_to_string(&svg).unwrap_or_else(|e| panic!("{}: {e}", svg.display()));
        assert!(
            text.contains("<svg") && text.contains("abcid"),
            "{}",
            svg.display()
        );
    }
}

/// abcid's samples are split by the work done, the thread second: the
/// sender recovery the web3 workers do ahead of CheckTx is check_tx, never
/// hidden under rpc; every sample has one work, and the summary says so.
fn check_work_by_what_it_is(profiles: &[ProfileSummary], out: &Path) {
    let mut stacks = String::new();
    for p in profiles {
        assert_eq!(p.work_samples.values().sum::<u64>(), p.samples, "{p:?}");
        assert_eq!(p.work_samples[&Work::CheckTx], p.check_tx_samples, "{p:?}");
        let dir = out.join(&p.chain_id).join(p.height.to_string());
        let folded = dir.join(ProfileKind::Folded.file_name(RoleFilter::All));
        stacks.push_str(&std::fs::read_to_string(&folded).expect("all.folded downloaded"));
    }
    let admission_on_web3 = stacks
        .lines()
        .filter(|l| l.starts_with("check_tx;web3;") && l.contains("ecdsa_recover"))
        .count();
    assert!(
        admission_on_web3 > 0,
        "no sender recovery on web3 counted as check_tx"
    );
    let hidden = stacks
        .lines()
        .find(|l| l.starts_with("rpc;") && l.contains("ecdsa_recover"));
    assert_eq!(hidden, None, "sender recovery counted as rpc");
    let roots: std::collections::BTreeSet<&str> =
        stacks.lines().filter_map(|l| l.split(';').next()).collect();
    assert!(
        roots.iter().all(|r| Work::from_name(r).is_some()),
        "{roots:?}"
    );
}

/// Kills f0, commits about 2,000 transfers on v0, restarts f0 and returns
/// how long f0 took to reach v0's height (block sync through its link).
async fn catch_up(t: &mut Nodes, keys: &feth::accounts::KeySet) -> (Duration, u64) {
    assert_eq!(t.net.state.kill("f0").unwrap(), 2);
    let mut plan = LoadPlan::transfers(RateSchedule::Closed, keys.len());
    plan.per_account = Some(40);
    let report = load::run(LoadSettings::new(&t.web3("v0"), plan), keys.clone())
        .await
        .unwrap();
    assert_eq!(
        report.totals.included,
        40 * keys.len() as u64,
        "{:?}",
        report.totals
    );
    let target = t.height("v0").await;
    let began = Instant::now();
    t.net.state.restart("f0").await.unwrap();
    wait_until(
        "f0 reaches v0's height",
        Duration::from_secs(90),
        || async { t.height("f0").await >= target },
    )
    .await;
    (began.elapsed(), report.totals.included)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bandwidth_cap_slows_a_full_nodes_block_sync() {
    let mut t = Nodes::start(1, 1, |_| {}).await;
    let keys = t.funded(50).await;
    let (clear, txs) = catch_up(&mut t, &keys).await;
    // 200 kbit/s = 25 KB/s each way on f0's links.
    let cap = LinkShape {
        bandwidth_kbit: Some(200),
        ..LinkShape::default()
    };
    t.net.state.slow(&["f0".to_string()], cap).await.unwrap();
    let (capped, _) = catch_up(&mut t, &keys).await;
    // A signed transfer is over 100 bytes (110 here): the blocks carry at
    // least txs × 100 bytes, which take txs × 100 / 25,000 s at the cap.
    let floor = Duration::from_secs_f64(txs as f64 * 100.0 / 25_000.0);
    eprintln!("f0 caught up on {txs} transfers in {clear:?} with clear links, {capped:?} at 200 kbit/s (floor {floor:?})");
    // The floor holds on any machine (a slower one only adds to the time).
    // Against the clear links' time it is printed, not asserted: a slow
    // machine replays blocks slower than the cap delivers them, and both
    // catch-ups then take the CPU's time.
    assert!(
        capped >= floor,
        "{capped:?} is under the cap's floor {floor:?} ({clear:?} with clear links)"
    );
}
