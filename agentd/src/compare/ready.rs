//! Whether a redeployed node is back: it serves web3 and CometBFT RPC, has
//! caught up (`catching_up` false) and committed a block since it answered
//! again (so its latest block is recent, whatever the clocks say), and its
//! mempool is empty (CometBFT's count and, for app-side mempools, web3's
//! `txpool_status`). Polled until all hold or the deadline passes; the
//! error then names what was still missing.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use feth_comet::rpc::Rpc;

use crate::eth::EthClient;
use crate::saturate::evm::mempool_count;

/// How often the node is asked.
const POLL: Duration = Duration::from_millis(250);
/// Each request's own timeout.
const REQUEST: Duration = Duration::from_secs(5);

/// The node a deploy waits for.
#[derive(Debug, Clone)]
pub struct Readiness {
    web3: String,
    comet: String,
}

impl Readiness {
    /// The node at `web3` with its CometBFT RPC at `comet_rpc`.
    pub fn new(web3: &str, comet_rpc: &str) -> Result<Self> {
        // Checked once here, so that a bad URL is an error before any deploy.
        EthClient::new(web3, REQUEST)?;
        Rpc::new(comet_rpc, 1, 1)?;
        Ok(Self {
            web3: web3.to_string(),
            comet: comet_rpc.to_string(),
        })
    }
}

/// Where the node stood at the last poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// web3 does not answer.
    NoWeb3,
    /// CometBFT's RPC does not answer.
    NoComet,
    /// It is still catching up with its peers.
    CatchingUp,
    /// No block since it answered at this height.
    NoNewBlock(u64),
    /// This many transactions wait in its mempool.
    Mempool(u64),
    /// Back.
    Ready,
}

impl State {
    fn missing(self) -> String {
        match self {
            Self::NoWeb3 => "its web3 endpoint does not answer".to_string(),
            Self::NoComet => "web3 answers, CometBFT's RPC does not".to_string(),
            Self::CatchingUp => "it is still catching up (`catching_up` true)".to_string(),
            Self::NoNewBlock(h) => format!("no block committed since it answered at height {h}"),
            Self::Mempool(n) => format!("{n} transaction(s) still wait in its mempool"),
            Self::Ready => "nothing".to_string(),
        }
    }
}

/// Waits until the node is back (see the module docs) or `deadline`.
pub async fn wait(node: &Readiness, deadline: Instant) -> Result<()> {
    let client = EthClient::new(&node.web3, REQUEST)?;
    let rpc = Rpc::new(&node.comet, 1, 1)?;
    let mut first_height = None;
    loop {
        let state = poll(&client, &rpc, &mut first_height).await;
        if state == State::Ready {
            return Ok(());
        }
        if Instant::now() + POLL >= deadline {
            bail!(
                "the node at {} (CometBFT {}) is not back: {}",
                node.web3,
                node.comet,
                state.missing()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// One look at the node; `first_height` is the height it first answered at.
async fn poll(client: &EthClient, rpc: &Rpc, first_height: &mut Option<u64>) -> State {
    if client.block_number().await.is_err() {
        return State::NoWeb3;
    }
    let Ok(status) = rpc.status().await else {
        return State::NoComet;
    };
    if status.catching_up {
        return State::CatchingUp;
    }
    let first = *first_height.get_or_insert(status.latest_height);
    if status.latest_height <= first {
        return State::NoNewBlock(first);
    }
    // `txpool_status` asked once: a node that does not answer it counts as
    // saying nothing, and CometBFT's count stands.
    match mempool_count(client, Some(rpc), true).await {
        Some(n) if n > 0 => State::Mempool(n),
        _ => State::Ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_node_that_does_not_answer_is_not_back_and_says_why() {
        let node = Readiness::new("http://127.0.0.1:9", "http://127.0.0.1:9").unwrap();
        let e = wait(&node, Instant::now() + Duration::from_millis(300))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("its web3 endpoint does not answer"), "{e}");
        assert!(e.contains("127.0.0.1:9"), "{e}");
    }

    #[test]
    fn a_bad_url_is_refused_before_any_deploy() {
        assert!(Readiness::new("not a url at all ::", "http://127.0.0.1:9").is_err());
    }
}
