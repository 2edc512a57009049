//! Counts kept per client ([`PerClient`]), and the first of them: open
//! connections per client address. A client over
//! [`RpcConfig::max_connections_per_client`](super::RpcConfig) is answered
//! `429 Too Many Requests` with a JSON-RPC error naming the bound and its
//! flag, and its connection closed, so one address cannot take every one of
//! the server's connections.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::error::{error_body, LIMIT_EXCEEDED};

/// Counts by key (a client address, a client), each within one cap.
pub struct PerClient<K> {
    cap: usize,
    open: Arc<Mutex<HashMap<K, usize>>>,
}

impl<K> Clone for PerClient<K> {
    fn clone(&self) -> Self {
        Self {
            cap: self.cap,
            open: self.open.clone(),
        }
    }
}

/// One place in a [`PerClient`] count; dropping it frees it.
pub struct Place<K: Hash + Eq> {
    table: PerClient<K>,
    key: K,
}

impl<K: Hash + Eq + Clone> PerClient<K> {
    /// Nothing counted yet; at most `cap` (at least one) per key.
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            open: Arc::default(),
        }
    }

    /// A place for `key`, or `None` when it holds as many as it may.
    pub fn take(&self, key: K) -> Option<Place<K>> {
        let mut open = self.open.lock().ok()?;
        let count = open.entry(key.clone()).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(Place {
            table: self.clone(),
            key,
        })
    }

    /// The cap per key.
    pub fn cap(&self) -> usize {
        self.cap
    }
}

impl<K: Hash + Eq> Drop for Place<K> {
    fn drop(&mut self) {
        if let Ok(mut open) = self.table.open.lock() {
            if let Some(count) = open.get_mut(&self.key) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    open.remove(&self.key);
                }
            }
        }
    }
}

/// Open connections by client address.
pub type ConnectionTable = PerClient<IpAddr>;

/// A connection's place in its client's count.
pub type ConnectionSlot = Place<IpAddr>;

/// The answer to a connection over its client's cap.
fn refusal(cap: usize) -> String {
    let body = error_body(
        LIMIT_EXCEEDED,
        &format!(
            "too many connections from this client address ({cap}): close some, or raise --rpc-max-connections-per-client"
        ),
    );
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Answers `socket`, a connection over its client's cap of `cap`: reads
/// what of the request head arrives within a second (at most 8 KiB, so that
/// closing does not reset the answer away), writes the refusal and closes.
pub async fn refuse(mut socket: TcpStream, cap: usize) {
    let mut head = [0u8; 8192];
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.read(&mut head)).await;
    let _ = socket.write_all(refusal(cap).as_bytes()).await;
    let _ = socket.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_has_its_own_cap_and_a_closed_connection_frees_its_place() {
        let table = ConnectionTable::new(2);
        let (a, b): (IpAddr, IpAddr) = ([127, 0, 0, 1].into(), [10, 0, 0, 1].into());
        let first = table.take(a).expect("first");
        let _second = table.take(a).expect("second");
        assert!(table.take(a).is_none(), "a third from one address");
        assert!(table.take(b).is_some(), "another address has its own");
        drop(first);
        assert!(table.take(a).is_some(), "a closed one frees its place");
    }

    #[test]
    fn the_refusal_is_an_http_429_with_a_json_rpc_error_naming_the_flag() {
        let text = refusal(64);
        assert!(text.starts_with("HTTP/1.1 429 "), "{text}");
        let body = text.split("\r\n\r\n").nth(1).unwrap();
        let length: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
        let error: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(error["error"]["code"], -32005);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("(64)") && message.contains("--rpc-max-connections-per-client"));
    }
}
