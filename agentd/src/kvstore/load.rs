//! An open-loop sender of kvstore transactions at a fixed rate through
//! CometBFT's JSON-RPC: batches of up to [`MAX_BATCH`] `broadcast_tx_sync`
//! calls, at most `slots` requests in flight, each transaction sent once
//! when due ([`Schedule`]). It records each transaction's schedule lag (first
//! send − intended time), how long every slot was busy at once, and the
//! node's verdicts by reason.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::schedule::Schedule;
use super::wire::{self, Verdicts, MAX_BATCH};
use crate::load::slots::BusyClock;
use crate::sync::lock;

/// What to send.
#[derive(Debug, Clone, PartialEq)]
pub struct SendConfig {
    /// CometBFT's RPC URL.
    pub url: String,
    /// Transactions per second (> 0).
    pub rate: f64,
    /// Requests in flight at most (≥ 1).
    pub slots: usize,
    /// Transactions per request, 1 to [`MAX_BATCH`].
    pub batch: usize,
    /// Run number, part of every transaction (`k<run>-<seq>=v`): a new one
    /// per run on the same chain.
    pub run: u64,
}

/// An HTTP client for the sender: keep-alive connections for `slots`
/// requests in flight, each given up after `timeout`.
pub fn client(slots: usize, timeout: Duration) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(slots)
        .tcp_nodelay(true)
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .context("cannot set up the HTTP client")
}

/// The sender's counters at one instant.
#[derive(Debug, Clone)]
pub struct SendMark {
    at: Instant,
    sent: u64,
    accepted: u64,
    rejected: BTreeMap<String, u64>,
    busy: Duration,
    lags: usize,
    backlog_lag: Duration,
}

/// What the sender did between two marks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SendWindow {
    /// Length of the window, s.
    pub seconds: f64,
    /// Transactions sent (first and only send).
    pub sent: u64,
    /// Transactions the node admitted (answers received in the window).
    pub accepted: u64,
    /// Transactions refused, by reason (answers received in the window).
    pub rejected: BTreeMap<String, u64>,
    /// Median schedule lag of the transactions sent, ms; without any, the
    /// lag of the oldest one still waiting at the window's end.
    pub lag_p50_ms: f64,
    /// 99th percentile of the schedule lag, ms (same fallback).
    pub lag_p99_ms: f64,
    /// Share of the window (0–1) with every slot waiting on the node.
    pub slots_busy: f64,
}

struct Shared {
    http: reqwest::Client,
    url: String,
    run: u64,
    slots: Arc<Semaphore>,
    busy: Mutex<BusyClock>,
    schedule: Mutex<Schedule>,
    lags_ms: Mutex<Vec<f64>>,
    sent: AtomicU64,
    verdicts: Mutex<Verdicts>,
}

/// A running open-loop sender. Dropping it stops releasing transactions
/// (those in flight finish on their own); [`OpenLoop::stop`] also waits
/// for them.
pub struct OpenLoop {
    shared: Arc<Shared>,
    slots: usize,
    stop: watch::Sender<bool>,
    dispatcher: JoinHandle<()>,
}

impl OpenLoop {
    /// Starts sending at once (transaction 0 is due now), on the current
    /// tokio runtime (a multi-threaded one keeps up best).
    pub fn start(http: reqwest::Client, cfg: SendConfig) -> Result<Self> {
        anyhow::ensure!(
            cfg.rate.is_finite() && cfg.rate > 0.0,
            "send rate {}: expected a positive number of tx/s",
            cfg.rate
        );
        anyhow::ensure!(cfg.slots >= 1, "slots: expected at least 1");
        anyhow::ensure!(
            (1..=MAX_BATCH).contains(&cfg.batch),
            "batch {}: CometBFT takes 1 to {MAX_BATCH} calls per request",
            cfg.batch
        );
        let shared = Arc::new(Shared {
            http,
            url: cfg.url,
            run: cfg.run,
            slots: Arc::new(Semaphore::new(cfg.slots)),
            busy: Mutex::new(BusyClock::new(cfg.slots)),
            schedule: Mutex::new(Schedule::new(Instant::now(), cfg.rate)),
            lags_ms: Mutex::new(Vec::new()),
            sent: AtomicU64::new(0),
            verdicts: Mutex::new(Verdicts::default()),
        });
        let (stop, stopped) = watch::channel(false);
        let dispatcher = tokio::spawn(dispatch(shared.clone(), cfg.batch as u64, stopped));
        Ok(Self {
            shared,
            slots: cfg.slots,
            stop,
            dispatcher,
        })
    }

