//! Block execution with revm: every transaction of a finalized block is
//! checked against the block's running state and executed; each gets exactly
//! one result, and the block's changes come out as a [`BlockBatch`].

use alloy_consensus::{Transaction, TxEnvelope, Typed2718};
use alloy_primitives::{keccak256, Address, Bloom, Bytes, B256, U256};
use revm::{
    context::{result::ExecutionResult, BlockEnv, CfgEnv, TxEnv},
    primitives::hardfork::SpecId,
};

use crate::error::TxError;
use crate::fee_market;
use crate::genesis::Genesis;
use crate::patches::Patch;
use crate::records::{BlockRecord, ReceiptPlace, ReceiptRecord, TxRecord};
use crate::runner::{EvmPerTx, OneEvm, TxRunner};
use crate::state::{AccountRecord, StateDiff, WorldState};
use crate::store::BlockBatch;
use crate::tx::VerifiedTx;
use crate::verify::Verifier;

/// The EVM hard fork abcid executes.
pub const SPEC: SpecId = SpecId::PRAGUE;

/// What FinalizeBlock hands to execution.
#[derive(Debug, Clone)]
pub struct BlockInput<'a> {
    /// Height.
    pub height: u64,
    /// CometBFT block hash.
    pub hash: B256,
    /// Header time: seconds since the epoch.
    pub time_secs: u64,
    /// Header time: nanoseconds within the second.
    pub time_nanos: u32,
    /// The block's raw transactions, in order.
    pub txs: &'a [Bytes],
}

/// The result of one transaction, as reported to CometBFT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxOutcome {
    /// Executed (code 0); `success` is false for a revert or halt.
    Executed {
        /// Transaction hash.
        hash: B256,
        /// Sender.
        sender: Address,
        /// Gas charged.
        gas_used: u64,
        /// Whether execution succeeded.
        success: bool,
    },
    /// Not executed (non-zero code).
    Rejected {
        /// Hash of the raw bytes.
        hash: B256,
        /// Why.
        error: TxError,
    },
}

impl TxOutcome {
    /// The transaction's hash.
    pub fn hash(&self) -> B256 {
        match self {
            Self::Executed { hash, .. } | Self::Rejected { hash, .. } => *hash,
        }
    }
}

/// A block executed but not yet committed.
#[derive(Debug, Clone)]
pub struct ExecutedBlock {
    /// One outcome per transaction, in block order.
    pub outcomes: Vec<TxOutcome>,
    /// What Commit persists.
    pub batch: BlockBatch,
}

impl ExecutedBlock {
    /// Number of executed (code 0) transactions.
    pub fn valid(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| matches!(o, TxOutcome::Executed { .. }))
            .count()
    }
}

/// What the nonce and funds rule needs of a transaction: who pays, with
/// which nonce, and at most how much. CheckTx's ledger and lite recheck keep
/// only this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spend {
    /// The sender.
    pub sender: Address,
    /// The transaction's nonce.
    pub nonce: u64,
    /// `value + gas_limit × max_fee_per_gas`.
    pub max_cost: U256,
}

impl From<&VerifiedTx> for Spend {
    fn from(tx: &VerifiedTx) -> Self {
        Self {
            sender: tx.sender,
            nonce: tx.envelope.nonce(),
            max_cost: tx.max_cost(),
        }
    }
}

/// Checks nonce and funds of `tx` against the sender's current account.
pub fn check_account(tx: &Spend, account: Option<AccountRecord>) -> Result<(), TxError> {
    let account = account.unwrap_or_default();
    let nonce = tx.nonce;
    if nonce < account.nonce {
        return Err(TxError::NonceTooLow {
            expected: account.nonce,
            got: nonce,
        });
    }
    if nonce > account.nonce {
        return Err(TxError::NonceTooHigh {
            expected: account.nonce,
            got: nonce,
        });
    }
    let cost = tx.max_cost;
    if account.balance < cost {
        return Err(TxError::InsufficientFunds {
            balance: account.balance,
            cost,
        });
    }
    Ok(())
}

/// Checks that the gas limit of `tx` fits in `left`, what the block's earlier
/// transactions left of the block gas limit (Ethereum's gas pool). Checked
/// before the signature, nonce and balance: a proposal stuffed beyond the
/// block's gas costs no sender recovery, and once the block is full every
/// later transaction that does not fit is reported as such, not as the
/// nonce gap its cut predecessor leaves.
pub fn check_block_gas(tx: &TxEnvelope, left: u64) -> Result<(), TxError> {
    let gas = tx.gas_limit();
    if gas > left {
        return Err(TxError::BlockGasExhausted { gas, left });
    }
    Ok(())
}

