//! The summary `feth load` prints of its report.

use std::io::Write;

use super::report::ReadsReport;
use super::report::TxsPerBlock;
use super::LoadReport;
use crate::units;

/// Writes `r`'s summary, as `feth load` prints it.
pub fn write_summary(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    let t = &r.totals;
    let c = &r.chain;
    if let (Some(s), Some(k)) = (&r.config.shard, &r.config.keys) {
        writeln!(
            out,
            "shard           {:>10}  {k} of the keys file's {}",
            s.shard.to_string(),
            s.keys_in_file
        )?;
    }
    writeln!(
        out,
        "committed TPS   {:>10.1}  ours, read from blocks {}..{} over {:.0} s",
        c.committed_tps, c.first_block, c.last_block, c.seconds
    )?;
    writeln!(
        out,
        "                {:>10.1}  all transactions in those blocks",
        c.committed_tps_all
    )?;
    writeln!(
        out,
        "committed gas/s {:>10}  all transactions' gas in those blocks ({} gas)",
        units::mgas(c.gas_per_second),
        c.gas_used
    )?;
    if let Some(limited) = &r.agent_limited {
        writeln!(
            out,
            "WARNING         the agent, not the chain, limited the offered rate: the committed TPS above is about the agent, not the chain"
        )?;
        writeln!(out, "                {}", limited.reason)?;
    }
    if let Some(b) = r.closed_loop_backlog.as_ref().filter(|b| b.growing) {
        writeln!(
            out,
            "WARNING         the node accepted faster than it committed: the backlog (accepted − committed) grew from {} to {} over the second half of sending (+{:.1} tx/s while {:.1} tx/s committed); the committed TPS above is a drain, not a steady state",
            b.mid, b.end, b.growth_per_second, b.committed_per_second
        )?;
        writeln!(
            out,
            "                lower the load (fewer senders, or an open loop with --rate) until the backlog stays flat"
        )?;
    }
    writeln!(
        out,
        "send rate       {:>10.1}  tx/s submitted over {:.1} s (not a TPS figure)",
        r.send_rate, r.send_seconds
    )?;
    writeln!(
        out,
        "agent           {:>10.1}  µs CPU per signed tx; every request slot busy {:.0} % of the time",
        r.agent_cpu_us_per_tx,
        r.slots_busy * 100.0
    )?;
    match &r.schedule_lag_ms {
        Some(l) => writeln!(
            out,
            "schedule lag    p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  ms, first send − intended send",
            l.p50, l.p90, l.p99, l.max
        )?,
        None => writeln!(out, "schedule lag    none: a closed loop has no schedule")?,
    }
    print_latency(out, r)?;
    writeln!(
        out,
        "transactions    {} signed = {} included + {} rejected + {} unresolved",
        t.signed, t.included, t.rejected, t.unresolved
    )?;
    writeln!(
        out,
        "                {} included succeeded, {} reverted (receipt status 0); {} duplicate submission(s) of a counted hash folded",
        t.included - t.reverted,
        t.reverted,
        t.duplicates_folded
    )?;
    if r.sent_by_kind.len() > 1 {
        print_kinds(out, r)?;
    }
    for (reason, n) in &t.rejected_by_reason {
        let text = t
            .rejected_texts
            .get(reason)
            .and_then(|texts| texts.first())
            .map_or(String::new(), |text| format!(" (e.g. \"{text}\")"));
        writeln!(out, "  rejected      {n:>8}  {reason}{text}")?;
    }
    writeln!(
        out,
        "recovery        {} back-offs, {} resends, {} fee resends (re-signed with a higher fee), {} nonce resyncs, {} RPC read retries",
        r.backoffs, r.resends, t.fee_resends, r.resyncs, r.rpc_retries
    )?;
    if let Some(f) = &r.refill {
        writeln!(
            out,
            "refill          {} top-up(s) in {} round(s) ({:.1} s paying), {} wei paid, {} balance(s) read, {} failed round(s)",
            f.topped_up, f.rounds, f.seconds, f.value_wei, f.balances_read, f.failed_rounds
        )?;
    }
    if let Some(reads) = &r.reads {
        print_reads(out, reads)?;
    }
    print_blocks(out, r)?;
    let d = &r.dropped;
    if !d.is_none() {
        writeln!(
            out,
            "kept            the report holds the latest rows only: {} older second(s), {} block(s) and {} window(s) are in the series file (--series-out); totals cover the whole run",
            d.seconds, d.blocks, d.windows
        )?;
    }
    Ok(())
}

/// Each write kind's share of the first submissions, beside the share
/// asked for.
fn print_kinds(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    let all: u64 = r.sent_by_kind.values().sum();
    let parts: Vec<String> = r
        .config
        .writes
        .iter()
        .map(|w| {
            let kind = w.workload.kind();
            let n = r.sent_by_kind.get(&kind).copied().unwrap_or(0);
            let got = n as f64 / all.max(1) as f64;
            format!(
                "{} {n} ({:.1} %, asked {:.1} %)",
                kind.name(),
                got * 100.0,
                w.share * 100.0
            )
        })
        .collect();
    writeln!(out, "  by kind       {}", parts.join("; "))
}

