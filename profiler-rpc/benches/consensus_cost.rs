//! What the block profiler costs the node, measured in-process:
//!
//! 1. consensus-thread cost of `begin_block` + `end_block` while disarmed;
//! 2. consensus-thread cost of each call while armed on every block, with a CPU-bound
//!    check_tx thread running and ~700 distinct call stacks (what the sampling thread
//!    collects per block grows with them), plus how far the sampling windows (each block
//!    from the previous `end_block` to its own) lagged the calls;
//! 3. throughput of a CPU-bound two-thread workload (check_tx + deliver_tx) armed on
//!    every block vs disarmed, interleaved in ABBA order, as ratios: work per wall second,
//!    and work per second of process CPU (all of the profiler's CPU included).
//!
//! Run: `cargo bench -p feth-profiler-rpc`. Prints figures; asserts nothing.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use feth_profiler_rpc::{
    tag_current_thread, BlockProfiler, EnableParams, ProfileSummary, ProfilerConfig, Retention,
    Role,
};

/// Idle time of the consensus thread between two blocks.
const BLOCK_GAP: Duration = Duration::from_millis(20);

/// One unit of CPU work (a few hundred nanoseconds of integer mixing).
#[inline(never)]
fn work_unit(seed: u64) -> u64 {
    let mut x = seed | 1;
    for i in 0..256u64 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i) ^ (x >> 29);
    }
    x
}

macro_rules! branch {
    ($($name:ident),*) => {$(
        #[inline(never)]
        fn $name(depth: u32, path: u64) -> u64 {
            // Not a tail call: keeps this frame on the stack.
            varied(depth, path).wrapping_add(u64::from(depth))
        }
    )*};
}
branch!(branch_a, branch_b, branch_c);

/// Work spread over 3^6 = 729 distinct call stacks.
#[inline(never)]
fn varied(depth: u32, path: u64) -> u64 {
    if depth == 0 {
        return work_unit(path);
    }
    let next = path.wrapping_mul(3);
    match path % 3 {
        0 => branch_a(depth - 1, next / 3 + 1),
        1 => branch_b(depth - 1, next / 3 + 2),
        _ => branch_c(depth - 1, next / 3 + 3),
    }
}

/// Runs varied work until `deadline`; returns how many units.
#[inline(never)]
fn varied_until(deadline: Instant, seed: &mut u64) -> u64 {
    let mut units = 0u64;
    while Instant::now() < deadline {
        for _ in 0..16 {
            *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            black_box(varied(6, *seed >> 33));
            units += 1;
        }
    }
    units
}

/// Runs work units until `deadline`; returns how many.
#[inline(never)]
fn work_until(deadline: Instant) -> u64 {
    let mut units = 0u64;
    let mut acc = 0u64;
    while Instant::now() < deadline {
        for _ in 0..16 {
            acc = work_unit(acc.wrapping_add(units));
            units += 1;
        }
    }
    black_box(acc);
    units
}

/// A check_tx thread that works until stopped, counting its units.
struct CheckTxLoad {
    stop: Arc<AtomicBool>,
    units: Arc<AtomicU64>,
    handle: Option<thread::JoinHandle<()>>,
}

impl CheckTxLoad {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let units = Arc::new(AtomicU64::new(0));
        let (s, u) = (stop.clone(), units.clone());
        let handle = thread::spawn(move || {
            tag_current_thread(Role::CheckTx);
            while !s.load(Ordering::Relaxed) {
                let n = work_until(Instant::now() + Duration::from_millis(1));
                u.fetch_add(n, Ordering::Relaxed);
            }
        });
        CheckTxLoad {
            stop,
            units,
            handle: Some(handle),
        }
    }

    fn units(&self) -> u64 {
        self.units.load(Ordering::Relaxed)
    }
}

