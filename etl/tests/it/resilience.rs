//! Redis that is down, refuses writes or runs out of memory part-way, and
//! `--follow` on a log that grows and rotates; all on real node logs
//! (tests/fixtures) and a real redis-server.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use crate::tile;
use feth_etl::ingest::IngestError;
use feth_etl::store::StoreError;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[tokio::test]
async fn unreachable_redis_is_a_clear_error() {
    let port = free_port(); // nothing listens there
    let mut args = ingest_args(
        &format!("redis://127.0.0.1:{port}/0"),
        &[&fixture("cometbft-v0.38.17.plain.log")],
    );
    args.redis_retry = Duration::from_secs(1);
    let started = std::time::Instant::now();
    let err = feth_etl::ingest::run(&args, std::future::pending())
        .await
        .expect_err("no Redis there");
    assert!(
        matches!(err, IngestError::Store(StoreError::Unreachable { .. })),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("cannot reach Redis")
            && msg.contains(&port.to_string())
            && msg.contains("nothing was written"),
        "{msg}"
    );
    assert!(started.elapsed() < Duration::from_secs(15), "bounded retry");
}

#[tokio::test]
async fn refused_writes_leave_nothing_and_a_rerun_is_clean() {
    let redis = Redis::start();
    let log = fixture("tendermint-v0.34.24.plain.log");
    let mut args = ingest_args(&redis.url, &[&log]);
    args.redis_retry = Duration::from_secs(1);
    // Writes need a replica that does not exist: every write is refused.
    let _: () = redis
        .cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"])
        .await;
    let err = feth_etl::ingest::run(&args, std::future::pending())
        .await
        .expect_err("writes refused");
    let msg = err.to_string();
    assert!(
        msg.contains("NOREPLICAS") && msg.contains("re-run the same command"),
        "{msg}"
    );
    let size: u64 = redis.cmd(&["DBSIZE"]).await;
    assert_eq!(size, 0, "nothing half-written");
    let _: () = redis
        .cmd(&["CONFIG", "SET", "min-replicas-to-write", "0"])
        .await;
    ingest(&args).await;
    let s = stats(&stats_args(&redis.url, "test-chain-SN7ibf")).await;
    // The fixture's own executed-block lines give the totals.
    let text = std::fs::read_to_string(&log).expect("log");
    let (mut valid, mut invalid) = (0u64, 0u64);
    for l in text
        .lines()
        .filter(|l| l.contains("executed block") && l.contains("module=state"))
    {
        let num = |k: &str| {
            l.split(k)
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|v| v.parse::<u64>().ok())
                .expect("count")
        };
        valid += num("num_valid_txs=");
        invalid += num("num_invalid_txs=");
    }
    assert_eq!((s.valid, s.invalid), (valid, invalid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_memory_midway_keeps_whole_batches_only() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("val0.log");
    let seed = std::fs::read_to_string(fixture("tendermint-v0.34.24.plain.log")).expect("seed");
    let (_, lines, _) = tile::tile(
        &seed,
        2500,
        &mut std::io::BufWriter::new(std::fs::File::create(&big).expect("create")),
    )
    .expect("tile");
    assert!(lines > 100_000);
    let mut args = ingest_args(&redis.url, &[&big]);
    args.redis_retry = Duration::from_secs(1);
    args.batch_heights = 2000;
    let first = ingest(&args).await;
    assert!(
        first.report.batches > 2,
        "several batches: {}",
        first.report.batches
    );
    let full = redis.snapshot().await;
    let info: String = redis.cmd(&["INFO", "memory"]).await;
    let used = |info: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .expect("used_memory")
    };
    let full_mem = used(&info);
    let _: () = redis.cmd(&["FLUSHALL"]).await;
    let info: String = redis.cmd(&["INFO", "memory"]).await;
    let empty_mem = used(&info);
    let limit = empty_mem + (full_mem - empty_mem) / 2;
    let _: () = redis
        .cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .await;
    let _: () = redis
        .cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()])
        .await;

    let err = feth_etl::ingest::run(&args, std::future::pending())
        .await
        .expect_err("runs out of memory");
    assert!(
        err.to_string().contains("OOM") || err.to_string().contains("EXECABORT"),
        "{err}"
    );
    let partial = redis.snapshot().await;
    let blocks = partial.keys().filter(|k| k.contains(":block:")).count();
    assert!(
        blocks > 0 && blocks < full.keys().filter(|k| k.contains(":block:")).count(),
        "stopped part-way: {blocks}"
    );
    for (k, v) in partial.iter().filter(|(k, _)| k.contains(":block:")) {
        assert_eq!(full.get(k), Some(v), "{k} was written whole");
    }

    let _: () = redis.cmd(&["CONFIG", "SET", "maxmemory", "0"]).await;
    ingest(&args).await;
    assert_eq!(
        redis.snapshot().await,
        full,
        "the re-run completes the store, counting nothing twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_reads_a_growing_rotating_log_like_the_whole_file() {
    let redis = Redis::start();
    let src = fixture("cometbft-v0.38.17.plain.log");
    let text = std::fs::read_to_string(&src).expect("fixture");
    let lines: Vec<&str> = text.lines().collect();

    let mut whole = ingest_args(&redis.url, &[&src]);
    whole.node = Some("val".into());
    let top = ingest(&whole).await.report.heights_written;
    let want = redis.snapshot().await;
    let _: () = redis.cmd(&["FLUSHALL"]).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("val.log");
    std::fs::write(&path, "").expect("create");
    let mut args = ingest_args(&redis.url, &[&path]);
    args.node = Some("val".into());
    args.follow = true;
    args.chain_id = Some("test-chain-nIm1OM".into());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        feth_etl::ingest::run(&args, async {
            let _ = stop_rx.await;
        })
        .await
    });
    let half = lines.len() / 2;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    for (i, l) in lines.iter().enumerate() {
        if i == half {
            // Rotate: the writer finishes the old file, a new one appears.
            std::fs::rename(&path, dir.path().join("val.log.1")).expect("rename");
            f = std::fs::File::create(&path).expect("new file");
        }
        // Write some lines in two pieces, as a busy writer might.
        let (a, b) = l.split_at(l.len() / 2);
        f.write_all(a.as_bytes()).expect("write");
        if i % 17 == 0 {
            f.flush().expect("flush");
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        f.write_all(b.as_bytes()).expect("write");
        f.write_all(b"\n").expect("write");
    }
    f.flush().expect("flush");
    // Wait until every height (all of them after the rotation) is in Redis:
    // then the follower has read the new file. On stop it reads to the end
    // of what is there, so no line is left behind.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let n: u64 = redis
            .cmd(&["ZCARD", "feth:test-chain-nIm1OM:heights"])
            .await;
        let c: u64 = redis
            .cmd(&["ZCARD", "feth:test-chain-nIm1OM:node:val:commit"])
            .await;
        if n >= top && c >= top {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the follower wrote {n} heights and {c} commit times of {top} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop_tx.send(()).expect("the ingest is still running");
    let out = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("stops on request")
        .expect("task")
        .expect("follow ingest");
    let fo = out.report.files[0].follow.clone().expect("follow report");
    assert_eq!(fo.rotations, 1);
    assert_eq!(out.report.files[0].lines as usize, lines.len());
    let mut got = redis.snapshot().await;
    let mut want = want;
    // Metadata differs only in how the file was read.
    got.retain(|k, _| !k.ends_with(":meta"));
    want.retain(|k, _| !k.ends_with(":meta"));
    assert_eq!(got, want);
}
