//! A scripted node for tests of the engine without a devnet.
//!
//! It decodes the real signed transactions it is sent (sender, nonce, hash)
//! and answers as a node that refuses nonce gaps does: the next nonce is
//! taken, a used one is `nonce too low`, a later one `nonce too high`, a
//! transaction it holds already `already known`. Answers can be scripted per
//! sender and nonce ahead of that (refusal texts, an unreachable node, a
//! restart that empties the mempool). Every transaction sent is recorded,
//! with the virtual time of its arrival (tokio's clock, paused in tests),
//! and the most transactions of one sender in requests not yet answered.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{Address, B256};
use tokio::time::Instant;

use super::node::Node;
use crate::sync::lock;
use feth_chain::eth::RpcError;

/// A scripted answer to one transaction, given before the node's own logic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Refused with this text (a JSON-RPC error).
    Refuse(String),
    /// The node cannot be reached (a transport error).
    Unreachable,
    /// The node restarts first: its mempool is emptied and the sender's next
    /// nonce falls back to this one; then it answers as usual.
    Restart {
        /// The sender's next nonce after the restart.
        held: u64,
    },
}

impl Answer {
    /// A refusal with `text`.
    pub fn refuse(text: &str) -> Self {
        Self::Refuse(text.to_string())
    }
}

/// A transaction the node was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Its sender.
    pub from: Address,
    /// Its nonce.
    pub nonce: u64,
    /// Its hash.
    pub hash: B256,
    /// When it arrived (tokio's clock).
    pub at: Instant,
}

#[derive(Debug, Default)]
struct State {
    /// Each sender's next nonce (the pending one).
    held: HashMap<Address, u64>,
    /// Nonces above the next one, queued (with [`FakeNode::queueing`]).
    future: HashMap<Address, BTreeSet<u64>>,
    /// Hashes in the mempool.
    known: HashSet<B256>,
    script: HashMap<(Address, u64), VecDeque<Answer>>,
    received: Vec<Received>,
    in_flight: HashMap<Address, usize>,
    most_in_flight: HashMap<Address, usize>,
}

/// A scripted node (see the module's documentation).
#[derive(Debug, Default)]
pub struct FakeNode {
    state: Mutex<State>,
    /// How long a request takes to be answered.
    latency: Duration,
    /// Whether nonces above the next one are queued (as geth's txpool does)
    /// rather than refused.
    queueing: bool,
}

impl FakeNode {
    /// A node answering at once and refusing nonce gaps.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same node answering each request after `latency`.
    pub fn with_latency(self, latency: Duration) -> Self {
        Self { latency, ..self }
    }

    /// The same node queueing nonces above the next one until the gap is
    /// filled, instead of refusing them.
    pub fn queueing(self) -> Self {
        Self {
            queueing: true,
            ..self
        }
    }

    /// Sets `from`'s next nonce.
    pub fn hold(&self, from: Address, nonce: u64) {
        lock(&self.state).held.insert(from, nonce);
    }

    /// Scripts the answers to the next transactions of `from` with `nonce`,
    /// one per submission, in order; once they are used up the node answers
    /// as usual.
    pub fn script(&self, from: Address, nonce: u64, answers: impl IntoIterator<Item = Answer>) {
        lock(&self.state)
            .script
            .entry((from, nonce))
            .or_default()
            .extend(answers);
    }

