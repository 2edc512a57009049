//! The node: committed state, the block in flight between FinalizeBlock and
//! Commit, and the mempool's check state, shared by the ABCI connections and
//! the web3 server.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::{Duration, Instant};

use alloy_consensus::Transaction as _;
use alloy_primitives::{keccak256, Address, Bloom, Bytes, B256, U256};

use crate::blocklog::BlockLine;
pub use crate::call::{CallFailure, CallLimits, CallOutcome, CallRequest};
use crate::checkexec;
use crate::error::TxError;
use crate::exec::{self, BlockInput, ExecutedBlock, Spend, TxOutcome};
use crate::fee_market;
use crate::genesis::Genesis;
use crate::locks::{AppGuard, AppLock, Poisoned, ReadGuard, StateLock, WriteGuard};
use crate::mempool::{Admitted, CheckKind, CheckState, Verdict};
use crate::nonce_queue::QueueConfig;
use crate::patches::{Patch, Patches};
use crate::proposal::{self, Origin};
use crate::senders::SenderCache;
use crate::snapshot::{Snapshot, Snapshots};
use crate::state::{AccountRecord, StateDiff, StateRead, WorldState};
use crate::store::{
    BlockBatch, BlockRecord, Store, StoreConfig, StoreError, TxRecord, CAPPED_CACHE_SIZE,
};
use crate::tx::VerifiedTx;
use crate::verify::{Stage, Verifier};

/// How many events the feed holds for its slowest reader; a reader further
/// behind misses events and is told so ([`tokio::sync::broadcast`]'s
/// `Lagged`), so no reader ever holds the node back.
pub const EVENT_BUFFER: usize = 4096;

/// What the node announces to web3 subscribers and filters.
#[derive(Debug, Clone)]
pub enum NodeEvent {
    /// A block was committed and is now the head.
    Block(Arc<BlockRecord>),
    /// A new transaction was admitted by CheckTx (not a recheck).
    PendingTx(B256),
}

/// Why the node could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Persistence failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The genesis in CometBFT's genesis.json is not valid.
    #[error("invalid app_state in genesis: {0}")]
    Genesis(#[from] serde_json::Error),
    /// A block was delivered before InitChain.
    #[error("the chain is not initialised (no InitChain yet)")]
    NotInitialised,
    /// Commit without a FinalizeBlock before it.
    #[error("commit without a finalized block")]
    NothingToCommit,
    /// FinalizeBlock of a height other than the one after the last
    /// committed block: a replayed old block, or one from the future.
    #[error("FinalizeBlock of height {got} refused: the last committed block is {head}, so only height {} may follow; is another client than this node's CometBFT connected, or does CometBFT's data belong to another chain?", head + 1)]
    UnexpectedHeight {
        /// The height asked for.
        got: u64,
        /// The last committed height.
        head: u64,
    },
    /// A lock was poisoned by a panic elsewhere.
    #[error("internal state lock poisoned")]
    Poisoned,
}

impl From<Poisoned> for NodeError {
    fn from(_: Poisoned) -> Self {
        Self::Poisoned
    }
}

/// The block between FinalizeBlock and Commit. With `ram-block-txs` its
/// transactions are here; without, FinalizeBlock staged them in the store
/// and `block.batch.txs` is empty.
struct Pending {
    block: ExecutedBlock,
    finalize: Duration,
}

/// The chain parameters once known.
struct Chain {
    genesis: Genesis,
    head: BlockRecord,
}

/// Shared node state.
pub struct Node {
    patches: Patches,
    app_lock: AppLock,
    store: Store,
    world: StateLock<WorldState>,
    chain: RwLock<Option<Chain>>,
    pending: Mutex<Option<Pending>>,
    check: Mutex<CheckState>,
    /// `sender-cache` on: senders recovered by CheckTx, by transaction hash.
    senders: Option<Arc<SenderCache>>,
    /// Committed blocks and admitted transactions, as they happen.
    events: tokio::sync::broadcast::Sender<NodeEvent>,
    /// `snapshot-reads` on: the committed state web3 reads see, once the
    /// chain exists.
    snapshots: OnceLock<Snapshots>,
    /// Tests: parks a call mid-execution until released.
    #[cfg(test)]
    pub(crate) park: crate::testkit::Park,
}

