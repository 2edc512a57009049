//! The saturation search against a real devnet: a knee found far below an
//! absurd ceiling, on the CometBFT header times the node itself named; one
//! found below the start rate on a chain of small blocks; and
//! `feth saturate` starved of CPU, which must report the agent, not claim a
//! knee of the chain.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use feth::blocks;
use feth::saturate::{
    find_knee, Clock, EvmProbe, EvmProbeConfig, Outcome, Probe, SearchConfig, SearchEvent,
    SearchReport, Verdict,
};
use feth_comet::rpc::Rpc;

use crate::common::{funded, Hog, TestNet};

/// The two tests load the machine's two CPUs in ways that would skew each
/// other: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// CometBFT's mempool path (`all,-app-mempool`): its knee, a few thousand
/// transactions a second here, is within what 300 senders offer, where
/// abcid's own pool takes more than 300 senders send one at a time (a
/// search then ends sender-limited, not at a knee).
async fn devnet() -> TestNet {
    TestNet::start_with(|o| {
        o.timeout_commit = feth::devnet::GoDuration::from_millis(500);
        o.patches = "all,-app-mempool".into();
    })
    .await
}

/// Transactions CometBFT reports in blocks `first + 1 ..= last`.
async fn txs_in(rpc: &Rpc, first: u64, last: u64) -> u64 {
    let heights: Vec<u64> = (first + 1..=last).collect();
    let (facts, missing) = rpc.fetch(&heights, &[]).await.unwrap();
    assert!(missing.is_empty(), "{missing:?}");
    facts.values().map(|f| f.txs.unwrap()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_knee_of_a_devnet_is_found_far_below_an_absurd_ceiling() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let net = devnet().await;
    let (keys, _dir) = funded(&net, 300, 41).await;
    let state = &net.devnet.state;
    let mut cfg = EvmProbeConfig::new(vec![net.web3()], keys);
    cfg.warmup = Duration::from_secs(2);
    cfg.drain = Duration::from_secs(30);
    cfg.node_pids = vec![state.abcid_pid.unwrap(), state.cometbft_pid.unwrap()];
    let mut probe = EvmProbe::connect(cfg).await.unwrap();
    // No CometBFT RPC was given: abcid named it.
    assert_eq!(probe.clock(), Clock::CometbftHeaders);
    assert_eq!(probe.comet_rpc(), Some(state.rpc_url().as_str()));
    assert!(probe.clock_source().contains("abcid_cometbftRpc"));

    let search = SearchConfig {
        start_tps: 250.0,
        max_tps: 1_000_000.0,
        step_secs: 4.0,
        max_steps: 8,
        ..SearchConfig::default()
    };
    let mut finished = 0;
    let r = find_knee(&mut probe, &search, |e| {
        finished += usize::from(matches!(e, SearchEvent::Finished { .. }));
    })
    .await
    .unwrap();
    let Outcome::KneeFound {
        knee_tps,
        committed_tps,
        behind_tps,
    } = r.outcome
    else {
        panic!("no knee: {r:#?}");
    };
    assert!(behind_tps <= search.max_tps / 100.0, "{r:#?}");
    assert!(search.start_tps <= knee_tps && knee_tps < behind_tps);
    assert!(
        committed_tps >= (1.0 - search.tolerance) * knee_tps,
        "{r:#?}"
    );
    assert_eq!((r.clock, finished), (Clock::CometbftHeaders, r.steps.len()));
    assert!(r.steps.len() <= search.max_steps);

    let rpc = Rpc::new(&state.rpc_url(), 10, 2).unwrap();
    for (m, v) in &r.steps {
        assert!(!matches!(v, Verdict::AgentBehind { .. }), "{m:?} {v:?}");
        assert!(
            m.committed_tps <= m.offered_tps * (1.0 + search.tolerance),
            "{m:?}"
        );
        assert!(
            m.sent_tps <= m.offered_tps * (1.0 + search.tolerance),
            "{m:?}"
        );
        assert!(m.last_height > m.first_height + 1, "{m:?}");
        assert!((450.0..5_000.0).contains(&m.block_time_p50_ms), "{m:?}");
        assert!(m.block_time_p95_ms >= m.block_time_p50_ms);
        assert!(
            m.mempool_start.is_some() && m.mempool_end.is_some(),
            "{m:?}"
        );
        assert!(m.node_cpu_us_per_tx.is_some_and(|c| c > 0.0), "{m:?}");
        assert!(m.agent_cpu_us_per_tx > 0.0 && m.slots_busy <= 1.0, "{m:?}");
        // The window's count is the chain's: every block of it, all valid.
        assert_eq!(m.invalid, Some(0), "{m:?}");
        assert_eq!(m.valid, txs_in(&rpc, m.first_height, m.last_height).await);
    }
    // The web3 clock reads the same blocks, in whole seconds.
    let (m, _) = &r.steps[0];
    let web3 = blocks::web3_window(&net.client(), m.first_height, m.last_height)
        .await
        .unwrap();
    assert_eq!(web3.txs, m.valid);
    assert_eq!((web3.valid, web3.invalid), (None, None));
    assert!(web3.times_ns.iter().all(|t| t % 1_000_000_000 == 0));
    // Each step drained the chain before the next; the last one too.
    assert_eq!(rpc.mempool().await.unwrap().txs, 0);
}

/// A probe of `net` by `keys`: 1 s of warm-up, `drain` after each step.
async fn probe_of(net: &TestNet, keys: feth::accounts::KeySet, drain: Duration) -> EvmProbe {
    let mut cfg = EvmProbeConfig::new(vec![net.web3()], keys);
    cfg.warmup = Duration::from_secs(1);
    cfg.drain = drain;
    EvmProbe::connect(cfg).await.unwrap()
}

/// Blocks of 60 transfers at most, about every half second: a chain far
/// below the start rate of 200 tx/s. The search halves down to a rate it
/// keeps up with and bisects from there; every step begins on the empty
/// mempool the one before drained, and one that did not drain leaves the
/// next a backlog it records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_behind_at_the_start_rate_is_searched_downward() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let net = TestNet::start_with(|o| {
        o.timeout_commit = feth::devnet::GoDuration::from_millis(500);
        o.block_gas_limit = 60 * feth::fund::TRANSFER_GAS;
    })
    .await;
    let (keys, _dir) = funded(&net, 60, 43).await;
    let mut probe = probe_of(&net, keys.clone(), Duration::from_secs(30)).await;
    let search = SearchConfig {
        start_tps: 200.0,
        step_secs: 2.0,
        max_steps: 5,
        ..SearchConfig::default()
    };
    let r = find_knee(&mut probe, &search, |_| {}).await.unwrap();
    let (first, verdict) = &r.steps[0];
    assert_eq!(first.offered_tps, 200.0);
    assert!(matches!(verdict, Verdict::ChainBehind { .. }), "{r:#?}");
    assert_eq!(r.steps[1].0.offered_tps, 100.0, "{r:#?}");
    let Outcome::KneeFound {
        knee_tps,
        committed_tps,
        behind_tps,
    } = r.outcome
    else {
        panic!("no knee below the start rate: {r:#?}");
    };
    assert!(knee_tps < behind_tps && behind_tps < 200.0, "{r:#?}");
    assert!(committed_tps >= (1.0 - search.tolerance) * knee_tps);
    // The blocks were full at the rates behind: no more than the gas
    // limit allows, and at it.
    let rpc = Rpc::new(&net.devnet.state.rpc_url(), 10, 2).unwrap();
    let heights: Vec<u64> = (first.first_height + 1..=first.last_height).collect();
    let (facts, missing) = rpc.fetch(&heights, &[]).await.unwrap();
    assert!(missing.is_empty(), "{missing:?}");
    let most = facts.values().map(|f| f.txs.unwrap()).max();
    assert_eq!(most, Some(60), "{facts:?}");
    // Every step began on an empty mempool: each one's drain emptied it.
    assert!(r.steps.iter().all(|(m, _)| m.backlog == Some(0)), "{r:#?}");

    // A probe that does not wait for the chain leaves a deliberate backlog,
    // which the next step (of other senders, funded first: a funding waits
    // for its inclusion) records.
    let (others, _others_dir) = funded(&net, 20, 44).await;
    let mut hasty = probe_of(&net, keys, Duration::ZERO).await;
    hasty.step(400.0, 3.0).await.unwrap();
    let mut careful = probe_of(&net, others, Duration::from_secs(60)).await;
    let next = careful.step(20.0, 2.0).await.unwrap();
    let left = next.backlog.expect("the mempool's count");
    assert!(left > 100, "{next:?}");
    let why = next.started_on_backlog(2.0, 0.05).expect("named");
    assert!(
        why.contains(&format!("backlog of {left} transactions")),
        "{why}"
    );
}

