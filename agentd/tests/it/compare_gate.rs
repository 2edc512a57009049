//! `feth compare --baseline --candidate`: the real binary on report files
//! written here, its exit statuses, its refusals and its errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use feth::cmd::compare::REGRESSION_STATUS;
use feth::compare::{CompareReport, Environment, GateVerdict, Kind, Outcome, Settings, StepRun};
use feth::saturate::{Clock, StepMeasure};

fn measure(tps: f64) -> StepMeasure {
    StepMeasure {
        offered_tps: tps,
        sent_tps: tps,
        committed_tps: tps,
        clock: Clock::CometbftHeaders,
        first_height: 1,
        last_height: 41,
        block_time_p50_ms: 500.0,
        block_time_p95_ms: 600.0,
        mempool_start: Some(0),
        mempool_end: Some(0),
        schedule_lag_p50_ms: 0.1,
        schedule_lag_p99_ms: 1.0,
        agent_lag_p99_ms: 1.0,
        agent_cpu_us_per_tx: 30.0,
        slots_busy: 0.0,
        backoffs: 0,
        node_cpu_us_per_tx: None,
        valid: (tps * 20.0) as u64,
        invalid: Some(0),
    }
}

/// A two-step patch ladder (`none`, `all`) whose `all` committed `all` per round.
fn report(all: &[f64], cores: usize) -> CompareReport {
    let mut runs = Vec::new();
    for (round, tps) in all.iter().enumerate() {
        for (step, t) in [("none", tps / 2.0), ("all", *tps)] {
            runs.push(StepRun {
                step: step.to_string(),
                patches: step.to_string(),
                node: "abcid".to_string(),
                round,
                knee_tps: None,
                measure: measure(t),
                etl: None,
                flamegraph: None,
                diff_flamegraph: None,
            });
        }
    }
    let environment = Environment {
        cores,
        ..Environment::detect("v0.38.17")
    };
    let settings = Settings {
        kind: Kind::Patches,
        block_gas_limit: 150_000_000,
        timeout_commit: "500ms".to_string(),
        seconds: 20.0,
        repeat: all.len(),
        senders: 200,
        workload: "transfer".to_string(),
        fixed_rate: Some(1500.0),
    };
    let ladder = ["none".to_string(), "all".to_string()];
    CompareReport::assemble(environment, settings, runs, &ladder, None, 120.0).unwrap()
}

fn write(dir: &Path, name: &str, report: &CompareReport) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(report).unwrap()).unwrap();
    path
}

fn feth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_feth"))
        .arg("compare")
        .args(args)
        .output()
        .unwrap()
}

fn gate(baseline: &Path, candidate: &Path, more: &[&str]) -> Output {
    let mut args = vec![
        "--baseline",
        baseline.to_str().unwrap(),
        "--candidate",
        candidate.to_str().unwrap(),
        "--max-regression",
        "5",
    ];
    args.extend_from_slice(more);
    feth(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_slower_candidate_fails_with_the_regression_status() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(
        dir.path(),
        "base.json",
        &report(&[1000.0, 1010.0, 990.0], 2),
    );
    let slow = write(dir.path(), "slow.json", &report(&[800.0, 810.0, 790.0], 2));
    let md = dir.path().join("gate.md");
    let out = gate(&base, &slow, &["--markdown", md.to_str().unwrap()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(REGRESSION_STATUS),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.starts_with("REGRESSION: step all commits 800 tx/s"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  baseline   step all: 1000 tx/s mean over 3 runs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  difference −200 tx/s (95 % CI"),
        "{stdout}"
    );
    assert!(
        stderr.contains("error: regression: committed TPS fell 20.0 %"),
        "{stderr}"
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.starts_with("### feth compare gate: REGRESSION"), "{md}");
    assert!(
        md.contains("#### candidate") && md.contains("| all | all | 800 (790–810) |"),
        "{md}"
    );

    let out = gate(&base, &slow, &["--json"]);
    assert_eq!(out.status.code(), Some(REGRESSION_STATUS));
    let verdict: GateVerdict = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict.outcome, Outcome::Regression);
    assert_eq!(
        (verdict.baseline.mean, verdict.candidate.mean),
        (1000.0, 800.0)
    );
    assert!(
        text(&out.stderr).starts_with("REGRESSION: "),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_equal_candidate_passes() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(
        dir.path(),
        "base.json",
        &report(&[1000.0, 1010.0, 990.0], 2),
    );
    let same = write(
        dir.path(),
        "same.json",
        &report(&[1005.0, 995.0, 1000.0], 2),
    );
    let out = gate(&base, &same, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with("within noise: step all commits 1000 tx/s"),
        "{stdout}"
    );
    assert!(!stdout.contains("warning"), "{stdout}");
}

#[test]
fn a_different_machine_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &report(&[1000.0, 1010.0], 2));
    let other = write(dir.path(), "other.json", &report(&[1000.0, 1010.0], 8));
    let out = gate(&base, &other, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not measured alike"), "{stderr}");
    assert!(
        stderr.contains("cores: baseline 2, candidate 8"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));

    let out = gate(&base, &other, &["--force"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("  warning: compared although cores: baseline 2, candidate 8"),
        "{stdout}"
    );
}

#[test]
fn unreadable_reports_and_missing_arguments_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &report(&[1000.0, 1010.0], 2));
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"schema\": 1, \"runs\": [").unwrap();
    let out = gate(&base, &junk, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{} is not a feth compare report", junk.display())),
        "{stderr}"
    );
    let missing = dir.path().join("missing.json");
    let out = gate(&missing, &base, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot read the report {}", missing.display())),
        "{stderr}"
    );
    let out = feth(&[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("say what to compare: --ladder SPEC")
            && stderr.contains("gate two reports with --baseline/--candidate"),
        "{stderr}"
    );
}