    /// The counters now.
    pub fn mark(&self) -> SendMark {
        let at = Instant::now();
        let s = &self.shared;
        let verdicts = lock(&s.verdicts).clone();
        SendMark {
            at,
            sent: s.sent.load(Ordering::Relaxed),
            accepted: verdicts.accepted,
            rejected: verdicts.rejected,
            busy: lock(&s.busy).busy(at),
            lags: lock(&s.lags_ms).len(),
            backlog_lag: lock(&s.schedule).backlog_lag(at),
        }
    }

    /// What happened between two marks (`from` the earlier).
    pub fn window(&self, from: &SendMark, to: &SendMark) -> SendWindow {
        let seconds = to.at.saturating_duration_since(from.at).as_secs_f64();
        let mut lags = lock(&self.shared.lags_ms)
            .get(from.lags..to.lags)
            .map(<[f64]>::to_vec)
            .unwrap_or_default();
        lags.sort_by(f64::total_cmp);
        let backlog = to.backlog_lag.as_secs_f64() * 1e3;
        let mut rejected = to.rejected.clone();
        for (reason, n) in &from.rejected {
            if let Some(count) = rejected.get_mut(reason) {
                *count -= (*n).min(*count);
            }
        }
        rejected.retain(|_, n| *n > 0);
        SendWindow {
            seconds,
            sent: to.sent - from.sent,
            accepted: to.accepted - from.accepted,
            rejected,
            lag_p50_ms: super::window::nearest_rank(&lags, 0.50).unwrap_or(backlog),
            lag_p99_ms: super::window::nearest_rank(&lags, 0.99).unwrap_or(backlog),
            slots_busy: if seconds > 0.0 {
                (to.busy - from.busy).as_secs_f64() / seconds
            } else {
                0.0
            },
        }
    }

    /// Stops releasing transactions and waits for the requests in flight
    /// (each bounded by the client's timeout).
    pub async fn stop(self) -> Result<()> {
        self.stop.send_replace(true);
        self.dispatcher
            .await
            .context("the sender's dispatcher failed")?;
        let all = u32::try_from(self.slots).unwrap_or(u32::MAX);
        let _idle = self
            .shared
            .slots
            .acquire_many(all)
            .await
            .context("the sender's slots were closed")?;
        Ok(())
    }
}

/// A request slot; gives itself back to the busy clock when dropped.
struct Slot {
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.shared.busy).free(Instant::now());
    }
}

/// Releases due transactions into free slots until told to stop.
async fn dispatch(shared: Arc<Shared>, batch: u64, mut stop: watch::Receiver<bool>) {
    loop {
        let due = lock(&shared.schedule).next_due();
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = stop.changed() => return,
        }
        let permit = tokio::select! {
            permit = shared.slots.clone().acquire_owned() => permit,
            _ = stop.changed() => return,
        };
        let Ok(permit) = permit else { return };
        let now = Instant::now();
        lock(&shared.busy).take(now);
        let slot = Slot {
            shared: shared.clone(),
            _permit: permit,
        };
        let seqs = release(&shared, now, batch);
        if !seqs.is_empty() {
            tokio::spawn(send(shared.clone(), seqs, slot));
        }
    }
}

/// Takes the due transactions (up to `batch`) and records their lags.
fn release(shared: &Shared, now: Instant, batch: u64) -> Range<u64> {
    let mut lags = Vec::with_capacity(batch as usize);
    let seqs = {
        let mut schedule = lock(&shared.schedule);
        let seqs = schedule.take_due(now, batch);
        for seq in seqs.clone() {
            let lag = now.saturating_duration_since(schedule.intended(seq));
            lags.push(lag.as_secs_f64() * 1e3);
        }
        seqs
    };
    lock(&shared.lags_ms).extend(lags);
    shared
        .sent
        .fetch_add(seqs.end - seqs.start, Ordering::Relaxed);
    seqs
}

/// Sends one batch and records the node's verdicts.
async fn send(shared: Arc<Shared>, seqs: Range<u64>, slot: Slot) {
    let n = seqs.end - seqs.start;
    let body = wire::batch_body(shared.run, seqs);
    let verdicts = match post(&shared, body).await {
        Ok(answer) => wire::read_answers(answer.as_ref(), n),
        Err(e) => Verdicts::all_rejected(failure(&e), n),
    };
    drop(slot);
    let mut all = lock(&shared.verdicts);
    all.accepted += verdicts.accepted;
    for (reason, count) in verdicts.rejected {
        *all.rejected.entry(reason).or_default() += count;
    }
}

async fn post(shared: &Shared, body: String) -> reqwest::Result<impl AsRef<[u8]>> {
    shared
        .http
        .post(&shared.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await
}

/// A short reason for a failed request.
fn failure(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "request timed out".into()
    } else if e.is_connect() {
        "cannot connect".into()
    } else if let Some(status) = e.status() {
        format!("HTTP {status}")
    } else {
        "request failed".into()
    }
}
