//! Counts kept per client ([`PerClient`]), and the first of them: a
//! listener's open connections ([`ConnectionCaps`]), on the server and by
//! client address, so one address cannot take every one of a server's
//! connections, nor all of them the process's file descriptors. The web3
//! server ([`crate::rpc`]) and the gRPC ABCI listener ([`crate::grpc_server`])
//! count their connections so, each refusing in its own protocol.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

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

/// A listener's open connections, on the server and by client address.
#[derive(Clone)]
pub struct ConnectionCaps {
    total: PerClient<()>,
    by_address: PerClient<IpAddr>,
}

/// A connection's places in the server's count and its client's; dropping
/// it frees both.
pub struct ConnectionSlot {
    _total: Place<()>,
    _address: Place<IpAddr>,
}

/// Why a connection was refused: the cap it is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverCap {
    /// The server holds its most connections, this many.
    Server(usize),
    /// The client's address holds its most connections, this many.
    Client(usize),
}

impl ConnectionCaps {
    /// At most `max_total` connections, `max_per_client` from one address
    /// (each at least one).
    pub fn new(max_total: usize, max_per_client: usize) -> Self {
        Self {
            total: PerClient::new(max_total),
            by_address: PerClient::new(max_per_client),
        }
    }

    /// The places of a new connection from `address`, or the cap it is
    /// over. Refused by the server's cap, it takes no place of its
    /// address's.
    pub fn admit(&self, address: IpAddr) -> Result<ConnectionSlot, OverCap> {
        let total = self
            .total
            .take(())
            .ok_or(OverCap::Server(self.total.cap()))?;
        let address = self
            .by_address
            .take(address)
            .ok_or(OverCap::Client(self.by_address.cap()))?;
        Ok(ConnectionSlot {
            _total: total,
            _address: address,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_has_its_own_cap_and_a_closed_connection_frees_its_place() {
        let caps = ConnectionCaps::new(100, 2);
        let (a, b): (IpAddr, IpAddr) = ([127, 0, 0, 1].into(), [10, 0, 0, 1].into());
        let first = caps.admit(a).expect("first");
        let _second = caps.admit(a).expect("second");
        assert_eq!(caps.admit(a).err(), Some(OverCap::Client(2)));
        assert!(caps.admit(b).is_ok(), "another address has its own");
        drop(first);
        assert!(caps.admit(a).is_ok(), "a closed one frees its place");
    }

    #[test]
    fn the_server_holds_at_most_its_connections_from_every_address() {
        let caps = ConnectionCaps::new(2, 1);
        let addresses: Vec<IpAddr> = (1..=3).map(|i| [10, 0, 0, i].into()).collect();
        let first = caps.admit(addresses[0]).expect("first");
        let _second = caps.admit(addresses[1]).expect("second");
        assert_eq!(caps.admit(addresses[2]).err(), Some(OverCap::Server(2)));
        // Refused by the server's cap, it took no place of its address's
        // (which holds one): once a place is freed, it is admitted.
        drop(first);
        let _third = caps.admit(addresses[2]).expect("a place freed");
    }
}
