//! Writing a devnet's CometBFT configuration and genesis.

use std::path::Path;

use alloy_primitives::{Address, U256};
use anyhow::{bail, Context, Result};
use serde_json::json;

use super::DevnetOptions;

/// Sets one dotted key (`consensus.timeout_commit`) in a TOML table.
pub fn set_key(doc: &mut toml::Table, dotted: &str, value: toml::Value) -> Result<()> {
    let mut parts: Vec<&str> = dotted.split('.').collect();
    let Some(last) = parts.pop() else {
        bail!("empty configuration key");
    };
    let mut table = doc;
    for part in parts {
        table = table
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .with_context(|| format!("configuration key {dotted}: {part} is not a table"))?;
    }
    table.insert(last.to_string(), value);
    Ok(())
}

/// Parses a `KEY=VALUE` override; the value is TOML (`500`, `true`, `"x"`)
/// or, failing that, a plain string.
pub fn parse_override(text: &str) -> Result<(String, toml::Value)> {
    let (key, raw) = text.split_once('=').with_context(|| {
        format!("--set {text}: expected KEY=VALUE, e.g. consensus.timeout_commit=500ms")
    })?;
    let value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    Ok((key.trim().to_string(), value))
}

/// Rewrites `config.toml` with the devnet's ports and tuning.
pub fn write_config(home: &Path, opts: &DevnetOptions) -> Result<()> {
    let path = home.join("config").join("config.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut doc: toml::Table = text
        .parse()
        .with_context(|| format!("cannot parse {}", path.display()))?;
    let s = |v: String| toml::Value::String(v);
    let i = |v: u64| toml::Value::Integer(v as i64);
    let settings = [
        ("moniker", s("feth-devnet".into())),
        ("proxy_app", s(opts.abci_addr()?)),
        ("log_format", s(opts.log_format.as_str().into())),
        ("rpc.laddr", s(format!("tcp://127.0.0.1:{}", opts.rpc_port))),
        ("rpc.max_body_bytes", i(opts.rpc_max_body_bytes)),
        ("rpc.max_open_connections", i(opts.rpc_max_open_connections)),
        ("rpc.timeout_broadcast_tx_commit", s("30s".into())),
        ("p2p.laddr", s(format!("tcp://127.0.0.1:{}", opts.p2p_port))),
        ("p2p.pex", toml::Value::Boolean(false)),
        ("p2p.addr_book_strict", toml::Value::Boolean(false)),
        ("mempool.size", i(opts.mempool_size)),
        ("mempool.max_txs_bytes", i(opts.mempool_max_txs_bytes)),
        ("mempool.cache_size", i(opts.mempool_size.max(10_000) * 2)),
        ("consensus.timeout_commit", s(opts.timeout_commit.clone())),
        ("tx_index.indexer", s("null".into())),
        ("instrumentation.prometheus", toml::Value::Boolean(true)),
        (
            "instrumentation.prometheus_listen_addr",
            s(format!("127.0.0.1:{}", opts.cometbft_metrics_port)),
        ),
    ];
    for (key, value) in settings {
        set_key(&mut doc, key, value)?;
    }
    for text in &opts.set {
        let (key, value) = parse_override(text)?;
        set_key(&mut doc, &key, value)?;
    }
    let out = toml::to_string(&doc).context("cannot serialise config.toml")?;
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// Puts abcid's `app_state` (chain id, block gas limit, funded root) into
/// `genesis.json`, and the block gas limit into CometBFT's
/// `consensus_params.block.max_gas` (a string: CometBFT's genesis JSON
/// writes int64 as strings), so that CometBFT reaps no more gas per block
/// than abcid executes.
pub fn write_genesis(home: &Path, opts: &DevnetOptions, root: Address) -> Result<()> {
    let path = home.join("config").join("genesis.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut genesis: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))?;
    let balance: U256 = opts
        .root_balance
        .parse()
        .with_context(|| format!("--root-balance {}: not a number of wei", opts.root_balance))?;
    genesis["chain_id"] = json!(format!("feth-devnet-{}", opts.chain_id));
    genesis
        .pointer_mut("/consensus_params/block")
        .and_then(serde_json::Value::as_object_mut)
        .with_context(|| format!("{}: no consensus_params.block", path.display()))?
        .insert(
            "max_gas".to_string(),
            json!(opts.block_gas_limit.to_string()),
        );
    genesis["app_state"] = json!({
        "chain_id": opts.chain_id,
        "block_gas_limit": opts.block_gas_limit,
        "alloc": { root.to_string(): { "balance": balance } },
    });
    if opts.fee_market {
        genesis["app_state"]["fee_market"] = json!({"elasticity": 2, "max_change_denominator": 8});
    }
    let out = serde_json::to_string_pretty(&genesis)?;
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devnet::Ports;

    #[test]
    fn overrides_parse_as_toml_or_string() {
        let (k, v) = parse_override("consensus.timeout_commit=500ms").unwrap();
        assert_eq!(k, "consensus.timeout_commit");
        assert_eq!(v, toml::Value::String("500ms".into()));
        let (_, v) = parse_override("mempool.size=10").unwrap();
        assert_eq!(v, toml::Value::Integer(10));
        assert!(parse_override("nothing").is_err());
        let mut doc = toml::Table::new();
        set_key(&mut doc, "a.b.c", toml::Value::Boolean(true)).unwrap();
        assert_eq!(doc["a"]["b"]["c"], toml::Value::Boolean(true));
    }

    #[test]
    fn cometbft_serves_prometheus_on_the_devnet_port() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("config")).unwrap();
        let path = home.path().join("config").join("config.toml");
        std::fs::write(&path, "[instrumentation]\nprometheus = false\n").unwrap();
        let opts = DevnetOptions::default()
            .with_ports(Ports::take(&mut vec![7, 6, 5, 4, 3, 2, 1]).unwrap());
        write_config(home.path(), &opts).unwrap();
        let doc: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        let instrumentation = &doc["instrumentation"];
        assert_eq!(instrumentation["prometheus"], toml::Value::Boolean(true));
        assert_eq!(
            instrumentation["prometheus_listen_addr"],
            toml::Value::String("127.0.0.1:7".into())
        );
    }

    #[test]
    fn cometbft_reaches_abcid_on_a_unix_socket_unless_told_tcp() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("config")).unwrap();
        let path = home.path().join("config").join("config.toml");
        let proxy_app = |opts: &DevnetOptions| {
            std::fs::write(&path, "").unwrap();
            write_config(home.path(), opts)?;
            let doc: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
            anyhow::Ok(doc["proxy_app"].as_str().unwrap().to_string())
        };
        let opts = DevnetOptions {
            dir: home.path().join("net"),
            ..DevnetOptions::default()
        }
        .with_ports(Ports::take(&mut vec![7, 6, 5, 4, 3, 2, 1]).unwrap());
        let socket = home.path().join("net").join("abcid").join("abci.sock");
        assert_eq!(
            proxy_app(&opts).unwrap(),
            format!("unix://{}", socket.display())
        );
        let tcp = DevnetOptions {
            abci_tcp: true,
            ..opts.clone()
        };
        assert_eq!(proxy_app(&tcp).unwrap(), "tcp://127.0.0.1:3");
        let deep = DevnetOptions {
            dir: home.path().join("d".repeat(120)),
            ..opts
        };
        let err = proxy_app(&deep).unwrap_err().to_string();
        assert!(
            err.contains("--abci-tcp") && err.contains("longer"),
            "{err}"
        );
    }

    /// What `cometbft init` (v0.38) writes, trimmed.
    const COMETBFT_GENESIS: &str = r#"{
      "chain_id": "test-chain-9sUxDi",
      "initial_height": "0",
      "consensus_params": {
        "block": { "max_bytes": "22020096", "max_gas": "-1" },
        "evidence": { "max_age_num_blocks": "100000", "max_bytes": "1048576" }
      },
      "validators": [],
      "app_hash": ""
    }"#;

    fn written_genesis(opts: &DevnetOptions) -> Result<serde_json::Value> {
        let home = tempfile::tempdir()?;
        std::fs::create_dir(home.path().join("config"))?;
        let path = home.path().join("config").join("genesis.json");
        std::fs::write(&path, COMETBFT_GENESIS)?;
        write_genesis(home.path(), opts, Address::repeat_byte(0x11))?;
        Ok(serde_json::from_str(&std::fs::read_to_string(&path)?)?)
    }

    #[test]
    fn genesis_carries_the_block_gas_limit_to_cometbft_and_abcid() {
        let genesis = written_genesis(&DevnetOptions::default()).unwrap();
        let block = &genesis["consensus_params"]["block"];
        assert_eq!(block["max_gas"], json!("150000000"));
        assert_eq!(block["max_bytes"], json!("22020096"), "kept");
        assert_eq!(genesis["app_state"]["block_gas_limit"], json!(150_000_000));
        assert_eq!(genesis["app_state"]["chain_id"], json!(9000));
        assert_eq!(genesis["chain_id"], json!("feth-devnet-9000"));
        assert_eq!(
            genesis["consensus_params"]["evidence"]["max_bytes"],
            json!("1048576"),
            "the other parameters are kept"
        );

        let opts = DevnetOptions {
            block_gas_limit: 30_000_000,
            ..DevnetOptions::default()
        };
        let genesis = written_genesis(&opts).unwrap();
        assert_eq!(
            genesis["consensus_params"]["block"]["max_gas"],
            json!("30000000")
        );
        assert_eq!(genesis["app_state"]["block_gas_limit"], json!(30_000_000));
    }
}
