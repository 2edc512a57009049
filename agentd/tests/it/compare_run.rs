//! `feth compare` end to end: a two-step ladder in two interleaved rounds,
//! each run on a fresh devnet with its own knee search, a measured window,
//! profiled blocks and the etl, then the kvstore reference; the table, the
//! JSON and the Markdown it writes.

use std::process::Command;

#[test]
fn a_two_step_ladder_runs_interleaved_and_writes_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let (json, md, out) = (
        dir.path().join("compare.json"),
        dir.path().join("compare.md"),
        dir.path().join("flamegraphs"),
    );
    let run = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args([
            "compare",
            "--ladder",
            "none,+fast-ecrecover",
            "--repeat",
            "2",
        ])
        .args([
            "--seconds",
            "3",
            "--senders",
            "100",
            "--profile-blocks",
            "2",
        ])
        .args([
            "--start",
            "150",
            "--step-secs",
            "3",
            "--warmup-secs",
            "1",
            "--max-steps",
            "3",
        ])
        .args(["--quiet", "--json", "--markdown"])
        .arg(&md)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{table}");
    std::fs::write(&json, &run.stdout).unwrap();
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();

    // Rounds alternate direction: none, +fast-ecrecover, +fast-ecrecover, none.
    let runs = report["runs"].as_array().unwrap();
    let order: Vec<(&str, u64)> = runs
        .iter()
        .map(|r| (r["step"].as_str().unwrap(), r["round"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            ("none", 0),
            ("+fast-ecrecover", 0),
            ("+fast-ecrecover", 1),
            ("none", 1)
        ]
    );
    for r in runs {
        let m = &r["measure"];
        // Two search steps (150, then 300 tx/s): a knee when 300 fell
        // behind, else the highest rate kept up, measured as a lower bound.
        let offered = m["offered_tps"].as_f64().unwrap();
        assert!(offered >= 150.0, "{r}");
        if let Some(knee) = r["knee_tps"].as_f64() {
            assert_eq!(offered, knee);
        }
        assert!(m["committed_tps"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(m["clock"], "cometbft_headers");
        assert!(r["etl"]["blocks"].as_u64().unwrap() >= 2, "{r}");
        assert_eq!(m["valid"], r["etl"]["valid"]);
        assert!(r["node"].as_str().unwrap().contains("patches="), "{r}");
    }
    assert_eq!(runs[1]["patches"], "none,fast-ecrecover");

    // Each +fast-ecrecover run has its differential flamegraph against none.
    for r in &runs[1..3] {
        let svg = r["diff_flamegraph"]
            .as_str()
            .expect("a diff per profiled step");
        assert!(std::fs::read_to_string(svg).unwrap().contains("<svg"));
    }
    assert!(runs[0]["diff_flamegraph"].is_null());

    let steps = report["steps"].as_array().unwrap();
    let second = &steps[1];
    assert_eq!(second["runs"], 2);
    assert_eq!(second["vs_previous"]["pairs"], 2);
    assert!(second["vs_previous"]["ci95_low"].is_number(), "{second}");
    let reference = &report["reference"];
    assert_eq!(reference["app"], "cometbft kvstore");
    assert!(reference["measure"]["committed_tps"].as_f64().unwrap() > 0.0);
    assert!(report["environment"]["cores"].as_u64().unwrap() >= 1);

    for text in [table.to_string(), std::fs::read_to_string(&md).unwrap()] {
        assert!(
            text.contains("+fast-ecrecover") && text.contains("kvstore"),
            "{text}"
        );
        assert!(text.contains("gas limit 150000000"), "{text}");
    }
}
