//! The sending engine.
//!
//! - Each account sends one transaction at a time, in nonce order: nodes such
//!   as abcid refuse nonce gaps, and the order of concurrent requests on the
//!   wire is not guaranteed. Accounts queue their due transactions (FIFO).
//! - `max_parallelism` workers take batches of ready accounts (see
//!   [`super::ready`]) and submit their next transactions in one request;
//!   accounts are spread across endpoints.
//! - Signer threads keep each account's next transaction pre-signed, so
//!   libsecp256k1 signing stays off the send path.
//! - Open loop (`--rate`, `--ramp`): a scheduler releases transactions at
//!   their intended send times, recorded for latency, so a slow node cannot
//!   hide its slowness by slowing the agent (no coordinated omission).
//! - Every request holds a slot (a worker) while it is in flight; a
//!   [`SlotClock`] integrates the time during which all of them are.
//! - Errors are handled per sender: a full mempool or rate limit backs that
//!   sender off and resends the same transaction; `nonce too low` and
//!   `already known` resynchronise from `pending`; `nonce too high` resends
//!   the sender's own missing transactions (a mempool lost in a restart) or
//!   resynchronises; a timeout or a node that cannot be reached resends the
//!   same signed bytes (same hash) after a per-sender back-off (100 ms
//!   doubling to 5 s), so a node down for minutes is neither hammered nor
//!   given up on.
//! - With refills on ([`EngineConfig::refill`]), `insufficient funds` backs
//!   the sender off (250 ms doubling to 5 s) and resends the same
//!   transaction once [`super::refill`] has topped it up; otherwise it is a
//!   rejection.
//! - What was submitted is kept in the [`Ledger`] only while in flight.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::ledger::{Ledger, Live, Submission, TxStatus};
use super::pick::{Picker, RateSchedule};
use super::ready::ReadyQueue;
use super::slots::SlotClock;
use crate::accounts::KeySet;
use crate::eth::{EthClient, RpcError};
use crate::sign::{self, Fee, SignedTx, TxRequest};
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use futures::StreamExt;
use rand::SeedableRng;

/// Where transfers go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recipients {
    /// Other accounts of the keys file.
    Existing,
    /// New addresses that never held anything.
    Fresh,
}

/// What each transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// A plain value transfer.
    Transfer,
    /// `transfer(recipient, value)` on an ERC-20 token (the plan's value in
    /// token units).
    Erc20 {
        /// The token.
        token: Address,
    },
}

/// What each transaction does, as asked for (the token of an ERC-20 load is
/// deployed by the run itself, see [`Workload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Value transfers.
    Transfer,
    /// ERC-20 `transfer(recipient, value)` calls.
    Erc20,
}

/// Default concurrent requests.
pub const DEFAULT_MAX_PARALLELISM: usize = 64;
/// Default transactions per JSON-RPC batch (CometBFT's RPC refuses batches
/// over 10 by default).
pub const DEFAULT_BATCH: usize = 10;

/// What to send, as a person asks for it: complete without the node.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    /// Send rate over time.
    pub schedule: RateSchedule,
    /// Transactions per account (closed loop), or a cap in open loop.
    pub per_account: Option<u64>,
    /// How long to send.
    pub duration: Option<Duration>,
    /// Concurrent requests.
    pub max_parallelism: usize,
    /// Transactions (of different senders) per JSON-RPC batch request.
    pub batch: usize,
    /// Who sends.
    pub picker: Picker,
    /// Who receives.
    pub recipients: Recipients,
    /// What each transaction does.
    pub workload: WorkloadKind,
    /// Value per transfer: wei, or token units for ERC-20 transfers.
    pub value: U256,
}

impl LoadPlan {
    /// Value transfers of 1 wei to fresh addresses from `senders` uniformly
    /// chosen accounts, 64 requests in flight, batches of 10.
    pub fn transfers(schedule: RateSchedule, senders: usize) -> Self {
        Self {
            schedule,
            per_account: None,
            duration: None,
            max_parallelism: DEFAULT_MAX_PARALLELISM,
            batch: DEFAULT_BATCH,
            picker: Picker::new(super::pick::AccountDist::Uniform, senders),
            recipients: Recipients::Fresh,
            workload: WorkloadKind::Transfer,
            value: U256::from(1u64),
        }
    }
}

