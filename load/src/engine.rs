//! The sending engine.
//!
//! - Each account sends in nonce order, with up to
//!   [`crate::plan::LoadPlan::per_sender`] (K) transactions in flight; accounts queue
//!   their due transactions (FIFO). K = 1 is one transaction at a time, for
//!   nodes that refuse nonce gaps. A request carries up to
//!   [`crate::plan::LoadPlan::per_request`] (R) consecutive nonces of a sender, in order:
//!   JSON-RPC servers (jsonrpsee, geth) run a batch's calls one after the
//!   other, so those reach the node in nonce order without waiting for each
//!   other's answers. A sender with more room in its pipeline is queued for
//!   another request at once ([`ReadyQueue::push_now`]), so its K spread over
//!   parallel requests whose order on the wire is not guaranteed: the node's
//!   future-nonce queue (geth's; abcid's `nonce-queue`) restores it. R = K is
//!   one ordered request per sender at a time (abcid answers each call after
//!   CometBFT's CheckTx, ~30 ms, so only parallel requests pipeline there).
//! - `max_parallelism` workers take batches of ready accounts (see
//!   [`super::ready`]) and submit their next transactions in one request;
//!   accounts are spread across endpoints.
//! - Signer threads keep each account's next transactions pre-signed, so
//!   libsecp256k1 signing stays off the send path.
//! - Open loop (`--rate`, `--ramp`): a scheduler releases transactions at
//!   their intended send times, recorded for latency, so a slow node cannot
//!   hide its slowness by slowing the agent (no coordinated omission). The
//!   largest backlog of due transactions one sender had is kept, to tell a
//!   run the agent limited (see [`Engine::max_backlog`]).
//! - Every request holds a slot (a worker) while it is in flight; a
//!   [`SlotClock`] integrates the time during which all of them are.
//! - Errors are handled per sender and per transaction, in nonce order: a
//!   full mempool or rate limit backs that sender off and resends, in order,
//!   the refused transaction and every later one of the request (those the
//!   node took answer `already known`); `nonce too low` and `already known`
//!   resynchronise from `pending`; `nonce too high` resends the sender's own
//!   missing transactions (a mempool lost in a restart) or resynchronises; a
//!   timeout or a node that cannot be reached resends the same signed bytes
//!   (same hash) after a per-sender back-off ([`TIMEOUT_BACKOFF`]), so a
//!   node down for minutes is neither hammered nor given up on. A refused
//!   transaction leaves its nonce to the sender's next transaction.
//! - With refills on ([`EngineConfig::refill`]), `insufficient funds` backs
//!   the sender off ([`STARVED_BACKOFF`]) and resends the same
//!   transaction once the refill task has topped it up; otherwise it is a
//!   rejection.
//! - What was submitted is kept in the [`Ledger`] only while in flight.

mod flow;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::flow::Flow;
use super::hist::LogHist;
use super::ledger::{Ledger, Live, Submission, TxStatus};
use super::metrics::Retries;
use super::node::Node;
use super::outcome::{classify, Outcome};
use super::pick::RateSchedule;
use super::plan::{EngineConfig, Recipients, Workload, Write, MAX_PER_SENDER};
use super::ready::ReadyQueue;
use super::slots::SlotClock;
use crate::sync::lock;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use feth_chain::accounts::KeySet;
use feth_chain::eth::EthClient;
use feth_chain::sign::{self, Fee, SignedTx, TxRequest};
use futures::StreamExt;
use rand::SeedableRng;

/// Live counters (see [`Snapshot`] for their meaning).
#[derive(Debug, Default)]
struct Counters {
    sent: AtomicU64,
    accepted: AtomicU64,
    rejected: AtomicU64,
    backoffs: AtomicU64,
    resends: AtomicU64,
    resyncs: AtomicU64,
    fee_resends: AtomicU64,
}

/// The live figures of a run under way, as the commands that watch it
/// (the progress line, the saturation search's windows, the agent bench)
/// read them.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// First submissions.
    pub sent: u64,
    /// Accepted by a node.
    pub accepted: u64,
    /// Refused.
    pub rejected: u64,
    /// Back-offs on a full mempool or rate limit.
    pub backoffs: u64,
    /// Resubmissions after a timeout or a lost mempool.
    pub resends: u64,
    /// Nonce resynchronisations.
    pub resyncs: u64,
    /// Transactions re-signed with a higher fee (same nonce) after a node
    /// refused their fee, and sent again.
    pub fee_resends: u64,
    /// Transactions submitted and not yet in a block (nor given up).
    pub in_flight: usize,
    /// Blocks read so far.
    pub blocks_read: u64,
    /// How long every request slot (worker) was busy at once.
    pub slots_full: Duration,
    /// Schedule lag, intended send time → submission (open loop).
    pub lag_total: LogHist,
    /// The agent's own part of that lag.
    pub lag_own: LogHist,
    /// Intended send time → the including block's time.
    pub to_block_time: LogHist,
}

/// A back-off that doubles from `floor` up to `ceiling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// The first wait.
    pub floor: Duration,
    /// The longest wait.
    pub ceiling: Duration,
}

/// After a full mempool or a rate limit.
pub(crate) const BUSY_BACKOFF: Backoff = Backoff {
    floor: Duration::from_millis(20),
    ceiling: Duration::from_secs(2),
};

/// After a timeout or a node out of reach: a node down for minutes is
/// neither hammered nor given up on.
pub(crate) const TIMEOUT_BACKOFF: Backoff = Backoff {
    floor: Duration::from_millis(100),
    ceiling: Duration::from_secs(5),
};

