//! The `eth_*`, `net_*` and `web3_*` methods.

use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::{Address, B256, U256, U64};
use alloy_rpc_types_eth::{FeeHistory, TransactionRequest};
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;

use super::blocks::resolve_number;
use super::calls::{call_error, estimate_gas};
use super::error::{internal, server_error, RpcResult, UNSUPPORTED};
use super::Web3;
use crate::patches::Patches;

/// `abcid/v<version>/patches=<list>`: the node and the tunings in force.
pub fn client_version(patches: Patches) -> String {
    format!("abcid/v{}/patches={patches}", env!("CARGO_PKG_VERSION"))
}

/// Registers the state, call, transaction and chain-parameter methods.
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_method("web3_clientVersion", |_, w, _| {
        RpcResult::Ok(client_version(w.node.patches()))
    })?;
    m.register_method("abcid_patches", |_, w, _| {
        RpcResult::Ok(
            w.node
                .patches()
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>(),
        )
    })?;
    // Where abcid forwards transactions: CometBFT's RPC, so that a client
    // knowing only the web3 endpoint can read nanosecond header times there.
    m.register_method("abcid_cometbftRpc", |_, w, _| {
        RpcResult::Ok(w.comet.url().to_string())
    })?;
    m.register_method("net_version", |_, w, _| {
        RpcResult::Ok(w.node.genesis().map_err(internal)?.chain_id.to_string())
    })?;
    m.register_method("net_listening", |_, _, _| RpcResult::Ok(true))?;
    m.register_method("eth_chainId", |_, w, _| {
        RpcResult::Ok(U64::from(w.node.genesis().map_err(internal)?.chain_id))
    })?;
    m.register_method("eth_syncing", |_, _, _| RpcResult::Ok(false))?;
    m.register_method("eth_accounts", |_, _, _| {
        RpcResult::Ok(Vec::<Address>::new())
    })?;
    m.register_method("eth_blockNumber", |_, w, _| {
        RpcResult::Ok(U64::from(w.node.head().map_err(internal)?.number))
    })?;
    m.register_method("eth_gasPrice", |_, w, _| {
        RpcResult::Ok(U256::from(w.node.next_base_fee().map_err(internal)?))
    })?;
    m.register_method("eth_maxPriorityFeePerGas", |_, _, _| {
        RpcResult::Ok(U256::ZERO)
    })?;
    m.register_async_method("eth_feeHistory", |p, w, _| async move {
        let request = fee_history_params(&p)?;
        w.heavy(move |w| fee_history(w, &request)).await
    })?;
    m.register_method("eth_getBalance", |p, w, _| {
        let (address, pending) = address_at(&p, w)?;
        let account = w.node.account(&address, pending).map_err(internal)?;
        RpcResult::Ok(account.map_or(U256::ZERO, |a| a.balance))
    })?;
    m.register_method("eth_getTransactionCount", |p, w, _| {
        let (address, pending) = address_at(&p, w)?;
        let account = w.node.account(&address, pending).map_err(internal)?;
        RpcResult::Ok(U64::from(account.map_or(0, |a| a.nonce)))
    })?;
    m.register_method("eth_getCode", |p, w, _| {
        let (address, _) = address_at(&p, w)?;
        w.node.code(&address).map_err(internal)
    })?;
    m.register_method("eth_getStorageAt", |p, w, _| {
        let mut seq = p.sequence();
        let address: Address = seq.next()?;
        let slot: U256 = seq.next()?;
        let block: Option<BlockId> = seq.optional_next()?;
        latest_only(w, block)?;
        RpcResult::Ok(B256::from(
            w.node.storage(&address, &slot).map_err(internal)?,
        ))
    })?;
    m.register_async_method("eth_call", |p, w, ext| async move {
        let (request, block) = call_params(&p)?;
        w.evm(ext, move |w, scope| {
            latest_only(w, block)?;
            scope.run(w, &request)?.output.map_err(call_error)
        })
        .await
    })?;
    m.register_async_method("eth_estimateGas", |p, w, ext| async move {
        let (request, block) = call_params(&p)?;
        w.evm(ext, move |w, scope| {
            latest_only(w, block)?;
            estimate_gas(w, scope, request).map(U64::from)
        })
        .await
    })?;
    // Prague with no blob transactions: the excess blob gas stays zero, so
    // the blob base fee is the minimum, 1 wei (EIP-4844, EIP-7691).
    m.register_method("eth_blobBaseFee", |_, _, _| RpcResult::Ok(U256::from(1)))?;
    m.register_method("eth_getProof", |_, _, _| {
        Err::<(), _>(ErrorObjectOwned::owned(
            UNSUPPORTED,
            "eth_getProof is not supported: abcid keeps no Merkle-Patricia trie, so no \
             Ethereum state proof exists (abci-patches/README.md, \"What abcid does \
             not do\")",
            None::<()>,
        ))
    })?;
    Ok(())
}

/// `(address, block)` parameters; `true` when the block is `pending`.
fn address_at(p: &Params<'_>, w: &Web3) -> RpcResult<(Address, bool)> {
    let mut seq = p.sequence();
    let address: Address = seq.next()?;
    let block: Option<BlockId> = seq.optional_next()?;
    let pending = matches!(block, Some(BlockId::Number(BlockNumberOrTag::Pending)));
    if !pending {
        latest_only(w, block)?;
    }
    Ok((address, pending))
}

