//! `eth_getLogs` and the log queries that filters and subscriptions share.
//!
//! A filter is parsed as geth parses it, with geth's errors (and the
//! execution-apis tests' codes); a range query resolves its blocks against
//! the head, refuses more than [`RpcConfig::max_log_blocks`](super::RpcConfig)
//! blocks, skips every block whose logs bloom rules a match out, and stops
//! with an error once the answer would exceed
//! [`RpcConfig::max_logs`](super::RpcConfig) logs. Logs come in geth's order
//! (block, transaction, position); a reverted transaction has none.

use alloy_eips::BlockNumberOrTag;
use alloy_primitives::{keccak256, Bloom};
use alloy_rpc_types_eth::{Filter, FilterBlockOption, Log};
use jsonrpsee::RpcModule;
use serde_json::Value;

use super::error::{internal, invalid_params, server_error, RpcResult};
use super::Web3;
use crate::node::{Node, NodeError};
use crate::records::BlockRecord;

/// The blocks a log query searches: `from..=to` (one block for a block
/// hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First height.
    pub from: u64,
    /// Last height.
    pub to: u64,
}

/// A parsed log filter: alloy's [`Filter`] and how many topic positions the
/// request named, since geth, unlike alloy, never matches a log with fewer
/// topics than the filter has positions (`[null, null, null]` matches only
/// logs with three topics or more).
#[derive(Debug, Clone)]
pub struct LogFilter {
    /// The criteria.
    pub filter: Filter,
    /// Topic positions named, trailing nulls included.
    pub positions: usize,
}

impl LogFilter {
    /// Whether `log` matches the address and topic criteria.
    pub fn matches(&self, log: &alloy_primitives::Log) -> bool {
        log.topics().len() >= self.positions && self.filter.matches(log)
    }

    /// Whether a block with `bloom` may hold a match.
    pub fn may_match(&self, bloom: &Bloom) -> bool {
        *bloom != Bloom::ZERO && self.filter.matches_bloom(*bloom)
    }
}

/// Registers `eth_getLogs`.
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_async_method("eth_getLogs", |p, w, _| async move {
        let filter = parse_filter(p.one()?, w.config.max_log_criteria)?;
        w.heavy(move |w| {
            let span = resolve(w, &filter)?;
            query(w, &filter, span)
        })
        .await
    })?;
    Ok(())
}

/// Parses a filter object as geth does: at most four topic positions, each
/// `null`, a topic or a list of topics (or nulls); at most `max_criteria`
/// addresses or topics at one position; `blockHash` or a range, not both.
pub fn parse_filter(value: Value, max_criteria: usize) -> RpcResult<LogFilter> {
    let positions = check_topics(&value, max_criteria)?;
    let addresses = match value.get("address") {
        Some(Value::Array(list)) => list.len(),
        _ => 0,
    };
    if addresses > max_criteria {
        return Err(server_error(
            "exceed max addresses or topics per search position",
        ));
    }
    let filter = serde_json::from_value(value).map_err(|e| {
        let text = e.to_string();
        if text.contains("cannot specify both") {
            invalid_params("invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other")
        } else {
            invalid_params(format!("invalid argument 0: {text}"))
        }
    })?;
    Ok(LogFilter { filter, positions })
}

/// Checks the `topics` member: geth's `exceed max topics` past four
/// positions, `invalid topic(s)` for anything but null, a topic or a list.
/// Returns how many positions it names.
fn check_topics(value: &Value, max_criteria: usize) -> RpcResult<usize> {
    let topics = match value.get("topics") {
        None | Some(Value::Null) => return Ok(0),
        Some(Value::Array(topics)) => topics,
        Some(_) => return Err(invalid_params("invalid argument 0: invalid topic(s)")),
    };
    if topics.len() > 4 {
        return Err(server_error("exceed max topics"));
    }
    for position in topics {
        match position {
            Value::Null => {}
            Value::String(topic) => check_topic(topic)?,
            Value::Array(any_of) => {
                if any_of.len() > max_criteria {
                    return Err(server_error(
                        "exceed max addresses or topics per search position",
                    ));
                }
                for topic in any_of {
                    match topic {
                        Value::Null => {}
                        Value::String(topic) => check_topic(topic)?,
                        _ => return Err(invalid_params("invalid argument 0: invalid topic(s)")),
                    }
                }
            }
            _ => return Err(invalid_params("invalid argument 0: invalid topic(s)")),
        }
    }
    Ok(topics.len())
}

/// One topic: `0x` and 64 hex digits.
fn check_topic(topic: &str) -> RpcResult<()> {
    let Some(digits) = topic.strip_prefix("0x") else {
        return Err(invalid_params(
            "invalid argument 0: hex string without 0x prefix",
        ));
    };
    let bytes = hex::decode(digits)
        .map_err(|_| invalid_params("invalid argument 0: invalid hex string"))?;
    if bytes.len() != 32 {
        return Err(invalid_params(format!(
            "invalid argument 0: hex has invalid length {} after decoding; expected 32 for topic",
            bytes.len()
        )));
    }
    Ok(())
}

