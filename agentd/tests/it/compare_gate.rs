//! `feth compare --candidate [--baseline] --max-regression`: the real binary
//! on report files written here, its three answers and their exit statuses,
//! its refusals and its errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use feth::cmd::compare::{INCONCLUSIVE_STATUS, REGRESSION_STATUS};
use feth::compare::step::FixedWindow;
use feth::compare::summary::Rounds;
use feth::compare::{CompareReport, Environment, GateVerdict, Kind, Pairing, Settings, StepRun};
use feth::saturate::{Clock, SearchConfig, StepMeasure, WindowExtras};
use feth::stats::GateAnswer;

fn measure(tps: f64) -> StepMeasure {
    StepMeasure {
        offered_tps: tps * 1.5,
        sent_tps: tps * 1.2,
        committed_tps: tps,
        clock: Clock::CometbftHeaders,
        first_height: 1,
        last_height: 21,
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
        node_cpu_us_per_tx: Some(300_000.0 / tps),
        valid: (tps * 10.0) as u64,
        invalid: Some(0),
        gas_per_sec: Some(tps * 21_000.0),
        reads: None,
        machine: None,
        backlog: None,
    }
}

fn run(step: &str, round: usize, tps: f64) -> StepRun {
    StepRun {
        step: step.to_string(),
        patches: "all".to_string(),
        comet: Vec::new(),
        node: "abcid".to_string(),
        round,
        measure: measure(tps),
        extras: WindowExtras::default(),
        lower_bound: None,
        backlog: None,
        fixed: Some(FixedWindow {
            measure: measure(500.0),
            extras: WindowExtras::default(),
            off_rate: None,
            backlog: None,
        }),
        etl: None,
        flamegraph: None,
        diff_flamegraph: None,
        cometbft_profile: None,
        node_profile: None,
        node_diff_flamegraph: None,
        go_profile: None,
        go_diff_flamegraph: None,
        rpc_retries: 0,
    }
}

/// Two builds `a` and `b` interleaved, `b` committing `b[r]` when `a` did `a[r]`.
fn builds(a: &[f64], b: &[f64], cores: usize) -> CompareReport {
    let mut runs = Vec::new();
    for (round, (ta, tb)) in a.iter().zip(b).enumerate() {
        let pair = [run("a", round, *ta), run("b", round, *tb)];
        if round % 2 == 0 {
            runs.extend(pair);
        } else {
            runs.extend(pair.into_iter().rev());
        }
    }
    let settings = Settings {
        kind: Kind::Builds,
        block_gas_limit: Some(150_000_000),
        timeout_commit: Some(feth::devnet::GoDuration::from_millis(500)),
        seconds: 10.0,
        warmup_secs: 3.0,
        rounds: a.len(),
        senders: 200,
        workload: "transfer".to_string(),
        overload: 1.25,
        fixed_rate: 500.0,
        floor: 0.02,
        search: SearchConfig::default(),
        until_resolved: None,
        max_lost: 0.10,
        given_overload_tps: None,
        every_step: Vec::new(),
    };
    let environment = Environment {
        cores,
        ..Environment::detect("v0.38.17")
    };
    let rounds = Rounds {
        setups: Vec::new(),
        runs,
        ladder: vec!["a".to_string(), "b".to_string()],
        stopped: None,
        failed: None,
    };
    CompareReport::assemble(environment, settings, rounds, None, 120.0).unwrap()
}