/// After `insufficient funds` with refills on, until a refill tops the
/// sender up.
pub(crate) const STARVED_BACKOFF: Backoff = Backoff {
    floor: Duration::from_millis(250),
    ceiling: Duration::from_secs(5),
};

/// A transaction submitted and not yet settled.
#[derive(Debug, Clone)]
struct Submitted {
    hash: B256,
    raw: Bytes,
    nonce: u64,
    /// The fee it was signed with.
    fee: Fee,
}

/// Transactions signed ahead, by nonce (few: at most one request's worth).
/// Emptied, it gives its memory back, so an idle account costs none.
#[derive(Debug, Default)]
struct Presigned(Vec<(u64, SignedTx)>);

impl Presigned {
    fn contains(&self, nonce: u64) -> bool {
        self.0.iter().any(|(n, _)| *n == nonce)
    }

    fn insert(&mut self, nonce: u64, tx: SignedTx) {
        self.0.retain(|(n, _)| *n != nonce);
        self.0.push((nonce, tx));
    }

    fn take(&mut self, nonce: u64) -> Option<SignedTx> {
        let i = self.0.iter().position(|(n, _)| *n == nonce)?;
        let (_, tx) = self.0.swap_remove(i);
        if self.0.is_empty() {
            self.0 = Vec::new();
        }
        Some(tx)
    }

    fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        self.0.retain(|(n, _)| keep(*n));
    }

    fn clear(&mut self) {
        self.0 = Vec::new();
    }
}

/// A transaction of a sender's window.
#[derive(Debug)]
struct WindowEntry {
    tx: Submitted,
    /// In a request in flight (else: to resend).
    sending: bool,
}

#[derive(Debug, Default)]
struct Acct {
    /// The nonce after every one given to a transaction so far.
    next_nonce: u64,
    /// Nonces below `next_nonce` left free by refused transactions: the
    /// next transactions take them first.
    holes: BTreeSet<u64>,
    /// Due transactions not yet submitted: intended send time (`None`: as
    /// soon as possible).
    due: VecDeque<Option<Instant>>,
    /// On its way to a worker (waiting to be signed, ready, or backing
    /// off), and whether a signer thread signs for it.
    flow: Flow,
    /// Its requests in flight.
    requests: u32,
    /// Signed ahead, by nonce.
    presigned: Presigned,
    /// Submitted and not yet settled, in nonce order: in flight, or to resend.
    window: VecDeque<WindowEntry>,
    /// Accepted, not known to be committed: nonce → hash (pruned from the
    /// lowest nonce once the ledger no longer holds it).
    unconfirmed: BTreeMap<u64, B256>,
    backoff: Duration,
    sent: u64,
    /// Refused for insufficient funds since the refill task last asked.
    starved: bool,
    /// When the node last answered this account, seconds since the run began.
    answered: f64,
}

impl Acct {
    /// Checks, in debug builds, what the engine keeps true of an account:
    /// at most `per_sender` transactions in its window, and holes only
    /// below its next nonce.
    fn check(&self, per_sender: usize) {
        debug_assert!(
            self.window.len() <= per_sender,
            "{} in the window, at most {per_sender}",
            self.window.len()
        );
        debug_assert!(
            self.holes.last().is_none_or(|h| *h < self.next_nonce),
            "a hole at or above the next nonce {}",
            self.next_nonce
        );
    }

    /// The nonces the next `n` new transactions take, in order.
    fn upcoming(&self, n: usize) -> impl Iterator<Item = u64> + '_ {
        self.holes.iter().copied().chain(self.next_nonce..).take(n)
    }

    /// Gives the next new transaction its nonce.
    fn allot_nonce(&mut self) -> u64 {
        self.holes.pop_first().unwrap_or_else(|| {
            self.next_nonce += 1;
            self.next_nonce - 1
        })
    }

    /// Forgets the transaction `hash` of the window (an emptied window
    /// gives its memory back: most accounts are idle most of the time).
    fn drop_from_window(&mut self, hash: &B256) {
        if let Some(i) = self.window.iter().position(|p| p.tx.hash == *hash) {
            self.window.remove(i);
        }
        if self.window.is_empty() {
            self.window = VecDeque::new();
        }
    }

    /// Marks the transaction `hash` of the window to resend.
    fn resend(&mut self, hash: &B256) {
        if let Some(p) = self.window.iter_mut().find(|p| p.tx.hash == *hash) {
            p.sending = false;
        }
    }

    /// Whether some of its window is to be resent.
    fn has_resends(&self) -> bool {
        self.window.iter().any(|p| !p.sending)
    }

    /// Whether a transaction below `nonce` is still unsettled.
    fn behind(&self, nonce: u64) -> bool {
        self.window.iter().any(|p| p.tx.nonce < nonce)
    }
}

/// State shared by the workers, signers and scheduler.
pub struct Engine<N: Node = EthClient> {
    cfg: EngineConfig,
    clients: Vec<Arc<N>>,
    keys: Arc<KeySet>,
    accts: Vec<Mutex<Acct>>,
    /// Ready accounts, one queue per endpoint (a batch goes to one endpoint).
    ready: Vec<ReadyQueue>,
    /// The transactions in flight and the run's figures.
    ledger: Arc<Mutex<Ledger>>,
    counters: Counters,
    /// How long every request slot (worker) was busy at once.
    busy: SlotClock,
    /// When sending began.
    start: Instant,
    stop: AtomicBool,
    scheduling: AtomicBool,
    outstanding: AtomicU64,
    max_backlog: AtomicU64,
    sign_jobs: Mutex<Option<std::sync::mpsc::Sender<usize>>>,
    fresh: AtomicU64,
    /// First submissions of each of the configuration's writes.
    sent_by_write: Vec<AtomicU64>,
}

