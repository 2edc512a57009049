//! The node: committed state, the block in flight between FinalizeBlock and
//! Commit, and the mempool's check state, shared by the ABCI connections and
//! the web3 server.

mod consensus;
#[cfg(test)]
mod park;
mod pool;
mod reads;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use alloy_primitives::B256;
use feth_profiler_rpc::Work;

use crate::app_pool::{AppPool, PoolLimits};
pub use crate::call::{CallFailure, CallLimits, CallOutcome, CallRequest};
use crate::dropped::{DropCounts, DropLog, Dropped};
use crate::error::TxError;
use crate::exec::ExecutedBlock;
use crate::fee_market;
use crate::genesis::Genesis;
use crate::locks::{AppLock, Poisoned, Rank, Ranked, ReadGuard, StateLock, WriteGuard};
use crate::mempool::{Admitted, CheckState};
use crate::nonce_queue::QueueConfig;
use crate::patches::{Patch, Patches};
use crate::proposal::Origin;
use crate::records::BlockRecord;
use crate::senders::SenderCache;
use crate::snapshot::Snapshots;
use crate::state::WorldState;
use crate::store::{PersistPause, Store, StoreConfig, StoreError, CAPPED_CACHE_SIZE};
use crate::tx::VerifiedTx;
use crate::verify::{Stage, Verifier};
pub use consensus::{Consensus, ConsensusNode, OwnedBlock};
pub use pool::{Refused, Reloaded};
pub use reads::RecordsRead;

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
    /// `app-mempool`'s journal could not be read or written.
    #[error(transparent)]
    Journal(#[from] crate::pool_journal::JournalError),
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

/// `optimistic-execution`: an accepted proposal being executed ahead of
/// its FinalizeBlock.
struct Speculation {
    height: u64,
    hash: B256,
    thread: std::thread::JoinHandle<Result<ExecutedBlock, NodeError>>,
}

/// `optimistic-execution`: how many FinalizeBlocks took the result of the
/// speculation on their proposal, and how many found one they dropped (on
/// another proposal, or failed). A speculation replaced by a later
/// ProcessProposal of the same height counts in neither.
#[derive(Debug, Clone, Default)]
pub struct Speculations {
    /// Speculations FinalizeBlock took.
    pub used: prometheus_client::metrics::counter::Counter,
    /// Speculations FinalizeBlock dropped.
    pub dropped: prometheus_client::metrics::counter::Counter,
}

/// The chain parameters once known.
struct Chain {
    genesis: Genesis,
    head: BlockRecord,
}

/// How a node runs: plain configuration, as `abcid`'s flags give it.
#[derive(Debug, Clone, Copy)]
pub struct NodeConfig {
    /// The tunings in force.
    pub patches: Patches,
    /// The bounds of `nonce-queue`.
    pub queue: QueueConfig,
    /// Tests: where `async-commit`'s writer stops to be killed.
    pub persist_pause: Option<PersistPause>,
    /// The bounds of `app-mempool`'s pool.
    pub pool: PoolLimits,
    /// The most gas CheckTx says a transaction wants (0: its gas limit,
    /// uncapped); see [`DEFAULT_MAX_TX_GAS_WANTED`].
    pub max_tx_gas_wanted: u64,
}

/// The default cap on the gas CheckTx answers a transaction wants: a plain
/// transfer's 21,000, the least any transaction uses. CometBFT reaps a
/// proposal's candidates by that figure against `block.max_gas`, in arrival
/// order; counted by gas limits, transactions claiming gas they never use
/// (30 M for a transfer) fill the reap and keep a paying transaction behind
/// them out of it for as long as they last. Capped, the reap takes as many
/// candidates as the block could hold of transfers, PrepareProposal orders
/// them by tip and cuts the block to its gas by their real limits.
/// cosmos/evm caps the same figure (`evm.max-tx-gas-wanted`), for the same
/// reason: a transaction's gas limit is not what it will use.
pub const DEFAULT_MAX_TX_GAS_WANTED: u64 = 21_000;

impl NodeConfig {
    /// `patches`, the default queue bounds and gas-wanted cap, no pause.
    pub fn new(patches: Patches) -> Self {
        Self {
            patches,
            queue: QueueConfig::default(),
            persist_pause: None,
            pool: PoolLimits::default(),
            max_tx_gas_wanted: DEFAULT_MAX_TX_GAS_WANTED,
        }
    }
}

/// Shared node state.
pub struct Node {
    patches: Patches,
    app_lock: AppLock,
    store: Store,
    world: StateLock<WorldState>,
    chain: RwLock<Option<Chain>>,
    pending: Mutex<Option<Pending>>,
    /// `optimistic-execution`: the last accepted proposal's execution.
    speculation: Mutex<Option<Speculation>>,
    /// `optimistic-execution`: speculations FinalizeBlock used, and dropped.
    speculations: Speculations,
    check: Mutex<CheckState>,
    /// [`NodeConfig::max_tx_gas_wanted`].
    max_tx_gas_wanted: u64,
    /// `app-mempool` on: the transactions admitted over web3.
    pool: Option<Mutex<AppPool>>,
    /// Transactions dropped after they were accepted, by reason (a leaf
    /// lock: nothing is locked while it is held).
    dropped: Mutex<DropLog>,
    /// `sender-cache` on: senders recovered by CheckTx, by transaction hash.
    senders: Option<Arc<SenderCache>>,
    /// Committed blocks and admitted transactions, as they happen.
    events: tokio::sync::broadcast::Sender<NodeEvent>,
    /// `snapshot-reads` on: the committed state web3 reads see, once the
    /// chain exists.
    snapshots: OnceLock<Snapshots>,
    /// Records web3's reads decoded ([`Node::records_read`]).
    reads: reads::ReadCounters,
    /// Tests: parks a call mid-execution until released.
    #[cfg(test)]
    pub(crate) park: park::Park,
}

/// Whether Commit hands its block to the background writer: `async-commit`,
/// which needs `ram-block-txs` (without it FinalizeBlock has already written
/// the block's transactions, and Commit moves them synchronously).
fn background_commit(patches: Patches) -> bool {
    patches.has(Patch::AsyncCommit) && patches.has(Patch::RamBlockTxs)
}

impl Node {
    /// Opens the node's state in `home`, running with `patches` (a
    /// `nonce-queue` within the default bounds).
    pub fn open(home: &Path, patches: Patches) -> Result<Self, NodeError> {
        Self::open_with(home, NodeConfig::new(patches))
    }

    /// Opens the node's state in `home`, configured by `config`.
    pub fn open_with(home: &Path, config: NodeConfig) -> Result<Self, NodeError> {
        let NodeConfig {
            patches,
            queue,
            persist_pause,
            pool,
            max_tx_gas_wanted,
        } = config;
        let config = StoreConfig {
            cache_size: patches.has(Patch::RamBlockTxs).then_some(CAPPED_CACHE_SIZE),
            background: background_commit(patches),
            pause: persist_pause,
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
            speculation: Mutex::new(None),
            speculations: Default::default(),
            check: Mutex::new(CheckState::new(queue)),
            pool: patches
                .has(Patch::AppMempool)
                .then(|| Mutex::new(AppPool::new(pool))),
            dropped: Mutex::default(),
            senders: patches
                .has(Patch::SenderCache)
                .then(|| Arc::new(SenderCache::default())),
            events: tokio::sync::broadcast::channel(EVENT_BUFFER).0,
            snapshots,
            reads: Default::default(),
            max_tx_gas_wanted,
            #[cfg(test)]
            park: Default::default(),
        })
    }

    /// Waits until every committed block is on disk (`async-commit`; at
    /// once otherwise); returns how many were not yet.
    pub fn flush(&self) -> Result<usize, NodeError> {
        Ok(self.store.flush()?)
    }

    /// `optimistic-execution`'s counters (shared: the metrics register them).
    pub fn speculations(&self) -> Speculations {
        self.speculations.clone()
    }

    /// How many committed blocks are not yet on disk (`async-commit`).
    pub fn unpersisted(&self) -> usize {
        self.store.unpersisted()
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

    /// The gas CheckTx answers `admitted` wants (see [`NodeConfig`]).
    pub fn gas_wanted(&self, admitted: &Admitted) -> u64 {
        match self.max_tx_gas_wanted {
            0 => admitted.gas_wanted(),
            cap => admitted.gas_wanted().min(cap),
        }
    }

    /// Enters the node for one ABCI call: waits for the one lock around the
    /// application when `parallel-abci` is off, and holds it until the
    /// returned [`Consensus`] is dropped. The ABCI methods are its own.
    pub fn enter(&self) -> Result<Consensus<'_>, NodeError> {
        Ok(Consensus {
            node: self,
            _app: self.app_lock.enter()?,
        })
    }

    fn world(&self) -> Result<Ranked<ReadGuard<'_, WorldState>>, NodeError> {
        Ok(Ranked::take(Rank::World, || self.world.read())?)
    }

    fn world_mut(&self) -> Result<Ranked<WriteGuard<'_, WorldState>>, NodeError> {
        Ok(Ranked::take(Rank::World, || self.world.write())?)
    }

    fn check(&self) -> Result<Ranked<MutexGuard<'_, CheckState>>, NodeError> {
        Ok(Ranked::take(Rank::Check, || {
            self.check.lock().map_err(|_| Poisoned)
        })?)
    }

    /// The drop log, locked (a leaf: take no other lock while holding it).
    fn drops(&self) -> Result<MutexGuard<'_, DropLog>, NodeError> {
        Ok(self.dropped.lock().map_err(|_| Poisoned)?)
    }

    /// Why `hash`, once accepted, was dropped, while it is remembered
    /// ([`crate::dropped`]).
    pub fn dropped(&self, hash: &B256) -> Result<Option<Dropped>, NodeError> {
        Ok(self.drops()?.get(hash).cloned())
    }

    /// How many accepted transactions were dropped, by reason.
    pub fn drop_counts(&self) -> Result<DropCounts, NodeError> {
        Ok(self.drops()?.counts())
    }

    fn chain(&self) -> Result<Ranked<RwLockReadGuard<'_, Option<Chain>>>, NodeError> {
        Ok(Ranked::take(Rank::Chain, || {
            self.chain.read().map_err(|_| Poisoned)
        })?)
    }

    fn chain_mut(&self) -> Result<Ranked<RwLockWriteGuard<'_, Option<Chain>>>, NodeError> {
        Ok(Ranked::take(Rank::Chain, || {
            self.chain.write().map_err(|_| Poisoned)
        })?)
    }

    fn with_chain<T>(&self, f: impl FnOnce(&Chain) -> T) -> Result<T, NodeError> {
        let chain = self.chain()?;
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

    /// Verifies a raw transaction without touching any state.
    pub fn verify(&self, raw: &[u8]) -> Result<Result<VerifiedTx, TxError>, NodeError> {
        Ok(self.verifier()?.verify(raw))
    }

    /// `web3-recover` (with `sender-cache`): decodes `raw` and recovers its
    /// sender into the sender cache on the caller's thread, a web3 worker,
    /// so that CheckTx, which CometBFT runs one at a time, finds it there.
    /// Bytes that do not verify are left for CheckTx to refuse with its
    /// reason; without the patches nothing is done. Marked as admission work
    /// ([`Work::CheckTx`]).
    pub fn recover_ahead(&self, raw: &[u8]) {
        if self.senders.is_some() && self.patches.has(Patch::Web3Recover) {
            if let Ok(verifier) = self.verifier() {
                Work::CheckTx.run(|| verifier.verify(raw).is_ok());
            }
        }
    }

    /// Who sent `raw` at which nonce and tip, when it verifies.
    fn origin(&self, verifier: &Verifier, raw: &[u8]) -> Option<Origin> {
        Some(Origin::of(&verifier.verify(raw).ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::TxOutcome;
    use crate::mempool::CheckKind;
    use crate::testkit::{block, signed};
    use alloy_primitives::TxKind;
    use alloy_primitives::{keccak256, Address, Bytes, U256};
    use secp256k1::SecretKey;

    const STORE_INIT: &str =
        "6017600c60003960176000f33615600b576000356000555b60005460005260206000f3";

    #[test]
    fn web3_recover_fills_the_sender_cache_before_check_tx() {
        let dir = tempfile::tempdir().unwrap();
        let (node, key, me) = crate::testkit::funded_node(dir.path(), Patches::ALL);
        let raw = signed(&key, 0, TxKind::Call(Address::repeat_byte(7)), Bytes::new());
        let hash = keccak256(&raw);
        let cache = node.senders.clone().unwrap();
        assert_eq!(cache.get(&hash), None);
        node.recover_ahead(&raw);
        assert_eq!(cache.get(&hash), Some(me));
        node.recover_ahead(b"\x02 not a transaction");
        assert_eq!(
            cache.len(),
            1,
            "bytes that do not verify are left for CheckTx"
        );

        let dir = tempfile::tempdir().unwrap();
        let without = Patches::ALL.without(Patch::Web3Recover);
        let (node, key, _) = crate::testkit::funded_node(dir.path(), without);
        let raw = signed(&key, 0, TxKind::Call(Address::repeat_byte(7)), Bytes::new());
        node.recover_ahead(&raw);
        assert!(
            node.senders.as_ref().unwrap().is_empty(),
            "before: CheckTx recovers"
        );
    }

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
        let (height, app_hash) = node.enter().unwrap().info().unwrap();
        drop(node);

        // Everything survives a reopen.
        let node = Node::open(dir.path(), Patches::ALL).unwrap();
        assert_eq!(node.enter().unwrap().info().unwrap(), (height, app_hash));
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
        assert_eq!(node.enter().unwrap().info().unwrap().0, 2);
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

    /// A pending read takes the check state and the world state in the
    /// order Commit takes them (debug builds check it), in every
    /// configuration of the patches that decide which locks it takes.
    #[test]
    fn a_pending_account_read_keeps_the_lock_order_and_sees_the_mempool() {
        let without_snapshots = Patches::ALL.without(Patch::SnapshotReads);
        for patches in [Patches::NONE, without_snapshots, Patches::ALL] {
            let dir = tempfile::tempdir().unwrap();
            let (node, key, me) = crate::testkit::funded_node(dir.path(), patches);
            let to = TxKind::Call(Address::repeat_byte(7));
            let raw = signed(&key, 0, to, Bytes::new());
            let verdict = node
                .enter()
                .unwrap()
                .check_tx(&raw, CheckKind::New)
                .unwrap();
            assert!(verdict.is_ok(), "{patches:?}: {verdict:?}");
            let pending = node.account(&me, true).unwrap().unwrap();
            let committed = node.account(&me, false).unwrap().unwrap();
            assert_eq!((pending.nonce, committed.nonce), (1, 0), "{patches:?}");
        }
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
