//! The Jenkinsfile's loop in a short form: every `sh` step of the Jenkinsfile
//! is a stage of `scripts/pipeline.sh`, and each stage it calls runs here, in
//! the Jenkinsfile's order, on a devnet of its own (free loopback ports, tiny
//! counts), twice: a first build with no baseline, then a second one gated
//! against the first's kept report.

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

struct Pipeline {
    env: BTreeMap<&'static str, String>,
}

impl Pipeline {
    fn new(out: &Path) -> Self {
        let ports = feth::devnet::Ports::free().unwrap();
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
            // --max-busy 50: CI's shared VMs lose 10–30 % of a window to
            // steal; the busy guard is compare_live's subject, not this one's.
            (
                "COMPARE_ARGS",
                "--rate 100 --profile-blocks 2 --no-reference --warmup-secs 1 \
                 --step-secs 2 --max-steps 3 --max-busy 50",
            ),
        ] {
            env.insert(k, v.to_string());
        }
        Self { env }
    }

    /// Runs `stage` with the pipeline's environment and `rounds` ROUNDS.
    fn run(&self, stage: &str, rounds: &str) -> Output {
        let out = Command::new("bash")
            .arg(repo().join("scripts/pipeline.sh"))
            .arg(stage)
            .envs(&self.env)
            .env("ROUNDS", rounds)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "stage {stage}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
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
    let p = Pipeline::new(dir.path());
    for build in 0..2 {
        // The first build's comparison is only kept, never gated: two
        // rounds do; the second is gated, which needs five.
        let rounds = if build == 0 { "2" } else { "5" };
        for stage in &stages {
            let out = p.run(stage, rounds);
            let said = String::from_utf8_lossy(&out.stdout);
            match (build, stage.as_str()) {
                (0, "baseline") => assert!(said.contains("no kept files"), "{said}"),
                (0, "gate") => assert!(said.contains("nothing to gate"), "{said}"),
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
        let saturate = p.report("saturate.json");
        assert!(
            !saturate["steps"].as_array().unwrap().is_empty(),
            "{saturate}"
        );
        assert!(p.report("stats.json")["blocks"].as_u64().unwrap() > 0);
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