/// What the engine runs: the plan, and what the chain decided (chain id,
/// fee model, the deployed token).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The plan.
    pub plan: LoadPlan,
    /// What each transaction does.
    pub workload: Workload,
    /// Gas limit per transaction.
    pub gas_limit: u64,
    /// Fee model.
    pub fee: Fee,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Senders refused for insufficient funds wait to be topped up (see
    /// [`super::refill`]) instead of having the transaction rejected.
    pub refill: bool,
}

/// Live counters for the progress line.
#[derive(Debug, Default)]
pub struct Counters {
    /// First submissions.
    pub sent: AtomicU64,
    /// Accepted by a node.
    pub accepted: AtomicU64,
    /// Refused.
    pub rejected: AtomicU64,
    /// Back-offs on a full mempool or rate limit.
    pub backoffs: AtomicU64,
    /// Resubmissions after a timeout or a lost mempool.
    pub resends: AtomicU64,
    /// Nonce resynchronisations.
    pub resyncs: AtomicU64,
}

/// The transaction an account is (re)submitting.
#[derive(Debug, Clone)]
struct Current {
    hash: B256,
    raw: Bytes,
    nonce: u64,
}

#[derive(Debug, Default)]
struct Acct {
    next_nonce: u64,
    /// Due transactions: intended send time (`None`: as soon as possible).
    slots: VecDeque<Option<Instant>>,
    /// In the pipeline: waiting to be signed, ready, or in flight.
    busy: bool,
    /// A signer thread is signing this account's next transaction.
    signing: bool,
    presigned: Option<(u64, SignedTx)>,
    /// The transaction being (re)submitted.
    current: Option<Current>,
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

/// State shared by the workers, signers and scheduler.
pub struct Engine {
    cfg: EngineConfig,
    clients: Vec<Arc<EthClient>>,
    keys: Arc<KeySet>,
    accts: Vec<Mutex<Acct>>,
    /// Ready accounts, one queue per endpoint (a batch goes to one endpoint).
    ready: Vec<ReadyQueue>,
    /// The transactions in flight and the run's figures.
    pub ledger: Arc<Mutex<Ledger>>,
    /// Live counters.
    pub counters: Counters,
    /// How long every request slot (worker) was busy at once.
    pub slots: SlotClock,
    /// When sending began.
    pub start: Instant,
    stop: AtomicBool,
    scheduling: AtomicBool,
    outstanding: AtomicU64,
    sign_jobs: Mutex<Option<std::sync::mpsc::Sender<(usize, u64)>>>,
    fresh: AtomicU64,
}

/// What moves a busy account forward (see [`Engine::advance`]).
enum Next {
    /// Already on its way (being signed).
    Nothing,
    /// Queue it for a worker.
    Ready,
    /// Have its transaction with this nonce signed.
    Sign(u64),
}

enum Outcome {
    Accepted,
    Busy,
    InsufficientFunds(String),
    Timeout,
    NonceTooLow,
    NonceTooHigh,
    Rejected(String),
}

fn classify(result: Result<alloy_primitives::B256, RpcError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Accepted,
        Err(RpcError::Rpc { message, .. }) => {
            let m = message.to_ascii_lowercase();
            if m.contains("already known")
                || m.contains("already exists")
                || m.contains("alreadyknown")
            {
                Outcome::Accepted
            } else if crate::fund::is_busy(&m) {
                Outcome::Busy
            } else if m.contains("nonce too low") {
                Outcome::NonceTooLow
            } else if m.contains("nonce too high") {
                Outcome::NonceTooHigh
            } else if m.contains("insufficient funds") {
                Outcome::InsufficientFunds(reason(&message))
            } else {
                Outcome::Rejected(reason(&message))
            }
        }
        Err(RpcError::Transport { .. }) => Outcome::Timeout,
        Err(RpcError::Decode { message, .. }) => {
            Outcome::Rejected(format!("bad answer: {message}"))
        }
    }
}

