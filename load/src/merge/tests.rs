use super::*;
use crate::plan::{Recipients, Workload, Write};
use crate::report::{BlockRow, Second};
use crate::{Environment, LatencyHists, RunConfig, REPORT_VERSION};
use feth_chain::shard::ShardOf;

/// A report of shard `index`/`count` of 20 keys whose transactions landed
/// `ours` per block from block 10 on, with a latency of `ms` each.
pub(crate) fn run(index: usize, count: usize, ours: &[u64], ms: f64) -> Input {
    let shard = Shard { index, count };
    let range = shard.range(20).unwrap();
    let mut hist = LogHist::default();
    let included: u64 = ours.iter().sum();
    (0..included).for_each(|_| hist.record(ms));
    let blocks: Vec<BlockRow> = ours
        .iter()
        .enumerate()
        .map(|(k, &n)| BlockRow {
            number: 10 + k as u64,
            timestamp: 0,
            txs: 10,
            ours: n,
            time_ns: None,
        })
        .collect();
    let report = LoadReport {
        sent_by_kind: Default::default(),
        version: REPORT_VERSION,
        config: RunConfig {
            endpoints: vec![format!("http://127.0.0.1:{}", 8545 + index)],
            senders: range.len(),
            max_parallelism: 8,
            per_sender: 1,
            schedule: "closed loop".into(),
            count: None,
            duration_secs: Some(5.0),
            recipients: Recipients::Fresh,
            writes: vec![Write {
                workload: Workload::Transfer,
                share: 1.0,
                gas_limit: 21_000,
            }],
            fee: String::new(),
            chain_id: 9000,
            keys: Some(KeyRange {
                first: range.start,
                count: range.len(),
            }),
            shard: Some(ShardOf {
                shard,
                keys_in_file: 20,
            }),
        },
        environment: Environment {
            feth_version: String::new(),
            host: format!("agent{index}"),
            cpus: 2,
            started_unix: 0.0,
            node: String::new(),
            kernel: String::new(),
        },
        totals: Totals {
            signed: included + 2,
            included,
            rejected: 1,
            unresolved: 1,
            rejected_by_reason: [("insufficient funds".to_string(), 1)].into(),
            ..Totals::default()
        },
        chain: ChainFigures {
            first_block: 10,
            last_block: 9 + ours.len() as u64,
            // An agent's own view: must not reach the merged figures.
            seconds: 1.0,
            committed_tps: 999.0,
            ..ChainFigures::default()
        },
        send_rate: 0.0,
        send_seconds: 5.0,
        latency_ms: Latencies {
            to_block_time: hist.latency(),
            to_observed: hist.latency(),
            block_time_resolution_ms: 0.000_001,
        },
        schedule_lag_ms: None,
        agent_limited: None,
        closed_loop_backlog: None,
        rpc_retries: 0,
        agent_cpu_us_per_tx: 0.0,
        slots_busy: 0.0,
        backoffs: 0,
        resends: 0,
        resyncs: 0,
        series: vec![Second::default()],
        blocks,
        windows: Vec::new(),
        txs_per_block: Vec::new(),
        block_clock: String::new(),
        latency_hist: Some(LatencyHists {
            to_block_time: hist.clone(),
            to_observed: hist,
        }),
        dropped: Default::default(),
        refill: None,
        accepted: Some(included + 1),
        reads: None,
    };
    Input {
        name: format!("shard{index}.json"),
        report,
    }
}

/// Blocks 9 (the one before the window) to 13, 2 s apart, 10 txs each.
fn chain() -> Vec<ChainBlock> {
    (9..=13)
        .map(|n| ChainBlock {
            number: n,
            time_ns: 1_000_000_000_000 + 2_000_000_000 * (n - 9) as i64,
            txs: 10,
            gas_used: 210_000,
        })
        .collect()
}

