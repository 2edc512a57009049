//! Real Cosmos SDK application logs (tests/fixtures/cosmos-*; see its
//! README): console with colour codes, console without, and JSON, checked
//! against the chain's recorded RPC ground truth, which a stand-in node
//! serves on 127.0.0.1 ([`crate::recorded_rpc`]). The console clock has no
//! date, so block times must come from the RPC's header times.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use feth_etl::ingest::IngestError;
use feth_etl::parse::{Event, Format, Line, Parser};

use crate::common::*;
use crate::recorded_rpc::{serve_truth, serve_truth_dropping_first, Truth};

/// One chain's captures: its ground truth and its logs, (file, line
/// format, whether its stamps have a date), in the order they were taken.
struct Capture {
    truth: &'static str,
    logs: &'static [(&'static str, Format, bool)],
    /// What `Version info` says inside the app.
    version: &'static str,
}

const CAPTURES: [Capture; 3] = [
    Capture {
        truth: "cosmos-evm-cometbft-v0.39.3.truth.json",
        logs: &[
            (
                "cosmos-evm-cometbft-v0.39.3.console.log",
                Format::SdkConsole,
                false,
            ),
            (
                "cosmos-evm-cometbft-v0.39.3.nocolor.log",
                Format::SdkConsole,
                false,
            ),
            (
                "cosmos-evm-cometbft-v0.39.3.json.log",
                Format::SdkJson,
                true,
            ),
        ],
        // The v0.39.3 module's version constant says 0.39.0.
        version: "0.39.0",
    },
    Capture {
        truth: "cosmos-evm-cometbft-v0.38.21.truth.json",
        logs: &[
            (
                "cosmos-evm-cometbft-v0.38.21.console.log",
                Format::SdkConsole,
                false,
            ),
            (
                "cosmos-evm-cometbft-v0.38.21.json.log",
                Format::SdkJson,
                true,
            ),
        ],
        // The v0.38.21 module's version constant says 0.38.19.
        version: "0.38.19",
    },
    Capture {
        truth: "cosmos-sdk-cometbft-v1.0.1.truth.json",
        logs: &[
            (
                "cosmos-sdk-cometbft-v1.0.1.console.log",
                Format::SdkConsole,
                false,
            ),
            (
                "cosmos-sdk-cometbft-v1.0.1.nocolor.log",
                Format::SdkConsole,
                false,
            ),
            ("cosmos-sdk-cometbft-v1.0.1.json.log", Format::SdkJson, true),
        ],
        // Cosmos SDK `main` of 2024-12 on CometBFT v1.0.1 (`simd`).
        version: "1.0.1",
    },
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Per height: the tx counts of its `finalizing commit of block`,
/// `finalized block` and `committed state` lines, and the commit line's
/// time (Unix ns) when dated.
#[derive(Default, Debug)]
struct Seen {
    commit: Option<u64>,
    finalized: Option<u64>,
    state: bool,
    commit_ns: Option<i64>,
}

/// Parses every line of a fixture: each must be in `format` and none
/// malformed or foreign.
fn parse_fixture(name: &str, format: Format, want_version: &str) -> BTreeMap<u64, Seen> {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture");
    let mut p = Parser::new();
    let mut utc = feth_comet::time::Clock::utc();
    let mut seen: BTreeMap<u64, Seen> = BTreeMap::new();
    let mut version = None;
    let mut foreign = 0;
    for (i, line) in text.lines().enumerate() {
        match p.parse(line.as_bytes()) {
            Line::Event(r) => {
                assert_eq!(r.format, format, "{name}:{}", i + 1);
                let ns = r.time.map(|t| utc.unix_nanos(&t).expect("stamp"));
                match r.event {
                    Event::CommitDecided { height, txs } => {
                        let s = seen.entry(height).or_default();
                        assert_eq!(s.commit, None, "{name}: height {height} committed twice");
                        (s.commit, s.commit_ns) = (Some(txs), ns);
                    }
                    Event::Finalized { height, txs, .. } => {
                        seen.entry(height).or_default().finalized = Some(txs);
                    }
                    Event::StateCommitted { height, .. } => {
                        seen.entry(height).or_default().state = true;
                    }
                    Event::Version(v) => version = Some(v.to_string()),
                    other => panic!("{name}:{}: unexpected {other:?}", i + 1),
                }
            }
            Line::Other(f) => assert_eq!(f, format, "{name}:{}: {line}", i + 1),
            Line::Foreign => foreign += 1,
            Line::Blank => {}
            other => panic!("{name}:{}: {other:?}: {line}", i + 1),
        }
    }
    // Every line is the SDK logger's (a stamp, a colour code or `{` first),
    // except what the Go runtime wrote itself (the v0.38.21 app's panic on
    // shutdown, a real one).
    let not_logger = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| {
            !(l.starts_with('{')
                || l.starts_with('\x1b')
                || l.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    assert_eq!(foreign, not_logger, "{name}: foreign lines");
    assert_eq!(version.as_deref(), Some(want_version), "{name}");
    // CometBFT 1.0 capitalizes the three messages (`Finalizing commit of
    // block`, …); earlier versions do not.
    let c = |needle: &str| {
        let upper = format!("{}{}", needle[..1].to_uppercase(), &needle[1..]);
        text.lines()
            .filter(|l| l.contains(needle) || l.contains(&upper))
            .count()
    };
    assert_eq!(
        seen.values().filter(|s| s.commit.is_some()).count(),
        c("finalizing commit of block"),
        "{name}"
    );
    assert_eq!(
        seen.values().filter(|s| s.finalized.is_some()).count(),
        c("finalized block"),
        "{name}"
    );
    assert_eq!(
        seen.values().filter(|s| s.state).count(),
        c("committed state"),
        "{name}"
    );
    seen
}

/// The heights a log committed: contiguous, each with all three messages.
fn contiguous(name: &str, seen: &BTreeMap<u64, Seen>) -> (u64, u64) {
    let lo = *seen.keys().next().expect("heights");
    let hi = *seen.keys().next_back().expect("heights");
    assert_eq!(
        seen.len() as u64,
        hi - lo + 1,
        "{name}: heights {lo}..={hi} have gaps"
    );
    for (h, s) in seen {
        assert!(
            s.commit.is_some() && s.finalized.is_some() && s.state,
            "{name}: height {h}: {s:?}"
        );
    }
    (lo, hi)
}

#[test]
fn sdk_fixtures_parse_and_agree_with_the_rpc() {
    for cap in &CAPTURES {
        check_capture(cap);
    }
}

fn check_capture(cap: &Capture) {
    let truth = Truth::read(cap.truth);
    let by_height = truth.by_height();
    let mut covered = Vec::new();
    for &(name, format, dated) in cap.logs {
        let seen = parse_fixture(name, format, cap.version);
        let (lo, hi) = contiguous(name, &seen);
        covered.push((lo, hi));
        let mut txs = 0;
        for (h, s) in &seen {
            let b = by_height[h];
            assert_eq!(s.commit, Some(b.txs), "{name}: txs at height {h}");
            assert_eq!(
                s.finalized,
                Some(b.txs),
                "{name}: num_txs_res at height {h}"
            );
            txs += b.txs;
            match (dated, s.commit_ns) {
                // zerolog's JSON `time` is whole seconds: the commit line is
                // written after the block's header time, in the same minute.
                (true, Some(ns)) => {
                    let header = b.time_ns();
                    assert!(
                        ns >= header - 1_000_000_000 && ns < header + 60_000_000_000,
                        "{name}: height {h}: commit line {ns} vs header {header}"
                    );
                }
                (false, None) => {}
                other => panic!("{name}: height {h}: dated {other:?}"),
            }
        }
        assert!(
            txs >= 25,
            "{name}: the capture's bank sends are in its blocks ({txs})"
        );
        if !dated {
            console_clock_agrees(name, &by_height);
        }
    }
    // A chain's captures are consecutive runs of it.
    assert_eq!(
        covered[0].0, 1,
        "{}: the first capture starts at genesis",
        cap.truth
    );
    for w in covered.windows(2) {
        assert!(w[1].0 <= w[0].1 + 1, "captures leave a gap: {covered:?}");
    }
}

/// Go's `time.Kitchen` (`6:17AM`) of a UTC instant, and of a minute later.
fn kitchen(ns: i64) -> [String; 2] {
    [0, 60].map(|later| {
        let secs = ns.div_euclid(1_000_000_000) + later;
        let (h, m) = (secs.rem_euclid(86_400) / 3600, secs.rem_euclid(3600) / 60);
        let h12 = if h % 12 == 0 { 12 } else { h % 12 };
        format!("{h12}:{m:02}{}", if h < 12 { "AM" } else { "PM" })
    })
}

/// The console stamps (time of day only; the capture's zone was UTC) of a
/// log's commit lines, read with plain string operations, agree with the
/// recorded header times: log and ground truth are of the same run.
fn console_clock_agrees(name: &str, by_height: &BTreeMap<u64, &crate::recorded_rpc::Block>) {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture");
    let mut checked = 0;
    for l in text.lines().filter(|l| {
        l.contains("finalizing commit of block") || l.contains("Finalizing commit of block")
    }) {
        let mut plain = String::new();
        let mut rest = l;
        while let Some(p) = rest.find('\x1b') {
            plain.push_str(&rest[..p]);
            rest = rest[p..].split_once('m').map_or("", |(_, r)| r);
        }
        plain.push_str(rest);
        let stamp = plain.split(' ').next().expect("stamp");
        let h: u64 = plain
            .split("height=")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|h| h.parse().ok())
            .expect("height");
        let want = kitchen(by_height[&h].time_ns());
        assert!(
            want.iter().any(|w| w == stamp),
            "{name}: height {h}: {stamp} vs {want:?}"
        );
        checked += 1;
    }
    assert!(checked > 0, "{name}");
}

/// The stored facts of every height: (txs, valid, invalid, time_ns, time_src).
async fn stored(redis: &Redis, chain: &str) -> BTreeMap<u64, Vec<Option<String>>> {
    let heights: Vec<u64> = redis
        .cmd(&["ZRANGE", &format!("feth:{chain}:heights"), "0", "-1"])
        .await;
    let mut out = BTreeMap::new();
    for h in heights {
        let key = format!("feth:{chain}:block:{h}");
        let v: Vec<Option<String>> = redis
            .cmd(&[
                "HMGET", &key, "txs", "valid", "invalid", "time_ns", "time_src",
            ])
            .await;
        out.insert(h, v);
    }
    out
}

fn gzip_copy(src: &Path, dir: &Path) -> PathBuf {
    let gz = dir.join(format!(
        "{}.gz",
        src.file_name().expect("name").to_string_lossy()
    ));
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).expect("gz"),
        flate2::Compression::default(),
    );
    enc.write_all(&std::fs::read(src).expect("read"))
        .expect("gzip");
    enc.finish().expect("gzip end");
    gz
}

