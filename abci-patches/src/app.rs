//! The ABCI 2.0 face of the node: tendermint-abci's [`Application`] trait,
//! mapped onto [`Node`].
//!
//! A failure to persist or a broken invariant stops the process (after logging
//! why): CometBFT then replays the uncommitted block when both restart, which
//! is the only safe recovery for a state machine.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use alloy_primitives::Bytes;
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::response_process_proposal::ProposalStatus;
use tendermint_proto::v0_38::abci::{
    CheckTxType, Event, EventAttribute, ExecTxResult, RequestCheckTx, RequestFinalizeBlock,
    RequestInfo, RequestInitChain, RequestPrepareProposal, RequestProcessProposal, ResponseCheckTx,
    ResponseCommit, ResponseFinalizeBlock, ResponseInfo, ResponseInitChain,
    ResponsePrepareProposal, ResponseProcessProposal,
};
use tendermint_proto::v0_38::types::{BlockParams, ConsensusParams};

use feth_profiler_rpc::{tag_current_thread, BlockProfiler, Role, Work};

use crate::error::CODESPACE;
use crate::exec::TxOutcome;
use crate::mempool::CheckKind;
use crate::metrics::{Metrics, Verdict};
use crate::node::{Consensus, ConsensusNode, Node, NodeError, OwnedBlock};
use crate::patches::Patch;
use crate::proposal;
use crate::txlog;

/// abcid's ABCI application; cloned once per ABCI connection.
#[derive(Clone)]
pub struct AbciApp {
    /// Only the consensus side: an ABCI call cannot reach a web3-side method.
    node: ConsensusNode,
    profiler: Option<Arc<BlockProfiler>>,
    /// One log line per transaction (`quiet-logs` off).
    tx_lines: bool,
    metrics: Arc<Metrics>,
    /// The last proposal PrepareProposal made: ProcessProposal of the same
    /// height and transactions accepts it unchecked.
    own_proposal: Arc<Mutex<Option<OwnProposal>>>,
}

/// A proposal this node made, by height and transactions. ProcessProposal's
/// verdict is a function of the committed state and the transactions alone,
/// and PrepareProposal proposes only what its rules admit, so checking the
/// node's own proposal again (CometBFT asks the proposer too) could only
/// accept it: skipped, it keeps the check off the proposer's critical path.
struct OwnProposal {
    height: i64,
    txs: Vec<prost::bytes::Bytes>,
}

impl AbciApp {
    /// Serves `node` over ABCI; `profiler`, when given, captures armed blocks,
    /// each from the end of the previous Commit to the end of its own.
    pub fn new(node: Arc<Node>, profiler: Option<Arc<BlockProfiler>>) -> Self {
        let tx_lines = !node.patches().has(Patch::QuietLogs);
        let metrics = Arc::new(Metrics::new(node.patches(), node.speculations()));
        Self {
            node: ConsensusNode::new(node),
            profiler,
            tx_lines,
            metrics,
            own_proposal: Arc::default(),
        }
    }

    /// The metrics this application updates (`abcid --metrics` serves them).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }
}

impl AbciApp {
    /// Whether `request` is the proposal this node's last PrepareProposal
    /// made ([`OwnProposal`]).
    fn is_own_proposal(&self, request: &RequestProcessProposal) -> bool {
        self.own_proposal.lock().is_ok_and(|own| {
            own.as_ref()
                .is_some_and(|own| own.height == request.height && own.txs == request.txs)
        })
    }

    /// Enters the node for one ABCI call (see [`Node::enter`]); a poisoned
    /// lock stops the node.
    fn enter(&self, during: &str) -> Consensus<'_> {
        self.node.enter().unwrap_or_else(|e| fatal(during, e))
    }
}

/// Why ProcessProposal refuses `txs`, if it does.
fn proposal_fault<T: AsRef<[u8]>>(
    node: &Consensus<'_>,
    txs: &[T],
) -> Result<Option<String>, NodeError> {
    Ok(node
        .check_payable(txs)?
        .err()
        .map(|fault| fault.to_string()))
}

/// The block of a ProcessProposal or FinalizeBlock request, from its fields.
fn owned_block(
    height: i64,
    hash: &[u8],
    time: Option<tendermint_proto::google::protobuf::Timestamp>,
    txs: Vec<prost::bytes::Bytes>,
) -> OwnedBlock {
    let time = time.unwrap_or_default();
    OwnedBlock {
        height: height.max(0) as u64,
        hash: alloy_primitives::B256::try_from(hash).unwrap_or_default(),
        time_secs: time.seconds.max(0) as u64,
        time_nanos: time.nanos.max(0) as u32,
        txs: txs.into_iter().map(Bytes).collect(),
    }
}

/// Logs a fatal error and exits: the node must not go on with state it could
/// not persist or read.
fn fatal(during: &str, error: NodeError) -> ! {
    tracing::error!(%error, "fatal error during {during}; stopping so that CometBFT replays the block on restart");
    std::process::exit(1)
}

