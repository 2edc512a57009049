//! `eth_createAccessList`, as geth answers it: run the call, list every
//! account and storage slot it touched (the sender, the recipient, the fee
//! recipient and the precompiles, warm anyway, only for their slots), run it
//! again with that list until the list stops changing, and report the gas the
//! call uses with it.

use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_primitives::{Address, U256};
use alloy_rpc_types_eth::{AccessListResult, TransactionRequest};
use jsonrpsee::RpcModule;

use super::calls::CallScope;
use super::error::{internal, RpcResult};
use super::eth::{call_params, latest_only};
use super::Web3;
use crate::node::{CallFailure, CallOutcome};

/// geth stops after this many rounds too.
const MAX_ROUNDS: usize = 8;

/// Registers `eth_createAccessList`.
pub fn register(m: &mut RpcModule<Web3>) -> anyhow::Result<()> {
    m.register_async_method("eth_createAccessList", |p, w, ext| async move {
        let (request, block) = call_params(&p)?;
        w.evm(ext, move |w, scope| {
            latest_only(w, block)?;
            create_access_list(w, scope, request)
        })
        .await
    })?;
    Ok(())
}

fn create_access_list(
    w: &Web3,
    scope: &CallScope,
    mut request: TransactionRequest,
) -> RpcResult<AccessListResult> {
    let warm = [
        Some(request.from.unwrap_or_default()),
        request.to.and_then(|kind| kind.to().copied()),
        Some(w.node.genesis().map_err(internal)?.fee_recipient),
    ];
    let mut list = request.access_list.clone().unwrap_or_default();
    let mut outcome = scope.run(w, &request)?;
    for _ in 0..MAX_ROUNDS {
        let next = access_list_of(&outcome, &warm);
        if next == list {
            break;
        }
        list = next;
        request.access_list = Some(list.clone());
        outcome = scope.run(w, &request)?;
    }
    let error = match &outcome.output {
        Ok(_) => None,
        Err(CallFailure::Revert(_)) => Some("execution reverted".to_string()),
        Err(CallFailure::Halt(reason)) => Some(format!("execution halted: {reason}")),
        Err(CallFailure::TimedOut) => Some("execution aborted (timeout)".to_string()),
    };
    Ok(AccessListResult {
        access_list: list,
        gas_used: U256::from(outcome.gas_used),
        error,
    })
}

/// The accounts and slots `outcome` touched; an account warm anyway (`warm`,
/// a precompile) is listed only for its slots.
fn access_list_of(outcome: &CallOutcome, warm: &[Option<Address>]) -> AccessList {
    AccessList(
        outcome
            .touched
            .iter()
            .filter(|(address, slots)| {
                !slots.is_empty() || !(warm.contains(&Some(*address)) || is_precompile(address))
            })
            .map(|(address, slots)| AccessListItem {
                address: *address,
                storage_keys: slots.clone(),
            })
            .collect(),
    )
}

/// The Prague precompiles: 0x01 to 0x11.
fn is_precompile(address: &Address) -> bool {
    let bytes = address.as_slice();
    bytes[..19].iter().all(|b| *b == 0) && (1..=0x11).contains(&bytes[19])
}
