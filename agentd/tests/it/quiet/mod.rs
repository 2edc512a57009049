//! The tests that measure the machine: its CPU per transaction, the share
//! of it the node had, a knee, a profiler's samples or the agent's memory.
//! `make test` runs them first, one at a time, on an otherwise idle machine
//! (`cargo test --workspace -- quiet::`); the rest of the suite runs
//! afterwards beside the fuzz builds (`scripts/test.sh`).

mod bench_profiler;
mod bench_stages;
mod bisect;
mod compare_live;
mod compare_run;
mod kvstore;
mod pipeline;
mod profiler_devnet;
mod recipes;
mod saturate;
mod soak;

use feth::compare::{CompareReport, Metric};
use feth::stats::{t_quantile, Change};

/// Asserts that step `step` of an A/A report (the same node, build or
/// deploy twice) shows no change beyond noise against the step before it,
/// in committed tx/s and in node CPU per transaction.
///
/// The 95 % intervals hold 1 in 95 % of such runs each; this checks 1
/// against the 99.5 % ones (from the same estimate) so that it fails
/// falsely under 1 % of the time. The per-step verdict is a 5 % test by
/// design: an A/A run calls a Gain or Loss in up to 5 % of runs per metric,
/// so it is not asserted (its error rate is checked by simulation in
/// `stats::decide`); a verdict must agree with the 95 % interval it came
/// from.
pub fn assert_no_change_beyond_noise(r: &CompareReport, step: usize) {
    let second = &r.steps[step];
    for metric in [Metric::Tps, Metric::CpuPerTx] {
        let f = second.figure(metric).unwrap();
        let est = f
            .vs_previous
            .unwrap_or_else(|| panic!("{metric:?}: no estimate"));
        assert!(
            est.low.unwrap() > 0.0 && est.rounds >= 3,
            "{metric:?}: {est:?}"
        );
        let wide = t_quantile(0.9975, est.df.unwrap()).unwrap() * est.se.unwrap();
        assert!(est.ratio.ln().abs() <= wide, "{metric:?}: {est:?}");
        let (low, high) = (est.low.unwrap(), est.high.unwrap());
        if matches!(f.change, Change::Gain | Change::Loss) {
            assert!(low > 1.0 || high < 1.0, "{metric:?}: {f:?}");
        }
        assert!(est.mde.unwrap() > 0.0);
    }
}
