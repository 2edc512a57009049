//! `feth bench profiler` end to end, on its own real devnet, in miniature: one live
//! armed/disarmed pair and one restarted off/disarmed pair, each window with committed
//! transactions, the consensus thread's cost counted over the armed window, and the
//! profiler's threads busy only while armed.

use feth::bench::profiler::ProfilerMode;
use feth::bench::{profiler, ProfilerBenchPlan};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_comparisons_are_measured_on_a_real_devnet() {
    let r = profiler(ProfilerBenchPlan {
        accounts: 50,
        pairs: 1,
        window_secs: 2,
        round_pairs: 1,
        round_secs: 2,
        frequency_hz: 99,
        timeout_commit: feth::devnet::GoDuration::from_millis(300),
    })
    .await
    .expect("the benchmark runs");

    let modes = |w: &[feth::bench::profiler::Window]| w.iter().map(|w| w.mode).collect::<Vec<_>>();
    assert_eq!(
        modes(&r.live),
        [ProfilerMode::Armed, ProfilerMode::Disarmed],
        "the first pair starts armed (ABBA)"
    );
    assert_eq!(
        modes(&r.rounds),
        [ProfilerMode::Disarmed, ProfilerMode::Off]
    );
    for w in r.live.iter().chain(&r.rounds) {
        assert!(w.last_height > w.first_height + 1, "{w:?}");
        assert!(w.txs > 0 && w.committed_tps > 0.0, "{w:?}");
        assert!(w.node_cpu_us_per_tx > 0.0, "{w:?}");
    }
    let armed = &r.live[0];
    assert!(
        r.consensus_cost.blocks >= armed.last_height - armed.first_height,
        "every block of the armed window went through the armed hooks: {:?}",
        r.consensus_cost
    );
    assert!(r.consensus_cost.total_ns > 0);
    assert!(armed.profiler_threads_cpu_ms > 0.0, "{armed:?}");
    assert!(r.profiler_threads_core_share_armed > 0.0);
    // Never armed since its restart, the profiler's threads sleep: less CPU
    // a second than while armed, on the same machine (the milliseconds
    // themselves are the machine's). Without the profiler there are none.
    for round in &r.rounds {
        let share = round.profiler_threads_cpu_ms / 1e3 / round.wall_secs;
        match round.mode {
            ProfilerMode::Off => assert_eq!(round.profiler_threads_cpu_ms, 0.0, "{round:?}"),
            _ => assert!(
                share < r.profiler_threads_core_share_armed,
                "{share} of a core disarmed, {} armed: {round:?}",
                r.profiler_threads_core_share_armed
            ),
        }
    }
    assert_eq!(r.armed.tps_ratio.pairs, 1);
    let disarmed = r.disarmed.expect("off/disarmed comparison");
    assert_eq!(disarmed.baseline, ProfilerMode::Off);
    assert!(disarmed.tps_ratio.mean > 0.0);
}
