//! A short soak of `feth load` (the `feth` binary, on a real devnet): its
//! figures are streamed to the series file as the run goes, Ctrl-C (SIGINT)
//! ends the run with a summary whose accounting adds up, and the agent's RSS,
//! sampled from outside every 250 ms, stays flat between two steady windows
//! of the run: it may grow by a fixed allowance (allocator and buffer
//! warm-up, about 0.2 MB measured alone) and by what the transactions in
//! flight grew by (a busy machine slows the chain), not with the
//! transactions sent. A ledger that kept each sent transaction's bytes
//! (about 250 B) would grow by about 2.7 MB over the 11,000 sent between
//! the windows.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use feth::load::LoadReport;
use serde_json::Value;

use crate::common::{funded, TestNet};

/// Offered rate and how long the run lasts before SIGINT.
const RATE: u64 = 300;
const RUN: Duration = Duration::from_secs(75);
/// Steady-state windows, seconds since the start of sending.
const EARLY: (f64, f64) = (15.0, 25.0);
const LATE: (f64, f64) = (62.0, 72.0);
/// RSS growth allowed between the windows whatever was sent, bytes.
const ALLOWANCE: u64 = 1_500_000;
/// RSS allowed per transaction more in flight in the late window, bytes
/// (`feth bench agent` measures about 470).
const PER_IN_FLIGHT: u64 = 1_000;

fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// The lines of the series file so far, parsed.
fn lines(path: &Path) -> Vec<Value> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect()
}

fn of_kind<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["kind"] == kind).collect()
}

/// The load child, killed if the test fails before it ends.
struct Load(Option<Child>);

impl Drop for Load {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start_load(net: &TestNet, keys: &Path, series: &Path) -> Load {
    let child = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(["load", "--network", &net.web3(), "--keys"])
        .arg(keys)
        .args(["--rate", &RATE.to_string(), "--duration", "10m"])
        .args(["--window-blocks", "20", "--json", "--quiet", "--series-out"])
        .arg(series)
        // glibc gives threads that contend for malloc arenas of their own
        // (up to 8 per core), and each adds RSS whatever was sent. With four
        // busy loops beside the test, growth between the windows was 1.49,
        // 1.8 and 2.3 MB with the default arenas, 1.11 MB with two and 0.44
        // and 0.68 MB with one, against 0.21 MB on a quiet machine. One
        // arena keeps that fixed cost out of a bound on growth per
        // transaction; this run's speed is not measured.
        .env("MALLOC_ARENA_MAX", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Load(Some(child))
}

fn max_in(samples: &[(f64, u64)], (from, to): (f64, f64)) -> u64 {
    let inside: Vec<u64> = samples
        .iter()
        .filter(|(t, _)| (from..to).contains(t))
        .map(|s| s.1)
        .collect();
    assert!(inside.len() >= 10, "too few RSS samples in {from}..{to} s");
    inside.into_iter().max().unwrap_or(0)
}

/// The most transactions in flight the agent sampled in a window's seconds.
fn in_flight_in(report: &LoadReport, (from, to): (f64, f64)) -> u64 {
    report
        .series
        .iter()
        .filter(|s| (from..to).contains(&(s.second as f64)))
        .filter_map(|s| s.in_flight)
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soak_streams_its_figures_ends_on_sigint_and_its_memory_stays_flat() {
    let net = TestNet::start().await;
    let (_keys, dir) = funded(&net, 200, 11).await;
    let series = dir.path().join("series.jsonl");
    let mut load = start_load(&net, &dir.path().join("keys.txt"), &series);
    let pid = load.0.as_ref().map(Child::id).unwrap();

    // Sample RSS every 250 ms; time 0 is the series file's `start` line,
    // written just before sending begins.
    let deadline = Instant::now() + Duration::from_secs(60);
    while of_kind(&lines(&series), "start").is_empty() {
        assert!(Instant::now() < deadline, "no start line within 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let t0 = Instant::now();
    let mut samples = Vec::new();
    let mut seconds_seen_while_running = 0;
    while t0.elapsed() < RUN {
        if let Some(bytes) = rss(pid) {
            samples.push((t0.elapsed().as_secs_f64(), bytes));
        }
        if t0.elapsed() > Duration::from_secs(40) && seconds_seen_while_running == 0 {
            seconds_seen_while_running = of_kind(&lines(&series), "second").len();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Streamed as it goes: a run killed now would leave these. (How far
    // the file trails the run depends on how fast the chain commits.)
    eprintln!("{seconds_seen_while_running} finished seconds in the file after 40 s");
    assert!(
        seconds_seen_while_running > 0,
        "no finished second in the file after 40 s"
    );

    // Ctrl-C: the run stops sending, waits for what is in flight, and reports.
    // SAFETY: kill(2) on the pid of the child we started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let child = load.0.take().unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("committed TPS"), "no summary: {stderr}");
    let report: LoadReport = serde_json::from_slice(&out.stdout).unwrap();
    let t = &report.totals;
    assert!(
        report.send_seconds < 120.0,
        "SIGINT stopped a 10-minute run: {}",
        report.send_seconds
    );
    assert_eq!(t.signed, t.included + t.rejected + t.unresolved, "{t:?}");
    assert_eq!((t.unresolved, t.rejected), (0, 0), "{t:?}");
    // The run sent until the SIGINT; how many it signed in that time is the
    // machine's figure (the summary prints it).
    assert!(report.send_seconds >= 60.0, "{}", report.send_seconds);
    assert!(t.signed > 0, "{t:?}");

    // The file holds the run: the report's seconds and windows, and its end.
    let all = lines(&series);
    let streamed: Vec<u64> = of_kind(&all, "second")
        .iter()
        .map(|l| l["included"].as_u64().unwrap())
        .collect();
    let reported: Vec<u64> = report.series.iter().map(|s| s.included).collect();
    assert_eq!(streamed, reported);
    assert_eq!(of_kind(&all, "window").len(), report.windows.len());
    // Windows of 20 blocks: how many fit in the run is the chain's pace.
    assert!(!report.windows.is_empty(), "{:?}", report.windows);
    let end = of_kind(&all, "end");
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["totals"]["included"].as_u64(), Some(t.included));

    // Memory: RSS growth between two steady windows, against what was sent
    // between them and what the transactions in flight grew by.
    let early = max_in(&samples, EARLY);
    let late = max_in(&samples, LATE);
    let sent_between: u64 = report
        .series
        .iter()
        .filter(|s| (EARLY.1..LATE.0).contains(&(s.second as f64)))
        .map(|s| s.sent)
        .sum();
    assert!(
        sent_between > 0,
        "the load sent nothing between the windows"
    );
    let growth = late.saturating_sub(early);
    let more_in_flight = in_flight_in(&report, LATE).saturating_sub(in_flight_in(&report, EARLY));
    let bound = ALLOWANCE + PER_IN_FLIGHT * more_in_flight;
    eprintln!(
        "RSS early {early} B, late {late} B, growth {growth} B ({:.0} B per transaction sent, {sent_between}); {more_in_flight} more in flight; bound {bound} B",
        growth as f64 / sent_between as f64
    );
    assert!(
        growth <= bound,
        "RSS grew {growth} B while {sent_between} transactions were sent and {more_in_flight} more were in flight (bound {bound} B)"
    );
}
