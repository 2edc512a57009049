//! The web3 server's connection caps ([`ConnectionCaps`]) with their
//! refusals: a connection over [`RpcConfig::max_connections`](super::RpcConfig)
//! is answered `503 Service Unavailable`, one over its client address's
//! [`RpcConfig::max_connections_per_client`](super::RpcConfig) `429 Too Many
//! Requests`, each with a JSON-RPC error naming the bound and its flag, and
//! closed. At most [`MAX_REFUSING`] refusals are written at once; past them
//! a refused connection is closed unanswered.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use super::error::{error_body, LIMIT_EXCEEDED};
use crate::client_caps::{ConnectionCaps, ConnectionSlot, OverCap};

/// Refusals written at once, at most.
pub const MAX_REFUSING: usize = 64;

/// Open connections, on the server and by client address, and the
/// refusals being written.
#[derive(Clone)]
pub struct ConnectionTable {
    caps: ConnectionCaps,
    refusing: Arc<Semaphore>,
}

impl ConnectionTable {
    /// At most `max_total` connections, `max_per_client` from one address.
    pub fn new(max_total: usize, max_per_client: usize) -> Self {
        Self {
            caps: ConnectionCaps::new(max_total, max_per_client),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
        }
    }

    /// The places of a new connection from `address`, or the bound it is
    /// over.
    pub fn admit(&self, address: IpAddr) -> Result<ConnectionSlot, OverCap> {
        self.caps.admit(address)
    }

    /// Answers `socket`, refused for `why`, off the accepting task; closes
    /// it unanswered when [`MAX_REFUSING`] refusals are being written.
    pub fn refuse(&self, socket: TcpStream, why: OverCap) {
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
fn refusal(why: OverCap) -> String {
    let (status, message) = match why {
        OverCap::Server(cap) => (
            "503 Service Unavailable",
            format!("too many connections on this server ({cap}): try again later, or raise --rpc-max-connections"),
        ),
        OverCap::Client(cap) => (
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
async fn refuse(mut socket: TcpStream, why: OverCap) {
    let mut head = [0u8; 8192];
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.read(&mut head)).await;
    let _ = socket.write_all(refusal(why).as_bytes()).await;
    let _ = socket.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(why: OverCap) -> (String, serde_json::Value) {
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
        let (text, error) = answer(OverCap::Client(64));
        assert!(text.starts_with("HTTP/1.1 429 "), "{text}");
        assert_eq!(error["error"]["code"], -32005);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("(64)") && message.contains("--rpc-max-connections-per-client"));
        let (text, error) = answer(OverCap::Server(10));
        assert!(text.starts_with("HTTP/1.1 503 "), "{text}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("(10)") && message.ends_with("raise --rpc-max-connections"));
    }
}