    /// Every transaction sent so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state).received.clone()
    }

    /// The nonces `from` sent, in arrival order (resends included).
    pub fn nonces_from(&self, from: Address) -> Vec<u64> {
        let state = lock(&self.state);
        let mine = state.received.iter().filter(|r| r.from == from);
        mine.map(|r| r.nonce).collect()
    }

    /// The most transactions of `from` that were in requests not yet
    /// answered at once.
    pub fn most_in_flight(&self, from: Address) -> usize {
        let state = lock(&self.state);
        state.most_in_flight.get(&from).copied().unwrap_or(0)
    }

    /// `from`'s next nonce.
    pub fn held(&self, from: Address) -> u64 {
        lock(&self.state).held.get(&from).copied().unwrap_or(0)
    }

    /// Counts the decodable transactions of `raws` in flight.
    fn arrive(&self, decoded: &[Result<(Address, u64, B256), RpcError>], delta: isize) {
        let mut state = lock(&self.state);
        for (from, _, _) in decoded.iter().flatten() {
            let n = state.in_flight.entry(*from).or_default();
            *n = n.saturating_add_signed(delta);
            let n = *n;
            let most = state.most_in_flight.entry(*from).or_default();
            *most = (*most).max(n);
        }
    }

    /// Answers one decoded transaction.
    fn answer(&self, from: Address, nonce: u64, hash: B256, at: Instant) -> Result<B256, RpcError> {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let scripted = state
            .script
            .get_mut(&(from, nonce))
            .and_then(VecDeque::pop_front);
        let result = match scripted {
            Some(Answer::Refuse(text)) => Err(refusal(&text)),
            Some(Answer::Unreachable) => Err(unreachable()),
            Some(Answer::Restart { held }) => {
                state.known.clear();
                state.future.clear();
                state.held.insert(from, held);
                self.usual(state, from, nonce, hash)
            }
            None => self.usual(state, from, nonce, hash),
        };
        state.received.push(Received {
            from,
            nonce,
            hash,
            at,
        });
        result
    }

    /// The node's own answer.
    fn usual(
        &self,
        state: &mut State,
        from: Address,
        nonce: u64,
        hash: B256,
    ) -> Result<B256, RpcError> {
        let held = state.held.get(&from).copied().unwrap_or(0);
        if state.known.contains(&hash) {
            return Err(refusal("already known"));
        }
        if nonce < held {
            return Err(refusal(&format!(
                "nonce too low: address {from}, tx: {nonce} state: {held}"
            )));
        }
        if nonce > held && !self.queueing {
            return Err(refusal("nonce too high"));
        }
        state.known.insert(hash);
        let future = state.future.entry(from).or_default();
        future.insert(nonce);
        let mut next = held;
        while future.remove(&next) {
            next += 1;
        }
        state.held.insert(from, next);
        Ok(hash)
    }
}

/// A JSON-RPC refusal with `text`.
fn refusal(text: &str) -> RpcError {
    RpcError::Rpc {
        code: -32000,
        message: text.to_string(),
    }
}

fn unreachable() -> RpcError {
    RpcError::Transport {
        url: "fake".to_string(),
        message: "connection refused".to_string(),
        timeout: false,
    }
}

/// The sender, nonce and hash of a signed transaction.
fn decode(raw: &[u8]) -> Result<(Address, u64, B256), RpcError> {
    let bad = |e: &dyn std::fmt::Display| refusal(&format!("rlp: {e}"));
    let tx = TxEnvelope::decode_2718(&mut &raw[..]).map_err(|e| bad(&e))?;
    let from = tx.recover_signer().map_err(|e| bad(&e))?;
    Ok((from, tx.nonce(), *tx.tx_hash()))
}

impl Node for FakeNode {
    async fn nonce(&self, address: Address, _pending: bool) -> Result<u64, RpcError> {
        Ok(self.held(address))
    }

    async fn send_raw(&self, raw: &[u8]) -> Result<B256, RpcError> {
        let mut answers = self.send_raw_batch(&[raw]).await;
        answers.pop().unwrap_or_else(|| Err(unreachable()))
    }

    async fn send_raw_batch(&self, raws: &[&[u8]]) -> Vec<Result<B256, RpcError>> {
        let at = Instant::now();
        let decoded: Vec<_> = raws.iter().map(|raw| decode(raw)).collect();
        self.arrive(&decoded, 1);
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        self.arrive(&decoded, -1);
        decoded
            .into_iter()
            .map(|d| d.and_then(|(from, nonce, hash)| self.answer(from, nonce, hash, at)))
            .collect()
    }

    fn retries(&self) -> u64 {
        0
    }
}