/// What moves an account forward (see [`Engine::advance`]).
enum Next {
    /// Already on its way (being signed), or nothing to do.
    Nothing,
    /// Queue it for a worker.
    Ready,
    /// Queue it for the next request, without waiting for a full batch.
    ReadyNow,
    /// Have its next transactions signed.
    Sign,
    /// Queue it for a worker after this back-off.
    Later(Backoff),
}

/// Why a sender's request must be sent again, the longest back-off last
/// (of several in one request, the longest wins).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Again {
    /// At once (its own lost transactions were resent first).
    Now,
    /// After a back-off: a full mempool or rate limit.
    Busy,
    /// After a back-off: a timeout or a node out of reach.
    Timeout,
    /// After a back-off: insufficient funds, until a refill tops it up.
    Starved,
}

impl<N: Node> Engine<N> {
    /// An engine sending from `keys[..accounts]` through `clients`.
    pub fn new(
        cfg: EngineConfig,
        clients: Vec<Arc<N>>,
        keys: Arc<KeySet>,
        nonces: &[u64],
        start: Instant,
        ledger: Arc<Mutex<Ledger>>,
    ) -> Arc<Self> {
        let accts = nonces
            .iter()
            .map(|n| {
                Mutex::new(Acct {
                    next_nonce: *n,
                    ..Default::default()
                })
            })
            .collect();
        let ready = (0..clients.len())
            .map(|_| ReadyQueue::new(cfg.plan.batch))
            .collect();
        let cfg_writes = cfg.writes.len();
        Arc::new(Self {
            ready,
            busy: SlotClock::new(Self::workers(&cfg, clients.len())),
            cfg,
            clients,
            keys,
            accts,
            ledger,
            counters: Counters::default(),
            start,
            stop: AtomicBool::new(false),
            scheduling: AtomicBool::new(true),
            outstanding: AtomicU64::new(0),
            max_backlog: AtomicU64::new(0),
            sign_jobs: Mutex::new(None),
            fresh: AtomicU64::new(0),
            sent_by_write: (0..cfg_writes).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// First submissions of account `a` so far.
    pub fn sent_by(&self, a: usize) -> u64 {
        self.acct(a).sent
    }

    /// The accounts refused for insufficient funds since the last call.
    pub fn take_starved(&self) -> Vec<usize> {
        (0..self.accts.len())
            .filter(|&a| std::mem::take(&mut self.acct(a).starved))
            .collect()
    }

    /// The most one transaction can cost its sender: gas limit times the
    /// fee cap, plus the value.
    pub fn max_cost_per_tx(&self) -> U256 {
        let cost = |w: &Write| {
            let value = match w.workload {
                Workload::Transfer => self.cfg.plan.value,
                _ => U256::ZERO,
            };
            self.cfg.fees.max_cost(w.gas_limit) + value
        };
        self.cfg.writes.iter().map(cost).max().unwrap_or_default()
    }

    /// First submissions of each write kind so far, in the order of the
    /// configuration's writes.
    pub fn sent_by_write(&self) -> Vec<u64> {
        self.sent_by_write
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }

    /// Which of the writes account `a`'s transaction of `nonce` is: a draw
    /// from the sender's address and the nonce, so a transaction re-signed
    /// keeps its kind, and every sender draws independently.
    fn write_of(&self, a: usize, nonce: u64) -> usize {
        if self.cfg.writes.len() < 2 {
            return 0;
        }
        let sender = self.keys.addresses[a];
        let h = keccak256([sender.as_slice(), &nonce.to_be_bytes()[..]].concat());
        let mut top = [0u8; 8];
        top.copy_from_slice(&h[..8]);
        // The top 53 bits: a uniform draw in [0, 1).
        let u = (u64::from_be_bytes(top) >> 11) as f64 / (1u64 << 53) as f64;
        self.cfg.plan.writes.pick(u)
    }

    /// Workers, i.e. requests in flight at most.
    fn workers(cfg: &EngineConfig, endpoints: usize) -> usize {
        cfg.plan.max_parallelism.max(endpoints)
    }

    /// Transactions in flight per sender.
    fn per_sender(&self) -> usize {
        self.cfg.plan.per_sender.clamp(1, MAX_PER_SENDER)
    }

    /// Transactions of one sender per request.
    fn per_request(&self) -> usize {
        self.cfg.plan.per_request.clamp(1, self.per_sender())
    }

    /// Whether `acct` has work a new request could carry now: transactions
    /// to resend, or due ones and room in its pipeline.
    fn has_work(&self, acct: &Acct) -> bool {
        acct.has_resends() || (!acct.due.is_empty() && acct.window.len() < self.per_sender())
    }

    /// RPC reads of every endpoint sent again after a transient transport
    /// error so far.
    pub fn rpc_retries(&self) -> u64 {
        self.clients.iter().map(|c| c.retries()).sum()
    }

    /// The largest backlog one sender had: due transactions it could not
    /// submit yet because its previous ones were still in flight (its K
    /// pipelined ones included) or being signed. In open loop a backlog that
    /// grows means the agent, not the chain, limits the offered rate.
    pub fn max_backlog(&self) -> u64 {
        self.max_backlog.load(Ordering::Relaxed)
    }

    /// The live figures.
    pub fn snapshot(&self) -> Snapshot {
        let c = &self.counters;
        let ledger = self.ledger();
        let t = &ledger.tally;
        Snapshot {
            sent: c.sent.load(Ordering::Relaxed),
            accepted: c.accepted.load(Ordering::Relaxed),
            rejected: c.rejected.load(Ordering::Relaxed),
            backoffs: c.backoffs.load(Ordering::Relaxed),
            resends: c.resends.load(Ordering::Relaxed),
            resyncs: c.resyncs.load(Ordering::Relaxed),
            fee_resends: c.fee_resends.load(Ordering::Relaxed),
            in_flight: ledger.in_flight(),
            blocks_read: t.blocks_read(),
            slots_full: self.busy.full_time(),
            lag_total: t.lag_total.clone(),
            lag_own: t.lag_own.clone(),
            to_block_time: t.to_block_time.clone(),
        }
    }

    /// The retry counts so far (without the ledger's lock, which a caller
    /// may hold).
    pub fn retries(&self) -> Retries {
        let c = &self.counters;
        Retries {
            resends: c.resends.load(Ordering::Relaxed),
            fee_resends: c.fee_resends.load(Ordering::Relaxed),
            backoffs: c.backoffs.load(Ordering::Relaxed),
        }
    }

    /// When sending began.
    pub fn started(&self) -> Instant {
        self.start
    }

    /// The ledger: what is in flight and the run's figures.
    pub(super) fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        lock(&self.ledger)
    }

    fn acct(&self, a: usize) -> std::sync::MutexGuard<'_, Acct> {
        lock(&self.accts[a])
    }

    fn client(&self, a: usize) -> &N {
        &self.clients[a % self.clients.len()]
    }

    fn secs(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }

    /// Signs account `a`'s transfer with `nonce` at the fee of the moment.
    fn sign(&self, a: usize, nonce: u64) -> SignedTx {
        self.sign_at(a, nonce, self.cfg.fees.fee())
    }

    /// Signs account `a`'s transfer with `nonce` at `fee`.
    fn sign_at(&self, a: usize, nonce: u64, fee: Fee) -> SignedTx {
        let to = match self.cfg.plan.recipients {
            Recipients::Existing => {
                // Another account of the set, varying with the nonce.
                let n = self.keys.len();
                let offset = 1 + (nonce as usize) % (n - 1).max(1);
                self.keys.addresses[(a + offset) % n]
            }
            Recipients::Fresh => {
                // Keyed by the sender's index in the keys file, not in this
                // agent's shard of it, so agents never share a recipient.
                let k = self.fresh.fetch_add(1, Ordering::Relaxed);
                let sender = (self.keys.offset + a) as u64;
                Address::from_slice(
                    &keccak256([&sender.to_be_bytes()[..], &k.to_be_bytes()[..]].concat())[12..],
                )
            }
        };
        let write = self.cfg.writes[self.write_of(a, nonce)];
        let (to, value, input) = match write.workload {
            Workload::Transfer => (to, self.cfg.plan.value, Bytes::new()),
            Workload::Erc20 { token } => (
                token,
                U256::ZERO,
                super::erc20::transfer_call(to, self.cfg.plan.value),
            ),
            Workload::Store { contract } => (
                contract,
                U256::ZERO,
                super::contracts::store_of_nonce(nonce),
            ),
            Workload::Swap { contract } => {
                (contract, U256::ZERO, super::contracts::swap_of_nonce(nonce))
            }
        };
        sign::sign(
            &self.keys.keys[a],
            &TxRequest {
                chain_id: self.cfg.chain_id,
                nonce,
                to: Some(to),
                value,
                gas_limit: write.gas_limit,
                fee,
                input,
            },
        )
    }

    fn request_presign(&self, a: usize) -> bool {
        let jobs = lock(&self.sign_jobs);
        jobs.as_ref().is_some_and(|tx| tx.send(a).is_ok())
    }

    /// The nonces worth signing ahead for `acct`: those of its next due
    /// transactions that fit in its pipeline, not yet signed.
    fn wanted(&self, acct: &Acct) -> Vec<u64> {
        let room = self.per_sender().saturating_sub(acct.window.len());
        let n = acct.due.len().clamp(1, room.max(1));
        acct.upcoming(n)
            .filter(|nonce| !acct.presigned.contains(*nonce))
            .collect()
    }

    /// Decides how an account just queued ([`Flow::queue`]) moves forward: to
    /// the ready queue when it has transactions to resend or its next one is
    /// signed, else to a signer thread, which queues it once signed. Signing
    /// thus never waits on the send path and every transaction is signed
    /// once. The caller carries the step out with [`Self::follow`] once the
    /// account's lock is released, so a thread woken by the hand-off never
    /// waits on that lock.
    fn advance(acct: &mut Acct) -> Next {
        let signed = acct.upcoming(1).all(|n| acct.presigned.contains(n));
        if acct.has_resends() || acct.due.is_empty() || signed {
            Next::Ready
        } else if acct.flow.await_signer() {
            Next::Sign
        } else {
            Next::Nothing
        }
    }

    /// With more than one transaction in flight per sender: has the next
    /// due ones signed while the account's requests are in flight.
    fn sign_ahead(&self, acct: &mut Acct) -> Next {
        if self.per_sender() == 1 || acct.flow.signing() || acct.due.is_empty() {
            return Next::Nothing;
        }
        let room = self.per_sender().saturating_sub(acct.window.len()).max(1);
        let signed = acct
            .upcoming(acct.due.len().min(room))
            .all(|n| acct.presigned.contains(n));
        if !signed && acct.flow.sign_ahead() {
            Next::Sign
        } else {
            Next::Nothing
        }
    }

    /// Carries out what [`Self::advance`] decided for account `a`.
    fn follow(&self, a: usize, next: Next) {
        match next {
            Next::Nothing | Next::Later(..) => {}
            Next::Ready => self.push_ready(a),
            Next::ReadyNow => self.ready[a % self.ready.len()].push_now(a),
            Next::Sign => {
                if !self.request_presign(a) {
                    // No signer threads (shutting down): the worker signs inline.
                    let waiting = self.acct(a).flow.signed();
                    if waiting {
                        self.push_ready(a);
                    }
                }
            }
        }
    }

    /// Signs what account `a` wants signed ahead (on a signer thread).
    fn presign(&self, a: usize) {
        let wanted = self.wanted(&self.acct(a));
        // Signed without holding the account's lock.
        let signed: Vec<(u64, SignedTx)> =
            wanted.into_iter().map(|n| (n, self.sign(a, n))).collect();
        let next = {
            let mut acct = self.acct(a);
            let waited = acct.flow.signed();
            for (nonce, tx) in signed {
                if nonce >= acct.next_nonce || acct.holes.contains(&nonce) {
                    acct.presigned.insert(nonce, tx);
                }
            }
            if waited {
                Self::advance(&mut acct)
            } else {
                Next::Nothing
            }
        };
        self.follow(a, next);
    }

    /// Starts `threads` signer threads.
    fn start_signers(self: &Arc<Self>, threads: usize) -> Vec<std::thread::JoinHandle<()>> {
        let (tx, rx) = std::sync::mpsc::channel::<usize>();
        *lock(&self.sign_jobs) = Some(tx);
        let rx = Arc::new(Mutex::new(rx));
        (0..threads)
            .map(|i| {
                let rx = rx.clone();
                let me = self.clone();
                std::thread::Builder::new()
                    .name(format!("signer-{i}"))
                    .spawn(move || loop {
                        let job = lock(&rx).recv();
                        let Ok(a) = job else { return };
                        me.presign(a);
                    })
                    .unwrap_or_else(|e| panic!("cannot start a signer thread: {e}"))
            })
            .collect()
    }

    /// Queues one due transaction for account `a`.
    fn enqueue(&self, a: usize, intended: Option<Instant>) {
        let next = {
            let mut acct = self.acct(a);
            if let Some(cap) = self.cfg.plan.per_account {
                if acct.sent + acct.due.len() as u64 >= cap {
                    return;
                }
            }
            acct.due.push_back(intended);
            self.max_backlog
                .fetch_max(acct.due.len() as u64, Ordering::Relaxed);
            self.outstanding.fetch_add(1, Ordering::SeqCst);
            if acct.flow.queued() || acct.window.len() >= self.per_sender() {
                self.sign_ahead(&mut acct)
            } else {
                acct.flow.queue();
                Self::advance(&mut acct)
            }
        };
        self.follow(a, next);
    }

    fn push_ready(&self, a: usize) {
        self.ready[a % self.ready.len()].push(a);
    }

    fn wake_workers(&self) {
        for queue in &self.ready {
            queue.wake_all();
        }
    }

    fn finished(&self) -> bool {
        !self.scheduling.load(Ordering::SeqCst) && self.outstanding.load(Ordering::SeqCst) == 0
    }

    /// The rate schedule being run.
    pub fn schedule(&self) -> RateSchedule {
        self.cfg.plan.schedule
    }

    /// Stops taking new transactions; those already submitted are finished.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.scheduling.store(false, Ordering::SeqCst);
        self.wake_workers();
    }