impl Drop for CheckTxLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// CPU time consumed by the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time consumed by the whole process so far.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Wall time and thread CPU time of one call.
fn measure(call: impl FnOnce()) -> (Duration, Duration) {
    let cpu = thread_cpu();
    let wall = Instant::now();
    call();
    let wall = wall.elapsed();
    (wall, thread_cpu().saturating_sub(cpu))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn describe(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!(
        "  {name:<12} n={:<4} mean {:>8.2} us  p50 {:>8.2} us  p99 {:>8.2} us  max {:>8.2} us",
        samples.len(),
        mean.as_secs_f64() * 1e6,
        percentile(&samples, 0.5).as_secs_f64() * 1e6,
        percentile(&samples, 0.99).as_secs_f64() * 1e6,
        samples[samples.len() - 1].as_secs_f64() * 1e6,
    );
}

fn arm(profiler: &BlockProfiler, blocks: i64) {
    if let Err(e) = profiler.enable(EnableParams {
        blocks: Some(blocks),
        frequency_hz: Some(99),
    }) {
        panic!("arming the profiler: {e}");
    }
}

fn settle(profiler: &BlockProfiler) {
    assert!(
        profiler.wait_for_renders(Duration::from_secs(300)),
        "renders did not finish"
    );
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut config = ProfilerConfig::new("bench-chain", tmp.path());
    config.retention = Retention {
        max_profiles: 1000,
        max_bytes: 4 << 30,
    };
    let profiler = BlockProfiler::new(config).expect("profiler");
    tag_current_thread(Role::DeliverTx);
    let mut height = 1u64;

    println!("feth-profiler-rpc consensus-thread cost (frame-pointer unwinding, 99 Hz)");

    // 1. Disarmed.
    let pairs = 5_000_000u64;
    let start = Instant::now();
    for _ in 0..pairs {
        profiler.begin_block(black_box(height));
        profiler.end_block(black_box(height));
        height += 1;
    }
    let per_pair = start.elapsed().as_secs_f64() * 1e9 / pairs as f64;
    println!("disarmed: begin_block + end_block = {per_pair:.2} ns per block ({pairs} blocks)");

    // 2. Armed on every block, per-call cost on this (consensus) thread.
    let load = CheckTxLoad::start();
    let blocks = 150;
    // The first block is joined halfway: the session's windows are the 149 after it.
    arm(&profiler, blocks - 1);
    let (mut begins, mut ends) = (Vec::new(), Vec::new());
    let (mut begins_cpu, mut ends_cpu) = (Vec::new(), Vec::new());
    let mut seed = 1u64;
    for _ in 0..blocks {
        let (wall, cpu) = measure(|| profiler.begin_block(height));
        begins.push(wall);
        begins_cpu.push(cpu);
        varied_until(Instant::now() + Duration::from_millis(20), &mut seed);
        let (wall, cpu) = measure(|| profiler.end_block(height));
        ends.push(wall);
        ends_cpu.push(cpu);
        height += 1;
        // Between blocks the consensus connection idles (the consensus rounds run in
        // CometBFT).
        thread::sleep(BLOCK_GAP);
    }
    settle(&profiler);
    println!(
        "armed on every block ({blocks} blocks of 20 ms + {} ms idle gap, varied stacks, \
         a check_tx thread busy):",
        BLOCK_GAP.as_millis()
    );
    println!("  wall time of the call (includes being descheduled by other processes):");
    describe("begin_block", begins);
    describe("end_block", ends);
    println!("  CPU time of the calling thread during the call (incl. ~0.3 us of clock reads):");
    describe("begin_block", begins_cpu);
    describe("end_block", ends_cpu);
    let status = profiler.status();
    let profiles = profiler.list();
    let n = profiles.len().max(1) as f64;
    let mean = |f: fn(&ProfileSummary) -> f64| profiles.iter().map(f).sum::<f64>() / n;
    let worst_delay = profiles
        .iter()
        .map(|p| p.start_delay_ms.max(p.end_delay_ms))
        .fold(0.0, f64::max);
    println!(
        "  profiles written: {}, failures: {}, samples: {}",
        status.captured_total,
        status.failures_total,
        profiles.iter().map(|p| p.samples).sum::<u64>(),
    );
    println!(
        "  sampling window {:.2} ms; window opened {:.3} ms after the previous end_block and \
         closed {:.3} ms after end_block on average (worst {:.3} ms)",
        mean(|p| p.duration_ms),
        mean(|p| p.start_delay_ms),
        mean(|p| p.end_delay_ms),
        worst_delay,
    );

    // 3. Throughput, interleaved ABBA: disarmed vs armed on every block. Two ratios:
    //    - wall: work per second of the phase (what a saturated node's TPS sees, but noisy
    //      on a shared machine);
    //    - CPU: work per second of process CPU, from the phase's start until its blocks
    //      are rendered (all the profiler's CPU, whichever thread spends it; insensitive
    //      to other processes).
    let rounds = 8;
    let blocks_per_phase = 4u64;
    let block_time = Duration::from_millis(250);
    let run_phase = |armed: bool, height: &mut u64| -> (f64, f64) {
        if armed {
            arm(&profiler, blocks_per_phase as i64);
            // The phase starts where the previous block ended: its first window opens now.
            profiler.end_block(*height - 1);
        }
        let check_before = load.units();
        let cpu_before = process_cpu();
        let start = Instant::now();
        let mut units = 0;
        for _ in 0..blocks_per_phase {
            profiler.begin_block(*height);
            units += work_until(Instant::now() + block_time);
            profiler.end_block(*height);
            *height += 1;
            thread::sleep(BLOCK_GAP);
        }
        let elapsed = start.elapsed().as_secs_f64();
        let per_wall_second = (units + load.units() - check_before) as f64 / elapsed;
        settle(&profiler);
        let cpu = (process_cpu() - cpu_before).as_secs_f64();
        let per_cpu_second = (units + load.units() - check_before) as f64 / cpu;
        (per_wall_second, per_cpu_second)
    };
    let (mut wall_ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut disarmed = (0.0, 0.0);
        let mut armed = (0.0, 0.0);
        for is_armed in order {
            let measured = run_phase(is_armed, &mut height);
            if is_armed {
                armed = measured;
            } else {
                disarmed = measured;
            }
        }
        wall_ratios.push(armed.0 / disarmed.0);
        cpu_ratios.push(armed.1 / disarmed.1);
        println!(
            "  round {round}: per wall s {:.3e} -> {:.3e} (ratio {:.4}); per CPU s {:.3e} -> {:.3e} (ratio {:.4})",
            disarmed.0,
            armed.0,
            armed.0 / disarmed.0,
            disarmed.1,
            armed.1,
            armed.1 / disarmed.1,
        );
    }
    println!(
        "throughput armed/disarmed ({rounds} ABBA rounds, {blocks_per_phase} blocks of {} ms + {} ms gap per phase):",
        block_time.as_millis(),
        BLOCK_GAP.as_millis(),
    );
    for (name, ratios) in [
        ("per wall second", &wall_ratios),
        ("per CPU second", &cpu_ratios),
    ] {
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
        let median = sorted[sorted.len() / 2];
        println!(
            "  {name:<16} mean {mean:.4}, median {median:.4} (min {:.4}, max {:.4}); cost {:.2} % (mean)",
            sorted[0],
            sorted[sorted.len() - 1],
            (1.0 - mean) * 100.0
        );
    }
    drop(load);
}
