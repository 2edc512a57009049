//! What makes several reports mergeable: one chain, and senders that no two
//! runs shared (their key ranges are disjoint, from one keys file).

use anyhow::{bail, Result};

use super::Input;
use feth_chain::shard::KeyRange;

/// The key range of `input`, or an error for a file from an older feth.
pub fn keys(input: &Input) -> Result<KeyRange> {
    match input.report.config.keys {
        Some(k) => Ok(k),
        None => bail!(
            "{} does not say which keys it sent from (written by an older feth); \
             run the load again with this feth",
            input.name
        ),
    }
}

fn describe(input: &Input) -> String {
    let keys = input
        .report
        .config
        .keys
        .map_or_else(String::new, |k| k.to_string());
    match input.report.config.shard {
        Some(s) => format!("{} (shard {}, {keys})", input.name, s.shard),
        None => format!("{} (no --shard, {keys})", input.name),
    }
}

/// Refuses runs of different chains, runs that shared a sender, and shards
/// of different keys files.
pub fn mergeable(inputs: &[Input]) -> Result<()> {
    let Some(first) = inputs.first() else {
        bail!("give the JSON reports of the agents to merge (feth load --out FILE)");
    };
    let chain_id = first.report.config.chain_id;
    for i in inputs {
        if i.report.config.chain_id != chain_id {
            bail!(
                "{} is a run on chain {}, {} on chain {chain_id}: runs of different chains do not merge",
                i.name,
                i.report.config.chain_id,
                first.name
            );
        }
        if i.report.latency_hist.is_none() {
            bail!(
                "{} has no latency histograms (written by an older feth); run the load again with this feth",
                i.name
            );
        }
    }
    let ranges = inputs.iter().map(keys).collect::<Result<Vec<_>>>()?;
    for (a, ra) in ranges.iter().enumerate() {
        for (b, rb) in ranges.iter().enumerate().skip(a + 1) {
            if ra.overlaps(rb) {
                bail!(
                    "{} and {} sent from the same keys: their shards overlap. \
                     Give each agent its own --shard I/N of one N",
                    describe(&inputs[a]),
                    describe(&inputs[b])
                );
            }
        }
    }
    let files: Vec<(usize, &Input)> = inputs
        .iter()
        .filter_map(|i| i.report.config.shard.map(|s| (s.keys_in_file, i)))
        .collect();
    if let Some((n, i)) = files.first() {
        if let Some((m, j)) = files.iter().find(|(m, _)| m != n) {
            bail!(
                "{} was cut from a keys file of {n} keys, {} from one of {m}: shards of different keys files do not merge",
                i.name,
                j.name
            );
        }
    }
    Ok(())
}

/// The shards `0..N` no input covers, when every input is a shard of one
/// `N` (empty otherwise).
pub fn missing_shards(inputs: &[Input]) -> Vec<usize> {
    let shards: Vec<_> = inputs
        .iter()
        .filter_map(|i| i.report.config.shard)
        .collect();
    let Some(n) = shards.first().map(|s| s.shard.count) else {
        return Vec::new();
    };
    if shards.len() != inputs.len() || shards.iter().any(|s| s.shard.count != n) {
        return Vec::new();
    }
    (0..n)
        .filter(|k| !shards.iter().any(|s| s.shard.index == *k))
        .collect()
}