    /// Takes account `a`'s transactions to submit in one request into
    /// `run`, in nonce order, at most [`LoadPlan::per_request`]: those to
    /// resend, then new ones while the sender has room in its pipeline. What
    /// is left for another request queues the account again at once.
    fn take(&self, a: usize, run: &mut Vec<Submitted>) -> Next {
        let mut acct = self.acct(a);
        acct.flow.dequeue();
        if self.stop.load(Ordering::SeqCst) {
            let dropped = acct.due.len() as u64;
            acct.due.clear();
            self.outstanding.fetch_sub(dropped, Ordering::SeqCst);
        }
        let per_request = self.per_request();
        for p in acct.window.iter_mut().filter(|p| !p.sending) {
            if run.len() == per_request {
                break;
            }
            p.sending = true;
            run.push(p.tx.clone());
        }
        let now = self.secs(Instant::now());
        while run.len() < per_request && acct.window.len() < self.per_sender() {
            let Some(intended) = acct.due.pop_front() else {
                break;
            };
            let tx = self.first_send(a, &mut acct, intended, now);
            acct.window.push_back(WindowEntry {
                tx: tx.clone(),
                sending: true,
            });
            run.push(tx);
        }
        let window = &acct.window;
        if window
            .iter()
            .zip(window.iter().skip(1))
            .any(|(x, y)| x.tx.nonce > y.tx.nonce)
        {
            // A refused nonce was taken again after later ones: keep nonce order.
            acct.window.make_contiguous().sort_by_key(|p| p.tx.nonce);
            run.sort_by_key(|c| c.nonce);
        }
        if run.is_empty() {
            return Next::Nothing;
        }
        acct.requests += 1;
        acct.check(self.per_sender());
        if self.has_work(&acct) {
            acct.flow.queue();
            match Self::advance(&mut acct) {
                Next::Ready => Next::ReadyNow,
                next => next,
            }
        } else {
            self.sign_ahead(&mut acct)
        }
    }

