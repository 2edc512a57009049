//! The consensus side of the node: what CometBFT's ABCI connections call,
//! each call inside [`Consensus`], the node entered for its whole length.
//!
//! The rule this module's types enforce (see [`crate::locks`] for the lock
//! order): ABCI methods exist only on [`Consensus`], which holds the
//! application lock when `parallel-abci` is off, and the ABCI connections
//! hold only a [`ConsensusNode`], which offers nothing but entering. So no
//! ABCI call can reach a web3-side method, which takes that lock itself and
//! would wait forever for the lock its caller holds. Without entering, an
//! ABCI method cannot be called at all:
//!
//! ```compile_fail
//! fn commit_unentered(node: &abcid::node::Node) {
//!     let _ = node.commit();
//! }
//! ```
//!
//! ```
//! fn commit_entered(node: &abcid::node::Node) -> Result<(), abcid::node::NodeError> {
//!     node.enter()?.commit().map(drop)
//! }
//! ```

use std::sync::Arc;
use std::time::Instant;

use alloy_primitives::{keccak256, Address, Bytes, B256};
use feth_profiler_rpc::Work;

use super::{Chain, Node, NodeError, NodeEvent, Pending, Speculation};
use crate::blocklog::BlockLine;
use crate::checkexec;
use crate::dropped::DropKind;
use crate::error::TxError;
use crate::exec::{self, BlockInput, ExecutedBlock, Spend, TxOutcome};
use crate::fee_market;
use crate::genesis::Genesis;
use crate::locks::AppGuard;
use crate::mempool::{Admitted, CheckKind, CheckState, Verdict};
use crate::patches::{Patch, Patches};
use crate::proposal::{self, BlockRoom, Candidate, ProposalFault, ProposalLedger};
use crate::records::BlockRecord;
use crate::snapshot::Snapshots;
use crate::state::{AccountRecord, StateDiff};
use crate::store::BlockBatch;
use crate::tx::VerifiedTx;
use crate::verify::{Stage, Verifier};

/// A transaction's stateless rules and sender recovery, as the verifier
/// applies them.
type Verify<'a> = dyn Fn(&[u8]) -> Result<VerifiedTx, TxError> + 'a;

/// The committed account of an address.
type Committed<'a> = dyn Fn(&Address) -> Option<AccountRecord> + 'a;

/// What an ABCI connection holds of the node: it can only
/// [`enter`](Self::enter) it.
#[derive(Clone)]
pub struct ConsensusNode(Arc<Node>);

impl ConsensusNode {
    /// The consensus side of `node`.
    pub fn new(node: Arc<Node>) -> Self {
        Self(node)
    }

    /// Enters the node for one ABCI call ([`Node::enter`]).
    pub fn enter(&self) -> Result<Consensus<'_>, NodeError> {
        self.0.enter()
    }

    /// The patches in force.
    pub fn patches(&self) -> Patches {
        self.0.patches()
    }

    /// `optimistic-execution` (with `parallel-abci`): starts executing
    /// `block`, a proposal ProcessProposal accepted, on a thread of its own
    /// (which first runs `on_start`: the profiler's tag), in place of any
    /// earlier speculation, whose result is then dropped. Does nothing
    /// without those patches, or if no thread can be started.
    pub fn speculate(&self, block: OwnedBlock, on_start: fn()) {
        let patches = self.0.patches;
        if !(patches.has(Patch::OptimisticExecution) && patches.has(Patch::ParallelAbci)) {
            return;
        }
        let node = Arc::clone(&self.0);
        let (height, hash) = (block.height, block.hash);
        let spawned = std::thread::Builder::new()
            .name("speculate".into())
            .spawn(move || {
                on_start();
                node.execute(&block.input())
            });
        let thread = match spawned {
            Ok(thread) => thread,
            Err(e) => {
                tracing::warn!(height, error = %e, "cannot start optimistic execution; FinalizeBlock will execute");
                return;
            }
        };
        if let Ok(mut slot) = self.0.speculation.lock() {
            *slot = Some(Speculation {
                height,
                hash,
                thread,
            });
        }
    }
}

