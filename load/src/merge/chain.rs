//! The blocks of the merged window, read once from the chain: CometBFT's
//! header times (ns) when its RPC is known, else web3 timestamps.

use anyhow::{ensure, Result};
use feth_comet::rpc::Rpc;

use feth_chain::blocks::web3_blocks;
use feth_chain::eth::EthClient;

/// A block as the merge takes it from the chain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainBlock {
    /// Height.
    pub number: u64,
    /// Header time, ns since the epoch (whole seconds from web3).
    pub time_ns: i64,
    /// Transactions in it (all senders).
    pub txs: u64,
    /// Gas they used (web3's `gasUsed`).
    pub gas_used: u64,
}

/// Blocks `first ..= last`, in height order.
pub async fn read(
    client: &EthClient,
    comet: Option<&Rpc>,
    first: u64,
    last: u64,
) -> Result<Vec<ChainBlock>> {
    let heights: Vec<u64> = (first..=last).collect();
    if let Some(rpc) = comet {
        let (facts, missing) = rpc.fetch(&heights, &[]).await?;
        ensure!(
            missing.is_empty(),
            "the node did not describe blocks {missing:?}"
        );
        let blocks = heights
            .iter()
            .map(|&h| {
                let f = facts.get(&h);
                let (Some(txs), Some(ns)) = (f.and_then(|f| f.txs), f.and_then(|f| f.time_ns))
                else {
                    anyhow::bail!(
                        "CometBFT's RPC gave no header time or transaction count for block {h}"
                    );
                };
                Ok(ChainBlock {
                    number: h,
                    time_ns: ns,
                    txs,
                    gas_used: 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        return with_gas(client, first, last, blocks).await;
    }
    let blocks = web3_blocks(client, first..=last).await?;
    Ok((first..=last)
        .zip(blocks)
        .map(|(h, b)| ChainBlock {
            number: h,
            time_ns: b.timestamp.to::<i64>().saturating_mul(1_000_000_000),
            txs: b.transactions.len() as u64,
            gas_used: b.gas_used.saturating_to(),
        })
        .collect())
}

/// `blocks` (the heights `first ..= last`, in order) with the gas each
/// used, read over web3 (CometBFT's block results carry it per transaction
/// only).
async fn with_gas(
    client: &EthClient,
    first: u64,
    last: u64,
    mut blocks: Vec<ChainBlock>,
) -> Result<Vec<ChainBlock>> {
    for (b, block) in blocks
        .iter_mut()
        .zip(web3_blocks(client, first..=last).await?)
    {
        b.gas_used = block.gas_used.saturating_to();
    }
    Ok(blocks)
}