    /// Gives account `a`'s next due transaction (intended at `intended`)
    /// its nonce and signed bytes, and registers it.
    fn first_send(
        &self,
        a: usize,
        acct: &mut Acct,
        intended: Option<Instant>,
        now: f64,
    ) -> Submitted {
        let nonce = acct.allot_nonce();
        let tx = match acct.presigned.take(nonce) {
            Some(tx) => tx,
            None => self.sign(a, nonce),
        };
        let intended_at = intended.map_or(now, |t| self.secs(t));
        // Open loop only: the agent's own part starts once the node answered
        // the sender's previous transaction.
        let lag = intended.map(|_| {
            let own = now - intended_at.max(acct.answered);
            ((now - intended_at) * 1000.0, own.max(0.0) * 1000.0)
        });
        self.ledger().register(Submission {
            hash: tx.hash,
            live: Live {
                account: a as u32,
                nonce,
                raw: tx.raw.clone(),
                intended: intended_at,
                status: TxStatus::Pending,
            },
            at: now,
            lag,
        });
        acct.sent += 1;
        self.counters.sent.fetch_add(1, Ordering::Relaxed);
        if let Some(n) = self.sent_by_write.get(self.write_of(a, nonce)) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        Submitted {
            hash: tx.hash,
            raw: tx.raw,
            nonce,
            fee: tx.fee,
        }
    }