#[tokio::test]
async fn sdk_logs_ingest_with_rpc_header_times() {
    for cap in &CAPTURES {
        ingest_capture(cap).await;
    }
}

async fn ingest_capture(cap: &Capture) {
    let truth = Truth::read(cap.truth);
    let by_height = truth.by_height();
    let rpc = serve_truth(&truth).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let software = format!("Cosmos SDK app on CometBFT {}", cap.version);
    for &(name, format, _) in cap.logs {
        let (lo, hi) = contiguous(name, &parse_fixture(name, format, cap.version));
        let log = fixture(name);
        let redis = Redis::start();
        let mut args = ingest_args(&redis.url, &[&log]);
        args.comet_rpc = Some(rpc.clone());
        let out = ingest(&args).await;
        let r = &out.report;
        let f = &r.files[0];
        let go_runtime = std::fs::read_to_string(&log)
            .expect("log")
            .lines()
            .filter(|l| l.starts_with("panic: ") || l.starts_with("goroutine "))
            .count() as u64;
        assert_eq!(f.malformed, 0, "{name}: {f:?}");
        assert!(f.foreign >= go_runtime, "{name}: {f:?}");
        assert_eq!(f.foreign == 0, go_runtime == 0, "{name}: {f:?}");
        assert_eq!(f.detected.software, software, "{name}");
        assert_eq!(r.chain_id, truth.chain_id, "{name}");
        assert_eq!(r.chain_id_from, "RPC /status", "{name}");
        assert_eq!(r.heights, Some((lo, hi)), "{name}");
        let rpc_sum = r.rpc.as_ref().expect("rpc summary");
        assert_eq!(
            (rpc_sum.headers, rpc_sum.missing),
            (hi - lo + 1, 0),
            "{name}"
        );
        assert!(
            r.block_time_source
                .starts_with("header times from the node's RPC"),
            "{name}: {}",
            r.block_time_source
        );

        // Height by height: txs, valid/invalid and the header time.
        let got = stored(&redis, &truth.chain_id).await;
        assert_eq!(got.len() as u64, hi - lo + 1, "{name}");
        for (h, v) in &got {
            let b = by_height[h];
            let want = [
                Some(b.txs.to_string()),
                Some((b.txs - b.invalid()).to_string()),
                Some(b.invalid().to_string()),
                Some(b.time_ns().to_string()),
                Some("rpc".to_string()),
            ];
            assert_eq!(v.as_slice(), want.as_slice(), "{name}: height {h}");
        }
        let s = stats(&stats_args(&redis.url, &truth.chain_id)).await;
        assert_eq!(s.blocks, hi - lo + 1, "{name}");
        let txs: u64 = (lo..=hi).map(|h| by_height[&h].txs).sum();
        assert_eq!((s.txs, s.results_unknown_blocks), (txs, 0), "{name}");
        // Every block but the first (no parent in range) has a block time.
        let sources = (s.time_sources.header_rpc, s.time_sources.unknown);
        assert_eq!(sources, (hi - lo, 1), "{name}");
        // TPS = txs(lo+1..=hi) / (t(hi) - t(lo)), from the header times.
        let span_ns = by_height[&hi].time_ns() - by_height[&lo].time_ns();
        #[allow(clippy::cast_precision_loss)]
        let want_tps = (txs - by_height[&lo].txs) as f64 / (span_ns as f64 / 1e9);
        let tps = s.tps.expect("tps");
        assert!(
            (tps - want_tps).abs() < 1e-6 * want_tps,
            "{name}: {tps} vs {want_tps}"
        );

        // Idempotent: the same log again changes nothing.
        let first = redis.snapshot().await;
        ingest(&args).await;
        assert_eq!(redis.snapshot().await, first, "{name}: second ingest");

        // A gzip copy into a fresh store gives the same store.
        let gz = gzip_copy(&log, dir.path());
        let redis2 = Redis::start();
        let mut args2 = ingest_args(&redis2.url, &[&gz]);
        args2.comet_rpc = Some(rpc.clone());
        args2.node = Some(feth_etl::ingest::node_name_from_path(&log));
        let out2 = ingest(&args2).await;
        assert_eq!(
            out2.report.files[0].compression,
            feth_etl::source::Compression::Gzip,
            "{name}"
        );
        assert_eq!(redis2.snapshot().await, first, "{name}: gzip copy");
    }
}