/// Builds revm's transaction environment from a verified transaction.
pub fn tx_env(tx: &VerifiedTx) -> TxEnv {
    let env = &tx.envelope;
    TxEnv {
        tx_type: env.ty(),
        caller: tx.sender,
        gas_limit: env.gas_limit(),
        gas_price: env.max_fee_per_gas(),
        kind: env.kind(),
        value: env.value(),
        data: env.input().clone(),
        nonce: env.nonce(),
        chain_id: env.chain_id(),
        access_list: env.access_list().cloned().unwrap_or_default(),
        gas_priority_fee: env.max_priority_fee_per_gas(),
        ..Default::default()
    }
}

/// revm's block environment for `height` at `time_secs`.
pub fn block_env(genesis: &Genesis, height: u64, time_secs: u64, randao: B256) -> BlockEnv {
    BlockEnv {
        number: U256::from(height),
        beneficiary: genesis.fee_recipient,
        timestamp: U256::from(time_secs),
        gas_limit: genesis.block_gas_limit,
        basefee: genesis.base_fee,
        prevrandao: Some(randao),
        ..Default::default()
    }
}

/// revm's configuration for this chain.
pub fn cfg_env(genesis: &Genesis) -> CfgEnv {
    let mut cfg = CfgEnv::new_with_spec(SPEC);
    cfg.chain_id = genesis.chain_id;
    cfg.tx_gas_limit_cap = Some(genesis.max_tx_gas);
    cfg
}

/// Executes one block on top of `world`, whose last block is `parent`.
pub fn execute_block(
    world: &WorldState,
    genesis: &Genesis,
    verifier: &Verifier,
    parent: &BlockRecord,
    input: &BlockInput<'_>,
) -> ExecutedBlock {
    let cfg = cfg_env(genesis);
    let mut env = block_env(genesis, input.height, input.time_secs, input.hash);
    env.basefee = fee_market::next_base_fee(genesis, parent);
    if verifier.patches().has(Patch::SessionCache) {
        let runner = OneEvm::new(world, cfg, env);
        execute_txs(runner, genesis, verifier, parent, input)
    } else {
        let runner = EvmPerTx::new(world, cfg, env);
        execute_txs(runner, genesis, verifier, parent, input)
    }
}

/// Verifies, checks and runs every transaction of the block through `runner`.
fn execute_txs<R: TxRunner>(
    mut runner: R,
    genesis: &Genesis,
    verifier: &Verifier,
    parent: &BlockRecord,
    input: &BlockInput<'_>,
) -> ExecutedBlock {
    let mut block = BlockBuilder::new(input);
    let base_fee = fee_market::next_base_fee(genesis, parent);
    for raw in input.txs {
        block.size += raw.len() as u64;
        let gas_left = genesis.block_gas_limit.saturating_sub(block.gas_used);
        let verified = match admit(raw, verifier, &runner, gas_left) {
            Ok(verified) => verified,
            Err(rejected) => {
                block.outcomes.push(rejected);
                continue;
            }
        };
        if let Err(error) = fee_market::covers(&verified, base_fee) {
            block.outcomes.push(TxOutcome::Rejected {
                hash: verified.hash,
                error,
            });
            continue;
        }
        match runner.run(tx_env(&verified)) {
            Ok(result) => block.executed(raw, &verified, result, base_fee),
            Err(e) => block.outcomes.push(TxOutcome::Rejected {
                hash: verified.hash,
                error: TxError::Execution(e.to_string()),
            }),
        }
    }
    block.finish(runner.into_diff(), genesis, parent, base_fee)
}

/// The checks a transaction passes before it runs: the stateless rules, the
/// gas left in the block, its sender (the costly step, last of the
/// stateless ones), then nonce and funds.
fn admit<R: TxRunner>(
    raw: &Bytes,
    verifier: &Verifier,
    runner: &R,
    gas_left: u64,
) -> Result<VerifiedTx, TxOutcome> {
    let rejected = |error| TxOutcome::Rejected {
        hash: keccak256(raw),
        error,
    };
    let envelope = verifier.decode(raw).map_err(rejected)?;
    check_block_gas(&envelope, gas_left).map_err(rejected)?;
    let verified = verifier.recover(raw, envelope).map_err(rejected)?;
    let account = runner.account(&verified.sender);
    check_account(&Spend::from(&verified), account).map_err(|error| TxOutcome::Rejected {
        hash: verified.hash,
        error,
    })?;
    Ok(verified)
}

