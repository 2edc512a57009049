//! `feth compare --network` on a node it did not make (issue 41): the
//! conditions come from the node itself, never from feth's devnet defaults
//! (a devnet with a 10 M gas limit and 1 s blocks is reported as such), its
//! CPU per transaction from `--node-pid`, and a CPU hog the test starts
//! beside it (bounded, killed by PID) is reported as a busy machine, which
//! the gate answers as inconclusive.

use std::process::{Command, Output};

use feth::cmd::compare::INCONCLUSIVE_STATUS;
use feth::compare::CompareReport;

use crate::common::{funded, Hog, TestNet};

fn feth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(args)
        .output()
        .expect("feth runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_compare_reads_the_nodes_conditions_and_flags_a_busy_machine() {
    let net = TestNet::start_with(|o| {
        o.block_gas_limit = 10_000_000;
        o.timeout_commit = feth::devnet::GoDuration::from_millis(1000);
    })
    .await;
    let (_keys, dir) = funded(&net, 50, 43).await;
    let keys = dir.path().join("keys.txt");
    let state = &net.devnet.state;
    let pids = format!(
        "{},{}",
        state.abcid_pid.unwrap(),
        state.cometbft_pid.unwrap()
    );
    let (web3, rpc) = (net.web3(), state.rpc_url());
    let live = [
        "compare",
        "--network",
        &web3,
        "--comet-rpc",
        &rpc,
        "--keys",
        keys.to_str().unwrap(),
        "--senders",
        "50",
    ];
    // A PID that names no process is refused before anything is measured.
    let out = feth(&[&live[..], &["--node-pid", "4294967295"]].concat());
    assert!(!out.status.success());
    assert!(
        text(&out).contains("--node-pid 4294967295: no such process"),
        "{}",
        text(&out)
    );

    let hog = Hog::anywhere();
    let pprof = state
        .cometbft_pprof_url()
        .expect("the devnet serves CometBFT's pprof");
    let profiles = dir.path().join("profiles");
    let quick = [
        "--pprof",
        &pprof,
        "--profile-blocks",
        "2",
        "--out",
        profiles.to_str().unwrap(),
        "--node-pid",
        &pids,
        "--rounds",
        "2",
        "--seconds",
        "2",
        "--step-secs",
        "2",
        "--warmup-secs",
        "1",
        "--max-steps",
        "4",
        "--start",
        "50",
        "--quiet",
        "--json",
    ];
    let out = feth(&[&live[..], &quick[..]].concat());
    drop(hog);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let r: CompareReport = serde_json::from_slice(&out.stdout).expect("a report on stdout");

    // Conditions: the node's, read from it.
    let node = r.setups[0].conditions.as_ref().expect("conditions read");
    assert_eq!(node.block_max_gas, Some(10_000_000), "{node:?}");
    assert_eq!(
        node.cometbft.as_deref(),
        Some(feth::devnet::tools::cometbft_version().trim_start_matches('v'))
    );
    assert!(node.client.starts_with("abcid"), "{node:?}");
    assert_eq!(
        node.timeout_commit, None,
        "a live node's config is not feth's to read"
    );
    assert!(node.unread.is_empty(), "{node:?}");
    // 1 s blocks: measured, and said to be measured.
    assert!(r.steps[0].block_time_p50_ms >= 950.0, "{:?}", r.steps[0]);
    for part in ["block gas 10000000", "(median, measured)"] {
        assert!(all.contains(part), "{part:?} not in\n{all}");
    }
    assert!(
        !all.contains("150000000"),
        "a devnet default stated as the node's:\n{all}"
    );
    // --node-pid: the node's CPU per transaction is measured.
    for run in &r.runs {
        let fixed = run.fixed.as_ref().expect("a fixed-rate window");
        assert!(
            fixed.measure.node_cpu_us_per_tx.is_some_and(|c| c > 0.0),
            "{run:?}"
        );
    }
    // --pprof: the live node's Go process profiled per block in the first
    // round, its CPU split by role, the split printed.
    let first = r.runs.iter().find(|run| run.round == 0).unwrap();
    let go = first
        .go_profile
        .as_ref()
        .expect("a per-block profile of the live node");
    assert!(go.samples > 0 && go.heights.1 > go.heights.0, "{go:?}");
    let folded = std::fs::read_to_string(go.dir.join("all.folded")).unwrap();
    assert!(folded.lines().all(|l| l.starts_with("node;")), "{folded}");
    assert!(r
        .runs
        .iter()
        .filter(|run| run.round > 0)
        .all(|run| run.go_profile.is_none()));
    assert!(all.contains("CPU by role, step node"), "{all}");
    // The hog took a core's worth of a two-core machine: busy, named, and said.
    assert!(r.machine.is_busy(), "{:?}", r.machine);
    assert!(
        r.machine.worst_lost.unwrap() > r.settings.max_lost,
        "{:?}",
        r.machine
    );
    assert!(all.contains("BUSY MACHINE"), "{all}");

    // The gate on this report is inconclusive, whatever its figures say.
    let saved = dir.path().join("busy.json");
    std::fs::write(&saved, &out.stdout).unwrap();
    let saved = saved.to_str().unwrap();
    let gate = feth(&[
        "compare",
        "--candidate",
        saved,
        "--baseline",
        saved,
        "--max-regression",
        "5",
    ]);
    assert_eq!(
        gate.status.code(),
        Some(INCONCLUSIVE_STATUS),
        "{}",
        text(&gate)
    );
    assert!(
        text(&gate).contains("measured on a busy machine"),
        "{}",
        text(&gate)
    );
}