/// The first capture's ground truth and its console log: the file's name
/// and the contiguous heights it holds.
fn first_console_capture() -> (Truth, &'static str, u64, u64) {
    let cap = &CAPTURES[0];
    let (name, format, _) = cap.logs[0];
    let (lo, hi) = contiguous(name, &parse_fixture(name, format, cap.version));
    (Truth::read(cap.truth), name, lo, hi)
}

/// A node whose first connections close unanswered: the reads are retried,
/// nothing is missed, and the retries are reported.
#[tokio::test]
async fn dropped_rpc_connections_are_retried_and_counted() {
    let (truth, name, lo, hi) = first_console_capture();
    let redis = Redis::start();
    let mut args = ingest_args(&redis.url, &[&fixture(name)]);
    args.comet_rpc = Some(serve_truth_dropping_first(&truth, 2).await);
    let out = ingest(&args).await;
    let rpc = out.report.rpc.as_ref().expect("rpc summary");
    assert_eq!((rpc.headers, rpc.missing), (hi - lo + 1, 0), "{rpc:?}");
    assert!(rpc.retries >= 1, "{rpc:?}");
    let text = feth_etl::output::ingest(&out.report, feth_etl::output::Format::Table).unwrap();
    assert!(
        text.contains(&format!("{} requests retried", rpc.retries)),
        "{text}"
    );
}

