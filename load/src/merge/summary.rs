//! `feth merge`'s summary: the chain's figures over the merged span, every
//! agent's row and warnings, and the windows.

use std::io::Write;

use super::MergedReport;

impl MergedReport {
    /// Writes the summary `feth merge` prints.
    pub fn write_summary(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let shards: Vec<String> = self
            .shards
            .iter()
            .map(|s| s.map_or_else(|| "all".to_string(), |s| s.to_string()))
            .collect();
        writeln!(
            out,
            "agents          {:>10}  shards {}",
            self.agents,
            shards.join(", ")
        )?;
        if !self.missing_shards.is_empty() {
            writeln!(
                out,
                "                missing shard(s) {:?}: their senders are not in these figures",
                self.missing_shards
            )?;
        }
        for a in &self.per_agent {
            if let Some(limited) = &a.agent_limited {
                writeln!(
                    out,
                    "WARNING         agent {} ({}) limited its own offered rate, not the chain: {}",
                    a.file, a.host, limited.reason
                )?;
            }
            if let Some(b) = a.closed_loop_backlog.as_ref().filter(|b| b.growing) {
                writeln!(
                    out,
                    "WARNING         agent {} ({}): the node accepted faster than it committed, its backlog grew from {} to {} (+{:.1} tx/s): a drain, not a steady state",
                    a.file, a.host, b.mid, b.end, b.growth_per_second
                )?;
            }
        }
        let c = &self.chain;
        writeln!(
            out,
            "committed TPS   {:>10.1}  the agents', read from blocks {}..{} over {:.1} s",
            c.committed_tps, c.first_block, c.last_block, c.seconds
        )?;
        writeln!(
            out,
            "                {:>10.1}  all transactions in those blocks ({})",
            c.committed_tps_all, c.all_txs
        )?;
        writeln!(
            out,
            "committed gas/s {:>10}  all transactions' gas in those blocks ({} gas)",
            crate::units::mgas(c.gas_per_second),
            c.gas_used
        )?;
        writeln!(
            out,
            "block time      {:>10.0}  ms, mean over the window ({})",
            self.block_time_ms, self.block_clock
        )?;
        let l = &self.latency_ms.to_block_time;
        writeln!(
            out,
            "latency (ms)    p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}  intended send → block time, all agents",
            l.p50, l.p90, l.p99, l.max
        )?;
        let t = &self.totals;
        writeln!(
            out,
            "transactions    {} sent, {} accepted, {} included, {} rejected, {} unresolved",
            t.signed, self.accepted, t.included, t.rejected, t.unresolved
        )?;
        writeln!(
            out,
            "per agent       {:>6}  {:>13}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8}  host",
            "shard", "keys", "sent", "accepted", "included", "rejected", "p50 ms"
        )?;
        for a in &self.per_agent {
            writeln!(
                out,
                "                {:>6}  {:>13}  {:>8}  {:>8}  {:>8}  {:>8}  {:>8.0}  {}",
                a.shard.map_or_else(|| "all".to_string(), |s| s.to_string()),
                a.keys.to_string(),
                a.sent,
                a.accepted,
                a.included,
                a.rejected,
                a.latency_ms.to_block_time.p50,
                a.host
            )?;
        }
        for w in &self.windows {
            writeln!(
                out,
                "window          {:>17}  {:>8} ours  {:>9.1} ours TPS  {:>9.1} all TPS",
                format!("{}–{}", w.from, w.to),
                w.ours,
                w.tps,
                w.tps_all
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::merge::MergedReport;
    use crate::merge::{AgentRow, MergedWindow};
    use crate::report::{AgentLimited, ChainFigures, ClosedLoopBacklog, Latencies, Totals};
    use feth_chain::shard::{KeyRange, Shard};

    #[test]
    fn the_summary_shows_the_chain_figures_and_every_agent() {
        let agent = |index: usize| AgentRow {
            file: format!("shard-{index}.json"),
            host: format!("agent{index}"),
            shard: Some(Shard { index, count: 3 }),
            keys: KeyRange {
                first: index * 10,
                count: 10,
            },
            endpoints: vec![],
            sent: 100,
            accepted: 99,
            included: 98,
            rejected: 1,
            unresolved: 1,
            blocks: (10, 20),
            latency_ms: Latencies::default(),
            agent_limited: (index == 2).then(|| AgentLimited {
                reason: "the schedule fell behind".into(),
                max_backlog: 300,
                schedule_lag_ms: 5000.0,
            }),
            closed_loop_backlog: (index == 0).then_some(ClosedLoopBacklog {
                growing: true,
                mid: 120,
                end: 480,
                max: 480,
                growth_per_second: 72.0,
                committed_per_second: 40.0,
            }),
        };
        let m = MergedReport {
            version: 1,
            agents: 2,
            shards: vec![
                Some(Shard { index: 0, count: 3 }),
                Some(Shard { index: 2, count: 3 }),
            ],
            missing_shards: vec![1],
            chain_id: 9000,
            chain: ChainFigures {
                first_block: 10,
                last_block: 20,
                seconds: 4.0,
                all_txs: 196,
                committed_tps: 49.0,
                committed_tps_all: 49.0,
                ..ChainFigures::default()
            },
            block_time_ms: 363.6,
            block_clock: "CometBFT header times".into(),
            totals: Totals {
                signed: 200,
                included: 196,
                ..Totals::default()
            },
            accepted: 198,
            latency_ms: Latencies::default(),
            windows: vec![MergedWindow {
                from: 10,
                to: 20,
                txs: 196,
                ours: 196,
                seconds: 4.0,
                tps: 49.0,
                tps_all: 49.0,
            }],
            per_agent: vec![agent(0), agent(2)],
        };
        let mut out = Vec::new();
        m.write_summary(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for want in [
            "shards 0/3, 2/3",
            "missing shard(s) [1]",
            "49.0  the agents', read from blocks 10..20 over 4.0 s",
            "200 sent, 198 accepted, 196 included",
            "keys 20–29",
            "10–20",
            "WARNING         agent shard-2.json (agent2) limited its own offered rate, not the chain: the schedule fell behind",
        ] {
            assert!(text.contains(want), "{want:?} missing from:\n{text}");
        }
        assert!(!text.contains("shard-0.json (agent0) limited"), "{text}");
        assert!(
            text.contains("agent shard-0.json (agent0): the node accepted faster than it committed, its backlog grew from 120 to 480 (+72.0 tx/s)"),
            "{text}"
        );
        assert!(
            !text.contains("agent shard-2.json (agent2): the node"),
            "{text}"
        );
    }
}