/// A block's results as its transactions run.
struct BlockBuilder<'a> {
    input: &'a BlockInput<'a>,
    outcomes: Vec<TxOutcome>,
    txs: Vec<(B256, TxRecord)>,
    tx_hashes: Vec<B256>,
    gas_used: u64,
    size: u64,
    logs_bloom: Bloom,
    /// Logs of the transactions executed so far.
    logs: u64,
}

impl<'a> BlockBuilder<'a> {
    fn new(input: &'a BlockInput<'a>) -> Self {
        let n = input.txs.len();
        Self {
            input,
            outcomes: Vec::with_capacity(n),
            txs: Vec::with_capacity(n),
            tx_hashes: Vec::with_capacity(n),
            gas_used: 0,
            size: 0,
            logs_bloom: Bloom::ZERO,
            logs: 0,
        }
    }

    /// Records an executed transaction: its outcome, receipt and record.
    fn executed(&mut self, raw: &Bytes, tx: &VerifiedTx, result: ExecutionResult, base_fee: u64) {
        let receipt = receipt(result, self.gas_used, tx.effective_gas_price(base_fee));
        self.gas_used = receipt.cumulative_gas_used;
        for log in &receipt.logs {
            self.logs_bloom.accrue_log(log);
        }
        self.outcomes.push(TxOutcome::Executed {
            hash: tx.hash,
            sender: tx.sender,
            gas_used: receipt.gas_used,
            success: receipt.status,
        });
        self.tx_hashes.push(tx.hash);
        let place = ReceiptPlace {
            first_log_index: self.logs,
            block_timestamp: self.input.time_secs,
        };
        self.logs = self.logs.saturating_add(receipt.logs.len() as u64);
        let record = TxRecord {
            raw: raw.clone(),
            sender: tx.sender,
            block_number: self.input.height,
            block_hash: self.input.hash,
            index: self.txs.len() as u64,
            receipt,
            place: Some(place),
        };
        self.txs.push((tx.hash, record));
    }

    /// The executed block, with the state changes `diff`.
    fn finish(
        self,
        diff: StateDiff,
        genesis: &Genesis,
        parent: &BlockRecord,
        base_fee: u64,
    ) -> ExecutedBlock {
        let input = self.input;
        let digests = Digests {
            state: diff.digest(),
            results: results_digest(&self.outcomes),
            receipts: receipts_root(self.txs.iter().map(|(_, tx)| &tx.receipt)),
        };
        let app_hash = next_app_hash(parent.app_hash, input.height, &digests);
        let invalid_txs = (self.outcomes.len() - self.tx_hashes.len()) as u32;
        let block = BlockRecord {
            number: input.height,
            hash: input.hash,
            parent_hash: parent.hash,
            timestamp: input.time_secs,
            timestamp_nanos: input.time_nanos,
            gas_used: self.gas_used,
            gas_limit: genesis.block_gas_limit,
            base_fee,
            miner: genesis.fee_recipient,
            app_hash,
            tx_hashes: self.tx_hashes,
            invalid_txs,
            size: self.size,
            logs_bloom: Some(self.logs_bloom),
        };
        ExecutedBlock {
            outcomes: self.outcomes,
            batch: BlockBatch {
                block,
                txs: self.txs,
                diff,
            },
        }
    }
}

/// The receipt of an executed transaction that follows `gas_before` gas of
/// its block, paying `effective_gas_price`.
pub fn receipt(
    result: ExecutionResult,
    gas_before: u64,
    effective_gas_price: u128,
) -> ReceiptRecord {
    let gas_used = result.tx_gas_used();
    ReceiptRecord {
        status: result.is_success(),
        gas_used,
        cumulative_gas_used: gas_before + gas_used,
        effective_gas_price,
        contract_address: result.created_address(),
        logs: result.into_logs(),
    }
}

/// What a block's app hash commits to beside its parent's and its height.
struct Digests {
    /// The state changes ([`StateDiff::digest`]).
    state: B256,
    /// Each transaction's code, status and hash ([`results_digest`]).
    results: B256,
    /// The executed transactions' receipts, logs included ([`receipts_root`]).
    receipts: B256,
}

