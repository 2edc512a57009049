//! Builds the JSON-RPC shapes geth returns, using alloy's RPC types so that
//! standard clients decode them unchanged.

use alloy_consensus::{
    Eip658Value, Receipt, ReceiptEnvelope, Transaction as _, TxEnvelope, TxType,
    EMPTY_OMMER_ROOT_HASH,
};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{keccak256, Bloom, Bytes, B256, B64, U256};
use alloy_rpc_types_eth::{Block, BlockTransactions, Header, Log, Transaction, TransactionReceipt};

use crate::records::{BlockRecord, TxRecord};

/// Decodes a stored transaction back into its envelope.
fn envelope(record: &TxRecord) -> Option<TxEnvelope> {
    TxEnvelope::decode_2718(&mut record.raw.as_ref()).ok()
}

/// `eth_getTransactionByHash` shape of a stored transaction.
pub fn transaction(record: &TxRecord, block_timestamp: Option<u64>) -> Option<Transaction> {
    let env = envelope(record)?;
    Some(Transaction {
        effective_gas_price: Some(record.receipt.effective_gas_price),
        inner: alloy_consensus::transaction::Recovered::new_unchecked(env, record.sender),
        block_hash: Some(record.block_hash),
        block_number: Some(record.block_number),
        transaction_index: Some(record.index),
        block_timestamp,
    })
}

/// `eth_getTransactionReceipt` shape of a stored transaction.
pub fn receipt(
    record: &TxRecord,
    block_timestamp: u64,
    first_log_index: u64,
) -> Option<TransactionReceipt> {
    let env = envelope(record)?;
    let hash = keccak256(&record.raw);
    let logs = record
        .receipt
        .logs
        .iter()
        .enumerate()
        .map(|(i, log)| Log {
            inner: log.clone(),
            block_hash: Some(record.block_hash),
            block_number: Some(record.block_number),
            block_timestamp: Some(block_timestamp),
            transaction_hash: Some(hash),
            transaction_index: Some(record.index),
            log_index: Some(first_log_index + i as u64),
            removed: false,
        })
        .collect();
    let inner = Receipt {
        status: Eip658Value::Eip658(record.receipt.status),
        cumulative_gas_used: record.receipt.cumulative_gas_used,
        logs,
    }
    .with_bloom();
    let ty = match env.tx_type() {
        TxType::Legacy => TxType::Legacy,
        TxType::Eip2930 => TxType::Eip2930,
        _ => TxType::Eip1559,
    };
    Some(TransactionReceipt {
        inner: ReceiptEnvelope::from_typed(ty, inner),
        transaction_hash: hash,
        transaction_index: Some(record.index),
        block_hash: Some(record.block_hash),
        block_number: Some(record.block_number),
        gas_used: record.receipt.gas_used,
        effective_gas_price: record.receipt.effective_gas_price,
        blob_gas_used: None,
        blob_gas_price: None,
        from: record.sender,
        to: env.to(),
        contract_address: record.receipt.contract_address,
    })
}

/// `eth_getBlockBy*` shape, with the block's `logs_bloom`; `txs` are the full
/// transactions when requested.
pub fn block(record: &BlockRecord, logs_bloom: Bloom, txs: Option<Vec<Transaction>>) -> Block {
    let transactions_root = if record.tx_hashes.is_empty() {
        alloy_consensus::constants::EMPTY_ROOT_HASH
    } else {
        keccak256(
            record
                .tx_hashes
                .iter()
                .flat_map(|h| h.0)
                .collect::<Vec<u8>>(),
        )
    };
    let inner = alloy_consensus::Header {
        parent_hash: record.parent_hash,
        ommers_hash: EMPTY_OMMER_ROOT_HASH,
        beneficiary: record.miner,
        state_root: record.app_hash,
        transactions_root,
        receipts_root: alloy_consensus::constants::EMPTY_ROOT_HASH,
        difficulty: U256::ZERO,
        number: record.number,
        gas_limit: record.gas_limit,
        gas_used: record.gas_used,
        timestamp: record.timestamp,
        extra_data: Bytes::new(),
        mix_hash: B256::ZERO,
        nonce: B64::ZERO,
        base_fee_per_gas: Some(record.base_fee),
        logs_bloom,
        ..Default::default()
    };
    let transactions = match txs {
        Some(full) => BlockTransactions::Full(full),
        None => BlockTransactions::Hashes(record.tx_hashes.clone()),
    };
    Block {
        header: Header {
            hash: record.hash,
            inner,
            total_difficulty: Some(U256::ZERO),
            size: Some(U256::from(record.size)),
        },
        uncles: Vec::new(),
        transactions,
        withdrawals: None,
    }
}