/// A block as ProcessProposal and FinalizeBlock receive it, owned, so that
/// it can also be executed on another thread.
#[derive(Debug, Clone)]
pub struct OwnedBlock {
    /// Height.
    pub height: u64,
    /// CometBFT block hash.
    pub hash: B256,
    /// Header time: seconds since the epoch.
    pub time_secs: u64,
    /// Header time: nanoseconds within the second.
    pub time_nanos: u32,
    /// The raw transactions, in order.
    pub txs: Vec<Bytes>,
}

impl OwnedBlock {
    /// The block as execution reads it.
    pub fn input(&self) -> BlockInput<'_> {
        BlockInput {
            height: self.height,
            hash: self.hash,
            time_secs: self.time_secs,
            time_nanos: self.time_nanos,
            txs: &self.txs,
        }
    }
}

impl Node {
    /// Executes `input`, which must be the block after the head
    /// ([`NodeError::UnexpectedHeight`] otherwise), over the committed state.
    fn execute(&self, input: &BlockInput<'_>) -> Result<ExecutedBlock, NodeError> {
        let chain = self.chain()?;
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
        Ok(exec::execute_block(
            &world,
            &chain.genesis,
            &verifier,
            &chain.head,
            input,
        ))
    }

    /// `optimistic-execution`: the speculation's result when it executed
    /// `input`'s block (same height and block hash) and succeeded; any other
    /// speculation is dropped (its thread ends on its own, unjoined).
    fn speculated(&self, input: &BlockInput<'_>) -> Result<Option<ExecutedBlock>, NodeError> {
        let taken = self
            .speculation
            .lock()
            .map_err(|_| NodeError::Poisoned)?
            .take();
        let Some(speculation) = taken else {
            return Ok(None);
        };
        let executed = if (speculation.height, speculation.hash) == (input.height, input.hash) {
            // A failed or panicked speculation is redone by FinalizeBlock,
            // which then reports the failure itself.
            speculation.thread.join().ok().and_then(Result::ok)
        } else {
            None
        };
        let counters = &self.speculations;
        match executed {
            Some(_) => counters.used.inc(),
            None => counters.dropped.inc(),
        };
        Ok(executed)
    }
}

/// The node entered for one ABCI call: the application lock is held (when
/// `parallel-abci` is off) until this is dropped.
pub struct Consensus<'a> {
    pub(super) node: &'a Node,
    pub(super) _app: AppGuard<'a>,
}