/// A window of heights asked of the RPC: only those are read from it (the
/// log is still read whole), and the window's blocks after its first (no
/// parent in it) have their block times from the headers.
#[tokio::test]
async fn only_the_heights_asked_for_are_read_from_the_rpc() {
    let (truth, name, lo, hi) = first_console_capture();
    assert!(hi >= lo + 5, "{name}: {lo}..={hi}");
    let redis = Redis::start();
    let mut args = ingest_args(&redis.url, &[&fixture(name)]);
    args.comet_rpc = Some(serve_truth(&truth).await);
    args.rpc_heights = Some(lo + 2..=lo + 5);
    let out = ingest(&args).await;
    let rpc = out.report.rpc.as_ref().expect("rpc summary");
    assert_eq!(
        (rpc.headers, rpc.results, rpc.missing),
        (4, 4, 0),
        "{rpc:?}"
    );
    assert_eq!(out.report.heights, Some((lo, hi)), "the log, whole");
    let got = stored(&redis, &truth.chain_id).await;
    for (h, v) in &got {
        let from_rpc = v[4].as_deref() == Some("rpc");
        assert_eq!(from_rpc, (lo + 2..=lo + 5).contains(h), "height {h}: {v:?}");
    }
    let window = feth_etl::stats::StatsQuery {
        from: Some(lo + 3),
        to: Some(lo + 5),
        ..stats_args(&redis.url, &truth.chain_id)
    };
    let s = stats(&window).await;
    let sources = (s.time_sources.header_rpc, s.time_sources.unknown);
    assert_eq!((s.blocks, sources), (3, (2, 1)), "{s:?}");
}