/// A rejection message without its per-transaction numbers, to count by reason.
fn reason(message: &str) -> String {
    message
        .split(':')
        .next()
        .unwrap_or(message)
        .trim()
        .to_string()
}

impl Engine {
    /// An engine sending from `keys[..accounts]` through `clients`.
    pub fn new(
        cfg: EngineConfig,
        clients: Vec<Arc<EthClient>>,
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
        Arc::new(Self {
            ready,
            slots: SlotClock::new(Self::workers(&cfg, clients.len())),
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
            sign_jobs: Mutex::new(None),
            fresh: AtomicU64::new(0),
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
        let value = match self.cfg.workload {
            Workload::Transfer => self.cfg.plan.value,
            Workload::Erc20 { .. } => U256::ZERO,
        };
        crate::fees::max_cost(self.cfg.fee, self.cfg.gas_limit) + value
    }

    /// Workers, i.e. requests in flight at most.
    fn workers(cfg: &EngineConfig, endpoints: usize) -> usize {
        cfg.plan.max_parallelism.max(endpoints)
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn acct(&self, a: usize) -> std::sync::MutexGuard<'_, Acct> {
        // A poisoned account lock only means a worker panicked mid-update;
        // the data is still the best we have.
        self.accts[a].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn client(&self, a: usize) -> &EthClient {
        &self.clients[a % self.clients.len()]
    }

    fn secs(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }

    /// Signs account `a`'s transfer with `nonce`.
    fn sign(&self, a: usize, nonce: u64) -> SignedTx {
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
        let (to, value, input) = match self.cfg.workload {
            Workload::Transfer => (to, self.cfg.plan.value, Bytes::new()),
            Workload::Erc20 { token } => (
                token,
                U256::ZERO,
                super::erc20::transfer_call(to, self.cfg.plan.value),
            ),
        };
        sign::sign(
            &self.keys.keys[a],
            &TxRequest {
                chain_id: self.cfg.chain_id,
                nonce,
                to: Some(to),
                value,
                gas_limit: self.cfg.gas_limit,
                fee: self.cfg.fee,
                input,
            },
        )
    }

    fn request_presign(&self, a: usize, nonce: u64) -> bool {
        let jobs = self.sign_jobs.lock().unwrap_or_else(|e| e.into_inner());
        jobs.as_ref().is_some_and(|tx| tx.send((a, nonce)).is_ok())
    }

    /// Decides how a busy account with due work moves forward: to the ready
    /// queue when its next transaction is signed (or being retried), else to
    /// a signer thread, which queues it once signed. Signing thus never waits
    /// on the send path and every transaction is signed once. The caller
    /// carries the step out with [`Self::follow`] once the account's lock is
    /// released, so a thread woken by the hand-off never waits on that lock.
    fn advance(acct: &mut Acct) -> Next {
        let signed = matches!(&acct.presigned, Some((n, _)) if *n == acct.next_nonce);
        if acct.current.is_some() || signed {
            Next::Ready
        } else if acct.signing {
            Next::Nothing
        } else {
            acct.signing = true;
            Next::Sign(acct.next_nonce)
        }
    }

    /// Carries out what [`Self::advance`] decided for account `a`.
    fn follow(&self, a: usize, next: Next) {
        match next {
            Next::Nothing => {}
            Next::Ready => self.push_ready(a),
            Next::Sign(nonce) => {
                if !self.request_presign(a, nonce) {
                    // No signer threads (shutting down): the worker signs inline.
                    self.acct(a).signing = false;
                    self.push_ready(a);
                }
            }
        }
    }

    /// Starts `threads` signer threads.
    fn start_signers(self: &Arc<Self>, threads: usize) -> Vec<std::thread::JoinHandle<()>> {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, u64)>();
        *self.sign_jobs.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        let rx = Arc::new(Mutex::new(rx));
        (0..threads)
            .map(|i| {
                let rx = rx.clone();
                let me = self.clone();
                std::thread::Builder::new()
                    .name(format!("signer-{i}"))
                    .spawn(move || loop {
                        let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok((a, nonce)) = job else { return };
                        // Signed without holding the account's lock.
                        let wanted = me.acct(a).next_nonce == nonce;
                        let tx = wanted.then(|| me.sign(a, nonce));
                        let next = {
                            let mut acct = me.acct(a);
                            acct.signing = false;
                            if let Some(tx) = tx {
                                if acct.next_nonce == nonce && acct.current.is_none() {
                                    acct.presigned = Some((nonce, tx));
                                }
                            }
                            if acct.busy && !acct.slots.is_empty() {
                                Self::advance(&mut acct)
                            } else {
                                Next::Nothing
                            }
                        };
                        me.follow(a, next);
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
                if acct.sent + acct.slots.len() as u64 >= cap {
                    return;
                }
            }
            acct.slots.push_back(intended);
            self.outstanding.fetch_add(1, Ordering::SeqCst);
            if std::mem::replace(&mut acct.busy, true) {
                Next::Nothing
            } else {
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

    /// Takes account `a`'s next transaction to submit (or the one being retried).
    fn take_tx(&self, a: usize) -> Option<Current> {
        let mut acct = self.acct(a);
        if self.stop.load(Ordering::SeqCst) && acct.current.is_none() {
            let dropped = acct.slots.len() as u64;
            acct.slots.clear();
            acct.busy = false;
            self.outstanding.fetch_sub(dropped, Ordering::SeqCst);
            return None;
        }
        let Some(intended) = acct.slots.front().copied() else {
            acct.busy = false;
            return None;
        };
        if let Some(current) = &acct.current {
            return Some(current.clone());
        }
        let nonce = acct.next_nonce;
        let tx = match acct.presigned.take() {
            Some((n, tx)) if n == nonce => tx,
            _ => self.sign(a, nonce),
        };
        let now = self.secs(Instant::now());
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
        let current = Current {
            hash: tx.hash,
            raw: tx.raw,
            nonce,
        };
        acct.current = Some(current.clone());
        acct.sent += 1;
        self.counters.sent.fetch_add(1, Ordering::Relaxed);
        Some(current)
    }

    /// Marks the current transaction of `a` settled (`None`: accepted, else
    /// refused for that reason) and frees its slot.
    fn settle(&self, a: usize, hash: B256, refused: Option<String>) {
        let now = self.secs(Instant::now());
        let mut acct = self.acct(a);
        let mut ledger = self.ledger();
        match &refused {
            None => ledger.accept(&hash, now),
            Some(reason) => ledger.refuse(&hash, reason, now),
        }
        acct.current = None;
        acct.backoff = Duration::ZERO;
        acct.answered = now;
        acct.slots.pop_front();
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        let endless =
            self.cfg.plan.schedule == RateSchedule::Closed && self.cfg.plan.per_account.is_none();
        if endless && !self.stop.load(Ordering::SeqCst) {
            // Closed loop bounded by --duration only: always one more.
            acct.slots.push_back(None);
            self.outstanding.fetch_add(1, Ordering::SeqCst);
        }
        if refused.is_none() {
            let nonce = acct.next_nonce;
            acct.unconfirmed.insert(nonce, hash);
            acct.next_nonce += 1;
            // Those the ledger no longer holds are in blocks (or given up).
            while let Some((_, h)) = acct.unconfirmed.first_key_value() {
                if ledger.holds(h) {
                    break;
                }
                acct.unconfirmed.pop_first();
            }
            self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counters.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Handles `nonce too high`: resends our own accepted-but-lost transactions
    /// from the pending nonce up, or resynchronises when some are not ours.
    async fn heal_gap(&self, a: usize, current: &Current) {
        let address = self.keys.addresses[a];
        let Ok(pending) = self.client(a).nonce(address, true).await else {
            return;
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
            }
            None => {
                self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
                self.settle(a, current.hash, Some("nonce too high".to_string()));
                let mut acct = self.acct(a);
                acct.next_nonce = pending;
                acct.presigned = None;
                // The freed slot is replaced so the account still sends its share.
                acct.slots.push_front(None);
                self.outstanding.fetch_add(1, Ordering::SeqCst);
            }
        }
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
        acct.presigned = None;
    }

    /// Submits the next transaction of each account in `batch` (all on one
    /// endpoint) in one request, then handles each answer.
    async fn process(self: &Arc<Self>, batch: &[usize]) {
        let mut taken = Vec::with_capacity(batch.len());
        for &a in batch {
            if let Some(current) = self.take_tx(a) {
                taken.push((a, current));
            }
        }
        let Some(&(first, _)) = taken.first() else {
            return;
        };
        let _slot = self.slots.enter();
        let raws: Vec<&[u8]> = taken.iter().map(|(_, c)| c.raw.as_ref()).collect();
        let results = self.client(first).send_raw_batch(&raws).await;
        for ((a, current), result) in taken.into_iter().zip(results) {
            self.handle(a, &current, classify(result)).await;
        }
    }

    /// Retries account `a` after its back-off, which doubles from `floor`
    /// up to `ceiling`; the worker is not held meanwhile.
    fn retry_later(self: &Arc<Self>, a: usize, floor: Duration, ceiling: Duration) {
        let delay = {
            let mut acct = self.acct(a);
            acct.backoff = (acct.backoff * 2).clamp(floor, ceiling);
            acct.backoff
        };
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            me.push_ready(a);
        });
    }

    /// Decides what follows one answer for account `a`'s current transaction.
    async fn handle(self: &Arc<Self>, a: usize, current: &Current, outcome: Outcome) {
        match outcome {
            Outcome::Accepted => self.settle(a, current.hash, None),
            Outcome::Rejected(reason) => self.settle(a, current.hash, Some(reason)),
            Outcome::NonceTooLow => {
                // Our own earlier submission may have been included (a
                // timeout that was not one); the block scan decides.
                self.settle(a, current.hash, Some("nonce too low".to_string()));
                self.resync_low(a, current.nonce).await;
            }
            Outcome::NonceTooHigh => self.heal_gap(a, current).await,
            Outcome::Timeout => {
                self.counters.resends.fetch_add(1, Ordering::Relaxed);
                let (floor, ceiling) = (Duration::from_millis(100), Duration::from_secs(5));
                return self.retry_later(a, floor, ceiling);
            }
            Outcome::Busy => {
                self.counters.backoffs.fetch_add(1, Ordering::Relaxed);
                let (floor, ceiling) = (Duration::from_millis(20), Duration::from_secs(2));
                return self.retry_later(a, floor, ceiling);
            }
            Outcome::InsufficientFunds(_) if self.cfg.refill => {
                self.counters.backoffs.fetch_add(1, Ordering::Relaxed);
                self.acct(a).starved = true;
                let (floor, ceiling) = (Duration::from_millis(250), Duration::from_secs(5));
                return self.retry_later(a, floor, ceiling);
            }
            Outcome::InsufficientFunds(reason) => self.settle(a, current.hash, Some(reason)),
        }
        let next = {
            let mut acct = self.acct(a);
            if acct.slots.is_empty() {
                acct.busy = false;
                Next::Nothing
            } else {
                Self::advance(&mut acct)
            }
        };
        self.follow(a, next);
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
                // --duration alone each settled one queues the next.
                let per = self.cfg.plan.per_account.unwrap_or(1);
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
        *self.sign_jobs.lock().unwrap_or_else(|e| e.into_inner()) = None;
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
            if deadline.is_some_and(|d| now >= d)
                || cap.is_some_and(|c| released >= c)
                || self.stop.load(Ordering::SeqCst)
            {
                break;
            }
            while due <= now && cap.is_none_or(|c| released < c) {
                let a = self.cfg.plan.picker.pick(&mut rng);
                self.enqueue(a, Some(due));
                released += 1;
                let rate = schedule.rate_at(self.secs(due)).unwrap_or(1.0).max(0.001);
                due += Duration::from_secs_f64(1.0 / rate);
            }
            tokio::time::sleep_until(due.max(now + Duration::from_micros(500)).into()).await;
        }
        self.scheduling.store(false, Ordering::SeqCst);
        self.wake_workers();
    }
}
