//! Blocks, their transactions and receipts: `eth_getBlockBy*`,
//! `eth_getBlockReceipts`, `eth_getTransactionBy*`, `eth_getTransactionReceipt`,
//! the transaction counts, and uncles (a CometBFT chain has none).

use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::{Bloom, B256, U64};
use alloy_rpc_types_eth::{Block, Transaction, TransactionReceipt};
use jsonrpsee::RpcModule;

use super::error::{internal, RpcResult};
use super::{convert, Web3};
use crate::records::{BlockRecord, TxRecord};

/// Registers the block, receipt and by-block transaction methods.
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_method("eth_getBlockByNumber", |p, w, _| {
        let mut seq = p.sequence();
        let tag: BlockNumberOrTag = seq.next()?;
        let full: bool = seq.optional_next()?.unwrap_or(false);
        block_at(w, BlockId::Number(tag))?
            .map(|r| rpc_block(w, &r, full))
            .transpose()
    })?;
    m.register_method("eth_getBlockByHash", |p, w, _| {
        let mut seq = p.sequence();
        let hash: B256 = seq.next()?;
        let full: bool = seq.optional_next()?.unwrap_or(false);
        block_at(w, BlockId::from(hash))?
            .map(|r| rpc_block(w, &r, full))
            .transpose()
    })?;
    m.register_method("eth_getBlockTransactionCountByNumber", |p, w, _| {
        let tag: BlockNumberOrTag = p.one()?;
        tx_count(w, BlockId::Number(tag))
    })?;
    m.register_method("eth_getBlockTransactionCountByHash", |p, w, _| {
        let hash: B256 = p.one()?;
        tx_count(w, BlockId::from(hash))
    })?;
    m.register_method("eth_getUncleCountByBlockNumber", |p, w, _| {
        let tag: BlockNumberOrTag = p.one()?;
        RpcResult::Ok(block_at(w, BlockId::Number(tag))?.map(|_| U64::ZERO))
    })?;
    m.register_method("eth_getUncleCountByBlockHash", |p, w, _| {
        let hash: B256 = p.one()?;
        RpcResult::Ok(block_at(w, BlockId::from(hash))?.map(|_| U64::ZERO))
    })?;
    for method in [
        "eth_getUncleByBlockNumberAndIndex",
        "eth_getUncleByBlockHashAndIndex",
    ] {
        m.register_method(method, |_, _, _| RpcResult::Ok(None::<Block>))?;
    }
    m.register_method("eth_getTransactionByBlockNumberAndIndex", |p, w, _| {
        let mut seq = p.sequence();
        let tag: BlockNumberOrTag = seq.next()?;
        let index: U64 = seq.next()?;
        tx_at(w, BlockId::Number(tag), index.to())
    })?;
    m.register_method("eth_getTransactionByBlockHashAndIndex", |p, w, _| {
        let mut seq = p.sequence();
        let hash: B256 = seq.next()?;
        let index: U64 = seq.next()?;
        tx_at(w, BlockId::from(hash), index.to())
    })?;
    // One record each (the block's time is kept in it): read on the
    // blocking pool, never on the server's workers.
    m.register_blocking_method("eth_getTransactionByHash", |p, w, _| {
        let hash: B256 = p.one()?;
        let Some(record) = w.node.tx(&hash).map_err(internal)? else {
            return RpcResult::Ok(None::<Transaction>);
        };
        let ts = match record.place {
            Some(place) => Some(place.block_timestamp),
            None => w
                .node
                .block(record.block_number)
                .map_err(internal)?
                .map(|b| b.timestamp),
        };
        RpcResult::Ok(convert::transaction(&record, ts))
    })?;
    m.register_blocking_method("eth_getTransactionReceipt", |p, w, _| {
        let hash: B256 = p.one()?;
        transaction_receipt(&w, &hash)
    })?;
    m.register_async_method("eth_getBlockReceipts", |p, w, _| async move {
        let id: BlockId = p.one()?;
        w.heavy(move |w| block_receipts(w, id)).await
    })?;
    Ok(())
}

