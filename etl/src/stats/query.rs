//! Reading a chain's blocks from Redis for [`compute`].

use std::time::Duration;

use super::{compute, CommitTimes, StatsReport};
use crate::store::{Store, StoreError, StoredNode};

/// How long `stats` retries when Redis is unreachable.
pub const DEFAULT_REDIS_RETRY: Duration = Duration::from_secs(5);

/// What to compute figures for. `Default` gives an empty Redis URL and
/// chain id, all heights, an automatic window and [`DEFAULT_REDIS_RETRY`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsQuery {
    /// Redis URL.
    pub redis: String,
    /// Chain id, as ingested.
    pub chain_id: String,
    /// First height (`None`: the lowest ingested).
    pub from: Option<u64>,
    /// Last height (`None`: the highest ingested).
    pub to: Option<u64>,
    /// Blocks per window (`None`: a round number giving at most 25 windows).
    pub window: Option<u64>,
    /// Node whose commit log times fill in missing header times (`None`:
    /// the node with the most).
    pub node: Option<String>,
    /// Retry budget for Redis.
    pub redis_retry: Duration,
}

impl Default for StatsQuery {
    fn default() -> Self {
        Self {
            redis: String::new(),
            chain_id: String::new(),
            from: None,
            to: None,
            window: None,
            node: None,
            redis_retry: DEFAULT_REDIS_RETRY,
        }
    }
}

/// Stats failures.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// Redis failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Nothing ingested for this chain/range.
    #[error("no blocks of chain {chain:?} in {} in Redis. {hint}", heights_text(*from, *to))]
    Empty {
        /// Chain asked for.
        chain: String,
        /// First height asked for (`None`: no lower bound).
        from: Option<u64>,
        /// Last height asked for (`None`: no upper bound).
        to: Option<u64>,
        /// Chains that do have data.
        hint: String,
    },
    /// `--node` names no known node.
    #[error("no node {node:?} in chain {chain:?}; known nodes: {known}")]
    UnknownNode {
        /// Asked for.
        node: String,
        /// Chain.
        chain: String,
        /// Known names.
        known: String,
    },
    /// `--from` after `--to`, or `--window 0`.
    #[error("{0}")]
    BadRange(String),
}

/// A height range as people write it: `all heights`, `heights from 5 on`,
/// `heights up to 9`, `heights 5–9`, `height 5`.
fn heights_text(from: Option<u64>, to: Option<u64>) -> String {
    match (from, to) {
        (None, None) => "all heights".to_string(),
        (Some(a), None) => format!("heights from {a} on"),
        (None, Some(b)) => format!("heights up to {b}"),
        (Some(a), Some(b)) if a == b => format!("height {a}"),
        (Some(a), Some(b)) => format!("heights {a}–{b}"),
    }
}

/// Reads the chain's blocks from Redis and computes the figures.
pub async fn query(args: &StatsQuery) -> Result<StatsReport, StatsError> {
    let (from, to) = checked_range(args)?;
    let store = Store::connect(&args.redis, &args.chain_id, args.redis_retry).await?;
    let heights = store.heights(from, to).await?;
    if heights.is_empty() {
        return Err(nothing_stored(&store, args).await?);
    }
    let rows = store.blocks(&heights).await?;
    let nodes = store.nodes().await?;
    let node = commit_node(args, &nodes)?;
    // Commit times are only needed where header times are missing.
    let needs_commits = rows.iter().any(|r| r.facts.time_ns.is_none());
    let times = match node {
        Some(n) if needs_commits => Some(store.commit_times(&n.name, &heights).await?),
        _ => None,
    };
    let commits = match (node, &times) {
        (Some(n), Some(t)) => Some(CommitTimes {
            node: &n.name,
            log_tz: n.log_tz.as_deref(),
            times: t,
        }),
        _ => None,
    };
    Ok(compute(
        &args.chain_id,
        &rows,
        commits.as_ref(),
        args.window,
    ))
}

/// The height range asked for, refusing `--from` after `--to` and
/// `--window 0`.
fn checked_range(args: &StatsQuery) -> Result<(u64, u64), StatsError> {
    let (from, to) = (args.from.unwrap_or(0), args.to.unwrap_or(u64::MAX));
    if from > to {
        return Err(StatsError::BadRange(format!(
            "--from {from} is after --to {to}"
        )));
    }
    if args.window == Some(0) {
        return Err(StatsError::BadRange("--window must be at least 1".into()));
    }
    Ok((from, to))
}

/// The error for a range with no blocks, naming the chains there are.
async fn nothing_stored(store: &Store, args: &StatsQuery) -> Result<StatsError, StoreError> {
    let chains = store.chains().await?;
    let hint = if chains.is_empty() {
        "This Redis holds no ingested chain: run `feth etl --tendermint LOG… --redis URL` first."
            .to_string()
    } else {
        format!("Chains in this Redis: {}.", chains.join(", "))
    };
    Ok(StatsError::Empty {
        chain: args.chain_id.clone(),
        from: args.from,
        to: args.to,
        hint,
    })
}

/// The node whose commit times fill in missing header times: `--node`, else
/// the one with the most commit times (`nodes` is sorted so), if any.
fn commit_node<'a>(
    args: &StatsQuery,
    nodes: &'a [StoredNode],
) -> Result<Option<&'a StoredNode>, StatsError> {
    let Some(n) = &args.node else {
        return Ok(nodes.first().filter(|n| n.commits > 0));
    };
    let found = nodes.iter().find(|x| x.name == *n);
    found.map(Some).ok_or_else(|| StatsError::UnknownNode {
        node: n.clone(),
        chain: args.chain_id.clone(),
        known: nodes
            .iter()
            .map(|x| x.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_as_people_write_them() {
        let empty = |from, to| {
            StatsError::Empty {
                chain: "9001".into(),
                from,
                to,
                hint: "Chains in this Redis: 9000.".into(),
            }
            .to_string()
        };
        assert_eq!(
            empty(None, None),
            "no blocks of chain \"9001\" in all heights in Redis. Chains in this Redis: 9000."
        );
        assert!(empty(Some(5), None).contains(" in heights from 5 on in "));
        assert!(empty(None, Some(9)).contains(" in heights up to 9 in "));
        assert!(empty(Some(5), Some(9)).contains(" in heights 5–9 in "));
        assert!(empty(Some(7), Some(7)).contains(" in height 7 in "));
        assert!(!empty(None, None).contains(&u64::MAX.to_string()));
    }
}