/// Chains the app hash:
/// `keccak(prev ‖ height ‖ state digest ‖ results digest ‖ receipts root)`.
fn next_app_hash(prev: B256, height: u64, digests: &Digests) -> B256 {
    let mut buf = Vec::with_capacity(32 + 8 + 96);
    buf.extend_from_slice(prev.as_slice());
    buf.extend_from_slice(&height.to_be_bytes());
    buf.extend_from_slice(digests.state.as_slice());
    buf.extend_from_slice(digests.results.as_slice());
    buf.extend_from_slice(digests.receipts.as_slice());
    keccak256(&buf)
}

/// A digest of every transaction's result: code, status and hash, in order.
fn results_digest(outcomes: &[TxOutcome]) -> B256 {
    let mut results = Vec::with_capacity(outcomes.len() * 37);
    for outcome in outcomes {
        match outcome {
            TxOutcome::Executed { hash, success, .. } => {
                results.extend_from_slice(&0u32.to_be_bytes());
                results.push(u8::from(*success));
                results.extend_from_slice(hash.as_slice());
            }
            TxOutcome::Rejected { hash, error } => {
                results.extend_from_slice(&error.code().to_be_bytes());
                results.push(0);
                results.extend_from_slice(hash.as_slice());
            }
        }
    }
    keccak256(&results)
}

/// The block's receipts root: Keccak-256 over the Keccak-256 of each
/// receipt, in block order. A receipt's bytes: status, gas used, cumulative
/// gas, effective gas price, the created address (a flag, then its bytes),
/// then each log's address, topic count, topics, data length and data
/// (integers big-endian). Two nodes whose logs differ get different app
/// hashes, so CometBFT stops at the first such block.
pub fn receipts_root<'a>(receipts: impl Iterator<Item = &'a ReceiptRecord>) -> B256 {
    let mut roots = Vec::new();
    let mut buf = Vec::new();
    for r in receipts {
        buf.clear();
        buf.push(u8::from(r.status));
        buf.extend_from_slice(&r.gas_used.to_be_bytes());
        buf.extend_from_slice(&r.cumulative_gas_used.to_be_bytes());
        buf.extend_from_slice(&r.effective_gas_price.to_be_bytes());
        match r.contract_address {
            Some(address) => {
                buf.push(1);
                buf.extend_from_slice(address.as_slice());
            }
            None => buf.push(0),
        }
        buf.extend_from_slice(&(r.logs.len() as u64).to_be_bytes());
        for log in &r.logs {
            buf.extend_from_slice(log.address.as_slice());
            buf.push(log.data.topics().len() as u8);
            for topic in log.data.topics() {
                buf.extend_from_slice(topic.as_slice());
            }
            buf.extend_from_slice(&(log.data.data.len() as u64).to_be_bytes());
            buf.extend_from_slice(&log.data.data);
        }
        roots.extend_from_slice(keccak256(&buf).as_slice());
    }
    keccak256(&roots)
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Log, LogData};

    use super::*;

    fn receipt_with_log(data: &'static [u8]) -> ReceiptRecord {
        ReceiptRecord {
            status: true,
            gas_used: 30_000,
            cumulative_gas_used: 30_000,
            effective_gas_price: 2,
            logs: vec![Log {
                address: Address::repeat_byte(7),
                data: LogData::new_unchecked(vec![B256::repeat_byte(1)], data.into()),
            }],
            contract_address: None,
        }
    }

    #[test]
    fn the_receipts_root_covers_logs_and_order() {
        let a = receipt_with_log(b"one");
        let b = receipt_with_log(b"two");
        let root = |rs: &[&ReceiptRecord]| receipts_root(rs.iter().copied());
        assert_eq!(root(&[&a, &b]), root(&[&a, &b]));
        assert_ne!(root(&[&a]), root(&[&b]), "log data differs");
        assert_ne!(root(&[&a, &b]), root(&[&b, &a]), "order differs");
        let mut moved = a.clone();
        moved.logs[0].address = Address::repeat_byte(8);
        assert_ne!(root(&[&a]), root(&[&moved]), "log address differs");
        let digests = |receipts| Digests {
            state: B256::ZERO,
            results: B256::ZERO,
            receipts,
        };
        assert_ne!(
            next_app_hash(B256::ZERO, 1, &digests(root(&[&a]))),
            next_app_hash(B256::ZERO, 1, &digests(root(&[&b]))),
            "the app hash follows the receipts"
        );
    }
}