    /// Settles transaction `c` of `a` (`None`: accepted, else refused for
    /// that reason): it leaves the window and frees its slot. A refused
    /// transaction leaves its nonce to the next one. Returns `false` (and
    /// does nothing) when `c` is no longer in the window: each transaction
    /// is settled once.
    fn settle(&self, a: usize, c: &Submitted, refused: Option<String>) -> bool {
        let now = self.secs(Instant::now());
        let mut acct = self.acct(a);
        if !acct.window.iter().any(|p| p.tx.hash == c.hash) {
            return false;
        }
        let mut ledger = self.ledger();
        match &refused {
            None => ledger.accept(&c.hash, now),
            Some(reason) => ledger.refuse(&c.hash, reason, now),
        }
        acct.drop_from_window(&c.hash);
        acct.backoff = Duration::ZERO;
        acct.answered = now;
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        let endless =
            self.cfg.plan.schedule == RateSchedule::Closed && self.cfg.plan.per_account.is_none();
        if endless && !self.stop.load(Ordering::SeqCst) {
            // Closed loop bounded by --duration only: always one more.
            acct.due.push_back(None);
            self.outstanding.fetch_add(1, Ordering::SeqCst);
        }
        if refused.is_none() {
            acct.unconfirmed.insert(c.nonce, c.hash);
            // Those the ledger no longer holds are in blocks (or given up).
            while let Some((_, h)) = acct.unconfirmed.first_key_value() {
                if ledger.holds(h) {
                    break;
                }
                acct.unconfirmed.pop_first();
            }
            self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        } else {
            if c.nonce < acct.next_nonce {
                acct.holes.insert(c.nonce);
            }
            self.counters.rejected.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// Handles `nonce too high` for `current`, the first unsettled
    /// transaction of `a`'s window: resends our own accepted-but-lost
    /// transactions from the pending nonce up ([`Again::Now`]: the window
    /// goes again), or resynchronises when some are not ours (`rest`, the
    /// run from `current` on, and what of the window is not in flight are
    /// refused, their slots due again; `None`).
    async fn heal_gap(&self, a: usize, rest: &[Submitted]) -> Option<Again> {
        let current = &rest[0];
        let address = self.keys.addresses[a];
        let Ok(pending) = self.client(a).nonce(address, true).await else {
            return Some(Again::Timeout);
        };
        let resend: Option<Vec<Bytes>> = {
            let acct = self.acct(a);
            let ledger = self.ledger();
            (pending..current.nonce)
                .map(|n| acct.unconfirmed.get(&n).and_then(|h| ledger.raw(h)))
                .collect()
        };
        match resend {
            Some(raws) => {
                for raw in raws {
                    self.counters.resends.fetch_add(1, Ordering::Relaxed);
                    let _ = self.client(a).send_raw(&raw).await;
                }
                Some(Again::Now)
            }
            None => {
                self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
                // Those in flight in other requests settle on their own answers.
                let window: Vec<Submitted> = {
                    let acct = self.acct(a);
                    let idle = acct.window.iter().filter(|p| !p.sending);
                    let idle = idle.map(|p| p.tx.clone());
                    rest.iter().cloned().chain(idle).collect()
                };
                let settled = window
                    .iter()
                    .filter(|c| self.settle(a, c, Some("nonce too high".to_string())))
                    .count();
                let mut acct = self.acct(a);
                acct.next_nonce = pending;
                acct.holes.clear();
                acct.presigned.clear();
                // The freed slots are replaced so the account still sends its share.
                for _ in 0..settled {
                    acct.due.push_front(None);
                }
                self.outstanding.fetch_add(settled as u64, Ordering::SeqCst);
                None
            }
        }
    }

    /// Re-signs `c` of account `a`, refused for its fee, with the same nonce
    /// and a higher fee ([`feth_chain::fees::FeeFollower::bump`]), to go again in
    /// its place in the window; the ledger follows it under its new hash.
    /// `false` when the fee cap allows no higher fee (or `c` is settled).
    fn resign(&self, a: usize, c: &Submitted) -> bool {
        let Some(fee) = self.cfg.fees.bump(c.fee) else {
            return false;
        };
        let tx = self.sign_at(a, c.nonce, fee);
        let mut acct = self.acct(a);
        let Some(p) = acct.window.iter_mut().find(|p| p.tx.hash == c.hash) else {
            return false;
        };
        self.ledger().resigned(&c.hash, tx.hash, tx.raw.clone());
        p.tx = Submitted {
            hash: tx.hash,
            raw: tx.raw,
            nonce: c.nonce,
            fee,
        };
        p.sending = false;
        true
    }

    async fn resync_low(&self, a: usize, nonce: u64) {
        self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
        let pending = self
            .client(a)
            .nonce(self.keys.addresses[a], true)
            .await
            .unwrap_or(nonce + 1);
        let mut acct = self.acct(a);
        acct.next_nonce = acct.next_nonce.max(pending).max(nonce + 1);
        // The nonces below are taken on the chain.
        acct.holes.retain(|n| *n >= pending);
        let (next, holes) = (acct.next_nonce, std::mem::take(&mut acct.holes));
        acct.presigned.retain(|n| n >= next || holes.contains(&n));
        acct.holes = holes;
    }

    /// Submits the next transactions of each account in `batch` (all on one
    /// endpoint) in one request, each account's in nonce order, then
    /// handles each account's answers.
    async fn process(self: &Arc<Self>, batch: &[usize]) {
        let mut runs = Vec::with_capacity(batch.len());
        for &a in batch {
            let mut run = Vec::with_capacity(1);
            let next = self.take(a, &mut run);
            self.follow(a, next);
            if !run.is_empty() {
                runs.push((a, run));
            }
        }
        let Some(&(first, _)) = runs.first() else {
            return;
        };
        let _slot = self.busy.enter();
        let raws: Vec<&[u8]> = runs
            .iter()
            .flat_map(|(_, run)| run.iter().map(|c| c.raw.as_ref()))
            .collect();
        let mut results = self.client(first).send_raw_batch(&raws).await.into_iter();
        for (a, run) in runs {
            let outcomes: Vec<Outcome> = results.by_ref().take(run.len()).map(classify).collect();
            self.handle(a, &run, outcomes).await;
        }
    }

    /// Retries account `a` after its back-off, which doubles from the
    /// `backoff`'s floor up to its ceiling; the worker is not held meanwhile.
    fn retry_later(self: &Arc<Self>, a: usize, backoff: Backoff) {
        let delay = {
            let mut acct = self.acct(a);
            acct.backoff = (acct.backoff * 2).clamp(backoff.floor, backoff.ceiling);
            acct.backoff
        };
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            me.push_ready(a);
        });
    }

