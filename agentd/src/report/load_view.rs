//! The section of the page for one `feth load` run: what was run where, its
//! figures, its charts and its per-window table; and the overlay of several
//! runs.

use anyhow::Result;

use super::chart::{self, Series};
use super::html::{escape, figure, note, pairs, table};
use super::input::EtlBlock;
use super::windows;
use crate::load::report::{BlockRow, Latency};
use crate::load::LoadReport;
use crate::units;

/// Per-second series of a run: committed (by block time), sent, and the
/// offered rate when the schedule had one.
pub fn rate_series(r: &LoadReport) -> Vec<Series> {
    let pick = |name: &str, f: &dyn Fn(&crate::load::report::Second) -> Option<f64>| Series {
        name: name.to_string(),
        points: r
            .series
            .iter()
            .filter_map(|s| f(s).map(|v| (s.second as f64, v)))
            .collect(),
    };
    let mut out = vec![
        pick("committed", &|s| Some(s.included as f64)),
        pick("sent", &|s| Some(s.sent as f64)),
    ];
    let offered = pick("offered", &|s| s.offered);
    if !offered.points.is_empty() {
        out.push(offered);
    }
    out
}

/// Seconds at which the offered rate changed (ramp steps).
pub fn step_marks(r: &LoadReport) -> Vec<f64> {
    r.series
        .windows(2)
        .filter(|w| {
            w[0].offered.is_some() && w[1].offered.is_some() && w[0].offered != w[1].offered
        })
        .map(|w| w[1].second as f64)
        .collect()
}

/// Block time per height, seconds: each block's header time minus its
/// predecessor's (the first against the window's start), in ns precision
/// when the run read CometBFT header times.
pub fn block_times(r: &LoadReport) -> Vec<(f64, f64)> {
    let mut prev = Some(window_start(r)).filter(|t| *t > 0.0);
    let mut out = Vec::new();
    for b in &r.blocks {
        if let Some(p) = prev {
            out.push((b.number as f64, b.time() - p));
        }
        prev = Some(b.time());
    }
    out
}

/// When the run's window opened, seconds since the epoch: the last block's
/// header time less the window's length (ns-precise with CometBFT header
/// times), else the recorded whole-second start.
fn window_start(r: &LoadReport) -> f64 {
    match r
        .blocks
        .iter()
        .rev()
        .find(|b| b.number == r.chain.last_block)
    {
        Some(last) if last.time_ns.is_some() => last.time() - r.chain.seconds,
        _ => r.chain.start_time as f64,
    }
}

/// Whether the run's blocks carry CometBFT header times.
fn ns_clock(r: &LoadReport) -> bool {
    r.blocks.iter().any(|b| b.time_ns.is_some())
}

/// Latency percentiles (p50, p90, p99) per second of inclusion.
pub fn latency_series(r: &LoadReport) -> Vec<Series> {
    let pick = |name: &str, f: fn(&Latency) -> f64| Series {
        name: name.to_string(),
        points: r
            .series
            .iter()
            .filter_map(|s| s.latency_ms.as_ref().map(|l| (s.second as f64, f(l))))
            .collect(),
    };
    vec![
        pick("p50", |l| l.p50),
        pick("p90", |l| l.p90),
        pick("p99", |l| l.p99),
    ]
}

/// Valid and invalid per height over the run's blocks, from the etl.
pub fn validity_series(r: &LoadReport, etl: &[EtlBlock]) -> Vec<Series> {
    let in_run = |b: &&EtlBlock| (r.chain.first_block..=r.chain.last_block).contains(&b.height);
    let pick = |name: &str, f: fn(&EtlBlock) -> Option<u64>| Series {
        name: name.to_string(),
        points: etl
            .iter()
            .filter(in_run)
            .filter_map(|b| f(b).map(|v| (b.height as f64, v as f64)))
            .collect(),
    };
    vec![pick("valid", |b| b.valid), pick("invalid", |b| b.invalid)]
}

fn parameters(r: &LoadReport) -> String {
    let c = &r.config;
    let e = &r.environment;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "unbounded".into());
    pairs(&[
        ("schedule", c.schedule.clone()),
        ("workload", crate::load::plan::describe_writes(&c.writes)),
        ("senders", c.senders.to_string()),
        ("recipients", format!("{:?}", c.recipients).to_lowercase()),
        ("count per account", opt(c.count.map(|n| n.to_string()))),
        ("duration", opt(c.duration_secs.map(|d| format!("{d} s")))),
        ("requests in flight", c.max_parallelism.to_string()),
        (
            "transactions in flight per sender",
            c.per_sender.to_string(),
        ),
        ("fee", c.fee.clone()),
        ("chain id", c.chain_id.to_string()),
        ("endpoints", c.endpoints.join(", ")),
        ("node (version, patches)", or_unknown(&e.node)),
        ("feth", e.feth_version.clone()),
        ("agent host", format!("{} ({} CPUs)", e.host, e.cpus)),
        ("agent kernel", or_unknown(&e.kernel)),
        ("started (unix)", format!("{:.0}", e.started_unix)),
        ("file format version", r.version.to_string()),
    ])
}

