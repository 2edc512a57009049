//! Retrying idempotent RPC reads over transient transport errors, for every
//! RPC client of feth (this crate's [`crate::rpc`], the agent's web3 and
//! CometBFT reads).
//!
//! Transient: the connection could not be made (refused, unreachable), broke
//! (reset, aborted, closed before the answer came, broken pipe) or timed
//! out. An HTTP error status, or an answer that is not what was expected, is
//! not transient: asking again gets the same.
//!
//! Why resets happen at all: CometBFT's RPC is Go's `net/http` server with
//! `ReadTimeout` 10 s and no `IdleTimeout`, so a keep-alive connection left
//! idle for 10 s is closed by the server. reqwest keeps idle connections 90 s
//! by default; a request sent on one the server is closing at that very
//! moment meets a reset. A client that polls every ~10 s (a saturation step's
//! window) hits that race often. Hence [`POOL_IDLE`]: clients drop idle
//! connections well before any server we know does — and retry anyway.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long an idle keep-alive connection is kept for reuse: below CometBFT's
/// 10 s (its RPC server's read timeout, which Go uses as the idle timeout),
/// geth's 120 s and jsonrpsee's, so the client never reuses a connection the
/// server is closing.
pub const POOL_IDLE: Duration = Duration::from_secs(5);

/// Bounded exponential back-off: `tries` attempts in all, the pause doubling
/// from `first` up to `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Attempts in all (the first one included); at least 1.
    pub tries: u32,
    /// Pause after the first failure.
    pub first: Duration,
    /// Longest pause.
    pub cap: Duration,
}

impl Default for Backoff {
    /// 5 tries, 100 ms doubling, capped at 2 s (3.1 s of pauses at most).
    fn default() -> Self {
        Self {
            tries: 5,
            first: Duration::from_millis(100),
            cap: Duration::from_secs(2),
        }
    }
}

impl Backoff {
    /// The pause after failed attempt `attempt` (from 1).
    pub fn pause(&self, attempt: u32) -> Duration {
        let doubled = self
            .first
            .checked_mul(1u32 << attempt.saturating_sub(1).min(16))
            .unwrap_or(self.cap);
        doubled.min(self.cap)
    }
}

/// Retries made, for a report.
#[derive(Debug, Default)]
pub struct RetryCounter(AtomicU64);

impl RetryCounter {
    /// Counts one retry.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Retries so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Whether `e` is a transient transport failure worth another try of an
/// idempotent request.
pub fn is_transient(e: &reqwest::Error) -> bool {
    if e.is_connect() || e.is_timeout() {
        return true;
    }
    if e.is_status() || e.is_decode() || e.is_builder() || e.is_redirect() {
        return false;
    }
    transient_cause(e)
}

/// Whether the chain of causes of `e` holds an I/O error of a broken or
/// refused connection, or hyper's "connection closed before message
/// completed".
fn transient_cause(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::*;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cause {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                ConnectionReset
                    | ConnectionAborted
                    | ConnectionRefused
                    | BrokenPipe
                    | UnexpectedEof
                    | TimedOut
                    | NotConnected
            ) {
                return true;
            }
        }
        let text = err.to_string().to_ascii_lowercase();
        if text.contains("connection closed before message completed")
            || text.contains("connection reset")
            || text.contains("broken pipe")
        {
            return true;
        }
        cause = err.source();
    }
    false
}

/// Runs `attempt` until it succeeds, fails for good (`transient` says no), or
/// `policy.tries` attempts failed; each retry is counted in `counter`.
pub async fn retry<T, E, F, Fut>(
    policy: Backoff,
    counter: Option<&RetryCounter>,
    transient: impl Fn(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut failed = 0u32;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e) => {
                failed += 1;
                if failed >= policy.tries.max(1) || !transient(&e) {
                    return Err(e);
                }
                if let Some(c) = counter {
                    c.bump();
                }
                tokio::time::sleep(policy.pause(failed)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap() {
        let b = Backoff::default();
        let pauses: Vec<u128> = (1..=6).map(|a| b.pause(a).as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1600, 2000]);
        assert_eq!(b.pause(u32::MAX), b.cap);
    }

    #[tokio::test]
    async fn retries_transient_failures_only_and_gives_up_after_the_bound() {
        let policy = Backoff {
            tries: 3,
            first: Duration::from_millis(1),
            cap: Duration::from_millis(2),
        };
        let counter = RetryCounter::default();
        let mut calls = 0;
        let r: Result<u8, &str> = retry(
            policy,
            Some(&counter),
            |e| *e == "reset",
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 3 {
                        Err("reset")
                    } else {
                        Ok(7)
                    }
                }
            },
        )
        .await;
        assert_eq!((r, counter.get()), (Ok(7), 2));
        let mut calls = 0;
        let r: Result<u8, &str> = retry(
            policy,
            Some(&counter),
            |e| *e == "reset",
            || {
                calls += 1;
                async { Err("reset") }
            },
        )
        .await;
        assert_eq!((r, calls, counter.get()), (Err("reset"), 3, 4));
        let mut calls = 0;
        let r: Result<u8, &str> = retry(
            policy,
            Some(&counter),
            |e| *e == "reset",
            || {
                calls += 1;
                async { Err("HTTP 500") }
            },
        )
        .await;
        assert_eq!((r, calls, counter.get()), (Err("HTTP 500"), 1, 4));
    }

    #[tokio::test]
    async fn a_refused_connection_is_transient() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let e = reqwest::get(format!("http://{addr}/status"))
            .await
            .unwrap_err();
        assert!(is_transient(&e), "{e:?}");
    }
}