/// The blocks `filter` searches, checked against the head as geth checks
/// them: a block hash must be known; a range must not be reversed, must not
/// reach past the head, and must span at most the configured blocks.
pub fn resolve(w: &Web3, filter: &LogFilter) -> RpcResult<Span> {
    let (from, to) = match filter.filter.block_option {
        FilterBlockOption::AtBlockHash(hash) => {
            return match w.node.block_by_hash(&hash).map_err(internal)? {
                Some(block) => Ok(Span {
                    from: block.number,
                    to: block.number,
                }),
                None => Err(server_error("unknown block")),
            }
        }
        FilterBlockOption::Range {
            from_block,
            to_block,
        } => (from_block, to_block),
    };
    let head = w.node.head().map_err(internal)?.number;
    let from_n = height(from, head)?;
    let to_n = height(to, head)?;
    if matches!(to, Some(BlockNumberOrTag::Number(n)) if n > head) {
        return Err(invalid_params(
            "block range extends beyond current head block",
        ));
    }
    if from_n > head {
        return Err(invalid_params("invalid block range params"));
    }
    if from_n > to_n {
        return Err(server_error("invalid block range params"));
    }
    let max = w.config.max_log_blocks;
    if to_n - from_n >= max {
        return Err(server_error(format!("exceed maximum block range: {max}")));
    }
    Ok(Span {
        from: from_n,
        to: to_n,
    })
}

/// The height a range bound names (absent: `latest`).
fn height(tag: Option<BlockNumberOrTag>, head: u64) -> RpcResult<u64> {
    match tag.unwrap_or(BlockNumberOrTag::Latest) {
        BlockNumberOrTag::Number(n) => Ok(n),
        BlockNumberOrTag::Earliest => Ok(0),
        BlockNumberOrTag::Pending => Err(server_error("pending logs are not supported")),
        BlockNumberOrTag::Latest | BlockNumberOrTag::Safe | BlockNumberOrTag::Finalized => Ok(head),
    }
}

/// The logs of `span` that match `filter`, at most the configured number.
pub fn query(w: &Web3, filter: &LogFilter, span: Span) -> RpcResult<Vec<Log>> {
    let max = w.config.max_logs;
    let (logs, _) = collect(w, filter, span, max.saturating_add(1))?;
    if logs.len() > max {
        return Err(server_error(format!(
            "query returned more than {max} results"
        )));
    }
    Ok(logs)
}

/// The logs of `span` that match `filter`, block by block, stopping after the
/// block that brings them to `budget` or more; also the last height covered
/// (`span.to` when the whole span was searched).
pub fn collect(
    w: &Web3,
    filter: &LogFilter,
    span: Span,
    budget: usize,
) -> RpcResult<(Vec<Log>, u64)> {
    let mut out = Vec::new();
    for height in candidates(&w.node, filter, span.from, span.to)? {
        let Some(block) = w.node.block(height).map_err(internal)? else {
            continue;
        };
        let logs = block_logs(&w.node, &block).map_err(internal)?;
        out.extend(logs.into_iter().filter(|log| filter.matches(&log.inner)));
        if out.len() >= budget {
            return Ok((out, height));
        }
    }
    Ok((out, span.to))
}

/// The heights of `from..=to` whose blooms allow a match: a block with a
/// bloom that rules `filter` out (or holds no log at all) is not read.
fn candidates(node: &Node, filter: &LogFilter, from: u64, to: u64) -> RpcResult<Vec<u64>> {
    let blooms = node.log_blooms(from, to).map_err(internal)?;
    let mut known = blooms.iter().peekable();
    let mut out = Vec::new();
    for height in from..=to {
        while known.next_if(|(h, _)| *h < height).is_some() {}
        let bloom: Option<&Bloom> = known.next_if(|(h, _)| *h == height).map(|(_, b)| b);
        match bloom {
            Some(b) if !filter.may_match(b) => {}
            _ => out.push(height),
        }
    }
    Ok(out)
}

/// Every log of `block`, in geth's order (by transaction, then by position
/// within it), with block, transaction and log indices filled in. A reverted
/// or halted transaction has no logs: the EVM discards them.
pub fn block_logs(node: &Node, block: &BlockRecord) -> Result<Vec<Log>, NodeError> {
    let mut logs = Vec::new();
    for tx in node.block_txs(block, usize::MAX)? {
        let tx_hash = keccak256(&tx.raw);
        for log in &tx.receipt.logs {
            logs.push(Log {
                inner: log.clone(),
                block_hash: Some(block.hash),
                block_number: Some(block.number),
                block_timestamp: Some(block.timestamp),
                transaction_hash: Some(tx_hash),
                transaction_index: Some(tx.index),
                log_index: Some(logs.len() as u64),
                removed: false,
            });
        }
    }
    Ok(logs)
}
