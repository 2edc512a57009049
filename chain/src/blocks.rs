//! Windows of committed blocks: the blocks after one height up to another,
//! their header times and transaction counts, read from CometBFT's RPC
//! (nanosecond header times, valid/invalid from `/block_results`) or from
//! any web3 node (whole-second block timestamps). What a window committed
//! per second is its transactions over the time between the headers of its
//! two ends.

use std::future::Future;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use feth_comet::rpc::Rpc;

use serde_json::json;

use crate::eth::{BlockSummary, EthClient};

/// How often the chain's height is polled to find block boundaries.
const POLL: Duration = Duration::from_millis(25);
/// Longest wait for one new block.
const BLOCK_WAIT: Duration = Duration::from_secs(30);

/// The blocks `first + 1 ..= last`, with the header time of `first` too.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockWindow {
    /// The block before the window (its header time opens the window).
    pub first: u64,
    /// The window's last block.
    pub last: u64,
    /// Header times of blocks `first ..= last`, ns since the epoch.
    pub times_ns: Vec<i64>,
    /// Transactions in the window's blocks.
    pub txs: u64,
    /// Of those, the ones the application executed (code 0), when known.
    pub valid: Option<u64>,
    /// Of those, the ones it refused, when known.
    pub invalid: Option<u64>,
}