/// Pins every thread of process `pid` to `cpu`.
fn pin(pid: u32, cpu: usize) {
    let status = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", &cpu.to_string(), &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("taskset runs");
    assert!(status.success(), "cannot pin {pid} to CPU {cpu}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_starved_of_cpu_is_reported_and_no_knee_is_claimed() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cpus >= 2, "this test starves one CPU and needs a second");
    let _alone = ONE_AT_A_TIME.lock().await;
    let net = devnet().await;
    let (_keys, dir) = funded(&net, 50, 42).await;
    // The chain keeps CPU 0; the agent shares CPU 1, at the lowest
    // priority, with a busy loop: it gets about 1.5 % of a CPU (weights 15
    // and 1024), enough for its reads, far from enough to sign 2,000 tx/s.
    let state = &net.devnet.state;
    pin(state.abcid_pid.unwrap(), 0);
    pin(state.cometbft_pid.unwrap(), 0);
    let _hog = Hog::on_cpu(1);
    let run = tokio::process::Command::new("taskset")
        .args([
            "-c",
            "1",
            "nice",
            "-n",
            "19",
            env!("CARGO_BIN_EXE_feth"),
            "saturate",
        ])
        .args(["--network", &net.web3(), "--keys"])
        .arg(dir.path().join("keys.txt"))
        .args(["--start", "2000", "--max", "1000000", "--step-secs", "3"])
        .args(["--warmup-secs", "1", "--max-steps", "4", "--drain", "20"])
        .args(["--json", "--quiet"])
        .kill_on_drop(true)
        .output();
    // A starved agent's reads time out and are retried (5 tries, bounded
    // back-off), so the search takes longer than its steps; it still ends.
    let out = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("feth saturate ends within 300 s")
        .expect("feth runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "no knee is no success: {stderr} {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let r: SearchReport = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    let Outcome::AgentLimited { at_tps, why } = &r.outcome else {
        panic!("the starved agent was not reported: {r:#?}\n{stderr}");
    };
    assert!(why.contains("the agent, not the chain"), "{why}");
    let (m, v) = r.steps.last().unwrap();
    assert_eq!(m.offered_tps, *at_tps);
    assert!(matches!(v, Verdict::AgentBehind { .. }), "{v:?}");
    // Judged by the search's own rules, not by a figure of this machine:
    // the schedule was missed, and by the agent's own lag.
    let c = &r.config;
    let missed =
        m.sent_tps < (1.0 - c.tolerance) * m.offered_tps || m.schedule_lag_p99_ms > c.lag_limit_ms;
    assert!(missed, "{m:?}");
    assert!(m.agent_lag_p99_ms > c.agent_lag_limit_ms, "{m:?}");
    assert!(
        m.slots_busy < r.config.busy_slots && m.backoffs == 0,
        "{m:?}"
    );
    assert_eq!(r.clock, Clock::CometbftHeaders);
    assert!(
        stderr.contains("no knee: the agent could not offer"),
        "{stderr}"
    );
}

/// Issue 26: a node whose transactions wait in an application-side mempool
/// (abcid's `app-mempool`, in `all`; CometBFT's `mempool.type = "nop"`), as Cosmos EVM
/// chains run theirs. CometBFT's `/num_unconfirmed_txs` says 0 throughout
/// while the node's `txpool_status` counts what waits; a saturation step
/// reads the mempool from the latter and counts the chain's blocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_side_mempool_is_read_from_txpool_status() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let net = TestNet::start_with(|o| {
        o.timeout_commit = feth::devnet::GoDuration::from_millis(1000);
    })
    .await;
    let state = &net.devnet.state;
    assert_eq!(
        state.cometbft_settings(&["mempool.type"]).unwrap(),
        ["mempool.type=\"nop\""]
    );
    // Funding goes through the node's pool too.
    let (keys, _dir) = funded(&net, 200, 43).await;
    let mut probe = probe_of(&net, keys, Duration::from_secs(30)).await;
    let search = SearchConfig {
        start_tps: 100.0,
        max_tps: 200.0,
        step_secs: 4.0,
        max_steps: 1,
        ..SearchConfig::default()
    };
    let rpc = Rpc::new(&state.rpc_url(), 10, 2).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let watch = tokio::spawn(watch_mempools(rpc.clone(), net.client(), stop.clone()));
    let r = find_knee(&mut probe, &search, |_| {}).await.unwrap();
    stop.store(true, Ordering::SeqCst);
    let (comet_max, txpool_max, polls) = watch.await.unwrap();
    eprintln!("app-side mempool: CometBFT's count at most {comet_max}, txpool_status's at most {txpool_max}, {polls} polls");
    assert_eq!(comet_max, 0, "CometBFT's mempool is off");
    assert!(
        txpool_max > 0,
        "txpool_status never counted a waiting transaction"
    );
    let (m, _) = &r.steps[0];
    assert!(
        m.mempool_start.is_some() && m.mempool_end.is_some(),
        "{m:?}"
    );
    assert_eq!(m.invalid, Some(0), "{m:?}");
    assert_eq!(m.valid, txs_in(&rpc, m.first_height, m.last_height).await);
    assert!(m.valid > 0, "{m:?}");
    let drained = pending(&net.client()).await;
    assert_eq!(drained, 0, "the step drained the pool");
}

/// `txpool_status`'s pending plus queued.
async fn pending(client: &feth::eth::EthClient) -> u64 {
    let status: serde_json::Value = client
        .call("txpool_status", serde_json::json!([]))
        .await
        .unwrap();
    let count = |key: &str| {
        u64::from_str_radix(status[key].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    count("pending") + count("queued")
}

/// Polls CometBFT's mempool count and the node's `txpool_status` every
/// 20 ms until `stop` (or two minutes): the largest of each, and the polls.
async fn watch_mempools(
    rpc: Rpc,
    client: feth::eth::EthClient,
    stop: Arc<AtomicBool>,
) -> (u64, u64, u32) {
    let (mut comet, mut txpool, mut polls) = (0, 0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
        comet = comet.max(rpc.mempool().await.unwrap().txs);
        txpool = txpool.max(pending(&client).await);
        polls += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (comet, txpool, polls)
}