impl Application for AbciApp {
    fn info(&self, _request: RequestInfo) -> ResponseInfo {
        let node = self.enter("Info");
        let (height, app_hash) = node.info().unwrap_or_else(|e| fatal("Info", e));
        ResponseInfo {
            data: "abcid".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            app_version: 1,
            last_block_height: height as i64,
            last_block_app_hash: if height == 0 {
                Default::default()
            } else {
                app_hash.to_vec().into()
            },
        }
    }

    fn init_chain(&self, request: RequestInitChain) -> ResponseInitChain {
        let node = self.enter("InitChain");
        let time = request.time.map_or(0, |t| t.seconds.max(0) as u64);
        let app_hash = node
            .init_chain(
                &request.app_state_bytes,
                request.initial_height.max(1) as u64,
                time,
            )
            .unwrap_or_else(|e| fatal("InitChain", e));
        let block_gas_limit = node
            .block_gas_limit()
            .unwrap_or_else(|e| fatal("InitChain", e));
        tracing::info!(chain_id = %request.chain_id, %app_hash, block_gas_limit, "chain initialised");
        ResponseInitChain {
            consensus_params: max_gas_params(request.consensus_params.as_ref(), block_gas_limit),
            app_hash: app_hash.to_vec().into(),
            ..Default::default()
        }
    }

    fn prepare_proposal(&self, request: RequestPrepareProposal) -> ResponsePrepareProposal {
        Work::Proposal.run(|| self.propose(request))
    }

    /// A proposal is refused at its first transaction whose signature does
    /// not recover, that breaks a stateless rule, that is not payable at its
    /// sender's next nonce over the committed state, or whose gas limit
    /// takes the proposal beyond the block's ([`proposal::check_payable`]).
    /// PrepareProposal proposes by the same rules, so an honest abcid
    /// proposer is never refused. FinalizeBlock still judges each
    /// transaction as it runs.
    fn process_proposal(&self, request: RequestProcessProposal) -> ResponseProcessProposal {
        let node = self.enter("ProcessProposal");
        let own = self.is_own_proposal(&request);
        let fault = if own {
            None
        } else {
            Work::Proposal
                .run(|| proposal_fault(&node, &request.txs))
                .unwrap_or_else(|e| fatal("ProcessProposal", e))
        };
        drop(node);
        self.metrics.proposal(match (&fault, own) {
            (Some(_), _) => Verdict::Rejected,
            (None, true) => Verdict::Own,
            (None, false) => Verdict::Accepted,
        });
        let status = match fault {
            Some(reason) => {
                tracing::warn!(height = request.height, %reason, "proposal refused");
                ProposalStatus::Reject
            }
            None => {
                let block = owned_block(request.height, &request.hash, request.time, request.txs);
                self.node
                    .speculate(block, || tag_current_thread(Role::DeliverTx));
                ProposalStatus::Accept
            }
        };
        ResponseProcessProposal {
            status: status as i32,
        }
    }

    fn check_tx(&self, request: RequestCheckTx) -> ResponseCheckTx {
        tag_current_thread(Role::CheckTx);
        let started = Instant::now();
        let node = self.enter("CheckTx");
        let kind = if request.r#type == CheckTxType::Recheck as i32 {
            CheckKind::Recheck
        } else {
            CheckKind::New
        };
        let verdict = node
            .check_tx(&request.tx, kind)
            .unwrap_or_else(|e| fatal("CheckTx", e));
        self.metrics
            .check_tx(kind, started.elapsed(), verdict.is_ok());
        if self.tx_lines {
            txlog::check_tx(&request.tx, &verdict);
        }
        match verdict {
            Ok(tx) => ResponseCheckTx {
                code: 0,
                gas_wanted: i64::try_from(node.gas_wanted(&tx)).unwrap_or(i64::MAX),
                ..Default::default()
            },
            Err(e) => ResponseCheckTx {
                code: e.code(),
                log: e.to_string(),
                codespace: CODESPACE.to_string(),
                ..Default::default()
            },
        }
    }

    fn finalize_block(&self, request: RequestFinalizeBlock) -> ResponseFinalizeBlock {
        tag_current_thread(Role::DeliverTx);
        let node = self.enter("FinalizeBlock");
        let block = owned_block(request.height, &request.hash, request.time, request.txs);
        let height = block.height;
        if let Some(p) = &self.profiler {
            p.begin_block(height);
        }
        let input = block.input();
        let (outcomes, app_hash) = node
            .finalize_block(&input)
            .unwrap_or_else(|e| fatal("FinalizeBlock", e));
        if self.tx_lines {
            for outcome in &outcomes {
                txlog::finalize_block(height, outcome);
            }
        }
        ResponseFinalizeBlock {
            tx_results: outcomes.iter().map(tx_result).collect(),
            app_hash: app_hash.to_vec().into(),
            ..Default::default()
        }
    }

    /// A Commit with no block finalized is refused (logged; the node keeps
    /// serving); any other failure stops the node.
    fn commit(&self) -> ResponseCommit {
        self.try_commit().unwrap_or_else(|refused| {
            tracing::error!("{refused}");
            ResponseCommit::default()
        })
    }
}

