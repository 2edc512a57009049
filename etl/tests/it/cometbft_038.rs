//! End to end with a real CometBFT 0.38 node (kvstore app) and a real Redis:
//! the ingested figures are checked height by height against the node's RPC.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use crate::common::*;
use feth_etl::output::{CsvTable, Format};
use feth_etl::stats::IntervalSource;

/// Heights and first log times (Unix ns, local zone) of a plain log's
/// `finalizing commit of block` lines, read with plain string operations.
fn commit_lines(log: &Path) -> BTreeMap<u64, i64> {
    let text = std::fs::read_to_string(log).expect("log");
    let mut out = BTreeMap::new();
    for l in text
        .lines()
        .filter(|l| l.contains("finalizing commit of block"))
    {
        let stamp = &l[2..25]; // 2026-11-21|20:31:30.463
        let dt: jiff::civil::DateTime = stamp.replace('|', "T").parse().expect("stamp");
        let t = dt
            .to_zoned(jiff::tz::TimeZone::system())
            .expect("zone")
            .timestamp()
            .as_nanosecond();
        let h: u64 = l
            .split("height=")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|h| h.parse().ok())
            .expect("height");
        out.entry(h).or_insert(i64::try_from(t).expect("fits"));
    }
    out
}

/// Height → (txs, valid, invalid, time_ns) as stored.
async fn stored(
    redis: &Redis,
    chain: &str,
) -> BTreeMap<u64, (Option<u64>, Option<u64>, Option<u64>, Option<i64>)> {
    let heights: Vec<u64> = redis
        .cmd(&["ZRANGE", &format!("feth:{chain}:heights"), "0", "-1"])
        .await;
    let mut out = BTreeMap::new();
    for h in heights {
        let v: (Option<u64>, Option<u64>, Option<u64>, Option<i64>) = redis
            .cmd(&[
                "HMGET",
                &format!("feth:{chain}:block:{h}"),
                "txs",
                "valid",
                "invalid",
                "time_ns",
            ])
            .await;
        out.insert(h, v);
    }
    out
}

async fn commit_zset(redis: &Redis, chain: &str, node: &str) -> BTreeMap<u64, i64> {
    let z: Vec<(u64, f64)> = redis
        .cmd(&[
            "ZRANGE",
            &format!("feth:{chain}:node:{node}:commit"),
            "0",
            "-1",
            "WITHSCORES",
        ])
        .await;
    #[allow(clippy::cast_possible_truncation)]
    z.into_iter().map(|(h, us)| (h, us as i64 * 1000)).collect()
}

fn copy_lines(src: &Path, dst: &Path, range: std::ops::Range<usize>) {
    let text = std::fs::read_to_string(src).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    let end = range.end.min(lines.len());
    let mut f = std::fs::File::create(dst).expect("create");
    for l in &lines[range.start..end] {
        writeln!(f, "{l}").expect("write");
    }
}

