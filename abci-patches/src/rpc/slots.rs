//! The places WebSocket subscriptions take, of every kind (`newHeads`,
//! `logs`, `newPendingTransactions`): at most
//! [`RpcConfig::max_subscriptions`](super::RpcConfig) on the node, at most
//! [`RpcConfig::max_subscriptions_per_client`](super::RpcConfig) from one
//! client address and at most
//! [`RpcConfig::max_subscriptions_per_connection`](super::RpcConfig) on one
//! connection, so that no client can multiply the node's work per event by
//! opening subscriptions without bound (CometBFT's own RPC allows 100
//! clients of 5 subscriptions).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use jsonrpsee::ConnectionId;

use super::error::{server_error, RpcResult};
use super::peer::Client;

/// The bounds on open subscriptions.
#[derive(Debug, Clone, Copy)]
pub struct SlotLimits {
    /// On the node.
    pub node: usize,
    /// From one client.
    pub client: usize,
    /// On one connection.
    pub connection: usize,
}

/// The open subscriptions, counted.
#[derive(Default)]
struct Open {
    total: usize,
    by_client: HashMap<Client, usize>,
    by_connection: HashMap<ConnectionId, usize>,
}

/// The subscriptions' places, within [`SlotLimits`].
pub struct SubscriptionSlots {
    limits: SlotLimits,
    open: Arc<Mutex<Open>>,
}

/// A subscription's place; dropping it frees the place.
pub struct Slot {
    open: Arc<Mutex<Open>>,
    client: Client,
    connection: ConnectionId,
}

impl SubscriptionSlots {
    /// No subscription open yet.
    pub fn new(limits: SlotLimits) -> Self {
        Self {
            limits,
            open: Arc::default(),
        }
    }

    /// A place for a new subscription of `client` on `connection`, or a
    /// `-32000` error naming the bound that is full and the flag raising it.
    pub fn open(&self, client: Client, connection: ConnectionId) -> RpcResult<Slot> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| server_error("subscription table poisoned"))?;
        let limits = self.limits;
        let full = |what: &str, max: usize, then: &str, flag: &str| {
            server_error(format!(
                "too many subscriptions {what} ({max}): {then}, or raise {flag}"
            ))
        };
        if open.total >= limits.node {
            let flag = "--rpc-max-subscriptions-total";
            return Err(full("on this node", limits.node, "try again later", flag));
        }
        let then = "unsubscribe some first";
        if open.by_client.get(&client).copied().unwrap_or(0) >= limits.client {
            let flag = "--rpc-max-subscriptions-per-client";
            return Err(full("from this client address", limits.client, then, flag));
        }
        if open.by_connection.get(&connection).copied().unwrap_or(0) >= limits.connection {
            let flag = "--rpc-max-subscriptions";
            return Err(full("on this connection", limits.connection, then, flag));
        }
        open.total += 1;
        *open.by_client.entry(client).or_default() += 1;
        *open.by_connection.entry(connection).or_default() += 1;
        Ok(Slot {
            open: self.open.clone(),
            client,
            connection,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open: MutexGuard<'_, Open> = match self.open.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        open.total = open.total.saturating_sub(1);
        release(&mut open.by_client, &self.client);
        release(&mut open.by_connection, &self.connection);
    }
}

/// One place fewer for `key`, forgetting it at none.
fn release<K: Eq + Hash>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_refuses_by_name_and_a_dropped_slot_frees_its_place() {
        let slots = SubscriptionSlots::new(SlotLimits {
            node: 3,
            client: 2,
            connection: 1,
        });
        let (a, b) = (
            Client::Connection(ConnectionId(1)),
            Client::Connection(ConnectionId(2)),
        );
        let first = slots.open(a, ConnectionId(1)).unwrap();
        let refused = |r: RpcResult<Slot>| r.err().map(|e| e.message().to_string());
        let connection = refused(slots.open(a, ConnectionId(1))).unwrap();
        assert!(
            connection.contains("on this connection (1)"),
            "{connection}"
        );
        let _second = slots.open(a, ConnectionId(3)).unwrap();
        let client = refused(slots.open(a, ConnectionId(4))).unwrap();
        assert!(client.contains("from this client address (2)"), "{client}");
        let _third = slots.open(b, ConnectionId(2)).unwrap();
        let node = refused(slots.open(b, ConnectionId(5))).unwrap();
        assert!(node.contains("on this node (3)"), "{node}");
        drop(first);
        assert!(slots.open(a, ConnectionId(1)).is_ok());
    }
}