impl Consensus<'_> {
    /// The patches in force.
    pub fn patches(&self) -> Patches {
        self.node.patches
    }

    /// The gas CheckTx answers `admitted` wants ([`Node::gas_wanted`]).
    pub fn gas_wanted(&self, admitted: &Admitted) -> u64 {
        self.node.gas_wanted(admitted)
    }

    /// The verifier of this chain, once InitChain has run.
    pub fn verifier(&self) -> Result<Verifier, NodeError> {
        self.node.verifier()
    }

    /// The block gas limit, once InitChain has run.
    pub fn block_gas_limit(&self) -> Result<u64, NodeError> {
        self.node.block_gas_limit()
    }

    /// PrepareProposal's first step: each of `txs` verified once (through
    /// the sender cache when `sender-cache` is on), without those that do
    /// not verify, which ProcessProposal would refuse a proposal for.
    pub fn candidates<T: AsRef<[u8]>>(&self, txs: Vec<T>) -> Result<Vec<Candidate<T>>, NodeError> {
        let verifier = self.node.verifier()?;
        Ok(txs
            .into_iter()
            .filter_map(|raw| {
                let tx = verifier.verify(raw.as_ref()).ok()?;
                Some(Candidate { raw, tx })
            })
            .collect())
    }

    /// PrepareProposal's last step: the bytes of `candidates`, in their
    /// order, that ProcessProposal's rules over the committed state admit,
    /// up to the first that does not fit in `room`
    /// ([`proposal::payable_prefix`]). A transaction whose fee cap is below
    /// the next block's base fee stays in the mempool, with its sender's
    /// later ones, until the base fee falls back (CheckTx refuses new ones).
    pub fn payable_prefix<T: AsRef<[u8]>>(
        &self,
        candidates: Vec<Candidate<T>>,
        room: BlockRoom,
    ) -> Result<Vec<T>, NodeError> {
        self.against_committed(|_, ledger| proposal::payable_prefix(candidates, ledger, room))
    }

    /// ProcessProposal's rules over the committed state
    /// ([`proposal::check_payable`]): the first transaction of `txs` whose
    /// signature, stateless rules, fee, nonce, funds or gas would refuse the
    /// proposal.
    pub fn check_payable<T: AsRef<[u8]>>(
        &self,
        txs: &[T],
    ) -> Result<Result<(), ProposalFault>, NodeError> {
        let max_gas = self.node.block_gas_limit()?;
        self.against_committed(|verify, ledger| {
            proposal::check_payable(txs, verify, ledger, max_gas)
        })
    }

    /// Runs `rules` with this chain's verifier and a ledger over the
    /// committed accounts at the next block's base fee: what ProcessProposal
    /// and PrepareProposal judge a proposal's transactions against.
    fn against_committed<R>(
        &self,
        rules: impl FnOnce(&Verify<'_>, &mut ProposalLedger<&Committed<'_>>) -> R,
    ) -> Result<R, NodeError> {
        let verifier = self.node.verifier()?;
        let base_fee = self.node.next_base_fee()?;
        let world = self.node.world()?;
        let committed = |a: &Address| world.account(a);
        let mut ledger = ProposalLedger::new(base_fee, &committed as &Committed<'_>);
        let verify = |raw: &[u8]| verifier.verify(raw);
        Ok(rules(&verify, &mut ledger))
    }

    /// Last committed height and app hash, for Info (`(0, empty)` before InitChain).
    pub fn info(&self) -> Result<(u64, B256), NodeError> {
        let chain = self.node.chain()?;
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
        let existing = self.node.chain()?.as_ref().map(|c| c.head.app_hash);
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
        self.node.store.init(&genesis, &batch)?;
        {
            let mut world = self.node.world_mut()?;
            world.apply(&batch.diff);
            if self.node.patches.has(Patch::SnapshotReads) {
                let _ = self
                    .node
                    .snapshots
                    .set(Snapshots::new(&world, block.clone()));
            }
        }
        **self.node.chain_mut()? = Some(Chain {
            genesis,
            head: block,
        });
        Ok(app_hash)
    }

    /// CheckTx of `kind`: verifies `raw` and admits it into the check state.
    /// The verdict is the stateless rules' and the ledger's, whatever the
    /// patches; they only change how much work reaches it. With
    /// `nonce-queue`, a nonce ahead of the sender's next one is queued
    /// ([`crate::nonce_queue`]) instead of refused.
    /// Marked as admission work ([`Work::CheckTx`]) wherever it runs: on CometBFT's
    /// mempool connection, a web3 worker (`app-mempool`) or inside Commit (its recheck).
    pub fn check_tx(&self, raw: &[u8], kind: CheckKind) -> Result<Verdict, NodeError> {
        self.check_tx_hashed(raw, keccak256(raw), kind)
    }

    /// [`Self::check_tx`] of `raw` whose hash, `hash`, is known already (the
    /// app pool's recheck: hashed at admission).
    pub(super) fn check_tx_hashed(
        &self,
        raw: &[u8],
        hash: B256,
        kind: CheckKind,
    ) -> Result<Verdict, NodeError> {
        let verdict = Work::CheckTx.run(|| self.check_tx_unmarked(raw, hash, kind))?;
        self.note_drop(hash, kind, &verdict)?;
        Ok(verdict)
    }

    /// A recheck's refusal is a drop (CometBFT's mempool lets the
    /// transaction go, as abcid's pool does), remembered with its reason;
    /// an admission forgets an earlier drop of the same transaction.
    /// The log is locked only for those two cases, not for every CheckTx.
    fn note_drop(&self, hash: B256, kind: CheckKind, verdict: &Verdict) -> Result<(), NodeError> {
        match (kind, verdict) {
            (CheckKind::Recheck, Err(e)) => {
                let drop = match e {
                    TxError::Replaced => DropKind::Replaced,
                    _ => DropKind::Invalid,
                };
                self.node.drops()?.record(hash, drop, e.to_string());
            }
            (CheckKind::New, Ok(_)) => self.node.drops()?.forget(&hash),
            _ => {}
        }
        Ok(())
    }

    /// [`Self::check_tx`]'s work.
    fn check_tx_unmarked(
        &self,
        raw: &[u8],
        hash: B256,
        kind: CheckKind,
    ) -> Result<Verdict, NodeError> {
        let lite_recheck = self.node.patches.has(Patch::LiteRecheck);
        let queue = self.node.patches.has(Patch::NonceQueue);
        if kind == CheckKind::Recheck {
            let check = self.node.check()?;
            if check.was_replaced(&hash) {
                return Ok(Err(TxError::Replaced));
            }
        }
        // Without `lite-recheck` a recheck is a full CheckTx, as recheck is
        // in CometBFT's own examples: decode, recover, and all that follows.
        if kind == CheckKind::Recheck && lite_recheck {
            let mut check = self.node.check()?;
            let read = |sender: &Address| Ok::<_, NodeError>(self.node.world()?.account(sender));
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
        let verified = match self.node.verify(raw)? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        // A new transaction must pay the next block's base fee; one already
        // admitted stays while the base fee is above it (as in geth's pool).
        if kind == CheckKind::New {
            if let Err(e) = fee_market::covers(&verified, self.node.next_base_fee()?) {
                return Ok(Err(e));
            }
        }
        let spend = Spend::from(&verified);
        let mut check = self.node.check()?;
        let committed = self.node.world()?.account(&verified.sender);
        let current = check.view(&spend.sender, committed).unwrap_or_default();
        let expected = current.nonce;
        let verdict = if queue && spend.nonce > expected {
            let admitted = Admitted {
                queued: true,
                ..Admitted::from(&verified)
            };
            check
                .queue_up(verified, expected, current.balance)
                .map(|()| admitted)
        } else {
            match self.admit(&mut check, &verified, committed)? {
                Err(e @ TxError::NonceTooLow { .. }) if kind == CheckKind::New => self
                    .replace(&mut check, &verified, committed)?
                    .unwrap_or(Err(e)),
                verdict => verdict,
            }
        };
        if let Err(e @ TxError::QueuedExpired { .. }) = &verdict {
            tracing::info!(target: "abcid::nonce_queue", %hash, sender = %spend.sender, "{e}; evicted");
        }
        if kind == CheckKind::New && verdict.is_ok() {
            // No receiver is not an error: nobody is listening.
            let _ = self.node.events.send(NodeEvent::PendingTx(hash));
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
        if let Err(e) = self.execute_unless_lite(check, verified)? {
            return Ok(Err(e));
        }
        check.reserve(&spend, current);
        let admitted = Admitted::from(verified);
        if self.node.patches.has(Patch::LiteRecheck) {
            check.record(admitted, committed);
        }
        check.hold(admitted);
        Ok(Ok(admitted))
    }

    /// Without `check-tx-lite` (the before path), executes `verified` as
    /// FinalizeBlock would, over the effects of the transactions admitted
    /// since Commit, and adds its effects to them (see `checkexec`); with
    /// the patch, nothing.
    fn execute_unless_lite(
        &self,
        check: &mut CheckState,
        verified: &VerifiedTx,
    ) -> Result<Result<(), TxError>, NodeError> {
        if self.node.patches.has(Patch::CheckTxLite) {
            return Ok(Ok(()));
        }
        let chain = self.node.chain()?;
        let chain = chain.as_ref().ok_or(NodeError::NotInitialised)?;
        let world = self.node.world()?;
        let executed = check.executed_mut();
        let run = checkexec::execute(&world, &chain.genesis, &chain.head, executed, verified);
        Ok(run.map(|_| ()))
    }

    /// A new transaction refused `nonce too low` replaces the pending one
    /// of its sender and nonce when it pays 10 % more and the balance covers
    /// it ([`CheckState::replaceable`]); `None` when it replaces nothing.
    /// Without `check-tx-lite` it is executed as every admission is, over
    /// effects that still hold the replaced one's (revm's nonce check is
    /// off there) with that one's maximal cost given back to the sender, so
    /// they hold at least the ledger's balance and the verdict is the
    /// ledger's, as with the patch.
    fn replace(
        &self,
        check: &mut CheckState,
        verified: &VerifiedTx,
        committed: Option<AccountRecord>,
    ) -> Result<Option<Verdict>, NodeError> {
        let new = Admitted::from(verified);
        let current = check.view(&verified.sender, committed).unwrap_or_default();
        let old = match check.replaceable(&new, current) {
            None => return Ok(None),
            Some(Err(e)) => return Ok(Some(Err(e))),
            Some(Ok(old)) => old,
        };
        if !self.node.patches.has(Patch::CheckTxLite) {
            check.give_back(&verified.sender, old.spend.max_cost);
        }
        if let Err(e) = self.execute_unless_lite(check, verified)? {
            return Ok(Some(Err(e)));
        }
        let lite_recheck = self.node.patches.has(Patch::LiteRecheck);
        let new = check.replace(&old, new, current, committed, lite_recheck);
        tracing::info!(replaced = %old.hash, by = %new.hash, "pending transaction replaced by fee");
        Ok(Some(Ok(new)))
    }

    /// Whether a transaction was replaced by fee since the Commit before
    /// the last: CometBFT's mempool may then hold two of one sender and
    /// nonce, out of nonce order, until the old one's recheck refuses it, and
    /// PrepareProposal orders the proposal by nonce, keeping the higher tip
    /// ([`Self::order_by_nonce`]).
    pub fn any_replaced(&self) -> Result<bool, NodeError> {
        Ok(self.node.check()?.any_replaced())
    }

    /// `nonce-queue`: admits the queued transactions of `sender` that now
    /// follow its pending nonce, in order, until one is missing or refused
    /// (a refused one is left to its recheck).
    fn promote(&self, check: &mut CheckState, sender: &Address) -> Result<(), NodeError> {
        let committed = self.node.world()?.account(sender);
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

    /// `nonce-queue`'s PrepareProposal order ([`proposal::order_by_nonce`])
    /// over the committed nonces.
    pub fn order_by_nonce<T>(
        &self,
        candidates: Vec<Candidate<T>>,
    ) -> Result<Vec<Candidate<T>>, NodeError> {
        let world = self.node.world()?;
        Ok(proposal::order_by_nonce(
            candidates,
            |c| Some(c.origin()),
            |sender| world.account(sender).map_or(0, |a| a.nonce),
        ))
    }

    /// PrepareProposal's order: by effective tip over the next block's base
    /// fee, each sender's transactions in their order
    /// ([`proposal::order_by_tip`]). When all pay the same effective tip the
    /// order is kept.
    pub fn ordered_by_tip<T>(
        &self,
        candidates: Vec<Candidate<T>>,
    ) -> Result<Vec<Candidate<T>>, NodeError> {
        let base_fee = u128::from(self.node.next_base_fee()?);
        let mut tips = candidates
            .iter()
            .map(|c| c.origin().effective_tip(base_fee));
        let first = tips.next();
        if tips.all(|tip| Some(tip) == first) {
            return Ok(candidates);
        }
        Ok(proposal::order_by_tip(
            candidates,
            |c| Some(c.origin()),
            base_fee,
        ))
    }

    /// FinalizeBlock: executes the block and keeps it until Commit (its
    /// transactions staged in the store without `ram-block-txs`). Only the
    /// height after the last committed block is executed
    /// ([`NodeError::UnexpectedHeight`] otherwise).
    /// Returns each transaction's outcome and the new app hash.
    /// Marked as execution work ([`Work::DeliverTx`]).
    pub fn finalize_block(
        &self,
        input: &BlockInput<'_>,
    ) -> Result<(Vec<TxOutcome>, B256), NodeError> {
        Work::DeliverTx.run(|| self.finalize_block_unmarked(input))
    }

    /// [`Self::finalize_block`]'s work.
    fn finalize_block_unmarked(
        &self,
        input: &BlockInput<'_>,
    ) -> Result<(Vec<TxOutcome>, B256), NodeError> {
        let started = Instant::now();
        let mut executed = match self.node.speculated(input)? {
            Some(executed) => executed,
            // Before (`optimistic-execution` off): executed now.
            None => self.node.execute(input)?,
        };
        if !self.node.patches.has(Patch::RamBlockTxs) {
            // Before: the transactions and their receipts go to the store now
            // and Commit reads them back, so that nothing of an uncommitted
            // block lives only in memory.
            self.node
                .store
                .stage_txs(&std::mem::take(&mut executed.batch.txs))?;
        }
        let result = (executed.outcomes.clone(), executed.batch.block.app_hash);
        *self.node.pending.lock().map_err(|_| NodeError::Poisoned)? = Some(Pending {
            block: executed,
            finalize: started.elapsed(),
        });
        Ok(result)
    }

    /// Commit: persists the pending block atomically (with `async-commit`,
    /// hands it to the background writer), then makes it visible.
    /// Marked as Commit work ([`Work::Commit`]); the pool's recheck inside it
    /// (`app-mempool`) is admission.
    pub fn commit(&self) -> Result<BlockLine, NodeError> {
        Work::Commit.run(|| self.commit_unmarked())
    }

    /// [`Self::commit`]'s work.
    fn commit_unmarked(&self) -> Result<BlockLine, NodeError> {
        let started = Instant::now();
        let pending = self
            .node
            .pending
            .lock()
            .map_err(|_| NodeError::Poisoned)?
            .take()
            .ok_or(NodeError::NothingToCommit)?;
        let Pending { block, finalize } = pending;
        let valid = block.valid();
        let invalid = block.outcomes.len() - valid;
        let batch = Arc::new(block.batch);
        let store_started = Instant::now();
        if super::background_commit(self.node.patches) {
            self.node.store.commit_in_background(Arc::clone(&batch))?;
        } else if self.node.patches.has(Patch::RamBlockTxs) {
            // Before (`async-commit` off): on disk before Commit returns.
            self.node.store.commit(&batch)?;
        } else {
            self.node.store.commit_staged(&batch)?;
        }
        let store = store_started.elapsed();
        // `app-mempool`: held until the pool is rechecked below.
        let mut pool = self.node.pool()?;
        {
            let mut check = self.node.check()?;
            self.node.world_mut()?.apply(&batch.diff);
            check.commit(&batch.diff, self.node.patches.has(Patch::LiteRecheck));
        }
        // The writer may still hold the batch: then the diff is copied.
        let (diff, record) = match Arc::try_unwrap(batch) {
            Ok(batch) => (batch.diff, batch.block),
            Err(shared) => (shared.diff.clone(), shared.block.clone()),
        };
        if let Some(snapshots) = self.node.snapshots.get() {
            snapshots.commit(diff, record.clone());
        }
        {
            let mut chain = self.node.chain_mut()?;
            if let Some(chain) = chain.as_mut() {
                chain.head = record.clone();
            }
        }
        let recheck_started = Instant::now();
        let recheck_dropped = match pool.as_mut() {
            Some(pool) => self.recheck_pool(pool, &block.outcomes)?,
            None => 0,
        };
        let recheck = recheck_started.elapsed();
        drop(pool);
        let line = BlockLine {
            height: record.number,
            valid,
            invalid,
            finalize,
            commit: started.elapsed(),
            store,
            recheck,
            recheck_dropped,
            time_secs: record.timestamp,
            time_nanos: record.timestamp_nanos,
            app_hash: record.app_hash,
        };
        // No receiver is not an error: nobody is listening.
        let _ = self.node.events.send(NodeEvent::Block(Arc::new(record)));
        Ok(line)
    }
}