/// TPS and block times from the node's own header times over `from..=to`.
fn truth_tps(truth: &BTreeMap<u64, (u64, u64, u64, i64)>, from: u64, to: u64) -> (f64, Vec<f64>) {
    let txs: u64 = (from + 1..=to).map(|h| truth[&h].0).sum();
    let secs = (truth[&to].3 - truth[&from].3) as f64 / 1e9;
    let times = (from + 1..=to)
        .map(|h| (truth[&h].3 - truth[&(h - 1)].3) as f64 / 1e9)
        .collect();
    (txs as f64 / secs, times)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_log_with_restart_and_block_sync_agrees_with_rpc() {
    let redis = Redis::start();
    let mut leader = Node::init(&cometbft(), LogFormat::Plain, "kvstore");
    leader.start(None).await;
    leader.send_txs("a", 30, 0).await;
    leader.wait_height(8).await;
    // A restart: the in-memory kvstore makes the node replay every block
    // (`executed block` from module=consensus) into the same log.
    leader.stop();
    leader.start(None).await;
    leader.send_txs("b", 20, 0).await;
    let h = leader.height().await;
    leader.wait_height(h + 2).await;
    // A follower block-syncs from height 1, then follows by consensus.
    let mut follower = Node::follower_of(&leader, LogFormat::Plain);
    let peer = format!("{}@127.0.0.1:{}", leader.node_id(), leader.p2p_port);
    follower.start(Some(&peer)).await;
    let h = leader.height().await;
    follower.wait_height(h + 3).await;
    // Under load block sync alone can reach that height: wait (bounded) for
    // the follower's first commit by consensus as well.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while commit_lines(&follower.log).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the follower committed no block by consensus within 30 s; log: {}",
            follower.log.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    follower.stop();
    leader.stop(); // a settled log: no height half-written

    let dir = tempfile::tempdir().expect("tempdir");
    let leader_log = dir.path().join("leader.log");
    std::fs::copy(&leader.log, &leader_log).expect("copy log");
    leader.start(None).await; // for RPC truth
    let follower_log = dir.path().join("follower.log");
    std::fs::copy(&follower.log, &follower_log).expect("copy log");
    let chain = leader.chain_id().await;

    // 1. The node log alone.
    let args = ingest_args(&redis.url, &[&leader_log]);
    let out = ingest(&args).await;
    let r = &out.report;
    assert_eq!(
        r.chain_id, chain,
        "chain id read from the `Started node` line"
    );
    let f = &r.files[0];
    assert_eq!(
        (f.malformed, f.foreign),
        (0, 0),
        "a real log parses cleanly: {f:?}"
    );
    assert!(
        f.detected.software.starts_with("CometBFT 0.38"),
        "{:?}",
        f.detected
    );
    let top = r.heights.expect("heights").1;
    let truth = leader.truth(top).await;
    let got = stored(&redis, &chain).await;
    assert_eq!(
        got.keys().copied().collect::<Vec<_>>(),
        (1..=top).collect::<Vec<_>>()
    );
    for (h, (txs, valid, invalid, time)) in &got {
        assert_eq!(*txs, Some(truth[h].0), "txs at height {h}");
        assert_eq!(
            (*valid, *invalid, *time),
            (None, None, None),
            "0.38 logs alone know no split/header time (height {h})"
        );
    }
    assert!(
        truth.values().map(|t| t.0).sum::<u64>() >= 50,
        "the txs made it into blocks"
    );
    // Commit times are the first `finalizing commit` line of each height.
    let node = "leader";
    assert_eq!(
        commit_zset(&redis, &chain, node).await,
        commit_lines(&leader_log)
            .into_iter()
            .map(|(h, t)| (h, t / 1000 * 1000))
            .filter(|(h, _)| *h <= top)
            .collect()
    );
    let s = stats(&stats_args(&redis.url, &chain)).await;
    assert_eq!(
        (s.from, s.to, s.blocks, s.missing_heights),
        (1, top, top, 0)
    );
    assert_eq!(s.txs, truth.values().map(|t| t.0).sum::<u64>());
    assert_eq!(
        s.empty_blocks,
        truth.values().filter(|t| t.0 == 0).count() as u64
    );
    assert_eq!(s.results_unknown_blocks, top);
    assert_eq!(s.time_sources.commit_log, top - 1);
    assert_eq!(s.time_sources.commit_node.as_deref(), Some(node));
    let before = redis.snapshot().await;

    // 2. The same log again: nothing changes.
    ingest(&args).await;
    assert_eq!(
        redis.snapshot().await,
        before,
        "second ingest of the same log"
    );

    // 3. Overlapping pieces and a gzip copy give the same store.
    // Piece b starts at the restart's `Started node` line (each piece names
    // its chain); piece a runs from the start to half-way through b.
    let text = std::fs::read_to_string(&leader_log).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    let n_lines = lines.len();
    let restart = lines
        .iter()
        .rposition(|l| l.contains("Started node"))
        .expect("the restart's `Started node` line");
    assert!(restart > 0, "the log holds both starts");
    let (a, b) = (
        dir.path().join("leader.part-a"),
        dir.path().join("leader.part-b"),
    );
    copy_lines(&leader_log, &a, 0..(restart + n_lines) / 2);
    copy_lines(&leader_log, &b, restart..n_lines);
    let gz = dir.path().join("leader.log.1.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).expect("gz"),
        flate2::Compression::default(),
    );
    enc.write_all(&std::fs::read(&leader_log).expect("log"))
        .expect("compress");
    enc.finish().expect("compress");
    let _: () = redis.cmd(&["FLUSHALL"]).await;
    for piece in [&b, &gz, &a] {
        let mut args = ingest_args(&redis.url, &[piece]);
        args.node = Some(node.into());
        ingest(&args).await;
    }
    assert_eq!(
        redis.snapshot().await,
        before,
        "overlapping pieces + gzip copy"
    );

    // 4. The block-synced follower: chain facts unchanged, kept apart by name.
    let follower_commits = commit_lines(&follower_log);
    let first_consensus = *follower_commits
        .keys()
        .next()
        .expect("the follower committed by consensus after syncing");
    assert!(
        first_consensus > 5,
        "the follower block-synced the first heights"
    );
    let out = ingest(&ingest_args(&redis.url, &[&follower_log])).await;
    let f = &out.report.files[0];
    assert_eq!((f.malformed, f.foreign), (0, 0), "{f:?}");
    let after = redis.snapshot().await;
    for (k, v) in &before {
        if k.contains(":block:") {
            assert_eq!(
                after.get(k),
                Some(v),
                "block-synced heights leave {k} alone"
            );
        }
    }
    let fz = commit_zset(&redis, &chain, "follower").await;
    assert_eq!(
        fz.keys().copied().collect::<BTreeSet<_>>(),
        follower_commits.keys().copied().collect::<BTreeSet<_>>()
    );
    let fh: Vec<u64> = redis
        .cmd(&[
            "ZRANGE",
            &format!("feth:{chain}:node:follower:heights"),
            "0",
            "-1",
        ])
        .await;
    assert!(
        fh.contains(&1) && !fz.contains_key(&1),
        "synced height 1 is applied but has no commit time"
    );
    let s2 = stats(&stats_args(&redis.url, &chain)).await;
    assert_eq!(
        s2.time_sources.commit_node.as_deref(),
        Some(node),
        "the node with most commit times is used"
    );
    let mut sa = stats_args(&redis.url, &chain);
    sa.node = Some("follower".into());
    sa.to = Some(top);
    let s3 = stats(&sa).await;
    assert_eq!(
        s3.txs, s.txs,
        "same chain facts whichever node times the blocks"
    );

    // 5. With --rpc: header times and valid/invalid, equal to the node's.
    let _: () = redis.cmd(&["FLUSHALL"]).await;
    let mut args = ingest_args(&redis.url, &[&leader_log]);
    args.comet_rpc = Some(leader.rpc_url());
    let out = ingest(&args).await;
    let rpc = out.report.rpc.as_ref().expect("rpc summary");
    assert_eq!((rpc.headers, rpc.results, rpc.missing), (top, top, 0));
    for (h, (txs, valid, invalid, time)) in stored(&redis, &chain).await {
        let t = truth[&h];
        assert_eq!(
            (txs, valid, invalid, time),
            (Some(t.0), Some(t.1), Some(t.2), Some(t.3)),
            "height {h}"
        );
    }
    let s = stats(&stats_args(&redis.url, &chain)).await;
    assert_eq!(s.time_sources.header_rpc, top - 1);
    let (tps, mut times) = truth_tps(&truth, 1, top);
    assert!(
        (s.tps.expect("tps") - tps).abs() < 1e-9 * tps.max(1.0),
        "{:?} vs {tps}",
        s.tps
    );
    times.sort_by(f64::total_cmp);
    let bt = s.block_time.expect("block times");
    assert!((bt.max - times[times.len() - 1]).abs() < 1e-9);
    assert!((bt.p50 - times[times.len().div_ceil(2) - 1]).abs() < 1e-9);
    assert!(s
        .per_block
        .iter()
        .skip(1)
        .all(|b| b.block_time_source == Some(IntervalSource::HeaderRpc)));
    let snap = redis.snapshot().await;
    ingest(&args).await;
    assert_eq!(redis.snapshot().await, snap, "second ingest with --rpc");

    // 6. Output: the original feth CSV, windows CSV, JSON, table.
    let csv = feth_etl::output::stats(&s, Format::Csv, CsvTable::Blocks, false).expect("csv");
    let mut rows = csv.lines();
    assert_eq!(rows.next(), Some("height,txs,valid_txs,block_time,tps"));
    let rows: Vec<Vec<&str>> = rows.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len() as u64, top);
    for r in &rows {
        let h: u64 = r[0].parse().expect("height");
        assert_eq!(r[1].parse::<u64>().expect("txs"), truth[&h].0);
        assert_eq!(r[2].parse::<u64>().expect("valid"), truth[&h].1);
        if h > 1 {
            let bt: f64 = r[3].parse().expect("block time");
            assert!(
                (bt - (truth[&h].3 - truth[&(h - 1)].3) as f64 / 1e9).abs() < 0.0006,
                "height {h}"
            );
        }
    }
    let json = feth_etl::output::stats(&s, Format::Json, CsvTable::Blocks, true).expect("json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(v["txs"].as_u64(), Some(s.txs));
    assert_eq!(v["per_block"].as_array().map(Vec::len), Some(top as usize));
    let table = feth_etl::output::stats(&s, Format::Table, CsvTable::Blocks, false).expect("table");
    assert!(
        table.contains("header times (node RPC)") && table.contains("cumulative tps"),
        "{table}"
    );
    let windows = feth_etl::output::stats(&s, Format::Csv, CsvTable::Windows, false).expect("csv");
    let wsum: u64 = windows
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .nth(3)
                .and_then(|t| t.parse::<u64>().ok())
                .expect("txs")
        })
        .sum();
    assert_eq!(wsum, s.txs, "windows add up");
    leader.stop();
}