fn or_unknown(s: &str) -> String {
    if s.is_empty() {
        "not recorded".into()
    } else {
        s.to_string()
    }
}

fn figures(r: &LoadReport) -> String {
    let (c, t) = (&r.chain, &r.totals);
    let l = &r.latency_ms.to_block_time;
    pairs(&[
        (
            "committed TPS (ours)",
            format!(
                "{:.1} over blocks {}..{} ({:.0} s)",
                c.committed_tps, c.first_block, c.last_block, c.seconds
            ),
        ),
        ("committed TPS (all)", format!("{:.1}", c.committed_tps_all)),
        (
            "committed gas/s",
            format!("{} ({} gas, all transactions)", units::mgas(c.gas_per_second), c.gas_used),
        ),
        (
            "send rate",
            format!("{:.1} tx/s over {:.1} s", r.send_rate, r.send_seconds),
        ),
        (
            "latency to commit",
            format!(
                "p50 {:.0} p90 {:.0} p99 {:.0} max {:.0} ms (intended send → commit{})",
                l.p50,
                l.p90,
                l.p99,
                l.max,
                if r.latency_ms.block_time_resolution_ms < 1000.0 {
                    ": the next CometBFT header's time"
                } else {
                    ": web3 timestamps, each a lower bound by up to 1 s"
                }
            ),
        ),
        (
            "transactions",
            format!(
                "{} signed = {} included + {} rejected + {} unresolved",
                t.signed, t.included, t.rejected, t.unresolved
            ),
        ),
        (
            "recovery",
            format!(
                "{} back-offs, {} resends, {} fee resends (re-signed above a risen base fee), {} nonce resyncs",
                r.backoffs, r.resends, t.fee_resends, r.resyncs
            ),
        ),
    ])
}

/// The section of run `index` (its charts' ids start with `run{index}-`).
pub fn section(
    index: usize,
    name: &str,
    r: &LoadReport,
    etl: Option<&[EtlBlock]>,
) -> Result<String> {
    let id = |chart: &str| format!("run{index}-{chart}");
    let mut out = format!(
        "<section class=\"run\" id=\"run{index}\"><h2>Run {}: {}</h2>\n",
        index + 1,
        escape(name)
    );
    out.push_str("<h3>What was run, where</h3>\n");
    out.push_str(&parameters(r));
    out.push_str("<h3>Figures</h3>\n");
    if let Some(limited) = &r.agent_limited {
        out.push_str(&note(&format!(
            "Warning: the agent, not the chain, limited the offered rate, so the committed TPS is about the agent, not the chain: {}.",
            limited.reason
        )));
    }
    if let Some(b) = r.closed_loop_backlog.as_ref().filter(|b| b.growing) {
        out.push_str(&note(&format!(
            "Warning: the node accepted faster than it committed, so the committed TPS is a drain, not a steady state: the backlog (accepted − committed) grew from {} to {} over the second half of sending (+{:.1} tx/s while {:.1} tx/s were committed).",
            b.mid, b.end, b.growth_per_second, b.committed_per_second
        )));
    }
    out.push_str(&figures(r));
    let tps = chart::lines(
        "Committed TPS and send rate per second",
        ("seconds since the run began", "tx/s"),
        &rate_series(r),
        &step_marks(r),
    )?;
    out.push_str(&figure(&id("tps"), &tps, "committed: our transactions by block time; sent: first submissions; grey lines: steps of the offered rate"));
    out.push_str(&block_charts(index, r)?);
    let latency = chart::lines(
        "Latency to the block seen, per second of inclusion",
        ("seconds since the run began", "ms"),
        &latency_series(r),
        &[],
    )?;
    out.push_str(&figure(
        &id("latency"),
        &latency,
        "intended send → block seen by the agent (100 ms polling); the figures above are to commit",
    ));
    match etl {
        Some(etl) => {
            let v = chart::lines("Valid and invalid transactions per block (etl)", ("height", "transactions"), &validity_series(r, etl), &[])?;
            out.push_str(&figure(&id("validity"), &v, "from `feth etl stats --json --per-block`"));
        }
        None => out.push_str(&note("Valid versus invalid per block: give the etl's figures with --etl (feth etl stats --json --per-block).")),
    }
    out.push_str(&reads_table(r));
    out.push_str(&rejections(index, r)?);
    out.push_str("</section>\n");
    Ok(out)
}

/// The read traffic beside the writes (`--reads`), one row per method.
fn reads_table(r: &LoadReport) -> String {
    let Some(reads) = &r.reads else {
        return String::new();
    };
    let rows: Vec<Vec<String>> = reads
        .methods
        .iter()
        .map(|(name, m)| {
            vec![
                name.clone(),
                format!("{:.1}", m.answered_per_second),
                format!("{:.1} / {:.1}", m.latency_ms.p50, m.latency_ms.p99),
                m.ok.to_string(),
                m.wrong.to_string(),
                m.failed.to_string(),
                m.skipped.to_string(),
            ]
        })
        .collect();
    format!(
        "<h3>Reads beside the writes ({:.0}/s offered over {:.1} s, each answer checked)</h3>\n{}",
        reads.rate,
        reads.seconds,
        table(
            "reads",
            &[
                "method",
                "answered/s",
                "latency p50 / p99 ms",
                "ok",
                "wrong",
                "failed",
                "skipped"
            ],
            &rows,
        )
    )
}

