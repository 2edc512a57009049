//! One genesis for every node of a network: the devnet's `app_state` and
//! every validator's key with equal power.

use anyhow::{Context, Result};

use super::{Node, NodeRole};
use crate::{config, DevnetOptions};

/// Each validator's voting power.
const POWER: &str = "10";

/// Writes the genesis into every node's home.
pub(super) fn write(
    nodes: &[Node],
    opts: &DevnetOptions,
    root: alloy_primitives::Address,
) -> Result<()> {
    let first = nodes.first().context("a network has at least one node")?;
    let home0 = first.state.cometbft_home();
    config::write_genesis(&home0, opts, root)?;
    let path0 = home0.join("config").join("genesis.json");
    let text = std::fs::read_to_string(&path0)
        .with_context(|| format!("cannot read {}", path0.display()))?;
    let mut genesis: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path0.display()))?;
    let validators = nodes
        .iter()
        .filter(|n| n.role == NodeRole::Validator)
        .map(validator_entry)
        .collect::<Result<Vec<_>>>()?;
    genesis["validators"] = serde_json::Value::Array(validators);
    let out = serde_json::to_string_pretty(&genesis)?;
    for node in nodes {
        let path = node.state.options.dir.join("cometbft/config/genesis.json");
        std::fs::write(&path, &out).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// A genesis validator from the public half of a node's
/// `priv_validator_key.json` (the private key is never copied).
fn validator_entry(node: &Node) -> Result<serde_json::Value> {
    let path = node
        .state
        .options
        .dir
        .join("cometbft/config/priv_validator_key.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let key: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))?;
    Ok(serde_json::json!({
        "address": key["address"],
        "pub_key": key["pub_key"],
        "power": POWER,
        "name": node.name,
    }))
}
