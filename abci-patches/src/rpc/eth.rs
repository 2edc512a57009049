//! The `eth_*`, `net_*` and `web3_*` methods.

use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::{keccak256, Address, Bytes, B256, U256, U64};
use alloy_rpc_types_eth::{FeeHistory, TransactionRequest};
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;

use super::blocks::resolve_number;
use super::comet::BroadcastError;
use super::error::{
    internal, invalid_params, server_error, RpcResult, REVERT_ERROR, SERVER_ERROR, UNSUPPORTED,
};
use super::Web3;
use crate::node::{CallFailure, CallOutcome, CallRequest};
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
    m.register_method("eth_feeHistory", fee_history)?;
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
    m.register_method("eth_call", |p, w, _| {
        let (request, block) = call_params(&p)?;
        latest_only(w, block)?;
        let outcome = run_call(w, &request)?;
        match outcome.output {
            Ok(data) => Ok(data),
            Err(failure) => Err(call_error(failure)),
        }
    })?;
    m.register_method("eth_estimateGas", |p, w, _| {
        let (request, block) = call_params(&p)?;
        latest_only(w, block)?;
        estimate_gas(w, request).map(U64::from)
    })?;
    m.register_async_method("eth_sendRawTransaction", |p, w, _| async move {
        let raw: Bytes = p.one()?;
        w.comet.broadcast_tx_sync(&raw).await.map_err(|e| match e {
            BroadcastError::Rejected { code, log } => ErrorObjectOwned::owned(
                SERVER_ERROR,
                log,
                Some(serde_json::json!({ "abci_code": code })),
            ),
            other => server_error(other.to_string()),
        })?;
        RpcResult::Ok(keccak256(&raw))
    })?;
    // Prague with no blob transactions: the excess blob gas stays zero, so
    // the blob base fee is the minimum, 1 wei (EIP-4844, EIP-7691).
    m.register_method("eth_blobBaseFee", |_, _, _| RpcResult::Ok(U256::from(1)))?;
    m.register_method("eth_getProof", |_, _, _| {
        Err::<(), _>(ErrorObjectOwned::owned(
            UNSUPPORTED,
            "eth_getProof is not supported: abcid keeps no Merkle-Patricia trie, so no \
             Ethereum state proof exists (README, \"What abcid does not do\")",
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

fn fee_history(p: Params<'_>, w: &Web3, _: &jsonrpsee::Extensions) -> RpcResult<FeeHistory> {
    let mut seq = p.sequence();
    let count: U64 = seq.next()?;
    let newest: BlockNumberOrTag = seq.next()?;
    let percentiles: Option<Vec<f64>> = seq.optional_next()?;
    let count = count.to::<u64>().clamp(1, 1024);
    let head = w.node.head().map_err(internal)?.number;
    let newest = resolve_number(w, newest)?.unwrap_or(head).min(head);
    let oldest = newest.saturating_sub(count - 1);
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
        reward: percentiles.map(|ps| vec![vec![0u128; ps.len()]; blocks]),
    })
}

pub(super) fn call_params(p: &Params<'_>) -> RpcResult<(TransactionRequest, Option<BlockId>)> {
    let mut seq = p.sequence();
    let request: TransactionRequest = seq.next()?;
    let block: Option<BlockId> = seq.optional_next()?;
    Ok((request, block))
}

fn to_call(request: &TransactionRequest) -> RpcResult<CallRequest> {
    let to = match request.to {
        Some(alloy_primitives::TxKind::Call(a)) => Some(a),
        _ => None,
    };
    if request.input.input.is_some()
        && request.input.data.is_some()
        && request.input.input != request.input.data
    {
        return Err(invalid_params(
            "both \"data\" and \"input\" are set and not equal",
        ));
    }
    Ok(CallRequest {
        from: request.from,
        to,
        gas: request.gas,
        gas_price: request.gas_price.or(request.max_fee_per_gas),
        value: request.value,
        input: request.input.input().cloned().unwrap_or_default(),
        access_list: request.access_list.clone().unwrap_or_default(),
    })
}

/// Runs `request` on the committed state (`eth_call`'s semantics).
pub(super) fn run_call(w: &Web3, request: &TransactionRequest) -> RpcResult<CallOutcome> {
    let call = to_call(request)?;
    w.node.call(&call).map_err(internal)?.map_err(server_error)
}

pub(super) fn call_error(failure: CallFailure) -> ErrorObjectOwned {
    match failure {
        CallFailure::Revert(data) => {
            ErrorObjectOwned::owned(REVERT_ERROR, "execution reverted", Some(data))
        }
        CallFailure::Halt(reason) => server_error(format!("execution halted: {reason}")),
    }
}

/// Binary search of the smallest gas limit at which the call succeeds.
fn estimate_gas(w: &Web3, request: TransactionRequest) -> RpcResult<u64> {
    let cap = w.node.genesis().map_err(internal)?.max_tx_gas;
    let mut hi = request.gas.unwrap_or(cap).min(cap);
    let mut probe = request;
    probe.gas = Some(hi);
    let first = run_call(w, &probe)?;
    if let Err(failure) = first.output {
        return Err(call_error(failure));
    }
    let mut lo = first.gas_used.saturating_sub(1);
    // Plain transfers and most calls succeed at exactly the gas they used.
    probe.gas = Some(first.gas_used);
    if run_call(w, &probe)?.output.is_ok() {
        return Ok(first.gas_used);
    }
    lo = lo.max(first.gas_used);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        probe.gas = Some(mid);
        if run_call(w, &probe)?.output.is_ok() {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}