impl BlockWindow {
    /// Seconds between the headers of `first` and `last`.
    pub fn seconds(&self) -> f64 {
        match (self.times_ns.first(), self.times_ns.last()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// Intervals between consecutive headers, ms, in height order.
    pub fn intervals_ms(&self) -> Vec<f64> {
        self.times_ns
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e6)
            .collect()
    }
}

fn check_span(first: u64, last: u64) -> Result<()> {
    ensure!(
        last > first + 1,
        "only {} block(s) in a measured window; make the window longer",
        last.saturating_sub(first)
    );
    Ok(())
}

fn check_times(w: &BlockWindow) -> Result<()> {
    ensure!(
        w.seconds() > 0.0,
        "block {}'s header time is not after block {}'s; make the window longer",
        w.last,
        w.first
    );
    Ok(())
}

/// The window `first + 1 ..= last` from CometBFT's RPC, with valid/invalid
/// counts from `/block_results` when `results`.
pub async fn comet_window(rpc: &Rpc, first: u64, last: u64, results: bool) -> Result<BlockWindow> {
    check_span(first, last)?;
    let heights: Vec<u64> = (first..=last).collect();
    let need: &[u64] = if results { &heights[1..] } else { &[] };
    let (facts, missing) = rpc.fetch(&heights, need).await?;
    ensure!(
        missing.is_empty(),
        "the node did not describe blocks {missing:?}"
    );
    let times_ns = heights
        .iter()
        .map(|h| facts.get(h).and_then(|f| f.time_ns))
        .collect::<Option<Vec<i64>>>()
        .with_context(|| format!("no header time for a block of {first}..={last}"))?;
    let sum = |f: fn(&feth_comet::facts::BlockFacts) -> Option<u64>| -> Option<u64> {
        heights[1..].iter().map(|h| facts.get(h).and_then(f)).sum()
    };
    let window = BlockWindow {
        first,
        last,
        times_ns,
        txs: sum(|f| f.txs).unwrap_or(0),
        valid: sum(|f| f.valid),
        invalid: sum(|f| f.invalid),
    };
    check_times(&window)?;
    Ok(window)
}

/// The window `first + 1 ..= last` from a web3 node: whole-second block
/// timestamps, and no valid/invalid split.
pub async fn web3_window(client: &EthClient, first: u64, last: u64) -> Result<BlockWindow> {
    check_span(first, last)?;
    let blocks = web3_blocks(client, first..=last).await?;
    let times_ns = blocks
        .iter()
        .map(|b| b.timestamp.to::<i64>().saturating_mul(1_000_000_000))
        .collect();
    let txs = blocks[1..]
        .iter()
        .map(|b| b.transactions.len() as u64)
        .sum();
    let window = BlockWindow {
        first,
        last,
        times_ns,
        txs,
        valid: None,
        invalid: None,
    };
    check_times(&window)?;
    Ok(window)
}

/// Blocks `heights` over web3, in order (see [`EthClient::blocks`]); one
/// the node does not have is an error naming it.
pub async fn web3_blocks(
    client: &EthClient,
    heights: RangeInclusive<u64>,
) -> Result<Vec<BlockSummary>> {
    let got = client.blocks(heights.clone()).await?;
    heights
        .zip(got)
        .map(|(h, b)| b.with_context(|| format!("{} has no block {h}", client.url())))
        .collect()
}

/// Waits for the first block above `height`, polling `latest` for the
/// chain's height; returns it.
pub async fn wait_above<F, Fut>(height: u64, latest: F) -> Result<u64>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<u64>>,
{
    let deadline = Instant::now() + BLOCK_WAIT;
    loop {
        let now = latest().await?;
        if now > height {
            return Ok(now);
        }
        if Instant::now() >= deadline {
            bail!(
                "no block above {height} in {} s: is the node stalled?",
                BLOCK_WAIT.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits for the first block above `height` on CometBFT's RPC.
pub async fn next_block(rpc: &Rpc, height: u64) -> Result<u64> {
    wait_above(height, || async { Ok(rpc.status().await?.latest_height) }).await
}

/// Heights per CometBFT batch: CometBFT refuses batches over 10 by default.
const COMET_BATCH: usize = 10;

/// CometBFT's RPC (`given`, else named by the node) and a description of the
/// clock that follows.
pub async fn discover_comet(
    client: &EthClient,
    given: Option<&str>,
) -> Result<(Option<Rpc>, String)> {
    let web3 = "web3 block timestamps (whole seconds)";
    if let Some(url) = given {
        let rpc = Rpc::new(url, COMET_BATCH, 4)?;
        rpc.status()
            .await
            .with_context(|| format!("the CometBFT RPC {url} does not answer /status"))?;
        return Ok((
            Some(rpc),
            format!("CometBFT header times (ns) from {url}, as given"),
        ));
    }
    let named = match client.call::<String>("abcid_cometbftRpc", json!([])).await {
        Ok(url) => url,
        Err(e) => {
            let why = format!("{web3}: no CometBFT RPC given, and the node names none ({e})");
            return Ok((None, why));
        }
    };
    let rpc = match Rpc::new(&named, COMET_BATCH, 4) {
        Ok(rpc) => rpc,
        Err(e) => return Ok((None, format!("{web3}: the node names {named:?}: {e}"))),
    };
    Ok(match rpc.status().await {
        Ok(_) => (
            Some(rpc),
            format!(
                "CometBFT header times (ns) from {named}, named by the node (abcid_cometbftRpc)"
            ),
        ),
        Err(e) => (
            None,
            format!("{web3}: the node names {named}, which does not answer: {e}"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_spans_its_first_and_last_headers() {
        let w = BlockWindow {
            first: 10,
            last: 13,
            times_ns: vec![0, 500_000_000, 1_100_000_000, 1_500_000_000],
            txs: 30,
            valid: None,
            invalid: None,
        };
        assert_eq!(w.seconds(), 1.5);
        assert_eq!(w.intervals_ms(), vec![500.0, 600.0, 400.0]);
        assert!(check_span(10, 11).is_err() && check_span(10, 12).is_ok());
        let flat = BlockWindow {
            times_ns: vec![7; 4],
            ..w
        };
        assert!(check_times(&flat).is_err());
    }

    #[tokio::test]
    async fn waiting_for_a_block_returns_the_first_height_above() {
        let calls = std::sync::atomic::AtomicU64::new(0);
        let h = wait_above(11, || async {
            Ok(10 + calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
        })
        .await
        .unwrap();
        assert_eq!(h, 12);
    }
}
