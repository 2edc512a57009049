//! The Jenkinsfile's loop in a short form: every `sh` step of the Jenkinsfile
//! is a stage of `scripts/pipeline.sh`, and each stage it calls runs here, in
//! the Jenkinsfile's order, on a devnet of its own (free loopback ports, tiny
//! counts), twice: a first build with no baseline, then a second one gated
//! against the first's kept report. And the same loop on "one's own node"
//! (a devnet started apart, which the deploy commands restart with a
//! build), where every round deploys both builds in turn and the gate
//! decides on that pairing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `pipeline.sh` stages the Jenkinsfile calls, in its order (`post`'s last).
fn jenkins_stages() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("Jenkinsfile")).unwrap();
    let mut stages = Vec::new();
    for line in text.lines().filter(|l| l.contains("sh '")) {
        let command = line
            .split("sh '")
            .nth(1)
            .unwrap()
            .split('\'')
            .next()
            .unwrap();
        let allowed = [
            "bash scripts/setup.sh",
            "make test",
            "cargo build --release --workspace --bins",
        ];
        match command.strip_prefix("bash scripts/pipeline.sh ") {
            Some(stage) => stages.push(stage.to_string()),
            None => assert!(
                allowed.contains(&command),
                "the Jenkinsfile runs `{command}` outside scripts/pipeline.sh"
            ),
        }
    }
    stages
}

/// The comparison's extra arguments in these tests: short windows, no knee
/// search (`--overload-tps`: the compare's search is other tests' subject;
/// 12,800 tx/s is above a devnet's knee here, and the pilot doubles it
/// where it is not), `blocks` profiled per step in the first round.
fn compare_args(blocks: u32) -> String {
    format!(
        "--rate 100 --profile-blocks {blocks} --no-reference --warmup-secs 1 \
         --overload-tps 12800 --max-busy 50"
    )
}

/// The stages that feed nothing the gate reads: each test's second build
/// skips them (its first ran them), to keep the tests short.
const NOT_GATED: [&str; 3] = ["saturate", "profile", "etl"];

struct Pipeline {
    env: BTreeMap<&'static str, String>,
}

impl Pipeline {
    fn new(out: &Path, ports: &feth::devnet::Ports) -> Self {
        let abcid = feth::devnet::tools::abcid().unwrap();
        let mut env = BTreeMap::new();
        let path = |p: PathBuf| p.display().to_string();
        env.insert("FETH", env!("CARGO_BIN_EXE_feth").to_string());
        env.insert("ABCID", path(abcid));
        env.insert("OUT", path(out.join("reports")));
        env.insert("DEVNET", path(out.join("devnet")));
        env.insert("BASELINE_DIR", path(out.join("baseline")));
        env.insert("BASELINE_COPY", path(out.join("copied")));
        for (name, port) in [
            ("RPC_PORT", ports.rpc),
            ("P2P_PORT", ports.p2p),
            ("ABCI_PORT", ports.abci),
            ("WEB3_PORT", ports.web3),
            ("PROFILER_PORT", ports.profiler),
            ("METRICS_PORT", ports.metrics),
            ("COMETBFT_METRICS_PORT", ports.cometbft_metrics),
        ] {
            env.insert(name, port.to_string());
        }
        env.insert("REDIS_PORT", feth::devnet::free_port().unwrap().to_string());
        for (k, v) in [
            ("BLOCK_TIME", "300ms"),
            ("SENDERS", "40"),
            ("WINDOW_SECONDS", "2"),
            ("MAX_REGRESSION", "50"),
            ("PROFILE_SECS", "3"),
            (
                "SATURATE_ARGS",
                "--start 100 --max 200 --step-secs 3 --warmup-secs 1 --max-steps 2",
            ),
        ] {
            env.insert(k, v.to_string());
        }
        // --max-busy 50: CI's shared VMs lose 10–30 % of a window to steal;
        // the busy guard is compare_live's subject, not this one's.
        env.insert("COMPARE_ARGS", compare_args(2));
        Self { env }
    }

