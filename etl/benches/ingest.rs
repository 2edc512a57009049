//! `cargo bench -p feth-etl`: lines per second, parse-only and end to end
//! into a local Redis, beside standard tools on the same file in the same
//! run (grep, awk, and grep | awk | redis-cli --pipe).
//!
//! The file: the block section of a real CometBFT 0.38 log
//! (tests/fixtures/cometbft-v0.38.17.plain.log, which includes a restart)
//! repeated with heights and times moved on, to FETH_ETL_BENCH_LINES lines
//! (default 2,000,000). Needs redis-server and redis-cli in PATH. Prints
//! figures and ratios; asserts nothing about speed.

#[path = "common/tile.rs"]
mod tile;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use feth_comet::time::Clock;
use feth_etl::ingest::IngestConfig;
use feth_etl::local_redis::LocalRedis;
use feth_etl::parse::{Line, Parser};

struct Row {
    what: String,
    secs: f64,
    lines: u64,
}

fn rate(r: &Row) -> f64 {
    r.lines as f64 / r.secs
}

fn flushall(port: u16) -> Result<(), String> {
    let ok = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "FLUSHALL"])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("redis-cli: {e}"))?;
    ok.success()
        .then_some(())
        .ok_or_else(|| "FLUSHALL failed".into())
}

fn dbsize(port: u16) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string(), "DBSIZE"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Runs a shell pipeline, timing it.
fn shell(what: &str, script: &str, lines: u64) -> Result<Row, String> {
    let t = Instant::now();
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    let secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(Row {
        what: what.to_string(),
        secs,
        lines,
    })
}

fn parse_only(data: &[u8]) -> (Row, u64) {
    let t = Instant::now();
    let mut p = Parser::new();
    let mut clock = Clock::utc();
    let (mut lines, mut events, mut start) = (0u64, 0u64, 0usize);
    for end in memchr::memchr_iter(b'\n', data) {
        lines += 1;
        if let Line::Event(r) = p.parse(&data[start..end]) {
            events += 1;
            std::hint::black_box(r.time.map(|t| clock.unix_nanos(&t).ok()));
        }
        start = end + 1;
    }
    let secs = t.elapsed().as_secs_f64();
    (
        Row {
            what: "feth-etl parse only (lines → events + UTC times, 1 core, in memory)".into(),
            secs,
            lines,
        },
        events,
    )
}

