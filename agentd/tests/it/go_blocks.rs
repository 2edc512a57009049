//! A Go node profiled per block: the pinned CometBFT (its kvstore recipe,
//! 1 s blocks) under a kvstore load, `feth profiler cometbft --blocks 4`.
//! One folder per capture named by its heights, the heights contiguous
//! (or the missed ones named), the gaps between captures reported, every
//! sample in one role, and the allocation profile written.

use std::path::Path;
use std::time::Duration;

use clap::Parser;
use feth::cmd::Cli;
use feth::devnet::recipe::{Recipe, RecipeDevnet, RecipeOptions};
use feth::go_profile::roles::FrameRole;
use feth::kvstore::{KvProbe, KvReferenceConfig, KvTarget};
use feth::saturate::Probe;
use feth_profiler_rpc::folded::FoldedStacks;
use serde_json::Value;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_node_under_load_is_profiled_per_block_with_roles_and_allocations() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RecipeOptions {
        dir: dir.path().join("kv"),
        vars: vec!["timeout_commit=1s".into()],
        ..RecipeOptions::default()
    };
    let net = RecipeDevnet::up(&Recipe::find("kvstore").unwrap(), &opts)
        .await
        .unwrap();
    let s = &net.state;
    let pids = s.processes.iter().map(|p| p.pid).collect();
    let target = KvTarget::running(s.urls.comet_rpc.clone(), pids, s.dir.join("logs"));
    let cfg = KvReferenceConfig {
        warmup: Duration::ZERO,
        ..KvReferenceConfig::new(&s.dir)
    };
    let mut probe = KvProbe::connect(target, cfg).unwrap();
    let out = dir.path().join("flamegraphs");
    let pprof = s
        .urls
        .pprof
        .clone()
        .expect("the kvstore recipe serves pprof");
    let args = [
        "feth",
        "profiler",
        "cometbft",
        "--pprof",
        &pprof,
        "--comet-rpc",
        &s.urls.comet_rpc,
        "--blocks",
        "4",
        "--out",
        utf8(&out),
        "--json",
    ];
    let profiled = async {
        // The load is under way before the first capture.
        tokio::time::sleep(Duration::from_secs(1)).await;
        Cli::try_parse_from(args).unwrap().run().await
    };
    let (loaded, profiled) = tokio::join!(probe.step(1000.0, 9.0), profiled);
    loaded.expect("the kvstore load");
    profiled.expect("feth profiler cometbft --blocks 4");

    let chain = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let session = std::fs::read_dir(&chain)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("session.json")).unwrap())
            .unwrap();
    check_windows(&session, &report);
    check_roles(&session, &report);
    check_extras(&session, &report);
}

/// Folders named by the heights each capture holds; the heights from the
/// first to the last each held by one capture or named as missed; gaps
/// measured between captures.
fn check_windows(session: &Path, report: &Value) {
    let windows = report["windows"].as_array().unwrap();
    let heights: Vec<(u64, u64)> = windows
        .iter()
        .map(|w| {
            (
                w["heights"][0].as_u64().unwrap(),
                w["heights"][1].as_u64().unwrap(),
            )
        })
        .collect();
    let (first, last) = (heights[0].0, heights.last().unwrap().1);
    assert!(last + 1 - first >= 4, "4 heights covered: {heights:?}");
    let missed: Vec<u64> = serde_json::from_value(report["missed"].clone()).unwrap();
    let mut seen: Vec<u64> = heights.iter().flat_map(|(a, b)| *a..=*b).collect();
    seen.extend(&missed);
    seen.sort_unstable();
    assert_eq!(seen, (first..=last).collect::<Vec<_>>(), "{report}");
    // 1 s captures resolve 1 s blocks: a capture holds one height.
    assert!(heights.iter().any(|(a, b)| a == b), "{heights:?}");
    for (w, (a, b)) in windows.iter().zip(&heights) {
        let name = if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        };
        let folder = session.join(name);
        for file in ["profile.pb.gz", "all.folded", "all.svg", "capture.json"] {
            assert!(
                folder.join(file).is_file(),
                "{} lacks {file}",
                folder.display()
            );
        }
        let capture: Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("capture.json")).unwrap())
                .unwrap();
        assert_eq!(&capture, w);
        assert!(w["seconds"].as_f64().unwrap() >= 0.9, "{w}");
    }
    assert!(windows[0]["gap_before_secs"].is_null());
    for w in &windows[1..] {
        let gap = w["gap_before_secs"].as_f64().unwrap();
        assert!((0.0..5.0).contains(&gap), "{w}");
    }
    let coverage = report["coverage"].as_f64().unwrap();
    assert!(coverage > 0.0 && coverage <= 1.0, "{report}");
    assert!(report["gap_secs"].is_array(), "{report}");
}

/// Every sample in exactly one role: the folded stacks carry it below the
/// `cometbft` label, their totals match the split, admission is seen.
fn check_roles(session: &Path, report: &Value) {
    let names: Vec<&str> = FrameRole::ALL.iter().map(|r| r.as_str()).collect();
    let folded = std::fs::read_to_string(session.join("all.folded")).unwrap();
    let stacks = FoldedStacks::parse(&folded).unwrap();
    let mut by_role = std::collections::BTreeMap::<String, u64>::new();
    for (stack, n) in stacks.iter() {
        let mut frames = stack.split(';');
        assert_eq!(frames.next(), Some("cometbft"), "{stack}");
        let role = frames.next().unwrap();
        assert!(names.contains(&role), "{stack}");
        *by_role.entry(role.to_string()).or_insert(0) += n;
    }
    let split: std::collections::BTreeMap<String, u64> =
        serde_json::from_value(report["roles"].clone()).unwrap();
    by_role.retain(|_, n| *n > 0);
    let nonzero: std::collections::BTreeMap<String, u64> =
        split.into_iter().filter(|(_, n)| *n > 0).collect();
    assert_eq!(by_role, nonzero);
    assert!(
        by_role.get("check_tx").copied().unwrap_or(0) > 0,
        "{by_role:?}"
    );
    let svg = std::fs::read_to_string(session.join("all.svg")).unwrap();
    assert!(svg.contains("cometbft CPU by role") && svg.contains("check_tx"));
}

/// The allocation profile over the window, written and non-empty; CometBFT
/// enables no mutex or block profiling, and that is said.
fn check_extras(session: &Path, report: &Value) {
    let extras = report["extras"].as_array().unwrap();
    let allocs = extras.iter().find(|e| e["kind"] == "allocs").unwrap();
    assert!(allocs["total"].as_u64().unwrap() > 0, "{allocs}");
    assert_eq!(allocs["unit"], "bytes");
    let folded = std::fs::read_to_string(session.join("allocs.folded")).unwrap();
    let stacks = FoldedStacks::parse(&folded).unwrap();
    assert_eq!(stacks.total(), allocs["total"].as_u64().unwrap());
    assert!(
        folded.contains("github.com/cometbft/cometbft/"),
        "CometBFT's own allocation sites"
    );
    assert!(session.join("allocs.svg").is_file() && session.join("allocs.pb.gz").is_file());
    for kind in ["mutex", "block"] {
        let e = extras.iter().find(|e| e["kind"] == kind).unwrap();
        assert!(
            e["note"].as_str().unwrap().contains("does not enable"),
            "{e}"
        );
        assert!(!session.join(format!("{kind}.folded")).exists());
    }
}