/// The height a tag names, `None` when it is in the future. `safe` and
/// `finalized` are the head: CometBFT's blocks are final when committed.
pub fn resolve_number(w: &Web3, tag: BlockNumberOrTag) -> RpcResult<Option<u64>> {
    let head = w.node.head().map_err(internal)?.number;
    Ok(match tag {
        BlockNumberOrTag::Number(n) if n > head => None,
        BlockNumberOrTag::Number(n) => Some(n),
        BlockNumberOrTag::Earliest => Some(0),
        _ => Some(head),
    })
}

/// The committed block `id` names, `None` when there is none.
pub fn block_at(w: &Web3, id: BlockId) -> RpcResult<Option<BlockRecord>> {
    match id {
        BlockId::Hash(h) => w.node.block_by_hash(&h.block_hash).map_err(internal),
        BlockId::Number(tag) => match resolve_number(w, tag)? {
            Some(n) => w.node.block(n).map_err(internal),
            None => Ok(None),
        },
    }
}

/// The block's logs bloom; a block stored before abcid kept blooms gets it
/// computed from its receipts.
pub fn logs_bloom(w: &Web3, record: &BlockRecord) -> RpcResult<Bloom> {
    if let Some(bloom) = record.logs_bloom {
        return Ok(bloom);
    }
    let mut bloom = Bloom::ZERO;
    for tx in w.node.block_txs(record, usize::MAX).map_err(internal)? {
        bloom.accrue_logs(&tx.receipt.logs);
    }
    Ok(bloom)
}

fn rpc_block(w: &Web3, record: &BlockRecord, full: bool) -> RpcResult<Block> {
    let txs = if full {
        let txs = w.node.block_txs(record, usize::MAX).map_err(internal)?;
        Some(
            txs.iter()
                .filter_map(|tx| convert::transaction(tx, Some(record.timestamp)))
                .collect(),
        )
    } else {
        None
    };
    Ok(convert::block(record, logs_bloom(w, record)?, txs))
}

fn tx_count(w: &Web3, id: BlockId) -> RpcResult<Option<U64>> {
    Ok(block_at(w, id)?.map(|r| U64::from(r.tx_hashes.len())))
}

fn tx_at(w: &Web3, id: BlockId, index: usize) -> RpcResult<Option<Transaction>> {
    let Some(block) = block_at(w, id)? else {
        return Ok(None);
    };
    let Some(hash) = block.tx_hashes.get(index) else {
        return Ok(None);
    };
    let record = w.node.tx(hash).map_err(internal)?;
    Ok(record.and_then(|r| convert::transaction(&r, Some(block.timestamp))))
}

/// A receipt from its transaction's record alone, whatever the size of its
/// block; a record stored before abcid kept its place reads its block and
/// the transactions before it for the log indices.
fn transaction_receipt(w: &Web3, hash: &B256) -> RpcResult<Option<TransactionReceipt>> {
    let Some(record) = w.node.tx(hash).map_err(internal)? else {
        return Ok(None);
    };
    if let Some(place) = record.place {
        return Ok(convert::receipt(
            &record,
            place.block_timestamp,
            place.first_log_index,
        ));
    }
    let Some(block) = w.node.block(record.block_number).map_err(internal)? else {
        return Ok(None);
    };
    // Log indices count the logs of the transactions before this one.
    let earlier = w
        .node
        .block_txs(&block, record.index as usize)
        .map_err(internal)?;
    let first_log_index = log_count(&earlier);
    Ok(convert::receipt(&record, block.timestamp, first_log_index))
}

fn block_receipts(w: &Web3, id: BlockId) -> RpcResult<Option<Vec<TransactionReceipt>>> {
    let Some(block) = block_at(w, id)? else {
        return Ok(None);
    };
    let txs = w.node.block_txs(&block, usize::MAX).map_err(internal)?;
    let mut receipts = Vec::with_capacity(txs.len());
    let mut first_log_index = 0;
    for tx in &txs {
        receipts.extend(convert::receipt(tx, block.timestamp, first_log_index));
        first_log_index += tx.receipt.logs.len() as u64;
    }
    Ok(Some(receipts))
}

fn log_count(txs: &[TxRecord]) -> u64 {
    txs.iter().map(|tx| tx.receipt.logs.len() as u64).sum()
}