fn main() -> Result<(), String> {
    let want_lines: u64 = std::env::var("FETH_ETL_BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let seed_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cometbft-v0.38.17.plain.log");
    let seed =
        std::fs::read_to_string(&seed_path).map_err(|e| format!("{}: {e}", seed_path.display()))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path: PathBuf = dir.path().join("node0.log");
    let section_lines = {
        let mut sink = std::io::sink();
        tile::tile(&seed, 1, &mut sink)
            .map_err(|e| e.to_string())?
            .1
            .max(1)
    };
    let copies = want_lines.div_ceil(section_lines);
    let (bytes, lines, span) = {
        let mut w =
            std::io::BufWriter::new(std::fs::File::create(&path).map_err(|e| e.to_string())?);
        tile::tile(&seed, copies, &mut w).map_err(|e| e.to_string())?
    };
    drop(std::fs::File::open(&path).map_err(|e| e.to_string())?);
    let data = std::fs::read(&path).map_err(|e| e.to_string())?;
    println!(
        "file: {} lines, {:.1} MiB, {} heights (real CometBFT 0.38.17 log section ×{copies})",
        lines,
        bytes as f64 / 1048576.0,
        span * copies
    );

    let mut rows = Vec::new();
    // Warm the page cache and the parser once.
    let _ = parse_only(&data);
    let (row, events) = parse_only(&data);
    rows.push(row);

    let p = path.display().to_string();
    // Output goes to a pipe: GNU grep stops at the first match when it sees /dev/null.
    rows.push(shell(
        "baseline: grep -c 'finalizing commit of block' (scan only)",
        &format!("grep -c 'finalizing commit of block' '{p}' | cat >/dev/null"),
        lines,
    )?);
    let awk_parse = r#"awk '/finalizing commit of block|executed block|finalized block|committed state/ { for (i = 4; i <= NF; i++) if (index($i, "height=") == 1) { h = substr($i, 8); n++ } } END { print n }'"#;
    rows.push(shell(
        "baseline: awk, block lines → heights (parse only)",
        &format!("{awk_parse} '{p}' | cat >/dev/null"),
        lines,
    )?);

    let redis = LocalRedis::start().map_err(|e| format!("{e:#}"))?;
    let port = redis.port;
    let url = redis.url.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let args = IngestConfig {
        tendermint: vec![path.clone()],
        redis: Some(url),
        node: Some("node0".into()),
        log_tz: Some("UTC".into()),
        redis_retry: std::time::Duration::from_secs(5),
        progress: false,
        ..IngestConfig::default()
    };
    let t = Instant::now();
    let out = rt
        .block_on(feth_etl::ingest::run(&args, std::future::pending()))
        .map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    let keys_ours = dbsize(port);
    rows.push(Row {
        what: format!(
            "feth-etl ingest end to end (file → Redis, {} transactions)",
            out.report.batches
        ),
        secs,
        lines,
    });
    let t = Instant::now();
    rt.block_on(feth_etl::ingest::run(&args, std::future::pending()))
        .map_err(|e| e.to_string())?;
    rows.push(Row {
        what: "feth-etl ingest again (idempotent rewrite of the same keys)".into(),
        secs: t.elapsed().as_secs_f64(),
        lines,
    });
    flushall(port)?;
    // The baseline writes less (only tx counts and a commit stamp per height).
    let awk_pipe = format!(
        r#"grep -E 'finalizing commit of block' '{p}' | awk '{{ h = ""; t = ""; for (i = 4; i <= NF; i++) {{ if (index($i, "height=") == 1) h = substr($i, 8); else if (index($i, "num_txs=") == 1) t = substr($i, 9) }} print "HSET base:block:" h " txs " t " stamp " substr($1, 3, 23); print "ZADD base:heights " h " " h }}' | redis-cli -p {port} --pipe >/dev/null"#
    );
    rows.push(shell(
        "baseline: grep | awk | redis-cli --pipe (txs + stamp per height)",
        &awk_pipe,
        lines,
    )?);
    let keys_base = dbsize(port);
    drop(redis);

    println!("events found by feth-etl: {events}; Redis keys: feth-etl {keys_ours}, baseline {keys_base}\n");
    let w = rows.iter().map(|r| r.what.len()).max().unwrap_or(10);
    println!("{:<w$}  {:>10}  {:>14}", "what", "seconds", "lines/s");
    for r in &rows {
        println!("{:<w$}  {:>10.3}  {:>14.0}", r.what, r.secs, rate(r));
    }
    let find = |prefix: &str| {
        rows.iter()
            .find(|r| r.what.starts_with(prefix))
            .map(rate)
            .unwrap_or(f64::NAN)
    };
    println!("\nratios (same file, same run):");
    println!(
        "  parse only: feth-etl / awk parse            = {:.1}x",
        find("feth-etl parse") / find("baseline: awk")
    );
    println!(
        "  parse only: feth-etl / grep -c scan         = {:.2}x",
        find("feth-etl parse") / find("baseline: grep -c")
    );
    println!(
        "  end to end: feth-etl / grep|awk|redis-cli   = {:.2}x",
        find("feth-etl ingest end") / find("baseline: grep |")
    );
    println!(
        "  feth-etl parse-only / end-to-end            = {:.1}x (how much faster the parser is than the whole ingest)",
        find("feth-etl parse") / find("feth-etl ingest end")
    );
    Ok(())
}