#[test]
fn committed_figures_come_from_the_chain_and_counts_add_up() {
    // Agent 0 lands in blocks 10–12, agent 1 in 10–13: the span is 10–13.
    let inputs = [
        run(0, 2, &[4, 4, 4], 100.0),
        run(1, 2, &[6, 6, 6, 10], 1000.0),
    ];
    let (first, last) = span(&inputs).unwrap();
    assert_eq!((first, last), (10, 13));
    let m = combine(&inputs, &chain(), Some(2), "test clock".into()).unwrap();
    assert_eq!((m.agents, m.missing_shards.len()), (2, 0));
    assert_eq!(
        m.shards,
        vec![
            Some(Shard { index: 0, count: 2 }),
            Some(Shard { index: 1, count: 2 })
        ]
    );
    assert_eq!((m.chain.first_block, m.chain.last_block), (10, 13));
    // 8 s from block 9's header to block 13's, 40 txs in blocks 10–13.
    assert_eq!((m.chain.seconds, m.chain.all_txs), (8.0, 40));
    assert_eq!(m.totals.included, 40);
    assert_eq!(m.chain.committed_tps, 5.0);
    // Blocks 10–13 used 4 × 210,000 gas: 105,000 gas/s over 8 s.
    assert_eq!(
        (m.chain.gas_used, m.chain.gas_per_second),
        (840_000, 105_000.0)
    );
    assert_eq!(m.block_time_ms, 2000.0);
    assert_eq!(
        (m.totals.signed, m.totals.rejected, m.totals.unresolved),
        (44, 2, 2)
    );
    assert_eq!(m.totals.rejected_by_reason["insufficient funds"], 2);
    assert_eq!(m.accepted, 42);
    assert_eq!(
        m.windows,
        vec![
            MergedWindow {
                from: 10,
                to: 11,
                txs: 20,
                ours: 20,
                seconds: 4.0,
                tps: 5.0,
                tps_all: 5.0
            },
            MergedWindow {
                from: 12,
                to: 13,
                txs: 20,
                ours: 20,
                seconds: 4.0,
                tps: 5.0,
                tps_all: 5.0
            },
        ]
    );
    // 12 transactions at 100 ms, 28 at 1000 ms: the merged median is 1000 ms,
    // p90 too; no agent's own percentiles say that of both.
    let l = &m.latency_ms.to_block_time;
    assert!(
        (l.p50 - 1000.0).abs() < 6.0 && (l.max - 1000.0).abs() < 1e-9,
        "{l:?}"
    );
    assert!((m.per_agent[0].latency_ms.to_block_time.p50 - 100.0).abs() < 1.0);
    assert_eq!(m.per_agent[1].included, 28);
    assert_eq!(
        m.per_agent[1].keys,
        KeyRange {
            first: 10,
            count: 10
        }
    );
}

#[test]
fn overlapping_shards_other_chains_and_other_key_files_are_refused() {
    let err = |inputs: &[Input]| check::mergeable(inputs).unwrap_err().to_string();
    let same = [run(0, 2, &[1], 1.0), run(0, 2, &[1], 1.0)];
    let e = err(&same);
    assert!(
        e.contains("shards overlap") && e.contains("shard 0/2, keys 0–9"),
        "{e}"
    );
    // 1/2 (keys 10–19) and 2/3 (keys 13–19) share keys 13–19.
    let e = err(&[run(1, 2, &[1], 1.0), run(2, 3, &[1], 1.0)]);
    assert!(e.contains("shards overlap"), "{e}");
    let mut other = run(1, 2, &[1], 1.0);
    other.report.config.chain_id = 1;
    let e = err(&[run(0, 2, &[1], 1.0), other]);
    assert!(e.contains("different chains"), "{e}");
    let mut other = run(1, 2, &[1], 1.0);
    if let Some(s) = other.report.config.shard.as_mut() {
        s.keys_in_file = 40;
    }
    let e = err(&[run(0, 2, &[1], 1.0), other]);
    assert!(e.contains("different keys files"), "{e}");
    let mut old = run(1, 2, &[1], 1.0);
    old.report.config.keys = None;
    let e = err(&[run(0, 2, &[1], 1.0), old]);
    assert!(e.contains("older feth"), "{e}");
    assert!(check::mergeable(&[]).is_err());
    // Disjoint shards of one file and one chain merge.
    check::mergeable(&[run(0, 3, &[1], 1.0), run(2, 3, &[1], 1.0)]).unwrap();
    assert_eq!(
        check::missing_shards(&[run(0, 3, &[1], 1.0), run(2, 3, &[1], 1.0)]),
        vec![1]
    );
}

#[test]
fn a_block_the_chain_disagrees_on_is_another_chain() {
    let mut chain = chain();
    chain[2].txs = 7;
    let e = combine(&[run(0, 2, &[4, 4], 1.0)], &chain, None, String::new())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("saw 10 transaction(s) in block 11") && e.contains("holds 7"),
        "{e}"
    );
    let mut idle = run(0, 2, &[], 1.0);
    idle.report.totals.included = 0;
    assert!(span(&[idle]).unwrap_err().to_string().contains("no window"));
    let mut long = run(0, 2, &[4, 4], 1.0);
    long.report.dropped.blocks = 3;
    let e = combine(&[long.clone()], &chain, Some(2), String::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("merge without --window-blocks"), "{e}");
    combine(&[long], &self::chain(), None, String::new()).unwrap();
}
