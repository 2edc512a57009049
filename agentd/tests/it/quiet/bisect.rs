//! `feth bisect` end to end: a git repository the test makes, whose build
//! (a script per commit) yields abcid running `all` up to commit 2 and
//! `all,-fast-ecrecover` from commit 3 on; commit 1 does not build. The
//! first probe (commit 1) is skipped without measuring; the second
//! (commit 2) is measured with both endpoints in one comparison, which is
//! also the suite's A/A step and its "removing fast-ecrecover" regression:
//! the probe's report is checked as `feth compare`'s (its tables, gate,
//! conditions, profiles). And `--find faster` on the abcid recipe: the
//! commit that put fast-ecrecover back.

use std::path::{Path, PathBuf};
use std::process::Command;

use feth::compare::{self, render, CompareReport, GateConfig, Metric};
use feth::stats::Change;
use serde_json::{json, Value};

use crate::bisect_repo::{commit, init_repo};

/// The build: fails where `broken` exists; else leaves `out/abcid`, a
/// wrapper that runs the real abcid (`$ABCID`) with the commit's patch set.
const BUILD_SH: &str = r#"#!/bin/bash
set -e
if [ -e broken ]; then echo "error[E0308]: this commit does not compile" >&2; exit 1; fi
mkdir -p out
patches=$(cat patches)
{
  echo '#!/bin/bash'
  echo 'a=("$@")'
  echo 'for i in "${!a[@]}"; do [ "${a[$i]}" = --patches ] && a[$((i+1))]="'"$patches"'"; done'
  echo 'exec "'"$ABCID"'" "${a[@]}"'
} > out/abcid
chmod +x out/abcid
"#;

#[test]
fn bisect_names_the_commit_that_dropped_fast_ecrecover_and_skips_one_that_does_not_build() {
    let dir = tempfile::tempdir().unwrap();
    let repo = chain_repo(dir.path());
    let write = |name: &str, text: &str| std::fs::write(repo.join(name), text).unwrap();
    write("patches", "all");
    let good = commit(&repo, "the good one");
    write("broken", "");
    commit(&repo, "a commit that does not build");
    std::fs::remove_file(repo.join("broken")).unwrap();
    commit(&repo, "builds again, as fast");
    write("patches", "all,-fast-ecrecover");
    let bad = commit(&repo, "drop fast-ecrecover");

    let md = dir.path().join("bisect.md");
    let md_arg = md.to_str().unwrap();
    let (report, stderr) = bisect(
        dir.path(),
        &["--good", &good, "--bad", &bad],
        &["--profile-blocks", "2", "--markdown", md_arg],
    );
    let outcome = &report["outcome"];
    assert_eq!(outcome["found"], json!({"first_bad": 3}), "{stderr}");
    let probes = outcome["probes"].as_array().unwrap();
    let probe = |i: u64| probes.iter().find(|p| p["index"] == i).unwrap();

    // Commit 1, probed first, does not build: skipped, its log kept.
    assert_eq!(probe(1)["class"], "skip");
    let why = probe(1)["why"].as_str().unwrap();
    let log = why.rsplit("its log: ").next().unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("does not compile"), "{why}: {log}");

    // Commit 2, measured with both endpoints in one comparison: not slower,
    // while the bad endpoint is shown slower in the same rounds.
    assert_eq!(probe(2)["class"], "good", "{stderr}");
    assert_eq!(probe(2)["endpoint"], "bad", "{stderr}");
    assert_eq!(probes.len(), 2, "two probes: {probes:?}");
    assert!(
        stderr.contains("FIRST BAD COMMIT") && stderr.contains("drop fast-ecrecover"),
        "{stderr}"
    );
    let svg = report["diff_flamegraph"]
        .as_str()
        .expect("the first bad commit's differential flamegraph against its parent");
    assert!(Path::new(svg).is_file());
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("FIRST BAD COMMIT") && md.contains("| skip |"),
        "{md}"
    );
    let probe_report = probe(2)["report"].as_str().expect("probe 2's report");
    let r: CompareReport = serde_json::from_slice(&std::fs::read(probe_report).unwrap()).unwrap();
    check_the_probes_comparison(&r);
}