/// abcid keeps only the latest state: any other block is refused clearly.
pub(super) fn latest_only(w: &Web3, block: Option<BlockId>) -> RpcResult<()> {
    let head = w.node.head().map_err(internal)?.number;
    let ok = match block {
        None => true,
        Some(BlockId::Number(tag)) => match tag {
            BlockNumberOrTag::Number(n) => n == head,
            BlockNumberOrTag::Earliest => head == 0,
            _ => true,
        },
        Some(BlockId::Hash(h)) => {
            w.node
                .block_by_hash(&h.block_hash)
                .map_err(internal)?
                .map(|b| b.number)
                == Some(head)
        }
    };
    if ok {
        Ok(())
    } else {
        Err(server_error(format!(
            "historical state is not available: abcid keeps only the latest state (block {head})"
        )))
    }
}

/// geth's limit on reward percentiles (`maxQueryLimit`).
pub const MAX_PERCENTILES: usize = 100;
/// geth's limit on blocks (`maxFeeHistory`): more are truncated, not refused.
pub const MAX_FEE_HISTORY_BLOCKS: u64 = 1024;

/// The checked parameters of `eth_feeHistory`.
pub(super) struct FeeHistoryRequest {
    count: u64,
    newest: BlockNumberOrTag,
    percentiles: Option<Vec<f64>>,
}

/// Parses and checks `eth_feeHistory`'s parameters as geth does: at most
/// [`MAX_PERCENTILES`] percentiles, each within 0–100, strictly ascending;
/// the block count brought within 1 and [`MAX_FEE_HISTORY_BLOCKS`].
pub(super) fn fee_history_params(p: &Params<'_>) -> RpcResult<FeeHistoryRequest> {
    let mut seq = p.sequence();
    let count: U64 = seq.next()?;
    let newest: BlockNumberOrTag = seq.next()?;
    let percentiles: Option<Percentiles> = seq.optional_next()?;
    let percentiles = percentiles.map(|p| p.0);
    check_percentiles(percentiles.as_deref().unwrap_or_default())?;
    let count = count.to::<u64>().clamp(1, MAX_FEE_HISTORY_BLOCKS);
    Ok(FeeHistoryRequest {
        count,
        newest,
        percentiles,
    })
}

/// Reward percentiles as read from a request: at most one more than
/// [`MAX_PERCENTILES`] are kept, the rest are skipped unread, so a 16 MiB
/// list costs no more memory than a short one.
struct Percentiles(Vec<f64>);

impl<'de> serde::Deserialize<'de> for Percentiles {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bounded;
        impl<'de> serde::de::Visitor<'de> for Bounded {
            type Value = Percentiles;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of reward percentiles")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Percentiles, A::Error> {
                let mut kept = Vec::new();
                while kept.len() <= MAX_PERCENTILES {
                    match seq.next_element::<f64>()? {
                        Some(p) => kept.push(p),
                        None => return Ok(Percentiles(kept)),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Percentiles(kept))
            }
        }
        d.deserialize_seq(Bounded)
    }
}

/// geth's percentile rules, with its messages.
pub fn check_percentiles(ps: &[f64]) -> RpcResult<()> {
    if ps.len() > MAX_PERCENTILES {
        return Err(server_error(format!(
            "invalid reward percentile: over the query limit {MAX_PERCENTILES}"
        )));
    }
    for (i, &p) in ps.iter().enumerate() {
        if !(0.0..=100.0).contains(&p) {
            return Err(server_error(format!("invalid reward percentile: {p:.6}")));
        }
        if i > 0 && p <= ps[i - 1] {
            return Err(server_error(format!(
                "invalid reward percentile: #{}:{:.6} >= #{i}:{p:.6}",
                i - 1,
                ps[i - 1]
            )));
        }
    }
    Ok(())
}

fn fee_history(w: &Web3, request: &FeeHistoryRequest) -> RpcResult<FeeHistory> {
    let head = w.node.head().map_err(internal)?.number;
    let newest = match request.newest {
        BlockNumberOrTag::Number(n) if n > head => {
            return Err(server_error(format!(
                "request beyond head block: requested {n}, head {head}"
            )))
        }
        tag => resolve_number(w, tag)?.unwrap_or(head).min(head),
    };
    let oldest = newest.saturating_sub(request.count - 1);
    let next_base_fee = u128::from(w.node.next_base_fee().map_err(internal)?);
    let (mut ratios, mut base_fees) = (Vec::new(), Vec::new());
    for n in oldest..=newest {
        let block = w.node.block(n).map_err(internal)?;
        ratios.push(
            block
                .as_ref()
                .map_or(0.0, |b| b.gas_used as f64 / b.gas_limit.max(1) as f64),
        );
        base_fees.push(block.map_or(next_base_fee, |b| u128::from(b.base_fee)));
    }
    let blocks = ratios.len();
    // The block after the newest: the head's successor's, or the next one stored.
    let after = match newest < head {
        true => w
            .node
            .block(newest + 1)
            .map_err(internal)?
            .map(|b| u128::from(b.base_fee)),
        false => None,
    };
    base_fees.push(after.unwrap_or(next_base_fee));
    Ok(FeeHistory {
        base_fee_per_gas: base_fees,
        gas_used_ratio: ratios,
        base_fee_per_blob_gas: vec![0; blocks + 1],
        blob_gas_used_ratio: vec![0.0; blocks],
        oldest_block: oldest,
        reward: request
            .percentiles
            .as_ref()
            .map(|ps| vec![vec![0u128; ps.len()]; blocks]),
    })
}

pub(super) fn call_params(p: &Params<'_>) -> RpcResult<(TransactionRequest, Option<BlockId>)> {
    let mut seq = p.sequence();
    let request: TransactionRequest = seq.next()?;
    let block: Option<BlockId> = seq.optional_next()?;
    Ok((request, block))
}
