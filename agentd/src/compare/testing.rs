//! Hand-built runs and reports for the compare module's unit tests.

use super::report::{CompareReport, Environment, Kind, ReferenceRun, Settings, StepRun};
use crate::saturate::{Clock, StepMeasure};

/// A measure committing `tps` with plausible other figures.
pub fn measure(tps: f64) -> StepMeasure {
    StepMeasure {
        offered_tps: tps * 1.1,
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
        node_cpu_us_per_tx: Some(250.0),
        valid: (tps * 20.0) as u64,
        invalid: Some(0),
    }
}

/// Run of `step` (patches named like the step) in `round` committing `tps`.
pub fn run(step: &str, round: usize, tps: f64) -> StepRun {
    StepRun {
        step: step.to_string(),
        patches: step.trim_start_matches('+').to_string(),
        node: "abcid/0.1.0".to_string(),
        round,
        knee_tps: Some(tps * 1.1),
        measure: measure(tps),
        etl: None,
        flamegraph: None,
        diff_flamegraph: None,
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
pub fn settings(kind: Kind, repeat: usize) -> Settings {
    Settings {
        kind,
        block_gas_limit: 150_000_000,
        timeout_commit: "500ms".to_string(),
        seconds: 20.0,
        repeat,
        senders: 500,
        workload: "transfer".to_string(),
        fixed_rate: None,
    }
}

/// A report of `steps`, each with its committed TPS per round, interleaved
/// (round r runs the steps forwards when r is even, backwards when odd).
pub fn report(kind: Kind, steps: &[(&str, &[f64])], reference_tps: Option<f64>) -> CompareReport {
    let repeat = steps.iter().map(|(_, t)| t.len()).max().unwrap_or(0);
    let mut runs = Vec::new();
    for round in 0..repeat {
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
    let ladder: Vec<String> = steps.iter().map(|(s, _)| s.to_string()).collect();
    let reference = reference_tps.map(|t| ReferenceRun {
        app: "cometbft kvstore".to_string(),
        knee_tps: Some(t * 1.05),
        measure: measure(t),
    });
    CompareReport::assemble(
        environment(),
        settings(kind, repeat),
        runs,
        &ladder,
        reference,
        600.0,
    )
    .unwrap()
}

/// A four-step patch ladder over three rounds, with a kvstore reference at 1000 tx/s.
pub fn ladder() -> CompareReport {
    report(
        Kind::Patches,
        &[
            ("none", &[100.0, 110.0, 90.0]),
            ("+parallel", &[150.0, 165.0, 135.0]),
            ("+rwlock", &[150.0, 160.0, 140.0]),
            ("all", &[120.0, 132.0, 108.0]),
        ],
        Some(1000.0),
    )
}