/// Probe 2's comparison: the good endpoint, commit 2 (the same abcid: an
/// A/A step) and the bad endpoint (abcid without fast-ecrecover), rounds
/// interleaved; its tables, Markdown, gate and conditions as `feth compare`
/// gives them.
fn check_the_probes_comparison(r: &CompareReport) {
    let names = r.step_names();
    assert_eq!(names.len(), 3);
    assert!(names[0] == "good" && names[1].starts_with("2-") && names[2] == "bad");
    assert!(r.settings.rounds >= 5, "{}", r.settings.rounds);
    // Rounds alternate: forwards, then backwards, …
    let order: Vec<(&str, usize)> = r.runs.iter().map(|x| (x.step.as_str(), x.round)).collect();
    let expect = [0, 1, 2, 2, 1, 0].map(|k| names[k]);
    let rounds = [0, 0, 0, 1, 1, 1];
    let expected: Vec<(&str, usize)> = expect.into_iter().zip(rounds).collect();
    assert_eq!(&order[..6], &expected[..]);
    super::compare_run::check_conditions_and_windows(r);
    // The same node twice: no change beyond noise.
    super::assert_no_change_beyond_noise(r, 1);
    let table = render::table(r);
    let verdict = compare::gate(
        None,
        r,
        &GateConfig {
            max_regression_pct: 5.0,
            step: Some("bad".to_string()),
            metric: Metric::Tps,
            force: false,
        },
    )
    .unwrap()
    .describe();
    let text = format!("{table}\n{verdict}");
    let a_a = format!("{}: committed tx/s ±", names[1]);
    let rounds = format!("{} rounds interleaved", r.settings.rounds);
    let node = format!("node of step {} (read from it): abcid/", names[1]);
    for part in [
        "× previous (95 % CI)",
        "what this run could see",
        &a_a,
        &rounds,
        "node reads retried after a reset, refusal or timeout: good ",
        "machine: quiet",
        &node,
        "/patches=all,-fast-ecrecover; CometBFT",
        "REGRESSION: step bad against good (committed tx/s)",
    ] {
        assert!(text.contains(part), "{part:?} not in\n{text}");
    }
    assert!(render::markdown(r).contains(&format!("| {} |", names[1])));
    check_fast_ecrecover_loss(r, &text);
}

/// The pure-Rust sender recovery (the bad endpoint): fewer transactions
/// committed, beyond noise and the floor, and more CPU per transaction; the
/// differential flamegraphs of the profiled first round, the whole node's
/// with both processes.
fn check_fast_ecrecover_loss(r: &CompareReport, text: &str) {
    let tps = r.steps[2].figure(Metric::Tps).unwrap();
    assert_eq!(tps.change, Change::Loss, "{:?}\n{text}", tps.vs_previous);
    let cpu = r.steps[2].figure(Metric::CpuPerTx).unwrap();
    assert!(
        cpu.vs_previous.unwrap().ratio > 1.0,
        "{:?}\n{text}",
        cpu.vs_previous
    );
    assert_ne!(cpu.change, Change::Gain, "{text}");
    let slow = r.runs.iter().find(|x| x.step == "bad" && x.round == 0);
    let slow = slow.expect("the bad endpoint's first round");
    let svg = slow
        .diff_flamegraph
        .as_ref()
        .expect("a differential flamegraph");
    assert!(std::fs::read_to_string(svg).unwrap().contains("<svg"));
    let node_diff = slow.node_diff_flamegraph.as_ref().expect("node diff");
    let svg = std::fs::read_to_string(node_diff).unwrap();
    assert!(svg.contains("cometbft") && svg.contains("abcid"));
}