fn print_reads(out: &mut dyn Write, r: &ReadsReport) -> std::io::Result<()> {
    writeln!(
        out,
        "reads           {:.0}/s offered over {:.1} s, beside the writes; each answer checked",
        r.rate, r.seconds
    )?;
    for (name, m) in &r.methods {
        writeln!(
            out,
            "  {name:<13} {:>7.1}/s answered  p50 {:>6.1} p99 {:>7.1} ms  {} ok, {} wrong, {} failed, {} skipped",
            m.answered_per_second, m.latency_ms.p50, m.latency_ms.p99, m.ok, m.wrong, m.failed, m.skipped
        )?;
        for e in &m.examples {
            writeln!(out, "                {e}")?;
        }
    }
    Ok(())
}

fn print_latency(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    let (b, o) = (&r.latency_ms.to_block_time, &r.latency_ms.to_observed);
    let resolution = r.latency_ms.block_time_resolution_ms;
    if resolution < 1.0 {
        writeln!(
            out,
            "latency (ms)    p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → commit (the next CometBFT header's time, ns)",
            b.p50, b.p90, b.p99, b.max
        )?;
    } else {
        // Whole-second timestamps: each figure is a lower bound, up to 1 s short.
        let range = |v: f64| format!("{:.0}–{:.0}", v, v + resolution);
        writeln!(
            out,
            "latency (ms)    p50 {}  p90 {}  p99 {}  max {}  intended send → block timestamp: bounded by its 1 s resolution (give --comet-rpc for ns)",
            range(b.p50),
            range(b.p90),
            range(b.p99),
            range(b.max)
        )?;
    }
    writeln!(
        out,
        "                p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → block seen (100 ms polling)",
        o.p50, o.p90, o.p99, o.max
    )
}

/// The per-window table and the transactions-per-block histogram.
fn print_blocks(out: &mut dyn Write, r: &LoadReport) -> std::io::Result<()> {
    if !r.windows.is_empty() {
        writeln!(
            out,
            "windows         {:>17}  {:>8}  {:>8}  {:>9}  {:>9}",
            "blocks", "ours", "reverted", "ours TPS", "all TPS"
        )?;
        for w in &r.windows {
            writeln!(
                out,
                "                {:>17}  {:>8}  {:>8}  {:>9.1}  {:>9.1}",
                format!("{}–{}", w.from, w.to),
                w.ours,
                w.reverted,
                w.tps,
                w.tps_all
            )?;
        }
    }
    let bins = txs_per_block_bins(&r.txs_per_block);
    if !bins.is_empty() {
        writeln!(out, "txs per block   blocks")?;
        let widest = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1);
        for (from, to, blocks) in bins {
            let bar = "#".repeat((blocks * 40).div_ceil(widest) as usize);
            writeln!(out, "  {:>13}  {blocks:>7}  {bar}", format!("{from}–{to}"))?;
        }
    }
    Ok(())
}

/// The histogram in at most 10 bins of equal, round width: (from, to, blocks).
fn txs_per_block_bins(h: &[TxsPerBlock]) -> Vec<(u64, u64, u64)> {
    let Some(max) = h.iter().map(|b| b.txs).max() else {
        return Vec::new();
    };
    let raw = (max + 1).div_ceil(10).max(1);
    let width = [1, 2, 5]
        .iter()
        .flat_map(|m| (0..12).map(move |e| m * 10u64.pow(e)))
        .filter(|w| *w >= raw)
        .min()
        .unwrap_or(raw);
    let mut bins: Vec<(u64, u64, u64)> = (0..=max / width)
        .map(|i| (i * width, i * width + width - 1, 0))
        .collect();
    for b in h {
        bins[(b.txs / width) as usize].2 += b.blocks;
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_accounts_for_every_transaction_and_rejection() {
        // Two blocks of ours (3 and 4 transactions), one rejection.
        let r = crate::merge::tests::run(0, 1, &[3, 4], 250.0).report;
        let mut out = Vec::new();
        write_summary(&mut out, &r).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("shard "), "{text}");
        assert!(lines[1].starts_with("committed TPS"), "{text}");
        assert!(
            lines[1].ends_with("ours, read from blocks 10..11 over 1 s"),
            "{text}"
        );
        assert!(
            lines.contains(&"transactions    9 signed = 7 included + 1 rejected + 1 unresolved"),
            "{text}"
        );
        assert!(
            lines.contains(&"  rejected             1  insufficient funds"),
            "{text}"
        );
        assert!(
            text.contains("schedule lag    none: a closed loop has no schedule"),
            "{text}"
        );
    }

    #[test]
    fn blocks_per_size_fall_in_round_bins() {
        let h = [
            TxsPerBlock { txs: 0, blocks: 4 },
            TxsPerBlock { txs: 37, blocks: 2 },
            TxsPerBlock { txs: 45, blocks: 1 },
        ];
        // Width 5 (46 values in 10 bins); 37 and 45 fall in 35–39 and 45–49.
        let bins = txs_per_block_bins(&h);
        assert_eq!(bins.len(), 10);
        assert_eq!(
            (bins[0], bins[7], bins[9]),
            ((0, 4, 4), (35, 39, 2), (45, 49, 1))
        );
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 7);
    }
}