/// One step (a live node) per report: no pairing.
fn single(tps: &[f64], cores: usize) -> CompareReport {
    let mut r = builds(tps, tps, cores);
    r.runs.retain(|x| x.step == "b");
    r.steps.retain(|s| s.step == "b");
    r.settings.kind = Kind::Live;
    r
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

fn gate(candidate: &Path, more: &[&str]) -> Output {
    let mut args = vec![
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

const A: [f64; 8] = [1000.0, 1030.0, 970.0, 1010.0, 990.0, 1020.0, 980.0, 1000.0];

#[test]
fn a_slower_candidate_fails_with_the_regression_status() {
    let dir = tempfile::tempdir().unwrap();
    let slower: Vec<f64> = A
        .iter()
        .zip([0.8, 0.81, 0.79, 0.8, 0.82, 0.78, 0.8, 0.8])
        .map(|(a, k)| a * k)
        .collect();
    let report = write(dir.path(), "slow.json", &builds(&A, &slower, 2));
    let md = dir.path().join("gate.md");
    let out = gate(&report, &["--markdown", md.to_str().unwrap()]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(REGRESSION_STATUS),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.starts_with("REGRESSION: step b against a (committed tx/s): 20.0 % worse"),
        "{stdout}"
    );
    assert!(stderr.contains("exit status 3"), "{stderr}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.starts_with("### feth compare gate: REGRESSION"), "{md}");
    assert!(md.contains("#### the comparison"), "{md}");
}

#[test]
fn an_unchanged_candidate_passes_and_json_carries_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let same: Vec<f64> = A
        .iter()
        .zip([1.0, 1.004, 0.997, 1.002, 0.999, 1.001, 0.998, 1.0])
        .map(|(a, k)| a * k)
        .collect();
    let report = write(dir.path(), "same.json", &builds(&A, &same, 2));
    let out = gate(&report, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let verdict: GateVerdict = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (verdict.outcome, verdict.pairing),
        (GateAnswer::Pass, Pairing::Paired)
    );
    assert!(verdict.estimate.low.unwrap() > 0.95, "{verdict:?}");
    // A separate baseline report is not needed: the pairing decides.
    let base = write(dir.path(), "base.json", &builds(&[1.0; 8], &[2.0; 8], 8));
    let out = gate(&report, &["--baseline", base.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("--baseline report was not needed"));
}

#[test]
fn two_rounds_are_inconclusive_with_their_own_status() {
    // The old gate passed this as "within noise": 19.7 % slower, exit 0.
    let dir = tempfile::tempdir().unwrap();
    let report = write(
        dir.path(),
        "two.json",
        &builds(&[950.0, 1080.0], &[760.0, 870.0], 2),
    );
    let out = gate(&report, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(INCONCLUSIVE_STATUS), "{stdout}");
    assert!(stdout.starts_with("INCONCLUSIVE:"), "{stdout}");
    assert!(stdout.contains("at least 5 rounds"), "{stdout}");
}

#[test]
fn lower_bounds_alone_cannot_decide_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = builds(&A, &A, 2);
    for run in &mut r.runs {
        run.lower_bound = Some("kept up with the overload".into());
    }
    let rounds = Rounds {
        setups: r.setups.clone(),
        runs: r.runs.clone(),
        ladder: vec!["a".to_string(), "b".to_string()],
        stopped: None,
        failed: None,
    };
    let r = CompareReport::assemble(r.environment.clone(), r.settings.clone(), rounds, None, 1.0)
        .unwrap();
    let report = write(dir.path(), "bounds.json", &r);
    let out = gate(&report, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(INCONCLUSIVE_STATUS), "{stderr}");
    assert!(
        stderr.contains("INCONCLUSIVE: step \"b\" shares no round"),
        "{stderr}"
    );
    // CPU per transaction at the fixed rate is still measured: it decides.
    let out = gate(&report, &["--gate-metric", "cpu"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn reports_without_a_pairing_are_compared_unpaired_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &single(&A, 2));
    let slow: Vec<f64> = A.iter().map(|t| t * 0.7).collect();
    let cand = write(dir.path(), "cand.json", &single(&slow, 2));
    let out = gate(&cand, &["--baseline", base.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(REGRESSION_STATUS), "{stdout}");
    assert!(
        stdout.contains("unpaired: two reports, Welch's t on the logs"),
        "{stdout}"
    );
    // Without a baseline there is nothing to compare a lone step with.
    let out = gate(&cand, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("give a --baseline report"),
        "{}",
        text(&out.stderr)
    );
    // Measured on other machines: refused, each difference named, unless forced.
    let other = write(dir.path(), "other.json", &single(&slow, 8));
    let out = gate(&other, &["--baseline", base.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cores: baseline 2, candidate 8"),
        "{}",
        text(&out.stderr)
    );
    let out = gate(&other, &["--baseline", base.to_str().unwrap(), "--force"]);
    assert_eq!(out.status.code(), Some(REGRESSION_STATUS));
    assert!(text(&out.stdout).contains("warning: compared although cores"));
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"a report\"}").unwrap();
    let out = gate(&junk, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(&format!("{} is not a feth compare report", junk.display())));
    let old = dir.path().join("old.json");
    std::fs::write(&old, "{\"schema\": 1}").unwrap();
    let out = gate(&old, &[]);
    assert!(
        text(&out.stderr).contains("schema 1; this feth reads schema 2"),
        "{}",
        text(&out.stderr)
    );
    let out = feth(&[]);
    assert!(text(&out.stderr).contains("say what to compare: --ladder SPEC"));
}

/// A ladder with a misspelt step, or a step whose patch lacks what it
/// needs, is refused before any step starts: no devnet folder is made and
/// no abcid is looked for (`FETH_ABCID` points nowhere).
#[test]
fn a_ladder_with_a_misspelt_or_unmet_step_fails_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("profiles");
    for (ladder, expected) in [
        ("none,+rwlock,rwlok", "step `rwlok`: unknown patch `rwlok`"),
        ("none,+web3-recover", "`web3-recover` needs `sender-cache`"),
        (
            "all,optimistic-execution",
            "step `optimistic-execution`: `optimistic-execution` needs `parallel-abci`",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_feth"))
            .args(["compare", "--ladder", ladder, "--no-reference", "--out"])
            .arg(&out_dir)
            .env("FETH_ABCID", dir.path().join("no-abcid"))
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{ladder}: {stderr}");
        assert!(stderr.contains(expected), "{ladder}: {stderr}");
        let made: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(made.is_empty(), "{ladder}: nothing is made: {made:?}");
    }
}