#[tokio::test]
async fn sdk_console_without_rpc_guesses_no_day() {
    let (truth, name, lo, hi) = first_console_capture();
    let log = fixture(name);
    let redis = Redis::start();

    // No `Started node` line in an SDK app's log: the chain id must be given.
    let args = ingest_args(&redis.url, &[&log]);
    let err = feth_etl::ingest::run(&args, std::future::pending())
        .await
        .expect_err("no chain id");
    assert!(matches!(err, IngestError::NoChainId), "{err}");
    assert!(err.to_string().contains("Cosmos SDK app"), "{err}");

    let mut args = ingest_args(&redis.url, &[&log]);
    args.chain_id = Some(truth.chain_id.clone());
    let out = ingest(&args).await;
    let r = &out.report;
    assert_eq!(r.chain_id_from, "--chain-id");
    assert_eq!((r.heights, r.heights_with_commit_time), (Some((lo, hi)), 0));
    let f = &r.files[0];
    assert_eq!(
        f.undated, f.events,
        "every event line of the console log is undated"
    );
    assert!(
        r.block_time_source.contains("no date") && r.block_time_source.contains("--comet-rpc"),
        "{}",
        r.block_time_source
    );
    let rendered = feth_etl::output::ingest(r, feth_etl::output::Format::Table).expect("table");
    assert!(rendered.contains("no day is guessed"), "{rendered}");

    let got = stored(&redis, &truth.chain_id).await;
    let by_height = truth.by_height();
    for (h, v) in &got {
        assert_eq!(v[0], Some(by_height[h].txs.to_string()), "height {h}");
        assert_eq!(
            (&v[3], &v[4]),
            (&None, &None),
            "height {h}: no time without a date"
        );
    }
    let s = stats(&stats_args(&redis.url, &truth.chain_id)).await;
    assert_eq!(
        (s.blocks, s.time_sources.unknown),
        (hi - lo + 1, hi - lo + 1)
    );
    assert_eq!(s.tps, None, "no TPS without block times");
}

#[tokio::test]
async fn sdk_json_without_rpc_uses_its_dated_commit_lines() {
    for cap in &CAPTURES {
        for &(name, format, _) in cap.logs {
            if format == Format::SdkJson {
                json_without_rpc(cap, name, format).await;
            }
        }
    }
}

/// A JSON log ingested with only `--chain-id`: its dated commit lines give
/// the commit times.
async fn json_without_rpc(cap: &Capture, name: &str, format: Format) {
    let truth = Truth::read(cap.truth);
    let seen = parse_fixture(name, format, cap.version);
    let (lo, hi) = contiguous(name, &seen);
    let redis = Redis::start();
    let mut args = ingest_args(&redis.url, &[&fixture(name)]);
    args.chain_id = Some(truth.chain_id.clone());
    let out = ingest(&args).await;
    let r = &out.report;
    assert_eq!(r.heights_with_commit_time, hi - lo + 1);
    assert_eq!(r.files[0].undated, 0);
    assert!(
        r.block_time_source.starts_with("commit log times"),
        "{}",
        r.block_time_source
    );
    let node = &r.files[0].node;
    let z: Vec<(u64, f64)> = redis
        .cmd(&[
            "ZRANGE",
            &format!("feth:{}:node:{node}:commit", truth.chain_id),
            "0",
            "-1",
            "WITHSCORES",
        ])
        .await;
    assert_eq!(z.len() as u64, hi - lo + 1);
    for (h, us) in z {
        #[allow(clippy::cast_possible_truncation)]
        let ns = us as i64 * 1000;
        assert_eq!(Some(ns), seen[&h].commit_ns, "height {h}");
    }
}