/// `--find faster` on the abcid recipe (`--chain abcid`): two commits, the
/// newer one putting fast-ecrecover back. With no commit between them the
/// bisection is its endpoint check alone: one comparison of the two
/// builds on devnets the recipe makes, asked the other way round, which
/// must show the new one faster.
#[test]
fn bisect_finds_the_commit_that_made_a_recipe_chain_faster() {
    let dir = tempfile::tempdir().unwrap();
    let repo = chain_repo(dir.path());
    let write = |name: &str, text: &str| std::fs::write(repo.join(name), text).unwrap();
    write("patches", "all,-fast-ecrecover");
    let old = commit(&repo, "pure-Rust sender recovery");
    write("patches", "all");
    let new = commit(&repo, "fast-ecrecover back");

    let (report, stderr) = bisect(
        dir.path(),
        &["--find", "faster", "--old", &old, "--new", &new],
        &[
            "--chain",
            "abcid",
            "--timeout-commit",
            "300ms",
            "--profile-blocks",
            "0",
        ],
    );
    assert_eq!(report["find"], "faster");
    let outcome = &report["outcome"];
    assert_eq!(outcome["found"], json!({"first_bad": 1}), "{stderr}");
    let probes = outcome["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 1, "the endpoints alone: {probes:?}");
    let probe = &probes[0];
    assert_eq!(probe["class"], "bad", "{stderr}");
    let why = probe["why"].as_str().unwrap();
    assert!(why.starts_with("FASTER: step bad against good"), "{why}");
    assert!(probe["ratio"]["low"].as_f64().unwrap() > 1.0, "{probe}");
    assert!(
        stderr.contains("FIRST FASTER COMMIT") && stderr.contains("fast-ecrecover back"),
        "{stderr}"
    );
    assert!(stderr.contains(" fast "), "the table's class: {stderr}");

    // The comparison ran on the recipe's devnets: conditions read from
    // each node, the recipe's block gas and the asked block interval.
    let path = probe["report"].as_str().expect("the probe's report");
    let r: CompareReport = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(r.step_names(), ["good", "bad"]);
    for setup in &r.setups {
        let c = setup.conditions.as_ref().expect("conditions read");
        assert_eq!(c.block_max_gas, Some(150_000_000), "{c:?}");
        assert_eq!(c.timeout_commit.as_deref(), Some("300ms"), "{c:?}");
    }
}

/// A git repository in `dir/chain` holding the build script; the tests
/// commit their patch sets into it.
fn chain_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("chain");
    init_repo(&repo);
    std::fs::write(repo.join("build.sh"), BUILD_SH).unwrap();
    std::fs::write(repo.join(".gitignore"), "out/\n").unwrap();
    repo
}

/// `feth bisect` over `dir/chain`'s builds with the endpoints `ends` and
/// the `more` flags, judged quickly: committed TPS (with 2 s windows, CPU
/// per transaction at the fixed rate varied ±23 % between rounds here, TPS
/// about ±9 %) within 30 % (the slow build commits about 0.4 × the fast
/// one; how a probe decides at tighter thresholds and real noise is the
/// model's test, `bisect::model`), no knee searched (the saturation windows
/// from 12,800 tx/s, above a devnet's knee here; the pilot doubles it where
/// it is not). Asserts it succeeded; returns its JSON report and its stderr.
fn bisect(dir: &Path, ends: &[&str], more: &[&str]) -> (Value, String) {
    let abcid = feth::devnet::tools::abcid().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .arg("bisect")
        .args(ends)
        .arg("--repo")
        .arg(dir.join("chain"))
        .arg("--build")
        .arg(format!("ABCID={} bash build.sh", abcid.display()))
        .args(["--binary-path", "out/abcid", "--metric", "tps"])
        .args(["--max-regression", "30", "--max-rounds", "5"])
        .args(["--seconds", "2", "--senders", "100", "--max-busy", "50"])
        .args(["--overload-tps", "12800", "--warmup-secs", "1", "--work"])
        .arg(dir.join("work"))
        .arg("--out")
        .arg(dir.join("flamegraphs"))
        .args(more)
        .args(["--json", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}