impl AbciApp {
    /// PrepareProposal's work: what CometBFT's mempool offers, then the
    /// node's own pool, without what cannot be valid, priced, each sender's
    /// in nonce order with `nonce-queue` or after a replacement by fee, by
    /// tip, and fitted.
    fn propose(&self, request: RequestPrepareProposal) -> ResponsePrepareProposal {
        let node = self.enter("PrepareProposal");
        let max_gas = node
            .block_gas_limit()
            .unwrap_or_else(|e| fatal("PrepareProposal", e));
        let max_bytes = u64::try_from(request.max_tx_bytes).unwrap_or(0);
        // `app-mempool`: after what CometBFT's mempool hands over (nothing
        // when its type is `nop`), the node's own pool; the prefix that fits
        // is taken below.
        let mut offered = request.txs;
        let pooled = node
            .proposable(max_bytes, max_gas)
            .unwrap_or_else(|e| fatal("PrepareProposal", e));
        offered.extend(pooled.into_iter().map(|tx| tx.0));
        // Each verified once; every step after reads what that found.
        let mut candidates = node
            .candidates(offered)
            .unwrap_or_else(|e| fatal("PrepareProposal", e));
        let replaced = node
            .any_replaced()
            .unwrap_or_else(|e| fatal("PrepareProposal", e));
        if replaced || node.patches().has(Patch::NonceQueue) {
            candidates = node
                .order_by_nonce(candidates)
                .unwrap_or_else(|e| fatal("PrepareProposal", e));
        }
        let candidates = node
            .ordered_by_tip(candidates)
            .unwrap_or_else(|e| fatal("PrepareProposal", e));
        let txs = node
            .payable_prefix(candidates, proposal::BlockRoom::new(max_bytes, max_gas))
            .unwrap_or_else(|e| fatal("PrepareProposal", e));
        if let Ok(mut own) = self.own_proposal.lock() {
            *own = Some(OwnProposal {
                height: request.height,
                txs: txs.clone(),
            });
        }
        ResponsePrepareProposal { txs }
    }

    /// Commit; `Err` names why a stray Commit (nothing finalized) was
    /// refused. Persisting failures stop the node, as everywhere.
    pub fn try_commit(&self) -> Result<ResponseCommit, String> {
        tag_current_thread(Role::DeliverTx);
        let node = self.enter("Commit");
        let line = match node.commit() {
            Ok(line) => line,
            Err(e @ NodeError::NothingToCommit) => {
                return Err(format!("Commit refused: {e}; the node keeps serving"))
            }
            Err(e) => fatal("Commit", e),
        };
        line.emit();
        self.metrics.block(&line);
        if let Some(p) = &self.profiler {
            p.end_block(line.height);
        }
        Ok(ResponseCommit { retain_height: 0 })
    }
}

/// The consensus parameters InitChain returns so that CometBFT's
/// `block.max_gas` is the block gas limit: `None` when it already is (or when
/// CometBFT sent no block parameters to keep `max_bytes` from). CometBFT
/// replaces `max_bytes` and `max_gas` together, so `max_bytes` is sent back
/// unchanged; the other groups stay as they are.
pub fn max_gas_params(
    request: Option<&ConsensusParams>,
    block_gas_limit: u64,
) -> Option<ConsensusParams> {
    let block = request?.block?;
    let max_gas = i64::try_from(block_gas_limit).unwrap_or(i64::MAX);
    (block.max_gas != max_gas).then(|| ConsensusParams {
        block: Some(BlockParams {
            max_bytes: block.max_bytes,
            max_gas,
        }),
        ..Default::default()
    })
}

fn tx_result(outcome: &TxOutcome) -> ExecTxResult {
    match outcome {
        TxOutcome::Executed {
            hash,
            sender,
            gas_used,
            success,
        } => ExecTxResult {
            code: 0,
            gas_used: *gas_used as i64,
            events: vec![Event {
                r#type: "ethereum_tx".to_string(),
                attributes: vec![
                    attribute("hash", hash.to_string()),
                    attribute("from", sender.to_string()),
                    attribute("status", u8::from(*success).to_string()),
                ],
            }],
            ..Default::default()
        },
        TxOutcome::Rejected { hash, error } => ExecTxResult {
            code: error.code(),
            log: error.to_string(),
            codespace: CODESPACE.to_string(),
            events: vec![Event {
                r#type: "ethereum_tx".to_string(),
                attributes: vec![attribute("hash", hash.to_string())],
            }],
            ..Default::default()
        },
    }
}

fn attribute(key: &str, value: String) -> EventAttribute {
    EventAttribute {
        key: key.to_string(),
        value,
        index: true,
    }
}
