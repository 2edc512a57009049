//! Accounts whose next transaction is ready to submit, formed into batches
//! for one endpoint.
//!
//! A batch leaves as soon as it is full, or when its oldest account has
//! waited [`LINGER`]: like a producer's linger time, a partial batch waits a
//! little for company instead of going out with one or two transactions
//! while signers are still producing. Workers are woken per batch, not per
//! transaction: one waiting worker holds the linger timer, another is woken
//! when a batch fills.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use crate::sync::lock;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Longest a partial batch waits for more ready accounts. Short next to any
/// block time, so it adds little to inclusion latency (which is measured
/// from the intended send time, this wait included).
pub const LINGER: Duration = Duration::from_millis(2);

/// How often an idle worker checks whether the run is over.
const IDLE_POLL: Duration = Duration::from_millis(100);

#[derive(Debug)]
struct State {
    accounts: VecDeque<usize>,
    /// When the oldest queued account was queued (meaningful when non-empty).
    since: Instant,
    /// A waiting worker sleeps until the oldest account's linger ends.
    timer: bool,
}

/// The ready accounts of one endpoint.
#[derive(Debug)]
pub struct ReadyQueue {
    state: Mutex<State>,
    notify: Notify,
    batch: usize,
}

impl ReadyQueue {
    /// A queue handing out up to `batch` accounts at a time.
    pub fn new(batch: usize) -> Self {
        Self {
            state: Mutex::new(State {
                accounts: VecDeque::new(),
                since: Instant::now(),
                timer: false,
            }),
            notify: Notify::new(),
            batch: batch.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Queues account `a`; wakes a worker when a batch is full, or when the
    /// first account of a batch needs a worker to hold its linger timer.
    pub fn push(&self, a: usize) {
        let wake = {
            let mut s = self.lock();
            if s.accounts.is_empty() {
                s.since = Instant::now();
            }
            s.accounts.push_back(a);
            let n = s.accounts.len();
            n.is_multiple_of(self.batch) || (n == 1 && !s.timer)
        };
        if wake {
            self.notify.notify_one();
        }
    }

    /// Queues account `a` to leave without waiting for company: an account
    /// with more work than one request carries (a sender with several
    /// transactions in flight) goes out at once in the next request.
    pub fn push_now(&self, a: usize) {
        {
            let mut s = self.lock();
            if s.accounts.is_empty() {
                s.since = Instant::now()
                    .checked_sub(LINGER)
                    .unwrap_or_else(Instant::now);
            }
            s.accounts.push_back(a);
        }
        self.notify.notify_one();
    }

    /// Waits for the next batch and puts it in `out`; returns `false`
    /// (leaving `out` empty) once the queue is empty and `finished` says the
    /// run is over.
    pub async fn take(&self, out: &mut Vec<usize>, finished: impl Fn() -> bool) -> bool {
        out.clear();
        let mut holder = false;
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let deadline = {
                let mut s = self.lock();
                if std::mem::take(&mut holder) {
                    s.timer = false;
                }
                if s.accounts.is_empty() {
                    None
                } else {
                    let due = s.since + LINGER;
                    if s.accounts.len() >= self.batch || Instant::now() >= due {
                        let n = s.accounts.len().min(self.batch);
                        out.extend(s.accounts.drain(..n));
                        let left = s.accounts.len();
                        if left >= self.batch || (left > 0 && !s.timer) {
                            self.notify.notify_one();
                        }
                        return true;
                    }
                    if s.timer {
                        None
                    } else {
                        s.timer = true;
                        holder = true;
                        Some(due)
                    }
                }
            };
            match deadline {
                Some(due) => {
                    let _ = tokio::time::timeout_at(due, notified).await;
                }
                None => {
                    if finished() {
                        self.notify.notify_waiters();
                        return false;
                    }
                    let _ = tokio::time::timeout(IDLE_POLL, notified).await;
                }
            }
        }
    }

    /// Wakes every waiting worker (the run is stopping).
    pub fn wake_all(&self) {
        self.notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::{pin, Pin};
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// One poll of `f`, as an executor's first.
    fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    // Whether a batch leaves at once or waits is read from the first poll
    // of `take` (ready, or pending on the linger timer), not from a clock: a
    // busy machine may take longer than the linger between two lines.

    #[tokio::test]
    async fn full_batches_leave_at_once_and_partial_ones_after_the_linger() {
        let q = ReadyQueue::new(3);
        let t = Instant::now();
        for a in 0..4 {
            q.push(a);
        }
        let mut out = Vec::new();
        assert_eq!(
            poll_once(pin!(q.take(&mut out, || false))),
            Poll::Ready(true),
            "a full batch leaves on the first poll"
        );
        assert_eq!(out, [0, 1, 2]);
        {
            let mut partial = pin!(q.take(&mut out, || false));
            let left = match poll_once(partial.as_mut()) {
                // Only when the linger has already passed since the push.
                Poll::Ready(left) => {
                    assert!(t.elapsed() >= LINGER, "a partial batch left at once");
                    left
                }
                Poll::Pending => partial.await,
            };
            assert!(left);
        }
        assert_eq!(out, [3]);
        assert!(t.elapsed() >= LINGER, "it waited for the linger");
        assert!(!q.take(&mut out, || true).await);
        assert!(out.is_empty());
    }

    #[tokio::test]
    async fn an_account_pushed_now_leaves_without_the_linger() {
        let q = ReadyQueue::new(3);
        q.push_now(7);
        let mut out = Vec::new();
        assert_eq!(
            poll_once(pin!(q.take(&mut out, || false))),
            Poll::Ready(true),
            "it leaves on the first poll, with no timer"
        );
        assert_eq!(out, [7]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_worker_gets_a_batch_pushed_later() {
        let q = std::sync::Arc::new(ReadyQueue::new(2));
        let worker = {
            let q = q.clone();
            tokio::spawn(async move {
                let mut out = Vec::new();
                let mut got = Vec::new();
                while got.len() < 5 && q.take(&mut out, || false).await {
                    got.extend_from_slice(&out);
                }
                got
            })
        };
        for a in 0..5 {
            tokio::time::sleep(Duration::from_micros(300)).await;
            q.push(a);
        }
        let got = tokio::time::timeout(Duration::from_secs(5), worker)
            .await
            .expect("worker finished")
            .expect("worker did not panic");
        assert_eq!(got, [0, 1, 2, 3, 4]);
    }
}
