//! `feth compare --network … --deploy STEP=CMD` on a devnet node (issue 42):
//! every run is preceded by its step's deploy and a wait for the node, and
//! a deploy that fails in a round ends the rounds with an error naming the
//! step, the round and the command's output, the report on stdout keeping
//! the runs measured before it; a node that does not come back within
//! `--deploy-timeout` ends the run naming the step, its phase and what the
//! node still lacked.
//!
//! Not among the quiet tests: it asserts what ends a run and what is said,
//! nothing a busy machine changes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use feth::compare::CompareReport;

use crate::common::{funded, TestNet};

/// `feth compare` on the live node at `web3` / `rpc`, 100 senders from `keys`.
fn compare(web3: &str, rpc: &str, keys: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_feth"));
    cmd.args(["compare", "--network", web3, "--comet-rpc", rpc])
        .args(["--keys", keys.to_str().unwrap(), "--senders", "100"]);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_deploy_or_a_node_never_back_ends_the_run_naming_step_and_round() {
    let mut net =
        TestNet::start_with(|o| o.timeout_commit = feth::devnet::GoDuration::from_millis(300))
            .await;
    let (_keys, dir) = funded(&net, 100, 47).await;
    let keys = dir.path().join("keys.txt");
    let seen = dir.path().join("deploys.txt");
    let (web3, rpc) = (net.web3(), net.devnet.state.rpc_url());
    // Both "deploys" leave the node as it is and record when they ran; b's
    // fails before its run in round 2 (which runs backwards: b first).
    let record = format!("echo \"$FETH_STEP $FETH_ROUND\" >> {}", seen.display());
    let a = format!("a={record}");
    let b = format!(
        "b={record}; if [ \"$FETH_ROUND\" = 2 ]; then echo 'service failed to start' >&2; exit 7; fi"
    );
    let out = compare(&web3, &rpc, &keys)
        .args(["--deploy", &a, "--deploy", &b, "--deploy-timeout", "60s"])
        .args(["--rounds", "3", "--seconds", "2", "--step-secs", "2"])
        .args(["--warmup-secs", "1", "--overload-tps", "12800"])
        .args(["--max-busy", "50", "--rate", "50", "--quiet", "--json"])
        .args(["--out", dir.path().join("out").to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    for part in [
        "deploying step b before its round 2",
        "exit status: 7",
        "service failed to start",
        "the report holds the 2 run(s) measured before it",
    ] {
        assert!(stderr.contains(part), "{part:?} not in\n{stderr}");
    }
    let r: CompareReport = serde_json::from_slice(&out.stdout).expect("the partial report");
    assert_eq!(r.step_names(), ["a", "b"]);
    let order: Vec<(&str, usize)> = r.runs.iter().map(|x| (x.step.as_str(), x.round)).collect();
    assert_eq!(order, [("a", 0), ("b", 0)]);
    assert!(r.failed.as_deref().unwrap().contains("round 2"));
    assert!(r.runs.iter().all(|x| x.measure.committed_tps > 0.0));
    // Each step was deployed at its set-up, before each pilot window and each run.
    let seen = std::fs::read_to_string(&seen).unwrap();
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(&lines[..2], ["a setup", "b setup"], "{seen}");
    assert!(
        lines.contains(&"a pilot") && lines.contains(&"b pilot"),
        "{seen}"
    );
    assert_eq!(&lines[lines.len() - 3..], ["a 1", "b 1", "b 2"], "{seen}");

    // A deploy after which the node never answers again (abcid killed, the
    // PID taken from the devnet so that only this command ends it): the run
    // ends at the deadline, naming the step, its phase and what was missing.
    let abcid = net.devnet.state.abcid_pid.take().expect("abcid runs");
    let kill = format!("a=kill -9 {abcid}");
    let started = Instant::now();
    let out = compare(&web3, &rpc, &keys)
        .args([
            "--deploy",
            &kill,
            "--deploy",
            "b=true",
            "--deploy-timeout",
            "5s",
        ])
        .args(["--rounds", "3", "--seconds", "2", "--quiet", "--json"])
        .args(["--out", dir.path().join("out2").to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    for part in [
        "step a's node after its deploy before its set-up: not ready within --deploy-timeout 5 s",
        "its web3 endpoint does not answer",
    ] {
        assert!(stderr.contains(part), "{part:?} not in\n{stderr}");
    }
    assert!(out.stdout.is_empty(), "no run was measured, so no report");
    assert!(started.elapsed() < Duration::from_secs(60), "{stderr}");
}