    /// Runs `stage` with the pipeline's environment and `rounds` ROUNDS.
    fn run(&self, stage: &str, rounds: &str) -> Output {
        let out = self.try_run(stage, rounds);
        assert!(
            out.status.success(),
            "stage {stage}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs `stage` and returns how it ended, whatever that was; prints how
    /// long it took (where the suite's time goes).
    fn try_run(&self, stage: &str, rounds: &str) -> Output {
        let started = std::time::Instant::now();
        let out = Command::new("bash")
            .arg(repo().join("scripts/pipeline.sh"))
            .arg(stage)
            .envs(&self.env)
            .env("ROUNDS", rounds)
            .output()
            .unwrap();
        let took = started.elapsed().as_secs_f64();
        eprintln!("pipeline stage {stage} ({rounds} rounds): {took:.1} s");
        out
    }

    fn report(&self, name: &str) -> serde_json::Value {
        let path = Path::new(&self.env["OUT"]).join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }
}

#[test]
fn every_stage_the_jenkinsfile_calls_runs_and_the_second_build_is_gated() {
    let stages = jenkins_stages();
    let listed = Command::new("bash")
        .arg(repo().join("scripts/pipeline.sh"))
        .arg("--list")
        .output()
        .unwrap();
    let listed: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(
        stages, listed,
        "the Jenkinsfile and scripts/pipeline.sh name the same stages in the same order"
    );

    let dir = tempfile::tempdir().unwrap();
    let mut p = Pipeline::new(dir.path(), &feth::devnet::Ports::free().unwrap());
    for build in 0..2 {
        // The first build's comparison is only kept, never gated: one
        // round does; the second is gated, which needs five, and profiles
        // nothing (the first one's profiles drew the report's flamegraphs).
        let rounds = if build == 0 { "1" } else { "5" };
        if build == 1 {
            p.env.insert("COMPARE_ARGS", compare_args(0));
            // On, but the gate passes: the stage says so and builds nothing.
            p.env.insert("BISECT", "1".to_string());
        }
        for stage in &stages {
            if build == 1 && NOT_GATED.contains(&stage.as_str()) {
                continue;
            }
            let out = p.run(stage, rounds);
            let said = String::from_utf8_lossy(&out.stdout);
            match (build, stage.as_str()) {
                (0, "baseline") => assert!(said.contains("no kept files"), "{said}"),
                (0, "gate") => assert!(said.contains("nothing to gate"), "{said}"),
                (0, "bisect") => assert!(said.contains("bisect is off"), "{said}"),
                (1, "bisect") => assert!(said.contains("no regression"), "{said}"),
                (1, "gate") => {
                    // The candidate is the baseline's build: within 50 %.
                    let gate = p.report("gate.json");
                    assert_eq!(gate["outcome"], "pass", "{gate}");
                    assert_eq!(gate["pairing"], "paired", "{gate}");
                }
                _ => {}
            }
        }
        let compare = p.report("compare.json");
        let steps: Vec<&str> = compare["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["step"].as_str().unwrap())
            .collect();
        assert_eq!(steps, ["a", "b"]);
        assert!(compare["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["measure"]["committed_tps"].as_f64().unwrap() > 0.0));
        if build == 0 {
            let saturate = p.report("saturate.json");
            assert!(
                !saturate["steps"].as_array().unwrap().is_empty(),
                "{saturate}"
            );
            assert!(p.report("stats.json")["blocks"].as_u64().unwrap() > 0);
        }
        let md = std::fs::read_to_string(Path::new(&p.env["OUT"]).join("compare.md")).unwrap();
        assert!(md.contains("| a ") && md.contains("| b "), "{md}");
        // feth report's page of the comparison, archived with reports/.
        let page = Path::new(&p.env["OUT"]).join("report");
        let html = std::fs::read_to_string(page.join("report.html")).unwrap();
        assert!(html.contains("id=\"compare0-ladder\""), "no ladder chart");
        let summary = std::fs::read_to_string(page.join("summary.md")).unwrap();
        assert!(
            summary.contains("| a ") && summary.contains("| b "),
            "{summary}"
        );
        // What Jenkins' Copy Artifact step does between two builds.
        let kept = Path::new(&p.env["OUT"]).join("next-baseline");
        assert!(kept.join("abcid").is_file() && kept.join("compare.json").is_file());
        std::fs::rename(&kept, &p.env["BASELINE_COPY"]).unwrap();
    }
    assert!(Path::new(&p.env["BASELINE_DIR"])
        .join("compare.json")
        .is_file());
}

/// "One's own node": a devnet in `dir`, started and restarted only by
/// `deploy.sh BUILD PATCHES` (as a deploy script restarts a service: the
/// same chain, ports and keys, another binary or setting), which writes the
/// node's PIDs to `FETH_PIDS_FILE`; stopped when the test ends.
struct OwnNode {
    dir: PathBuf,
    deploy: PathBuf,
}

impl OwnNode {
    fn new(at: &Path, ports: &feth::devnet::Ports) -> Self {
        let dir = at.join("node");
        let deploy = at.join("deploy.sh");
        let feth = env!("CARGO_BIN_EXE_feth");
        let script = format!(
            r#"#!/usr/bin/env bash
# deploy.sh BUILD PATCHES: the node restarted with abcid BUILD and PATCHES.
set -euo pipefail
node={node}
if [ -f "$node/recipe.json" ]; then {feth} devnet down --dir "$node" >/dev/null; fi
{feth} devnet up --dir "$node" --abcid "$1" --patches "$2" --timeout-commit 300ms \
  --rpc-port {rpc} --p2p-port {p2p} --web3-port {web3} --profiler-port {prof} \
  --metrics-port {metrics} --cometbft-metrics-port {cmetrics} --json \
  | python3 -c 'import json, sys; [print(p["pid"]) for p in json.load(sys.stdin)["processes"]]' \
  > "${{FETH_PIDS_FILE:-/dev/null}}"
"#,
            node = dir.display(),
            rpc = ports.rpc,
            p2p = ports.p2p,
            web3 = ports.web3,
            prof = ports.profiler,
            metrics = ports.metrics,
            cmetrics = ports.cometbft_metrics,
        );
        std::fs::write(&deploy, script).unwrap();
        Self { dir, deploy }
    }

    /// The deploy command of `build` (a pipeline variable) with `patches`.
    fn deploy(&self, build: &str, patches: &str) -> String {
        format!("bash {} \"${build}\" {patches}", self.deploy.display())
    }
}

impl Drop for OwnNode {
    fn drop(&mut self) {
        if self.dir.join("recipe.json").is_file() {
            let _ = Command::new(env!("CARGO_BIN_EXE_feth"))
                .args(["devnet", "down", "--dir"])
                .arg(&self.dir)
                .output();
        }
    }
}

#[test]
fn on_ones_own_node_each_round_deploys_both_builds_and_the_gate_decides_on_that_pairing() {
    let dir = tempfile::tempdir().unwrap();
    let ports = feth::devnet::Ports::free().unwrap();
    let mut p = Pipeline::new(dir.path(), &ports);
    let node = OwnNode::new(dir.path(), &ports);
    let url = |port: u16| format!("http://127.0.0.1:{port}");
    for (k, v) in [
        ("NODE_WEB3", url(ports.web3)),
        ("NODE_COMET_RPC", url(ports.rpc)),
        ("NODE_PROFILER", url(ports.profiler)),
        (
            "NODE_ROOT_KEY",
            node.dir.join("root.key").display().to_string(),
        ),
        ("NODE_LOGS", node.dir.join("logs").display().to_string()),
        ("BUILD", p.env["ABCID"].clone()),
        ("DEPLOY_BASELINE", node.deploy("BASELINE_BUILD", "all")),
        ("MAX_REGRESSION", "10".to_string()),
        ("SENDERS", "100".to_string()),
    ] {
        p.env.insert(k, v);
    }
    let first = Command::new("bash")
        .arg(&node.deploy)
        .args([&p.env["ABCID"], "all"])
        .output()
        .unwrap();
    assert!(first.status.success(), "{first:?}");
    let stages = jenkins_stages();
    // Build 0: no baseline yet, the candidate against itself (the same
    // deploy twice, which must not read as a change), kept. Build 1: the
    // same binary deployed without abcid's patches, about half as fast:
    // paired on the one node, the gate calls it a regression (exit 3). Its
    // saturate, profile and etl stages feed nothing the gate reads and ran
    // in build 0: skipped, to keep the test short. Build 0's comparison is
    // kept, not gated: three rounds give the A/A its intervals; the gate
    // needs five.
    for (build, patches, rounds) in [(0, "all", "3"), (1, "none", "5")] {
        p.env
            .insert("DEPLOY_CANDIDATE", node.deploy("BUILD", patches));
        if build == 1 {
            p.env.insert("COMPARE_ARGS", compare_args(0));
        }
        for stage in &stages {
            if build == 1 && NOT_GATED.contains(&stage.as_str()) {
                continue;
            }
            if (build, stage.as_str()) == (1, "gate") {
                let out = p.try_run(stage, rounds);
                let gate = p.report("gate.json");
                assert_eq!(out.status.code(), Some(3), "{gate}");
                assert_eq!(gate["outcome"], "regression", "{gate}");
                assert_eq!(gate["pairing"], "paired", "{gate}");
                break;
            }
            let said = String::from_utf8_lossy(&p.run(stage, rounds).stdout).into_owned();
            if (build, stage.as_str()) == (0, "compare") {
                assert!(
                    said.contains("comparing the candidate with itself"),
                    "{said}"
                );
            }
        }
        let r: feth::compare::CompareReport =
            serde_json::from_value(p.report("compare.json")).unwrap();
        // The rounds asked for at least: more when a round's overload was
        // kept up with (it is raised and the round run again).
        let done = r.settings.rounds;
        assert!(
            done >= rounds.parse().unwrap() && r.runs.len() == 2 * done,
            "{:?}",
            r.runs
        );
        assert!(r.runs.iter().all(|x| x.measure.committed_tps > 0.0));
        if build == 0 {
            super::assert_no_change_beyond_noise(&r, 1);
        }
        // Every run was preceded by its step's deploy, logged apart: the
        // last round's too.
        let deploys = Path::new(&p.env["OUT"]).join("flamegraphs");
        let logs = walk(&deploys, "deploys");
        for step in ["a", "b"] {
            let last = format!("{step}-{done}.log");
            assert!(logs.iter().any(|f| f.ends_with(&last)), "{last}: {logs:?}");
        }
        if build == 0 {
            let kept = Path::new(&p.env["OUT"]).join("next-baseline");
            assert!(kept.join("build").is_file() && kept.join("compare.json").is_file());
            std::fs::rename(&kept, &p.env["BASELINE_COPY"]).unwrap();
        }
    }
}

/// Every file under a folder named `name` somewhere below `root`.
fn walk(root: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
            } else if d.file_name().is_some_and(|n| n == name) {
                found.push(path);
            }
        }
    }
    found
}