/// Writes abcid's per-block line for each block with the real
/// tracing-subscriber formatter, configured as abcid configures it.
fn write_abcid_log(path: &Path, truth: &BTreeMap<u64, (u64, u64, u64, i64)>, json: bool) {
    let file = std::sync::Mutex::new(std::fs::File::create(path).expect("create"));
    let builder = tracing_subscriber::fmt().with_ansi(false).with_writer(file);
    let emit = || {
        for (h, (txs, valid, invalid, t)) in truth {
            let ts = jiff::Timestamp::from_nanosecond(i128::from(*t)).expect("time");
            tracing::info!(
                target: "abcid::block",
                height = *h,
                txs = *txs,
                valid = *valid,
                invalid = *invalid,
                finalize_ms = %"1.000",
                commit_ms = %"0.500",
                block_time = %format!("{ts:.9}"),
                app_hash = %format!("0x{}", "ab".repeat(32)),
                "block committed"
            );
            tracing::info!(target: "abcid::rpc", "unrelated line");
        }
    };
    if json {
        tracing::subscriber::with_default(builder.json().flatten_event(false).finish(), emit);
    } else {
        tracing::subscriber::with_default(builder.finish(), emit);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_log_with_abcid_lines_gives_header_times_and_results() {
    let redis = Redis::start();
    let mut node = Node::init(&cometbft(), LogFormat::Json, "kvstore");
    node.start(None).await;
    node.send_txs("j", 25, 0).await;
    node.wait_height(10).await;
    node.stop();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("val0.json.log");
    std::fs::copy(&node.log, &log).expect("copy");
    node.start(None).await; // for RPC truth
    let chain = node.chain_id().await;

    // Without abcid: txs only, commit log times (JSON stamps are UTC).
    let mut args = ingest_args(&redis.url, &[&log]);
    args.log_tz = Some("Asia/Tokyo".into()); // must not matter for JSON logs
    let out = ingest(&args).await;
    let f = &out.report.files[0];
    assert_eq!((f.malformed, f.foreign), (0, 0), "{f:?}");
    assert_eq!(
        f.detected.formats.keys().copied().collect::<Vec<_>>(),
        vec!["json"]
    );
    let top = out.report.heights.expect("heights").1;
    let truth = node.truth(top).await;
    let s = stats(&stats_args(&redis.url, &chain)).await;
    assert_eq!(s.txs, truth.values().map(|t| t.0).sum::<u64>());
    // Commit log times lag header times by less than a block (UTC either way).
    let commits = commit_zset(&redis, &chain, "val0").await;
    for (h, t) in &commits {
        let lag = (t - truth[h].3) as f64 / 1e9;
        assert!(
            (0.0..5.0).contains(&lag),
            "height {h}: commit log time {lag} s after header time"
        );
    }

    // With abcid lines (both formats): header times and results, no RPC.
    for json in [false, true] {
        let _: () = redis.cmd(&["FLUSHALL"]).await;
        let abcid = dir
            .path()
            .join(if json { "abcid.json.log" } else { "abcid.log" });
        write_abcid_log(&abcid, &truth, json);
        let mut args = ingest_args(&redis.url, &[&log]);
        args.abcid = vec![abcid.clone()];
        let out = ingest(&args).await;
        assert_eq!(out.report.heights_with_abcid_time, top);
        let abcid_file = out
            .report
            .files
            .iter()
            .find(|f| f.path == abcid)
            .expect("abcid file report");
        assert_eq!(
            (abcid_file.malformed, abcid_file.foreign, abcid_file.events),
            (0, 0, top),
            "{abcid_file:?}"
        );
        for (h, (txs, valid, invalid, time)) in stored(&redis, &chain).await {
            let t = truth[&h];
            assert_eq!(
                (txs, valid, invalid, time),
                (Some(t.0), Some(t.1), Some(t.2), Some(t.3)),
                "height {h} (json={json})"
            );
        }
        let s = stats(&stats_args(&redis.url, &chain)).await;
        assert_eq!(s.time_sources.header_abcid, top - 1);
        let (tps, _) = truth_tps(&truth, 1, top);
        assert!((s.tps.expect("tps") - tps).abs() < 1e-9 * tps.max(1.0));
    }
    node.stop();
}