/// The committed state as a web3 read sees it: a snapshot
/// (`snapshot-reads`), or the consensus state under its lock, and the
/// application lock too when `parallel-abci` is off.
enum ReadView<'a> {
    Snapshot(Arc<Snapshot>),
    Locked {
        _app: Option<AppGuard<'a>>,
        world: ReadGuard<'a, WorldState>,
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
    /// Opens the node's state in `home`, running with `patches` (a
    /// `nonce-queue` within the default bounds).
    pub fn open(home: &Path, patches: Patches) -> Result<Self, NodeError> {
        Self::open_with(home, patches, QueueConfig::default())
    }

    /// Opens the node's state in `home`, running with `patches`; with
    /// `nonce-queue`, future nonces are queued within `queue`.
    pub fn open_with(home: &Path, patches: Patches, queue: QueueConfig) -> Result<Self, NodeError> {
        let config = StoreConfig {
            cache_size: patches.has(Patch::RamBlockTxs).then_some(CAPPED_CACHE_SIZE),
        };
        let store = Store::open(&home.join("state.redb"), config)?;
        let (world, chain) = match (store.genesis()?, store.head()?) {
            (Some(genesis), Some(head)) => {
                let head = store.block(head.height)?.ok_or(NodeError::NotInitialised)?;
                (store.load_world()?, Some(Chain { genesis, head }))
            }
            _ => (WorldState::default(), None),
        };
        let snapshots = OnceLock::new();
        if let (true, Some(chain)) = (patches.has(Patch::SnapshotReads), chain.as_ref()) {
            let _ = snapshots.set(Snapshots::new(&world, chain.head.clone()));
        }
        Ok(Self {
            patches,
            app_lock: AppLock::new(patches.has(Patch::ParallelAbci)),
            store,
            world: StateLock::new(world, patches.has(Patch::RwLock)),
            chain: RwLock::new(chain),
            pending: Mutex::new(None),
            check: Mutex::new(CheckState::new(queue)),
            senders: patches
                .has(Patch::SenderCache)
                .then(|| Arc::new(SenderCache::default())),
            events: tokio::sync::broadcast::channel(EVENT_BUFFER).0,
            snapshots,
            #[cfg(test)]
            park: Default::default(),
        })
    }

    /// A feed of what happens from now on: committed blocks and admitted
    /// transactions. Sending never waits for a reader.
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<NodeEvent> {
        self.events.subscribe()
    }

    /// The patches in force.
    pub fn patches(&self) -> Patches {
        self.patches
    }

    /// Enters the application: waits for the one lock around it when
    /// `parallel-abci` is off. Every ABCI call and every web3 read holds the
    /// returned guard for its whole length.
    pub fn enter(&self) -> Result<AppGuard<'_>, NodeError> {
        Ok(self.app_lock.enter()?)
    }

    /// What a web3 read of the store holds: nothing with `snapshot-reads`
    /// (redb's readers never block its writer), the application lock
    /// otherwise.
    fn enter_read(&self) -> Result<Option<AppGuard<'_>>, NodeError> {
        if self.patches.has(Patch::SnapshotReads) {
            Ok(None)
        } else {
            Ok(Some(self.enter()?))
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

    fn world(&self) -> Result<ReadGuard<'_, WorldState>, NodeError> {
        Ok(self.world.read()?)
    }

    fn world_mut(&self) -> Result<WriteGuard<'_, WorldState>, NodeError> {
        Ok(self.world.write()?)
    }

    fn check(&self) -> Result<MutexGuard<'_, CheckState>, NodeError> {
        self.check.lock().map_err(|_| NodeError::Poisoned)
    }

    fn with_chain<T>(&self, f: impl FnOnce(&Chain) -> T) -> Result<T, NodeError> {
        let chain = self.chain.read().map_err(|_| NodeError::Poisoned)?;
        chain.as_ref().map(f).ok_or(NodeError::NotInitialised)
    }

    /// The verifier of this chain, once InitChain has run.
    pub fn verifier(&self) -> Result<Verifier, NodeError> {
        self.with_chain(|c| {
            Verifier::new(&c.genesis, self.patches)
                .with_senders(self.senders.as_ref(), Stage::Mempool)
        })
    }

    /// The block gas limit, once InitChain has run. Does not enter the
    /// application: ABCI calls, which hold it already, ask for it.
    pub fn block_gas_limit(&self) -> Result<u64, NodeError> {
        self.with_chain(|c| c.genesis.block_gas_limit)
    }

    /// The base fee of the next block ([`fee_market::next_base_fee`]).
    pub fn next_base_fee(&self) -> Result<u64, NodeError> {
        self.with_chain(|c| fee_market::next_base_fee(&c.genesis, &c.head))
    }

    /// PrepareProposal with a fee market: leaves out the transactions whose
    /// fee cap is below the next block's base fee, and every later one of
    /// their senders (their nonces would follow a gap). They stay in the
    /// mempool until the base fee falls back (CheckTx refuses new ones).
    pub fn priced_for_next_block<T: AsRef<[u8]>>(&self, txs: Vec<T>) -> Result<Vec<T>, NodeError> {
        let (market, base_fee) = self.with_chain(|c| {
            let base_fee = fee_market::next_base_fee(&c.genesis, &c.head);
            (c.genesis.fee_market.is_some(), u128::from(base_fee))
        })?;
        let cap = |raw: &T| proposal::fee_cap(raw.as_ref());
        if !market || txs.iter().all(|raw| cap(raw).is_none_or(|c| c >= base_fee)) {
            return Ok(txs);
        }
        let verifier = self.verifier()?;
        let mut blocked = std::collections::HashSet::new();
        Ok(txs
            .into_iter()
            .filter(|raw| {
                // Undecodable ones are FinalizeBlock's to refuse.
                let Some(origin) = self.origin(&verifier, raw.as_ref()) else {
                    return true;
                };
                if blocked.contains(&origin.sender) {
                    return false;
                }
                if cap(raw).is_some_and(|c| c < base_fee) {
                    blocked.insert(origin.sender);
                    return false;
                }
                true
            })
            .collect())
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

    /// Last committed height and app hash, for Info (`(0, empty)` before InitChain).
    pub fn info(&self) -> Result<(u64, B256), NodeError> {
        let chain = self.chain.read().map_err(|_| NodeError::Poisoned)?;
        Ok(chain
            .as_ref()
            .map_or((0, B256::ZERO), |c| (c.head.number, c.head.app_hash)))
    }

    /// InitChain: applies the genesis allocation and stores block `initial_height - 1`.
    /// Idempotent: a second InitChain (after a crash before block 1) returns
    /// the stored genesis app hash.
    pub fn init_chain(
        &self,
        app_state: &[u8],
        initial_height: u64,
        time_secs: u64,
    ) -> Result<B256, NodeError> {
        let existing = self
            .chain
            .read()
            .map_err(|_| NodeError::Poisoned)?
            .as_ref()
            .map(|c| c.head.app_hash);
        if let Some(app_hash) = existing {
            return Ok(app_hash);
        }
        let genesis = Genesis::from_app_state(app_state)?;
        let mut diff = StateDiff::default();
        for (address, account) in &genesis.alloc {
            diff.accounts.insert(
                *address,
                Some(AccountRecord {
                    balance: account.balance,
                    ..Default::default()
                }),
            );
        }
        let genesis_json = serde_json::to_vec(&genesis)?;
        let app_hash = keccak256(
            [
                keccak256(&genesis_json).as_slice(),
                diff.digest().as_slice(),
            ]
            .concat(),
        );
        let number = initial_height.saturating_sub(1);
        let block = BlockRecord {
            number,
            hash: keccak256(app_hash),
            parent_hash: B256::ZERO,
            timestamp: time_secs,
            timestamp_nanos: 0,
            gas_used: 0,
            gas_limit: genesis.block_gas_limit,
            base_fee: genesis.base_fee,
            miner: genesis.fee_recipient,
            app_hash,
            tx_hashes: Vec::new(),
            invalid_txs: 0,
            size: 0,
            logs_bloom: Some(alloy_primitives::Bloom::ZERO),
        };
        let batch = BlockBatch {
            block: block.clone(),
            txs: Vec::new(),
            diff,
        };
        self.store.init(&genesis, &batch)?;
        {
            let mut world = self.world_mut()?;
            world.apply(&batch.diff);
            if self.patches.has(Patch::SnapshotReads) {
                let _ = self.snapshots.set(Snapshots::new(&world, block.clone()));
            }
        }
        *self.chain.write().map_err(|_| NodeError::Poisoned)? = Some(Chain {
            genesis,
            head: block,
        });
        Ok(app_hash)
    }

    /// Verifies a raw transaction without touching any state.
    pub fn verify(&self, raw: &[u8]) -> Result<Result<VerifiedTx, TxError>, NodeError> {
        Ok(self.verifier()?.verify(raw))
    }

    /// CheckTx of `kind`: verifies `raw` and admits it into the check state.
    /// The verdict is the stateless rules' and the ledger's, whatever the
    /// patches; they only change how much work reaches it. With
    /// `nonce-queue`, a nonce ahead of the sender's next one is queued
    /// ([`crate::nonce_queue`]) instead of refused.
    pub fn check_tx(&self, raw: &[u8], kind: CheckKind) -> Result<Verdict, NodeError> {
        let lite_recheck = self.patches.has(Patch::LiteRecheck);
        let queue = self.patches.has(Patch::NonceQueue);
        let hash = keccak256(raw);
        if kind == CheckKind::Recheck && queue && self.check()?.queue().was_replaced(&hash) {
            return Ok(Err(TxError::Replaced));
        }
        // Without `lite-recheck` a recheck is a full CheckTx, as recheck is
        // in CometBFT's own examples: decode, recover, and all that follows.
        if kind == CheckKind::Recheck && lite_recheck {
            let mut check = self.check()?;
            let read = |sender: &Address| Ok::<_, NodeError>(self.world()?.account(sender));
            match (check.recheck(&hash, read)?, queue) {
                // Rechecked before its predecessor (CometBFT rechecks in
                // arrival order): queued again by the full path below.
                (Some(Err(TxError::NonceTooHigh { .. })), true) => {}
                (Some(verdict), _) => {
                    if let (true, Ok(admitted)) = (queue, &verdict) {
                        self.promote(&mut check, &admitted.spend.sender)?;
                    }
                    return Ok(verdict);
                }
                (None, _) => {}
            }
        }
        let verified = match self.verify(raw)? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        // A new transaction must pay the next block's base fee; one already
        // admitted stays while the base fee is above it (as in geth's pool).
        if kind == CheckKind::New {
            if let Err(e) = fee_market::covers(&verified, self.next_base_fee()?) {
                return Ok(Err(e));
            }
        }
        let spend = Spend::from(&verified);
        let mut check = self.check()?;
        let committed = self.world()?.account(&verified.sender);
        let current = check.view(&spend.sender, committed).unwrap_or_default();
        let expected = current.nonce;
        let verdict = if queue && spend.nonce > expected {
            let admitted = Admitted::from(&verified);
            check
                .queue_mut()
                .queue(verified, expected, current.balance)
                .map(|()| admitted)
        } else {
            self.admit(&mut check, &verified, committed)?
        };
        if let Err(e @ TxError::QueuedExpired { .. }) = &verdict {
            tracing::info!(target: "abcid::nonce_queue", %hash, sender = %spend.sender, "{e}; evicted");
        }
        if kind == CheckKind::New && verdict.is_ok() {
            // No receiver is not an error: nobody is listening.
            let _ = self.events.send(NodeEvent::PendingTx(hash));
        }
        if queue && verdict.is_ok() {
            self.promote(&mut check, &spend.sender)?;
        }
        Ok(verdict)
    }

    /// Admits `verified` into `check` if its nonce and funds allow,
    /// executing it first without `check-tx-lite`.
    fn admit(
        &self,
        check: &mut CheckState,
        verified: &VerifiedTx,
        committed: Option<AccountRecord>,
    ) -> Result<Verdict, NodeError> {
        let spend = Spend::from(verified);
        let current = match check.admissible(&spend, committed) {
            Ok(current) => current,
            Err(e) => return Ok(Err(e)),
        };
        if !self.patches.has(Patch::CheckTxLite) {
            // Before: execute it as FinalizeBlock would (see `checkexec`).
            let chain = self.chain.read().map_err(|_| NodeError::Poisoned)?;
            let chain = chain.as_ref().ok_or(NodeError::NotInitialised)?;
            let world = self.world()?;
            let executed = check.executed_mut();
            let run = checkexec::execute(&world, &chain.genesis, &chain.head, executed, verified);
            if let Err(e) = run {
                return Ok(Err(e));
            }
        }
        check.reserve(&spend, current);
        let admitted = Admitted::from(verified);
        if self.patches.has(Patch::LiteRecheck) {
            check.record(admitted, committed);
        }
        Ok(Ok(admitted))
    }

    /// `nonce-queue`: admits the queued transactions of `sender` that now
    /// follow its pending nonce, in order, until one is missing or refused
    /// (a refused one is left to its recheck).
    fn promote(&self, check: &mut CheckState, sender: &Address) -> Result<(), NodeError> {
        let committed = self.world()?.account(sender);
        loop {
            let next = check.view(sender, committed).unwrap_or_default().nonce;
            let Some(queued) = check.queue_mut().take(sender, next) else {
                return Ok(());
            };
            if let Err(e) = self.admit(check, &queued.tx, committed)? {
                tracing::debug!(hash = %queued.tx.hash, error = %e, "queued transaction not promoted");
                return Ok(());
            }
        }
    }

    /// Who sent `raw` at which nonce and tip, when it verifies.
    fn origin(&self, verifier: &Verifier, raw: &[u8]) -> Option<Origin> {
        let tx = verifier.verify(raw).ok()?;
        let tip = tx
            .envelope
            .max_priority_fee_per_gas()
            .unwrap_or(tx.envelope.max_fee_per_gas());
        Some(Origin {
            sender: tx.sender,
            nonce: tx.envelope.nonce(),
            tip,
        })
    }

    /// `nonce-queue`'s PrepareProposal order ([`proposal::order_by_nonce`])
    /// over the committed nonces.
    pub fn order_by_nonce<T: AsRef<[u8]> + Clone>(&self, txs: &[T]) -> Result<Vec<T>, NodeError> {
        let verifier = self.verifier()?;
        let world = self.world()?;
        Ok(proposal::order_by_nonce(
            txs,
            |raw| self.origin(&verifier, raw.as_ref()),
            |sender| world.account(sender).map_or(0, |a| a.nonce),
        ))
    }

    /// `nonce-queue`'s ProcessProposal rule ([`proposal::has_nonce_gap`])
    /// over the committed nonces.
    pub fn has_nonce_gap<T: AsRef<[u8]>>(&self, txs: &[T]) -> Result<bool, NodeError> {
        let verifier = self.verifier()?;
        let world = self.world()?;
        Ok(proposal::has_nonce_gap(
            txs,
            |raw| self.origin(&verifier, raw.as_ref()),
            |sender| world.account(sender).map_or(0, |a| a.nonce),
        ))
    }

    /// FinalizeBlock: executes the block and keeps it until Commit (its
    /// transactions staged in the store without `ram-block-txs`). Only the
    /// height after the last committed block is executed
    /// ([`NodeError::UnexpectedHeight`] otherwise).
    /// Returns each transaction's outcome and the new app hash.
    pub fn finalize_block(
        &self,
        input: &BlockInput<'_>,
    ) -> Result<(Vec<TxOutcome>, B256), NodeError> {
        let started = Instant::now();
        let mut executed = {
            let chain = self.chain.read().map_err(|_| NodeError::Poisoned)?;
            let chain = chain.as_ref().ok_or(NodeError::NotInitialised)?;
            let head = chain.head.number;
            if head.checked_add(1) != Some(input.height) {
                return Err(NodeError::UnexpectedHeight {
                    got: input.height,
                    head,
                });
            }
            let verifier = Verifier::new(&chain.genesis, self.patches)
                .with_senders(self.senders.as_ref(), Stage::Block);
            let world = self.world()?;
            exec::execute_block(&world, &chain.genesis, &verifier, &chain.head, input)
        };
        if !self.patches.has(Patch::RamBlockTxs) {
            // Before: the transactions and their receipts go to the store now
            // and Commit reads them back, so that nothing of an uncommitted
            // block lives only in memory.
            self.store
                .stage_txs(&std::mem::take(&mut executed.batch.txs))?;
        }
        let result = (executed.outcomes.clone(), executed.batch.block.app_hash);
        *self.pending.lock().map_err(|_| NodeError::Poisoned)? = Some(Pending {
            block: executed,
            finalize: started.elapsed(),
        });
        Ok(result)
    }

    /// Commit: persists the pending block atomically, then makes it visible.
    pub fn commit(&self) -> Result<BlockLine, NodeError> {
        let started = Instant::now();
        let pending = self
            .pending
            .lock()
            .map_err(|_| NodeError::Poisoned)?
            .take()
            .ok_or(NodeError::NothingToCommit)?;
        let Pending { block, finalize } = pending;
        let valid = block.valid();
        let invalid = block.outcomes.len() - valid;
        let batch = block.batch;
        let store_started = Instant::now();
        if self.patches.has(Patch::RamBlockTxs) {
            self.store.commit(&batch)?;
        } else {
            self.store.commit_staged(&batch)?;
        }
        let store = store_started.elapsed();
        {
            let mut check = self.check()?;
            self.world_mut()?.apply(&batch.diff);
            check.commit(&batch.diff, self.patches.has(Patch::LiteRecheck));
        }
        let record = batch.block;
        if let Some(snapshots) = self.snapshots.get() {
            snapshots.commit(batch.diff, record.clone());
        }
        let line = BlockLine {
            height: record.number,
            valid,
            invalid,
            finalize,
            commit: started.elapsed(),
            store,
            time_secs: record.timestamp,
            time_nanos: record.timestamp_nanos,
            app_hash: record.app_hash,
        };
        {
            let mut chain = self.chain.write().map_err(|_| NodeError::Poisoned)?;
            if let Some(chain) = chain.as_mut() {
                chain.head = record.clone();
            }
        }
        // No receiver is not an error: nobody is listening.
        let _ = self.events.send(NodeEvent::Block(Arc::new(record)));
        Ok(line)
    }

    /// Committed account, or as the mempool sees it when `pending`.
    pub fn account(
        &self,
        address: &Address,
        pending: bool,
    ) -> Result<Option<AccountRecord>, NodeError> {
        let view = self.read_view()?;
        if pending {
            let committed = view.account(address);
            Ok(self.check()?.view(address, committed))
        } else {
            Ok(view.account(address))
        }
    }

    /// The account as CheckTx's execution sees it without `check-tx-lite`:
    /// committed, plus what the transactions executed since Commit changed
    /// (just committed with the patch). For tests and debugging.
    pub fn check_overlay_account(
        &self,
        address: &Address,
    ) -> Result<Option<AccountRecord>, NodeError> {
        let _app = self.enter()?;
        let check = self.check()?;
        match check.executed().accounts.get(address) {
            Some(account) => Ok(*account),
            None => Ok(self.world()?.account(address)),
        }
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

    /// The block at `number`.
    pub fn block(&self, number: u64) -> Result<Option<BlockRecord>, NodeError> {
        let _app = self.enter_read()?;
        Ok(self.store.block(number)?)
    }

    /// The block with hash `hash`.
    pub fn block_by_hash(&self, hash: &B256) -> Result<Option<BlockRecord>, NodeError> {
        let _app = self.enter_read()?;
        match self.store.block_number(hash)? {
            Some(n) => Ok(self.store.block(n)?),
            None => Ok(None),
        }
    }

    /// The first `end` executed transactions of `block` (all when `end` is
    /// past the last), in block order.
    pub fn block_txs(&self, block: &BlockRecord, end: usize) -> Result<Vec<TxRecord>, NodeError> {
        let _app = self.enter_read()?;
        Ok(self.store.block_txs(block, end)?)
    }

    /// The logs blooms of the committed blocks `from..=to` that have one.
    pub fn log_blooms(&self, from: u64, to: u64) -> Result<Vec<(u64, Bloom)>, NodeError> {
        let _app = self.enter_read()?;
        Ok(self.store.log_blooms(from, to)?)
    }

    /// The executed transaction with hash `hash`.
    pub fn tx(&self, hash: &B256) -> Result<Option<TxRecord>, NodeError> {
        let _app = self.enter_read()?;
        Ok(self.store.tx(hash)?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{block, signed};
    use alloy_primitives::TxKind;
    use secp256k1::SecretKey;

    const STORE_INIT: &str =
        "6017600c60003960176000f33615600b576000356000555b60005460005260206000f3";

    #[test]
    fn deploy_store_call_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let (node, key, me) = crate::testkit::funded_node(dir.path(), Patches::ALL);

        let init = Bytes::from(hex::decode(STORE_INIT).unwrap());
        let out = block(&node, 1, &[signed(&key, 0, TxKind::Create, init)]);
        assert!(
            matches!(out[0], TxOutcome::Executed { success: true, .. }),
            "{out:?}"
        );
        let contract = me.create(0);
        assert_eq!(node.code(&contract).unwrap().len(), 23);

        let word = Bytes::from(U256::from(0xfeed_u64).to_be_bytes::<32>().to_vec());
        let call = CallRequest {
            from: Some(me),
            to: Some(contract),
            input: word.clone(),
            ..Default::default()
        };
        let outcome = node.call(&call, CallLimits::default()).unwrap().unwrap();
        assert!(
            outcome.gas_used > 21_000 + 22_100,
            "SSTORE is charged: {outcome:?}"
        );

        let out = block(&node, 2, &[signed(&key, 1, TxKind::Call(contract), word)]);
        assert!(
            matches!(out[0], TxOutcome::Executed { success: true, .. }),
            "{out:?}"
        );
        assert_eq!(
            node.storage(&contract, &U256::ZERO).unwrap(),
            U256::from(0xfeed_u64)
        );
        let (height, app_hash) = node.info().unwrap();
        drop(node);

        // Everything survives a reopen.
        let node = Node::open(dir.path(), Patches::ALL).unwrap();
        assert_eq!(node.info().unwrap(), (height, app_hash));
        assert_eq!(
            node.storage(&contract, &U256::ZERO).unwrap(),
            U256::from(0xfeed_u64)
        );
        let read = CallRequest {
            to: Some(contract),
            ..Default::default()
        };
        let outcome = node.call(&read, CallLimits::default()).unwrap().unwrap();
        assert_eq!(
            U256::from_be_slice(&outcome.output.unwrap()),
            U256::from(0xfeed_u64)
        );
    }
    /// Drives one call parked mid-execution against FinalizeBlock, Commit
    /// and CheckTx through the ABCI application on another thread; returns
    /// whether they completed while the call was parked (then releases it
    /// and checks that everything finished).
    fn commit_while_a_call_is_parked(patches: Patches) -> bool {
        use std::sync::mpsc::channel;
        let dir = tempfile::tempdir().unwrap();
        let (node, key, me) = crate::testkit::funded_node(dir.path(), patches);
        let node = Arc::new(node);
        let to = TxKind::Call(Address::repeat_byte(7));
        block(&node, 1, &[signed(&key, 0, to, Bytes::new())]);

        let (parked, release) = node.park.arm();
        let (call_done_tx, call_done) = channel();
        let reader = node.clone();
        let call = std::thread::spawn(move || {
            let request = CallRequest {
                from: Some(me),
                to: Some(Address::repeat_byte(7)),
                ..Default::default()
            };
            let outcome = reader.call(&request, CallLimits::default());
            call_done_tx.send(()).unwrap();
            outcome.unwrap().unwrap()
        });
        parked
            .recv_timeout(Duration::from_secs(60))
            .expect("the call parks");

        let (step_tx, steps) = channel();
        let app = crate::app::AbciApp::new(node.clone(), None);
        let consensus = std::thread::spawn(move || consensus_steps(&app, &key, &step_tx));
        let committed_while_parked = if patches.has(Patch::SnapshotReads) {
            // FinalizeBlock, Commit and CheckTx finish while the call is
            // still parked.
            for step in ["finalized", "committed", "checked"] {
                assert_eq!(steps.recv_timeout(Duration::from_secs(60)), Ok(step));
            }
            assert!(call_done.try_recv().is_err(), "the call is still parked");
            true
        } else {
            // Commit waits for the reader: not done while the call is
            // parked (observed for a while), done once it is released.
            let mut early = Vec::new();
            while let Ok(step) = steps.recv_timeout(Duration::from_millis(500)) {
                early.push(step);
            }
            assert!(
                !early.contains(&"committed"),
                "Commit did not wait: {early:?}"
            );
            false
        };
        release.send(()).unwrap();
        let outcome = call.join().unwrap();
        assert!(outcome.output.is_ok(), "{outcome:?}");
        consensus.join().unwrap();
        assert_eq!(node.info().unwrap().0, 2);
        committed_while_parked
    }

    /// Block 2 through the ABCI application (its lock too), then CheckTx of
    /// the next transaction, announcing each step.
    fn consensus_steps(
        app: &crate::app::AbciApp,
        key: &SecretKey,
        step: &std::sync::mpsc::Sender<&'static str>,
    ) {
        use tendermint_abci::Application;
        use tendermint_proto::google::protobuf::Timestamp;
        use tendermint_proto::v0_38::abci::{CheckTxType, RequestCheckTx, RequestFinalizeBlock};
        let to = TxKind::Call(Address::repeat_byte(7));
        let response = app.finalize_block(RequestFinalizeBlock {
            txs: vec![signed(key, 1, to, Bytes::new()).0],
            hash: keccak256(2u64.to_be_bytes()).to_vec().into(),
            height: 2,
            time: Some(Timestamp {
                seconds: 1_800_000_002,
                nanos: 0,
            }),
            ..Default::default()
        });
        assert_eq!(response.tx_results[0].code, 0, "{response:?}");
        step.send("finalized").unwrap();
        app.commit();
        step.send("committed").unwrap();
        let checked = app.check_tx(RequestCheckTx {
            tx: signed(key, 2, to, Bytes::new()).0,
            r#type: CheckTxType::New as i32,
        });
        assert_eq!(checked.code, 0, "{checked:?}");
        step.send("checked").unwrap();
    }

    #[test]
    fn with_snapshot_reads_consensus_never_waits_for_a_call() {
        assert!(commit_while_a_call_is_parked(Patches::ALL));
        assert!(commit_while_a_call_is_parked(Patches::only(
            Patch::SnapshotReads
        )));
    }

    #[test]
    fn without_snapshot_reads_commit_waits_for_a_call() {
        let before = Patches::ALL.without(Patch::SnapshotReads);
        assert!(!commit_while_a_call_is_parked(before));
        assert!(!commit_while_a_call_is_parked(Patches::NONE));
    }
}
