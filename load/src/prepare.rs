//! What a run's writes and reads call, deployed before it begins: the token
//! of an ERC-20 share, FethStore, FethSwap, each with its gas limit.

use alloy_primitives::{Address, U256};
use anyhow::{bail, Result};

use super::deploy::Signer;
use super::plan::{Workload, WorkloadKind, Write, WriteMix};
use super::reads::{ReadMethod, ReadPlan};
use super::{contracts, erc20};
use feth_chain::eth::EthClient;

/// Tokens each sender but the first is handed, on ERC-20 loads.
const TOKENS_PER_HOLDER: u64 = 1_000_000_000;

/// The contracts of a run, deployed.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The writes, in the mix's order, with their contracts and gas limits.
    pub writes: Vec<Write>,
    /// The FethStore whose `digest` view the reads call, when they do.
    pub digest: Option<Address>,
}

/// Deploys from the signer's first key what `writes` and `reads` call.
pub async fn prepare(
    client: &EthClient,
    signer: &Signer<'_>,
    writes: &WriteMix,
    reads: Option<&ReadPlan>,
) -> Result<Prepared> {
    let mut deployed = Vec::new();
    for &(kind, share) in writes.shares() {
        let (workload, gas_limit) = deploy_write(kind, client, signer).await?;
        deployed.push(Write {
            workload,
            share,
            gas_limit,
        });
    }
    let store = deployed.iter().find_map(|w| match w.workload {
        Workload::Store { contract } => Some(contract),
        _ => None,
    });
    let digest = match (reads.is_some_and(|r| r.calls(ReadMethod::Digest)), store) {
        (false, _) => None,
        (true, Some(store)) => Some(store),
        (true, None) => Some(contracts::prepare_store(client, signer).await?.address),
    };
    Ok(Prepared {
        writes: deployed,
        digest,
    })
}

/// The contract a write kind calls, deployed, and the kind's gas limit.
async fn deploy_write(
    kind: WorkloadKind,
    client: &EthClient,
    signer: &Signer<'_>,
) -> Result<(Workload, u64)> {
    Ok(match kind {
        WorkloadKind::Transfer => (Workload::Transfer, crate::fund::TRANSFER_GAS),
        WorkloadKind::Erc20 => {
            if signer.keys.len() < 2 {
                bail!("the erc20 workload needs at least 2 accounts (the first deploys the token)");
            }
            let token = erc20::prepare(client, signer, U256::from(TOKENS_PER_HOLDER)).await?;
            let workload = Workload::Erc20 {
                token: token.address,
            };
            (workload, token.transfer_gas)
        }
        WorkloadKind::Store => {
            let store = contracts::prepare_store(client, signer).await?;
            let workload = Workload::Store {
                contract: store.address,
            };
            (workload, store.call_gas)
        }
        WorkloadKind::Swap => {
            let pool = contracts::prepare_swap(client, signer).await?;
            let workload = Workload::Swap {
                contract: pool.address,
            };
            (workload, pool.call_gas)
        }
    })
}