    /// Decides what follows the answers to account `a`'s `run`, in nonce
    /// order. Once one must be sent again, every later one of the run stays
    /// in the window to go again with it, in order (those the node took are
    /// counted accepted now and answer `already known` then).
    async fn handle(self: &Arc<Self>, a: usize, run: &[Submitted], outcomes: Vec<Outcome>) {
        let mut again: Option<Again> = None;
        for (i, (c, outcome)) in run.iter().zip(outcomes).enumerate() {
            match outcome {
                Outcome::Accepted if again.is_none() => {
                    self.settle(a, c, None);
                }
                Outcome::Accepted => {
                    let now = self.secs(Instant::now());
                    self.ledger().accept(&c.hash, now);
                }
                Outcome::Rejected(reason) => {
                    self.settle(a, c, Some(reason));
                }
                Outcome::FeeTooLow(reason) => {
                    if self.resign(a, c) {
                        self.counters.fee_resends.fetch_add(1, Ordering::Relaxed);
                        again = Some(again.unwrap_or(Again::Now));
                    } else {
                        self.settle(a, c, Some(reason));
                    }
                }
                Outcome::NonceTooLow => {
                    // Our own earlier submission may have been included (a
                    // timeout that was not one); the block scan decides.
                    self.settle(a, c, Some("nonce too low".to_string()));
                    self.resync_low(a, c.nonce).await;
                }
                // Behind one to send again: it goes again after it.
                Outcome::NonceTooHigh if again.is_some() => {}
                // Its predecessor is on its way in another request.
                Outcome::NonceTooHigh if self.acct(a).behind(c.nonce) => {
                    again = Some(Again::Busy);
                }
                Outcome::NonceTooHigh => match self.heal_gap(a, &run[i..]).await {
                    Some(next) => again = Some(next),
                    None => break,
                },
                Outcome::Timeout => {
                    self.counters.resends.fetch_add(1, Ordering::Relaxed);
                    again = Some(again.map_or(Again::Timeout, |g| g.max(Again::Timeout)));
                }
                Outcome::Busy => {
                    self.counters.backoffs.fetch_add(1, Ordering::Relaxed);
                    again = Some(again.map_or(Again::Busy, |g| g.max(Again::Busy)));
                }
                Outcome::InsufficientFunds(_) if self.cfg.refill => {
                    self.counters.backoffs.fetch_add(1, Ordering::Relaxed);
                    self.acct(a).starved = true;
                    again = Some(Again::Starved);
                }
                Outcome::InsufficientFunds(reason) => {
                    self.settle(a, c, Some(reason));
                }
            }
        }
        let next = {
            let mut acct = self.acct(a);
            acct.requests = acct.requests.saturating_sub(1);
            // What was not settled goes again.
            for c in run {
                acct.resend(&c.hash);
            }
            acct.check(self.per_sender());
            if acct.flow.queued() || !self.has_work(&acct) {
                Next::Nothing
            } else {
                acct.flow.queue();
                match again {
                    Some(Again::Busy) => Next::Later(BUSY_BACKOFF),
                    Some(Again::Timeout) => Next::Later(TIMEOUT_BACKOFF),
                    Some(Again::Starved) => Next::Later(STARVED_BACKOFF),
                    Some(Again::Now) | None => Self::advance(&mut acct),
                }
            }
        };
        match next {
            Next::Later(backoff) => self.retry_later(a, backoff),
            next => self.follow(a, next),
        }
    }

