//! The rendered text of [`super::ingest`] and [`super::stats`], pinned byte
//! for byte against `etl/tests/golden/output/` (frozen from the renderer's
//! own output, then checked by hand).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::{ingest, stats, CsvTable, Format};
use crate::detect::Detected;
use crate::ingest::{BadLine, FileReport, IngestReport, RpcSummary};
use crate::source::{Compression, FollowEnd, ReadEnd};
use crate::stats::{compute, CommitTimes, StatsReport};
use crate::store::StoredBlock;
use feth_comet::facts::{BlockFacts, TimeSource};

macro_rules! golden {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/golden/output/",
            $name
        ))
    };
}

fn file(path: &str, node: &str, software: &str) -> FileReport {
    FileReport {
        path: PathBuf::from(path),
        node: node.into(),
        prefixed_nodes: BTreeSet::new(),
        compression: Compression::None,
        detected: Detected {
            software: software.into(),
            how: "Version info line",
            formats: BTreeMap::from([("plain", 100)]),
            dialects: BTreeMap::new(),
        },
        lines: 100,
        events: 40,
        undated: 0,
        other: 55,
        blank: 1,
        malformed: 0,
        foreign: 0,
        first_malformed: None,
        first_foreign: None,
        heights: Some((1, 12)),
        end: ReadEnd::default(),
        follow: None,
    }
}

/// Two files: one plain and clean, one gzip with every kind of trouble.
fn ingest_report() -> IngestReport {
    let clean = file("logs/node0.log", "node0", "CometBFT 0.38.17");
    let mut troubled = file("logs/a,b \"odd\".log.gz", "a,b", "CometBFT 0.38");
    troubled.compression = Compression::Gzip;
    troubled.detected.how = "message shapes";
    troubled.detected.formats = BTreeMap::from([("json", 7), ("plain", 3)]);
    troubled.prefixed_nodes = BTreeSet::from(["val1".to_string(), "val0".to_string()]);
    troubled.malformed = 2;
    troubled.foreign = 1;
    troubled.first_malformed = Some(BadLine {
        line: 17,
        reason: "no timestamp".into(),
        text: "I[2026-11-21|garbage".into(),
    });
    troubled.first_foreign = Some(BadLine {
        line: 3,
        reason: "unknown format".into(),
        text: "2026/11/21 [JOB 1] WAL".into(),
    });
    troubled.heights = None;
    troubled.end = ReadEnd {
        unterminated: true,
        gzip_error: Some("unexpected end of file".into()),
    };
    troubled.follow = Some(FollowEnd {
        rotations: 2,
        truncations: 1,
        unterminated: 0,
    });
    IngestReport {
        run_id: "run-1".into(),
        chain_id: "test-chain".into(),
        chain_id_from: "--chain-id",
        redis: "redis://127.0.0.1:6379/0".into(),
        log_tz: "UTC".into(),
        files: vec![clean, troubled],
        heights_written: 12,
        heights: Some((1, 12)),
        heights_with_commit_time: 12,
        heights_with_abcid_time: 0,
        nodes: BTreeSet::from(["node0".to_string(), "val0".to_string()]),
        rpc: Some(RpcSummary {
            url: "http://127.0.0.1:26657".into(),
            headers: 12,
            results: 11,
            missing: 1,
            first_missing: Some((5, "height 5 is not available".into())),
            retries: 2,
        }),
        block_time_source: "header times (node RPC)".into(),
        elapsed_s: 1.25,
        lines_per_s: 160.0,
        batches: 3,
    }
}

/// The same run without RPC, heights or trouble.
fn bare_ingest_report() -> IngestReport {
    let mut r = ingest_report();
    r.files.truncate(1);
    r.files[0].heights = None;
    r.heights_written = 0;
    r.heights = None;
    r.nodes.clear();
    r.rpc = None;
    r
}

fn block(height: u64, facts: BlockFacts) -> StoredBlock {
    StoredBlock { height, facts }
}

