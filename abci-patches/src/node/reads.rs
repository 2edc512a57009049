//! The web3 side of the node: committed state, blocks and calls. Each read
//! takes what it needs itself — a snapshot with `snapshot-reads`, otherwise
//! the application lock and the state's read lock (see [`crate::locks`]) —
//! so it is never called from inside an ABCI call ([`super::Consensus`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use alloy_primitives::{Address, Bloom, Bytes, B256, U256};

use super::{Node, NodeError};
use crate::call::{CallLimits, CallOutcome, CallRequest};
use crate::genesis::Genesis;
use crate::locks::{AppGuard, Ranked, ReadGuard};
use crate::patches::Patch;
use crate::records::{BlockRecord, TxRecord};
use crate::snapshot::Snapshot;
use crate::state::{AccountRecord, StateRead, WorldState};

/// The committed state as a web3 read sees it: a snapshot
/// (`snapshot-reads`), or the consensus state under its lock, and the
/// application lock too when `parallel-abci` is off.
pub(super) enum ReadView<'a> {
    Snapshot(Arc<Snapshot>),
    Locked {
        _app: Option<AppGuard<'a>>,
        world: Ranked<ReadGuard<'a, WorldState>>,
    },
}

impl StateRead for ReadView<'_> {
    fn account(&self, address: &Address) -> Option<AccountRecord> {
        match self {
            Self::Snapshot(s) => s.account(address),
            Self::Locked { world, .. } => world.account(address),
        }
    }

    fn storage(&self, address: &Address, slot: &U256) -> U256 {
        match self {
            Self::Snapshot(s) => StateRead::storage(&**s, address, slot),
            Self::Locked { world, .. } => world.storage(address, slot),
        }
    }

    fn code(&self, hash: &B256) -> Option<revm::bytecode::Bytecode> {
        match self {
            Self::Snapshot(s) => StateRead::code(&**s, hash),
            Self::Locked { world, .. } => world.code(hash).cloned(),
        }
    }
}

impl Node {
    /// Committed account, or as the mempool sees it when `pending`.
    pub fn account(
        &self,
        address: &Address,
        pending: bool,
    ) -> Result<Option<AccountRecord>, NodeError> {
        if !pending {
            return Ok(self.read_view()?.account(address));
        }
        // The check state ranks before the world state (see `locks`): it is
        // taken first, and the committed account read under it.
        let _app = self.enter_read()?;
        let check = self.check()?;
        let committed = match self.snapshots.get() {
            Some(snapshots) => snapshots.current().account(address),
            None => self.world()?.account(address),
        };
        Ok(check.view(address, committed))
    }

    /// Committed code of `address`.
    pub fn code(&self, address: &Address) -> Result<Bytes, NodeError> {
        let view = self.read_view()?;
        Ok(view
            .account(address)
            .and_then(|a| view.code(&a.code_hash).map(|c| c.original_bytes()))
            .unwrap_or_default())
    }

    /// Committed storage slot of `address`.
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<U256, NodeError> {
        Ok(self.read_view()?.storage(address, slot))
    }