    /// Resends, in nonce order per sender, the accepted transactions not yet
    /// in a block that the node no longer holds (a restart emptied its
    /// mempool): those at or above the sender's `pending` nonce. Those still
    /// in the mempool are left alone. Returns how many were resent.
    pub async fn resend_missing(&self) -> usize {
        let mut by_account: BTreeMap<u32, Vec<(u64, Bytes)>> = BTreeMap::new();
        for (account, nonce, raw) in self.ledger().missing() {
            by_account.entry(account).or_default().push((nonce, raw));
        }
        let resent = AtomicU64::new(0);
        futures::stream::iter(by_account)
            .for_each_concurrent(64, |(a, mut txs)| {
                let resent = &resent;
                async move {
                    let client = self.client(a as usize);
                    let Ok(pending) = client.nonce(self.keys.addresses[a as usize], true).await
                    else {
                        return;
                    };
                    txs.sort_by_key(|(n, _)| *n);
                    for (_, raw) in txs.into_iter().filter(|(n, _)| *n >= pending) {
                        self.counters.resends.fetch_add(1, Ordering::Relaxed);
                        resent.fetch_add(1, Ordering::Relaxed);
                        // Failures are fine: the next round tries again.
                        let _ = client.send_raw(&raw).await;
                    }
                }
            })
            .await;
        resent.into_inner() as usize
    }

    /// Runs the load to completion; returns when every queued transaction is
    /// settled (or the run was stopped and in-flight ones finished).
    pub async fn run(self: &Arc<Self>, signer_threads: usize) {
        let signers = self.start_signers(signer_threads);
        let accounts = self.accts.len();
        let endpoints = self.clients.len();
        let workers: Vec<_> = (0..Self::workers(&self.cfg, endpoints))
            .map(|w| {
                let me = self.clone();
                tokio::spawn(async move {
                    let queue = &me.ready[w % endpoints];
                    let mut batch = Vec::with_capacity(me.cfg.plan.batch);
                    while queue.take(&mut batch, || me.finished()).await {
                        me.process(&batch).await;
                    }
                })
            })
            .collect();
        let deadline = self.cfg.plan.duration.map(|d| self.start + d);
        match self.cfg.plan.schedule {
            RateSchedule::Closed => {
                // With --count every transaction is queued now; with
                // --duration alone each sender keeps its pipeline full, each
                // settled transaction queuing the next.
                let per = self
                    .cfg
                    .plan
                    .per_account
                    .unwrap_or(self.per_sender() as u64);
                for a in 0..accounts {
                    for _ in 0..per {
                        self.enqueue(a, None);
                    }
                }
                self.scheduling.store(false, Ordering::SeqCst);
                if let Some(deadline) = deadline {
                    let me = self.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep_until(deadline.into()).await;
                        me.stop();
                    });
                }
            }
            schedule => self.open_loop(schedule, deadline).await,
        }
        for w in workers {
            let _ = w.await;
        }
        *lock(&self.sign_jobs) = None;
        for s in signers {
            let _ = s.join();
        }
    }

    async fn open_loop(self: &Arc<Self>, schedule: RateSchedule, deadline: Option<Instant>) {
        let mut rng = rand::rngs::StdRng::from_entropy();
        let cap = self
            .cfg
            .plan
            .per_account
            .map(|c| c.saturating_mul(self.accts.len() as u64));
        let mut due = self.start;
        let mut released = 0u64;
        loop {
            let now = Instant::now();
            if cap.is_some_and(|c| released >= c) || self.stop.load(Ordering::SeqCst) {
                break;
            }
            // Everything due by now and before the deadline is released,
            // also on the pass that finds the deadline passed: a late
            // wake-up must not drop what fell due before it.
            let ended = deadline.is_some_and(|d| now >= d);
            while due <= now && deadline.is_none_or(|d| due < d) && cap.is_none_or(|c| released < c)
            {
                let a = self.cfg.plan.picker.pick(&mut rng);
                self.enqueue(a, Some(due));
                released += 1;
                let rate = schedule.rate_at(self.secs(due)).unwrap_or(1.0).max(0.001);
                due += Duration::from_secs_f64(1.0 / rate);
            }
            if ended {
                break;
            }
            tokio::time::sleep_until(due.max(now + Duration::from_micros(500)).into()).await;
        }
        self.scheduling.store(false, Ordering::SeqCst);
        self.wake_workers();
    }
}

#[cfg(test)]
mod tests;