fn facts(txs: Option<u64>, valid: Option<u64>, time: Option<(f64, TimeSource)>) -> BlockFacts {
    #[allow(clippy::cast_possible_truncation)]
    BlockFacts {
        txs,
        valid,
        invalid: txs.zip(valid).map(|(t, v)| t - v),
        time_ns: time.map(|(s, _)| (s * 1e9) as i64),
        time_src: time.map(|(_, src)| src),
    }
}

/// Header times (RPC and abcid), commit times, a gap, unknown counts,
/// empty and big blocks.
fn stats_report() -> StatsReport {
    let rpc = |s| Some((s, TimeSource::Rpc));
    let rows = vec![
        block(9, facts(Some(0), Some(0), rpc(100.0))),
        block(10, facts(Some(12), Some(10), rpc(101.5))),
        block(11, facts(Some(3), None, Some((103.0, TimeSource::Abcid)))),
        block(12, facts(None, None, None)),
        block(13, facts(Some(150), Some(150), None)),
        block(15, facts(Some(7), Some(7), None)),
        block(16, facts(Some(1234), Some(1200), rpc(110.25))),
        block(17, facts(Some(0), Some(0), None)),
        block(18, facts(Some(40), Some(40), None)),
    ];
    let times = [
        None,
        None,
        Some(103_100_000_000),
        Some(104_600_000_000),
        Some(106_000_000_000),
        Some(108_000_000_000),
        None,
        Some(111_000_000_000),
        Some(112_500_000_000),
    ];
    let commits = CommitTimes {
        node: "node0",
        log_tz: Some("Europe/Berlin"),
        times: &times,
    };
    compute("test-chain", &rows, Some(&commits), Some(4))
}

/// No block times at all, automatic window.
fn timeless_stats_report() -> StatsReport {
    let rows = vec![
        block(1, facts(Some(5), Some(5), None)),
        block(2, facts(Some(0), Some(0), None)),
    ];
    compute("c", &rows, None, None)
}

#[test]
fn ingest_table() {
    let text = ingest(&ingest_report(), Format::Table).expect("table");
    assert_eq!(text, golden!("ingest.table.txt"));
    let text = ingest(&bare_ingest_report(), Format::Table).expect("table");
    assert_eq!(text, golden!("ingest-bare.table.txt"));
}

#[test]
fn ingest_csv() {
    let text = ingest(&ingest_report(), Format::Csv).expect("csv");
    assert_eq!(text, golden!("ingest.csv"));
}

#[test]
fn ingest_json() {
    let text = ingest(&ingest_report(), Format::Json).expect("json");
    assert_eq!(text, golden!("ingest.json"));
}

#[test]
fn stats_table() {
    let text = stats(&stats_report(), Format::Table, CsvTable::Blocks, false).expect("table");
    assert_eq!(text, golden!("stats.table.txt"));
    let r = timeless_stats_report();
    let text = stats(&r, Format::Table, CsvTable::Blocks, true).expect("table");
    assert_eq!(text, golden!("stats-timeless.table.txt"));
}

#[test]
fn stats_csv_tables() {
    let r = stats_report();
    for (table, name, golden) in [
        (CsvTable::Blocks, "blocks", golden!("stats.blocks.csv")),
        (CsvTable::Windows, "windows", golden!("stats.windows.csv")),
        (
            CsvTable::Histogram,
            "histogram",
            golden!("stats.histogram.csv"),
        ),
        (CsvTable::Summary, "summary", golden!("stats.summary.csv")),
    ] {
        let text = stats(&r, Format::Csv, table, false).expect("csv");
        assert_eq!(text, golden, "{name}");
    }
}

#[test]
fn stats_json() {
    let r = stats_report();
    let text = stats(&r, Format::Json, CsvTable::Blocks, false).expect("json");
    assert_eq!(text, golden!("stats.json"));
    let text = stats(&r, Format::Json, CsvTable::Windows, true).expect("json");
    assert_eq!(text, golden!("stats-per-block.json"));
}