    /// What a web3 read of the store holds: nothing with `snapshot-reads`
    /// (redb's readers never block its writer), the application lock
    /// otherwise.
    fn enter_read(&self) -> Result<Option<AppGuard<'_>>, NodeError> {
        if self.patches.has(Patch::SnapshotReads) {
            Ok(None)
        } else {
            Ok(Some(self.app_lock.enter()?))
        }
    }

    /// The committed state for a web3 read (see [`ReadView`]).
    fn read_view(&self) -> Result<ReadView<'_>, NodeError> {
        if let Some(snapshots) = self.snapshots.get() {
            return Ok(ReadView::Snapshot(snapshots.current()));
        }
        let app = self.enter_read()?;
        Ok(ReadView::Locked {
            _app: app,
            world: self.world()?,
        })
    }

    /// The genesis, once InitChain has run.
    pub fn genesis(&self) -> Result<Genesis, NodeError> {
        let _app = self.enter_read()?;
        self.with_chain(|c| c.genesis.clone())
    }

    /// The last committed block.
    pub fn head(&self) -> Result<BlockRecord, NodeError> {
        let _app = self.enter_read()?;
        self.with_chain(|c| c.head.clone())
    }

    /// The account as CheckTx's execution sees it without `check-tx-lite`:
    /// committed, plus what the transactions executed since Commit changed
    /// (just committed with the patch). For tests and debugging.
    pub fn check_overlay_account(
        &self,
        address: &Address,
    ) -> Result<Option<AccountRecord>, NodeError> {
        let _app = self.app_lock.enter()?;
        let check = self.check()?;
        match check.executed().accounts.get(address) {
            Some(account) => Ok(*account),
            None => Ok(self.world()?.account(address)),
        }
    }

    /// The block at `number`.
    pub fn block(&self, number: u64) -> Result<Option<BlockRecord>, NodeError> {
        let _app = self.enter_read()?;
        let block = self.store.block(number)?;
        self.reads.blocks(block.is_some().into());
        Ok(block)
    }

    /// The block with hash `hash`.
    pub fn block_by_hash(&self, hash: &B256) -> Result<Option<BlockRecord>, NodeError> {
        let _app = self.enter_read()?;
        let block = match self.store.block_number(hash)? {
            Some(n) => self.store.block(n)?,
            None => None,
        };
        self.reads.blocks(block.is_some().into());
        Ok(block)
    }

    /// The first `end` executed transactions of `block` (all when `end` is
    /// past the last), in block order.
    pub fn block_txs(&self, block: &BlockRecord, end: usize) -> Result<Vec<TxRecord>, NodeError> {
        let _app = self.enter_read()?;
        let txs = self.store.block_txs(block, end)?;
        self.reads.txs(txs.len() as u64);
        Ok(txs)
    }

    /// How many block and transaction records the reads above decoded
    /// since the node started: the work a web3 read costs, counted.
    pub fn records_read(&self) -> RecordsRead {
        self.reads.get()
    }

    /// The logs blooms of the committed blocks `from..=to` that have one.
    pub fn log_blooms(&self, from: u64, to: u64) -> Result<Vec<(u64, Bloom)>, NodeError> {
        let _app = self.enter_read()?;
        Ok(self.store.log_blooms(from, to)?)
    }

    /// The executed transaction with hash `hash`.
    pub fn tx(&self, hash: &B256) -> Result<Option<TxRecord>, NodeError> {
        let _app = self.enter_read()?;
        let tx = self.store.tx(hash)?;
        self.reads.txs(tx.is_some().into());
        Ok(tx)
    }

    /// Runs `request` on the committed state without changing it, within
    /// `limits`; `Err` is revm's refusal of the call itself.
    pub fn call(
        &self,
        request: &CallRequest,
        limits: CallLimits,
    ) -> Result<Result<CallOutcome, String>, NodeError> {
        let (genesis, head) = self.with_chain(|c| (c.genesis.clone(), c.head.clone()))?;
        let view = self.read_view()?;
        let head = match &view {
            ReadView::Snapshot(s) => s.head().clone(),
            ReadView::Locked { .. } => head,
        };
        #[cfg(test)]
        self.park.wait_here();
        Ok(crate::call::execute(
            &view, &genesis, &head, request, limits,
        ))
    }
}

/// Records decoded by the node's reads ([`Node::records_read`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordsRead {
    /// Block records.
    pub blocks: u64,
    /// Transaction records.
    pub txs: u64,
}

/// The counters behind [`RecordsRead`].
#[derive(Debug, Default)]
pub(super) struct ReadCounters {
    blocks: AtomicU64,
    txs: AtomicU64,
}

impl ReadCounters {
    fn blocks(&self, n: u64) {
        self.blocks.fetch_add(n, Ordering::Relaxed);
    }

    fn txs(&self, n: u64) {
        self.txs.fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self) -> RecordsRead {
        RecordsRead {
            blocks: self.blocks.load(Ordering::Relaxed),
            txs: self.txs.load(Ordering::Relaxed),
        }
    }
}
