//! Counts kept per client ([`PerClient`]), and the first of them: open
//! connections, counted at accept whether they carry a request or idle kept
//! alive. A connection over [`RpcConfig::max_connections`](super::RpcConfig)
//! is answered `503 Service Unavailable`, one over its client address's
//! [`RpcConfig::max_connections_per_client`](super::RpcConfig) `429 Too Many
//! Requests`, each with a JSON-RPC error naming the bound and its flag, and
//! closed: one address cannot take every one of the server's connections,
//! nor all of them the process's file descriptors. At most
//! [`MAX_REFUSING`] refusals are written at once; past them a refused
//! connection is closed unanswered.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

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

/// Refusals written at once, at most.
pub const MAX_REFUSING: usize = 64;

/// Open connections, on the server and by client address.
#[derive(Clone)]
pub struct ConnectionTable {
    total: PerClient<()>,
    by_address: PerClient<IpAddr>,
    refusing: Arc<Semaphore>,
}

/// A connection's places in the server's count and its client's; dropping
/// it frees both.
pub struct ConnectionSlot {
    _total: Place<()>,
    _address: Place<IpAddr>,
}

/// Why a connection was refused: the bound it is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The server holds `--rpc-max-connections`.
    Server(usize),
    /// Its client address holds `--rpc-max-connections-per-client`.
    Client(usize),
}

impl ConnectionTable {
    /// At most `max_total` connections, `max_per_client` from one address.
    pub fn new(max_total: usize, max_per_client: usize) -> Self {
        Self {
            total: PerClient::new(max_total),
            by_address: PerClient::new(max_per_client),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
        }
    }

    /// The places of a new connection from `address`, or the bound it is
    /// over.
    pub fn admit(&self, address: IpAddr) -> Result<ConnectionSlot, Refused> {
        let total = self
            .total
            .take(())
            .ok_or(Refused::Server(self.total.cap()))?;
        let address = self
            .by_address
            .take(address)
            .ok_or(Refused::Client(self.by_address.cap()))?;
        Ok(ConnectionSlot {
            _total: total,
            _address: address,
        })
    }

    /// Answers `socket`, refused for `why`, off the accepting task; closes
    /// it unanswered when [`MAX_REFUSING`] refusals are being written.
    pub fn refuse(&self, socket: TcpStream, why: Refused) {
        match self.refusing.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(async move {
                    refuse(socket, why).await;
                    drop(permit);
                });
            }
            Err(_) => drop(socket),
        }
    }
}

/// The answer to a connection refused for `why`.
fn refusal(why: Refused) -> String {
    let (status, message) = match why {
        Refused::Server(cap) => (
            "503 Service Unavailable",
            format!("too many connections on this server ({cap}): try again later, or raise --rpc-max-connections"),
        ),
        Refused::Client(cap) => (
            "429 Too Many Requests",
            format!("too many connections from this client address ({cap}): close some, or raise --rpc-max-connections-per-client"),
        ),
    };
    let body = error_body(LIMIT_EXCEEDED, &message);
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Answers `socket`, refused for `why`: reads what of the request head
/// arrives within a second (at most 8 KiB, so that closing does not reset
/// the answer away), writes the refusal and closes.
async fn refuse(mut socket: TcpStream, why: Refused) {
    let mut head = [0u8; 8192];
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.read(&mut head)).await;
    let _ = socket.write_all(refusal(why).as_bytes()).await;
    let _ = socket.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_has_its_own_cap_and_a_closed_connection_frees_its_place() {
        let table = ConnectionTable::new(100, 2);
        let (a, b): (IpAddr, IpAddr) = ([127, 0, 0, 1].into(), [10, 0, 0, 1].into());
        let first = table.admit(a).expect("first");
        let _second = table.admit(a).expect("second");
        assert_eq!(table.admit(a).err(), Some(Refused::Client(2)));
        assert!(table.admit(b).is_ok(), "another address has its own");
        drop(first);
        assert!(table.admit(a).is_ok(), "a closed one frees its place");
    }

    #[test]
    fn the_server_holds_at_most_its_connections_from_every_address() {
        let table = ConnectionTable::new(2, 1);
        let addresses: Vec<IpAddr> = (1..=3).map(|i| [10, 0, 0, i].into()).collect();
        let first = table.admit(addresses[0]).expect("first");
        let _second = table.admit(addresses[1]).expect("second");
        assert_eq!(table.admit(addresses[2]).err(), Some(Refused::Server(2)));
        // Refused by the server's bound, it took no place of its address's
        // (which holds one): once a place is freed, it is admitted.
        drop(first);
        let _third = table.admit(addresses[2]).expect("a place freed");
    }

    fn answer(why: Refused) -> (String, serde_json::Value) {
        let text = refusal(why);
        let body = text.split("\r\n\r\n").nth(1).unwrap();
        let length: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
        (text.clone(), serde_json::from_str(body).unwrap())
    }

    #[test]
    fn each_refusal_is_an_http_error_with_a_json_rpc_error_naming_the_flag() {
        let (text, error) = answer(Refused::Client(64));
        assert!(text.starts_with("HTTP/1.1 429 "), "{text}");
        assert_eq!(error["error"]["code"], -32005);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("(64)") && message.contains("--rpc-max-connections-per-client"));
        let (text, error) = answer(Refused::Server(10));
        assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("(10)") && message.ends_with("raise --rpc-max-connections"));
    }
}
