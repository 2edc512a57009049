//! `feth bisect` end to end: a git repository the test makes, whose build
//! (a script per commit) yields abcid running `all` up to commit 2 and
//! `all,-fast-ecrecover` from commit 3 on; commit 1 does not build. The
//! first probe (commit 1) is skipped without measuring; the second
//! (commit 2) is measured with both endpoints in one comparison.

use std::path::Path;
use std::process::Command;

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
    let repo = dir.path().join("chain");
    init_repo(&repo);
    let write = |name: &str, text: &str| std::fs::write(repo.join(name), text).unwrap();
    write("build.sh", BUILD_SH);
    write(".gitignore", "out/\n");
    write("patches", "all");
    let good = commit(&repo, "the good one");
    write("broken", "");
    commit(&repo, "a commit that does not build");
    std::fs::remove_file(repo.join("broken")).unwrap();
    commit(&repo, "builds again, as fast");
    write("patches", "all,-fast-ecrecover");
    let bad = commit(&repo, "drop fast-ecrecover");

    let abcid = feth::devnet::tools::abcid().unwrap();
    let md = dir.path().join("bisect.md");
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(["bisect", "--good", &good, "--bad", &bad, "--repo"])
        .arg(&repo)
        .arg("--build")
        .arg(format!("ABCID={} bash build.sh", abcid.display()))
        .args(["--binary-path", "out/abcid", "--metric", "cpu"])
        .args(["--max-regression", "20", "--max-rounds", "6"])
        .args(["--seconds", "2", "--senders", "100", "--max-busy", "50"])
        .args(["--start", "1600", "--step-secs", "2", "--warmup-secs", "1"])
        .args(["--max-steps", "3", "--profile-blocks", "1", "--work"])
        .arg(dir.path().join("work"))
        .arg("--out")
        .arg(dir.path().join("flamegraphs"))
        .arg("--markdown")
        .arg(&md)
        .args(["--json", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
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
}