fn block_charts(index: usize, r: &LoadReport) -> Result<String> {
    if r.blocks.is_empty() {
        return Ok(note("This run's file holds no blocks (format version 1, or nothing committed): no block-time, transactions-per-block or window figures."));
    }
    let mut out = String::new();
    let bt = Series {
        name: "block time".into(),
        points: block_times(r),
    };
    let chart = chart::lines("Block time per height", ("height", "s"), &[bt], &[])?;
    out.push_str(&figure(
        &format!("run{index}-block-time"),
        &chart,
        if ns_clock(r) {
            "header time minus the previous block's (CometBFT header times, ns)"
        } else {
            "header time minus the previous block's (web3 timestamps: 1 s resolution)"
        },
    ));
    let txs: Vec<u64> = r.blocks.iter().map(|b| b.txs).collect();
    let width = chart::bin_width(txs.iter().copied().max().unwrap_or(0));
    let hist = chart::histogram(
        "Transactions per block",
        "transactions in the block",
        &txs,
        width,
    )?;
    out.push_str(&figure(
        &format!("run{index}-txs-per-block"),
        &hist,
        &format!("blocks by their transaction count, bins of {width}"),
    ));
    out.push_str(&window_table(&r.blocks, window_start(r)));
    Ok(out)
}

fn window_table(blocks: &[BlockRow], start: f64) -> String {
    let size = windows::default_size(blocks.len());
    let start = if start > 0.0 {
        start
    } else {
        blocks.first().map_or(0.0, BlockRow::time)
    };
    let rows: Vec<Vec<String>> = windows::windows(blocks, size, start)
        .iter()
        .map(|w| {
            vec![
                format!("{}–{}", w.from, w.to),
                w.txs.to_string(),
                w.ours.to_string(),
                format!("{:.3}", w.seconds),
                format!("{:.1}", w.tps),
                format!("{:.1}", w.cumulative_tps),
            ]
        })
        .collect();
    format!(
        "<h3>Per window of {size} blocks</h3>\n{}",
        table(
            "windows",
            &[
                "heights",
                "transactions",
                "ours",
                "seconds",
                "TPS",
                "cumulative TPS"
            ],
            &rows
        )
    )
}

fn rejections(index: usize, r: &LoadReport) -> Result<String> {
    let by = &r.totals.rejected_by_reason;
    if by.is_empty() {
        return Ok(note("No transaction was rejected."));
    }
    let labels: Vec<String> = (1..=by.len()).map(|i| format!("#{i}")).collect();
    let values: Vec<f64> = by.values().map(|&n| n as f64).collect();
    let chart = chart::bars("Rejections by reason", "transactions", &labels, &values)?;
    let rows: Vec<Vec<String>> = by
        .iter()
        .enumerate()
        .map(|(i, (reason, n))| vec![format!("#{}", i + 1), reason.clone(), n.to_string()])
        .collect();
    Ok(format!(
        "{}{}",
        figure(
            &format!("run{index}-rejections"),
            &chart,
            "rejections by reason (numbered as in the table)"
        ),
        table("rejections", &["", "reason", "transactions"], &rows)
    ))
}

/// Several runs overlaid: their committed TPS per second, and their figures
/// side by side.
pub fn overlay(runs: &[(String, &LoadReport)]) -> Result<String> {
    let series: Vec<Series> = runs
        .iter()
        .enumerate()
        .map(|(i, (_, r))| Series {
            name: format!("run {}", i + 1),
            points: r
                .series
                .iter()
                .map(|s| (s.second as f64, s.included as f64))
                .collect(),
        })
        .collect();
    let chart = chart::lines(
        "Committed TPS per second, runs overlaid",
        ("seconds since the run began", "tx/s"),
        &series,
        &[],
    )?;
    let rows: Vec<Vec<String>> = runs
        .iter()
        .enumerate()
        .map(|(i, (name, r))| {
            vec![
                format!("run {}", i + 1),
                name.clone(),
                r.config.schedule.clone(),
                format!("{:.1}", r.chain.committed_tps),
                format!("{:.1}", r.send_rate),
                format!("{:.0}", r.latency_ms.to_block_time.p50),
                format!("{:.0}", r.latency_ms.to_block_time.p99),
                r.totals.rejected.to_string(),
            ]
        })
        .collect();
    Ok(format!(
        "<section id=\"overlay\"><h2>Runs side by side</h2>\n{}{}</section>\n",
        figure(
            "overlay-tps",
            &chart,
            "committed TPS of every run, by block time"
        ),
        table(
            "runs",
            &[
                "",
                "file",
                "schedule",
                "committed TPS",
                "send rate",
                "latency to commit p50 ms",
                "latency to commit p99 ms",
                "rejected"
            ],
            &rows
        )
    ))
}
