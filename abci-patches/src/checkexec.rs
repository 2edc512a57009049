//! CheckTx without the `check-tx-lite` patch: once the ledger has admitted a
//! transaction, it is executed with revm as FinalizeBlock would execute it,
//! over the committed world plus the effects of every transaction executed
//! since the last Commit, and its receipt is built and dropped.
//!
//! Why a first implementation does this: running the very code consensus runs
//! is the surest way to admit only what will execute. The verdict still comes
//! from the stateless rules and the ledger (so it is the same with the
//! patch): the ledger has already applied FinalizeBlock's nonce and funds
//! rule, so revm's nonce check is off (after a lite recheck the overlay's
//! nonce may lag the ledger's), and revm's balance check passes whenever the
//! ledger admitted (the overlay holds at least the spendable balance: the
//! ledger reserves every maximal cost and counts no incoming value).

use revm::ExecuteCommitEvm;

use crate::error::TxError;
use crate::exec::{block_env, cfg_env, receipt, tx_env};
use crate::genesis::Genesis;
use crate::records::{BlockRecord, ReceiptRecord};
use crate::runner;
use crate::state::{BlockOverlay, StateDiff, WorldState};
use crate::tx::VerifiedTx;

/// Executes `tx` over `world` plus `executed` in the block after `head`,
/// adding its effects to `executed`; returns its receipt. A transaction revm
/// refuses changes nothing and is refused with [`TxError::Execution`].
pub fn execute(
    world: &WorldState,
    genesis: &Genesis,
    head: &BlockRecord,
    executed: &mut StateDiff,
    tx: &VerifiedTx,
) -> Result<ReceiptRecord, TxError> {
    let mut cfg = cfg_env(genesis);
    cfg.disable_nonce_check = true;
    let block = block_env(genesis, head.number + 1, head.timestamp, head.hash);
    let overlay = BlockOverlay::with_diff(world, std::mem::take(executed));
    let mut evm = runner::evm(overlay, cfg, block);
    let result = evm.transact_commit(tx_env(tx));
    *executed = evm.ctx.journaled_state.database.into_diff();
    let result = result.map_err(|e| TxError::Execution(e.to_string()))?;
    Ok(receipt(result, 0, tx.effective_gas_price(genesis.base_fee)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use alloy_consensus::TxEip1559;
    use alloy_primitives::{Address, TxKind, B256, U256};

    use super::*;
    use crate::genesis::GenesisAccount;
    use crate::patches::Patches;
    use crate::state::{AccountRecord, StateRead};
    use crate::testkit::{key, sign};
    use crate::tx::VerifiedTx;
    use crate::verify::Verifier;

    const GWEI: u128 = 1_000_000_000;
    const FUNDS: u128 = 1_000_000_000_000_000_000;

    /// A chain where key 3 holds [`FUNDS`], after block 4.
    struct Chain {
        genesis: Genesis,
        world: WorldState,
        head: BlockRecord,
    }

    fn chain() -> Chain {
        let me = key(3).1;
        let balance = U256::from(FUNDS);
        let alloc = BTreeMap::from([(me, GenesisAccount { balance })]);
        let genesis = Genesis::new(9000, alloc);
        let mut world = WorldState::default();
        world.load_account(
            me,
            AccountRecord {
                balance,
                ..Default::default()
            },
        );
        let head = BlockRecord {
            number: 4,
            hash: B256::repeat_byte(4),
            parent_hash: B256::ZERO,
            timestamp: 1_800_000_000,
            timestamp_nanos: 0,
            gas_used: 0,
            gas_limit: genesis.block_gas_limit,
            base_fee: genesis.base_fee,
            miner: genesis.fee_recipient,
            app_hash: B256::ZERO,
            tx_hashes: Vec::new(),
            invalid_txs: 0,
            size: 0,
            logs_bloom: Some(alloy_primitives::Bloom::ZERO),
        };
        Chain {
            genesis,
            world,
            head,
        }
    }

    /// A transaction of key 3 paying 3 gwei at most, verified.
    fn signed(chain: &Chain, nonce: u64, gas_limit: u64, to: TxKind, input: Vec<u8>) -> VerifiedTx {
        let tx = TxEip1559 {
            chain_id: 9000,
            nonce,
            gas_limit,
            max_fee_per_gas: 3 * GWEI,
            max_priority_fee_per_gas: GWEI,
            to,
            value: U256::from(5),
            input: input.into(),
            ..Default::default()
        };
        let verifier = Verifier::new(&chain.genesis, Patches::NONE);
        verifier.verify(&sign(tx, &key(3).0)).unwrap()
    }

    /// A transfer of 5 wei by key 3.
    fn transfer(chain: &Chain, nonce: u64, gas_limit: u64) -> VerifiedTx {
        let to = TxKind::Call(Address::repeat_byte(0x77));
        signed(chain, nonce, gas_limit, to, Vec::new())
    }

    #[test]
    fn executes_over_what_was_executed_before_and_charges_actual_gas() {
        let chain = chain();
        let mut executed = StateDiff::default();
        for nonce in 0..2 {
            let tx = transfer(&chain, nonce, 50_000);
            let receipt = execute(
                &chain.world,
                &chain.genesis,
                &chain.head,
                &mut executed,
                &tx,
            )
            .unwrap();
            assert!(receipt.status);
            assert_eq!(receipt.gas_used, 21_000, "charged what it used, not 50,000");
            assert_eq!(receipt.effective_gas_price, 2 * GWEI);
        }
        let me = key(3).1;
        let overlay = BlockOverlay::with_diff(&chain.world, executed);
        let after = StateRead::account(&overlay, &me).unwrap();
        assert_eq!(after.nonce, 2);
        let spent = U256::from(2 * (21_000 * 2 * GWEI + 5));
        assert_eq!(after.balance, U256::from(FUNDS) - spent);
        assert_eq!(
            chain.world.account(&me).unwrap().nonce,
            0,
            "the world is untouched"
        );
    }

    #[test]
    fn a_transaction_revm_refuses_changes_nothing() {
        let chain = chain();
        let mut executed = StateDiff::default();
        let first = transfer(&chain, 0, 21_000);
        let world = &chain.world;
        execute(world, &chain.genesis, &chain.head, &mut executed, &first).unwrap();
        let before = executed.clone();
        // More value than the sender holds: the ledger would refuse it first;
        // revm, asked directly, refuses it too and writes nothing.
        let tx = TxEip1559 {
            chain_id: 9000,
            nonce: 1,
            gas_limit: 21_000,
            max_fee_per_gas: 3 * GWEI,
            to: TxKind::Call(Address::repeat_byte(0x77)),
            value: U256::from(FUNDS),
            ..Default::default()
        };
        let verifier = Verifier::new(&chain.genesis, Patches::NONE);
        let costly = verifier.verify(&sign(tx, &key(3).0)).unwrap();
        let refused = execute(world, &chain.genesis, &chain.head, &mut executed, &costly);
        assert!(
            matches!(&refused, Err(TxError::Execution(e)) if e.contains("funds")),
            "{refused:?}"
        );
        assert_eq!(executed, before);
    }
}
