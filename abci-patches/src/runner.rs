//! How a block's transactions reach revm, one after another over the block's
//! state: the two paths of the `session-cache` patch.

use std::convert::Infallible;

use alloy_primitives::Address;
use revm::{
    context::{result::EVMError, result::ExecutionResult, BlockEnv, CfgEnv, TxEnv},
    handler::{MainnetContext, MainnetEvm},
    Context, Database, DatabaseCommit, ExecuteCommitEvm, MainBuilder, MainContext,
};

use crate::state::{AccountRecord, BlockOverlay, StateDiff, StateRead, WorldState};

/// Executes and commits a block's transactions in order over one state.
pub trait TxRunner {
    /// The account at `address` as the block has left it so far.
    fn account(&self, address: &Address) -> Option<AccountRecord>;
    /// Executes `tx` and commits its changes into the block's state.
    fn run(&mut self, tx: TxEnv) -> Result<ExecutionResult, EVMError<Infallible>>;
    /// Everything the block changed.
    fn into_diff(self) -> StateDiff;
}

/// revm's mainnet EVM over `db` for the block `block`.
pub fn evm<DB: Database + DatabaseCommit>(
    db: DB,
    cfg: CfgEnv,
    block: BlockEnv,
) -> MainnetEvm<MainnetContext<DB>> {
    Context::mainnet()
        .with_db(db)
        .with_cfg(cfg)
        .with_block(block)
        .build_mainnet()
}

/// `session-cache` on: one EVM over one overlay for the whole block; revm's
/// per-transaction journal undoes what a failed transaction wrote.
pub struct OneEvm<'a> {
    evm: MainnetEvm<MainnetContext<BlockOverlay<'a>>>,
}

impl<'a> OneEvm<'a> {
    /// A runner over `world` for the block `block`.
    pub fn new(world: &'a WorldState, cfg: CfgEnv, block: BlockEnv) -> Self {
        Self {
            evm: evm(BlockOverlay::new(world), cfg, block),
        }
    }
}

impl TxRunner for OneEvm<'_> {
    fn account(&self, address: &Address) -> Option<AccountRecord> {
        StateRead::account(&self.evm.ctx.journaled_state.database, address)
    }

    fn run(&mut self, tx: TxEnv) -> Result<ExecutionResult, EVMError<Infallible>> {
        self.evm.transact_commit(tx)
    }

    fn into_diff(self) -> StateDiff {
        self.evm.ctx.journaled_state.database.into_diff()
    }
}

/// `session-cache` off: every transaction gets an EVM of its own over a
/// copy-on-write layer of the block's overlay, merged into the block when it
/// is done. Why a first implementation does this: it is the Cosmos SDK's
/// cache-wrap per transaction, and it makes it obvious that nothing of a
/// failed transaction can leak into the block; the price is a new EVM
/// context, cold caches and a merge for every transaction.
pub struct EvmPerTx<'a> {
    block: BlockOverlay<'a>,
    cfg: CfgEnv,
    env: BlockEnv,
}

impl<'a> EvmPerTx<'a> {
    /// A runner over `world` for the block `block`.
    pub fn new(world: &'a WorldState, cfg: CfgEnv, block: BlockEnv) -> Self {
        Self {
            block: BlockOverlay::new(world),
            cfg,
            env: block,
        }
    }
}

impl TxRunner for EvmPerTx<'_> {
    fn account(&self, address: &Address) -> Option<AccountRecord> {
        self.block.account(address)
    }

    fn run(&mut self, tx: TxEnv) -> Result<ExecutionResult, EVMError<Infallible>> {
        let layer = BlockOverlay::new(&self.block);
        let mut evm = evm(layer, self.cfg.clone(), self.env.clone());
        let result = evm.transact_commit(tx);
        let changes = evm.ctx.journaled_state.database.into_diff();
        self.block.merge(changes);
        result
    }

    fn into_diff(self) -> StateDiff {
        self.block.into_diff()
    }
}
