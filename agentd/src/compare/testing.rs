//! Hand-built runs and reports for the compare module's unit tests.

use super::report::{CompareReport, Environment, Kind, ReferenceRun, Settings};
use super::step::{FixedWindow, StepRun};
use super::summary::Rounds;
use crate::saturate::{Clock, MachineShare, SearchConfig, StepMeasure, WindowExtras};

/// A measure committing `tps` with plausible other figures.
pub fn measure(tps: f64) -> StepMeasure {
    StepMeasure {
        offered_tps: tps * 1.25,
        sent_tps: tps * 1.1,
        committed_tps: tps,
        clock: Clock::CometbftHeaders,
        first_height: 10,
        last_height: 50,
        block_time_p50_ms: 510.0,
        block_time_p95_ms: 620.0,
        mempool_start: Some(0),
        mempool_end: Some(0),
        schedule_lag_p50_ms: 0.2,
        schedule_lag_p99_ms: 1.5,
        agent_lag_p99_ms: 1.0,
        agent_cpu_us_per_tx: 40.0,
        slots_busy: 0.1,
        backoffs: 0,
        node_cpu_us_per_tx: Some(25_000.0 / tps),
        valid: (tps * 20.0) as u64,
        invalid: Some(0),
        gas_per_sec: Some(tps * 21_000.0),
        reads: None,
        machine: Some(MachineShare {
            outside: Some(0.01),
            steal: 0.0,
        }),
        backlog: Some(0),
    }
}

/// Latency and gas figures of a window committing `tps`.
pub fn extras(tps: f64) -> WindowExtras {
    WindowExtras {
        latency_p50_ms: Some(600.0),
        latency_p99_ms: Some(1_100.0),
        gas_per_sec: Some(tps * 21_000.0),
    }
}

/// Run of `step` (patches named like the step) in `round` committing `tps`
/// under overload, with a fixed-rate window at 50 tx/s.
pub fn run(step: &str, round: usize, tps: f64) -> StepRun {
    let mut fixed = measure(50.0);
    fixed.node_cpu_us_per_tx = Some(25_000.0 / tps);
    StepRun {
        step: step.to_string(),
        patches: step.trim_start_matches('+').to_string(),
        comet: Vec::new(),
        node: "abcid/0.1.0".to_string(),
        round,
        measure: measure(tps),
        extras: extras(tps),
        lower_bound: None,
        backlog: None,
        fixed: Some(FixedWindow {
            measure: fixed,
            extras: extras(50.0),
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

/// The machine of the hand-built reports.
pub fn environment() -> Environment {
    Environment {
        cpu_model: "Test CPU @ 2.0GHz".to_string(),
        cores: 2,
        memory_gib: 7.8,
        host: "ci".to_string(),
        kernel: "6.1.0".to_string(),
        feth_version: "0.1.0".to_string(),
        cometbft_version: "v0.38.17".to_string(),
    }
}

/// The conditions of the hand-built reports.
pub fn settings(kind: Kind, rounds: usize) -> Settings {
    Settings {
        kind,
        block_gas_limit: Some(150_000_000),
        timeout_commit: Some(crate::devnet::GoDuration::from_millis(500)),
        seconds: 10.0,
        warmup_secs: 3.0,
        rounds,
        senders: 500,
        workload: "transfer".to_string(),
        overload: 1.25,
        fixed_rate: 50.0,
        floor: 0.02,
        search: SearchConfig::default(),
        until_resolved: None,
        max_lost: 0.10,
        given_overload_tps: None,
        every_step: Vec::new(),
    }
}

/// A report of `steps`, each with its committed TPS per round, interleaved
/// (round r runs the steps forwards when r is even, backwards when odd).
pub fn report(kind: Kind, steps: &[(&str, &[f64])], reference_tps: Option<f64>) -> CompareReport {
    let rounds = steps.iter().map(|(_, t)| t.len()).max().unwrap_or(0);
    let mut runs = Vec::new();
    for round in 0..rounds {
        let mut order: Vec<&(&str, &[f64])> = steps.iter().collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for (step, tps) in order {
            if let Some(t) = tps.get(round) {
                runs.push(run(step, round, *t));
            }
        }
    }
    let reference = reference_tps.map(|t| ReferenceRun {
        app: "cometbft kvstore".to_string(),
        knee_tps: Some(t * 1.05),
        measure: measure(t),
    });
    let measured = Rounds {
        setups: Vec::new(),
        runs,
        ladder: steps.iter().map(|(s, _)| s.to_string()).collect(),
        stopped: None,
        failed: None,
    };
    CompareReport::assemble(
        environment(),
        settings(kind, rounds),
        measured,
        reference,
        600.0,
    )
    .unwrap()
}

/// A four-step patch ladder over six rounds, with a kvstore reference at
/// 1000 tx/s: `+parallel` 1.5 × `none` in every round, `+rwlock` within a
/// few percent of it, `all` 0.8 × `+rwlock`.
pub fn ladder() -> CompareReport {
    report(
        Kind::Patches,
        &[
            ("none", &[100.0, 110.0, 90.0, 105.0, 95.0, 100.0]),
            ("+parallel", &[150.0, 165.0, 135.0, 157.5, 142.5, 150.0]),
            ("+rwlock", &[153.0, 160.0, 139.0, 158.0, 146.0, 149.0]),
            ("all", &[122.4, 128.0, 111.2, 126.4, 116.8, 119.2]),
        ],
        Some(1000.0),
    )
}
