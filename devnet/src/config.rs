//! Writing a devnet's CometBFT configuration and genesis.

use std::path::{Path, PathBuf};

use alloy_primitives::{Address, U256};
use anyhow::{bail, Context, Result};
use serde_json::json;

use super::DevnetOptions;

/// Sets one dotted key (`consensus.timeout_commit`) in a TOML table.
pub(crate) fn set_key(doc: &mut toml::Table, dotted: &str, value: toml::Value) -> Result<()> {
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

/// The value of the dotted key `dotted` (`mempool.size`) in `doc`.
pub(crate) fn get_key<'a>(doc: &'a toml::Table, dotted: &str) -> Option<&'a toml::Value> {
    let mut parts = dotted.split('.');
    let mut value = parts.next().and_then(|first| doc.get(first));
    for part in parts {
        value = value
            .and_then(toml::Value::as_table)
            .and_then(|t| t.get(part));
    }
    value
}

/// The path of `config.toml` in the CometBFT home `home`, and its contents.
fn read_config(home: &Path) -> Result<(PathBuf, toml::Table)> {
    let path = home.join("config").join("config.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let doc = text
        .parse()
        .with_context(|| format!("cannot parse {}", path.display()))?;
    Ok((path, doc))
}

/// `KEY=VALUE` for each of `keys` as the `config.toml` in `home` holds it
/// (the value in TOML, as `--set` takes it); an error names a key it lacks.
pub fn read_settings(home: &Path, keys: &[&str]) -> Result<Vec<String>> {
    let (path, doc) = read_config(home)?;
    keys.iter()
        .map(|key| match get_key(&doc, key) {
            Some(value) => Ok(format!("{key}={value}")),
            None => bail!("{} has no key `{key}`", path.display()),
        })
        .collect()
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

/// A count given by `flag` as a TOML integer; refused above `i64::MAX`,
/// where TOML's integers (and CometBFT's) end.
pub fn toml_integer(flag: &str, v: u64) -> Result<toml::Value> {
    i64::try_from(v)
        .map(toml::Value::Integer)
        .with_context(|| format!("{flag} {v}: TOML holds integers up to {}", i64::MAX))
}

/// CometBFT's `mempool.cache_size` for a mempool of `size` transactions:
/// twice the size, at least 20,000, at most what TOML holds.
pub fn mempool_cache_size(size: u64) -> u64 {
    size.max(10_000)
        .saturating_mul(2)
        .min(i64::MAX.unsigned_abs())
}

/// Rewrites `config.toml` with the devnet's ports and tuning.
pub fn write_config(home: &Path, opts: &DevnetOptions) -> Result<()> {
    let (path, mut doc) = read_config(home)?;
    let s = |v: String| toml::Value::String(v);
    let i = toml_integer;
    let cache = mempool_cache_size(opts.mempool_size);
    let settings = [
        ("moniker", s("feth-devnet".into())),
        ("proxy_app", s(opts.abci_addr()?)),
        ("log_format", s(opts.log_format.as_str().into())),
        ("rpc.laddr", s(format!("tcp://127.0.0.1:{}", opts.rpc_port))),
        (
            "rpc.max_body_bytes",
            i("--rpc-max-body-bytes", opts.rpc_max_body_bytes)?,
        ),
        (
            "rpc.max_open_connections",
            i("--rpc-max-open-connections", opts.rpc_max_open_connections)?,
        ),
        ("rpc.timeout_broadcast_tx_commit", s("30s".into())),
        ("p2p.laddr", s(format!("tcp://127.0.0.1:{}", opts.p2p_port))),
        ("p2p.pex", toml::Value::Boolean(false)),
        ("p2p.addr_book_strict", toml::Value::Boolean(false)),
        ("mempool.size", i("--mempool-size", opts.mempool_size)?),
        (
            "mempool.max_txs_bytes",
            i("--mempool-max-txs-bytes", opts.mempool_max_txs_bytes)?,
        ),
        ("mempool.cache_size", i("--mempool-size", cache)?),
        (
            "consensus.timeout_commit",
            s(opts.timeout_commit.to_string()),
        ),
        ("tx_index.indexer", s("null".into())),
        ("instrumentation.prometheus", toml::Value::Boolean(true)),
        (
            "instrumentation.prometheus_listen_addr",
            s(format!("127.0.0.1:{}", opts.cometbft_metrics_port)),
        ),
        // Go's pprof, for `feth profiler cometbft`: loopback only.
        (
            "rpc.pprof_laddr",
            s(match opts.cometbft_pprof_port {
                0 => String::new(),
                port => format!("127.0.0.1:{port}"),
            }),
        ),
    ];
    for (key, value) in settings {
        set_key(&mut doc, key, value)?;
    }
    // Both ways: a devnet started again with other patches keeps its
    // config.toml, and abcid without its pool needs CometBFT's mempool.
    let mempool = if opts.app_mempool() { "nop" } else { "flood" };
    set_key(&mut doc, "mempool.type", s(mempool.into()))?;
    for text in &opts.set {
        let (key, value) = parse_override(text)?;
        // `cometbft init` writes every key CometBFT reads: one missing is a
        // typo, which CometBFT would silently ignore.
        if get_key(&doc, &key).is_none() {
            bail!(
                "--set {text}: CometBFT's config.toml has no key `{key}`; \
                 check its spelling against {} (sections and keys use underscores)",
                path.display()
            );
        }
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
pub(crate) fn write_genesis(home: &Path, opts: &DevnetOptions, root: Address) -> Result<()> {
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
    use crate::Ports;

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
    fn a_set_key_cometbft_does_not_have_is_refused_and_nothing_is_written() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("config")).unwrap();
        let path = home.path().join("config").join("config.toml");
        let written = "[mempool]\nsize = 5000\nrecheck = true\n";
        std::fs::write(&path, written).unwrap();
        let ports = Ports::take(&mut vec![8, 7, 6, 5, 4, 3, 2, 1]).unwrap();
        let with = |set: &[&str]| DevnetOptions {
            set: set.iter().map(|s| s.to_string()).collect(),
            ..DevnetOptions::default().with_ports(ports)
        };
        let err = write_config(home.path(), &with(&["mempool.sise=8000"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no key `mempool.sise`"), "{err}");
        assert!(err.contains("check its spelling"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
        write_config(home.path(), &with(&["mempool.recheck=false"])).unwrap();
        let read = read_settings(home.path(), &["mempool.recheck", "mempool.size"]).unwrap();
        assert_eq!(read, ["mempool.recheck=false", "mempool.size=10000"]);
        let huge = DevnetOptions {
            mempool_size: u64::MAX,
            ..with(&[])
        };
        let err = write_config(home.path(), &huge).unwrap_err().to_string();
        assert!(
            err.contains("--mempool-size 18446744073709551615: TOML holds integers up to"),
            "{err}"
        );
        let big = DevnetOptions {
            mempool_size: i64::MAX.unsigned_abs(),
            ..with(&[])
        };
        write_config(home.path(), &big).unwrap();
        let read = read_settings(home.path(), &["mempool.cache_size"]).unwrap();
        assert_eq!(read, [format!("mempool.cache_size={}", i64::MAX)]);
        let err = read_settings(home.path(), &["mempool.sise"]).unwrap_err();
        assert!(err.to_string().contains("no key `mempool.sise`"), "{err}");
    }

    #[test]
    fn app_mempool_turns_cometbfts_mempool_off_unless_set_says_otherwise() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("config")).unwrap();
        let path = home.path().join("config").join("config.toml");
        let with_build = |patches: &str, set: &[&str], all_pools: bool| {
            // What an earlier start with the pool left (a devnet started
            // again keeps its config.toml).
            std::fs::write(&path, "[mempool]\ntype = \"nop\"\n").unwrap();
            let opts = DevnetOptions {
                patches: patches.to_string(),
                set: set.iter().map(|s| s.to_string()).collect(),
                all_pools,
                ..DevnetOptions::default()
                    .with_ports(Ports::take(&mut vec![8, 7, 6, 5, 4, 3, 2, 1]).unwrap())
            };
            write_config(home.path(), &opts).unwrap();
            read_settings(home.path(), &["mempool.type"]).unwrap()[0].clone()
        };
        let mempool_type = |patches: &str, set: &[&str]| with_build(patches, set, true);
        assert_eq!(mempool_type("all", &[]), "mempool.type=\"nop\"");
        assert_eq!(
            mempool_type("all,-app-mempool", &[]),
            "mempool.type=\"flood\""
        );
        assert_eq!(mempool_type("rwlock", &[]), "mempool.type=\"flood\"");
        assert_eq!(mempool_type("all,app-mempool", &[]), "mempool.type=\"nop\"");
        // A build from before `all` held the pool.
        assert_eq!(with_build("all", &[], false), "mempool.type=\"flood\"");
        assert_eq!(
            with_build("all,app-mempool", &[], false),
            "mempool.type=\"nop\""
        );
        assert_eq!(
            mempool_type("all,app-mempool,-app-mempool", &[]),
            "mempool.type=\"flood\""
        );
        assert_eq!(
            mempool_type("app-mempool", &["mempool.type=flood"]),
            "mempool.type=\"flood\""
        );
    }

    #[test]
    fn a_misspelt_or_unmet_patch_set_is_refused_naming_it() {
        for (patches, names) in [
            ("all,-rw-lock", "unknown patch `rw-lock`"),
            ("optimistic-execution", "needs `parallel-abci`"),
            ("rwlock,rwlock", "written twice"),
        ] {
            let opts = DevnetOptions {
                patches: patches.to_string(),
                ..DevnetOptions::default()
            };
            let err = format!("{:#}", opts.patch_set().unwrap_err());
            assert!(err.contains(names) && err.contains(patches), "{err}");
            assert!(!opts.app_mempool());
        }
    }

    #[test]
    fn cometbft_serves_prometheus_on_the_devnet_port() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("config")).unwrap();
        let path = home.path().join("config").join("config.toml");
        std::fs::write(&path, "[instrumentation]\nprometheus = false\n").unwrap();
        let opts = DevnetOptions::default()
            .with_ports(Ports::take(&mut vec![8, 7, 6, 5, 4, 3, 2, 1]).unwrap());
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
    fn cometbft_reaches_abcid_on_a_unix_socket_unless_told_tcp_or_grpc() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join("config")).unwrap();
        let path = home.path().join("config").join("config.toml");
        let proxy_app = |opts: &DevnetOptions| {
            std::fs::write(&path, "abci = \"socket\"\n").unwrap();
            write_config(home.path(), opts)?;
            let doc: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
            anyhow::Ok(doc["proxy_app"].as_str().unwrap().to_string())
        };
        let opts = DevnetOptions {
            dir: home.path().join("net"),
            ..DevnetOptions::default()
        }
        .with_ports(Ports::take(&mut vec![8, 7, 6, 5, 4, 3, 2, 1]).unwrap());
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
        // gRPC's resolver takes HOST:PORT, without `tcp://`.
        let mut grpc = opts.clone();
        grpc.set = vec!["abci=grpc".to_string()];
        assert!(grpc.abci_grpc());
        assert_eq!(proxy_app(&grpc).unwrap(), "127.0.0.1:3");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.contains("abci = \"grpc\""), "{written}");
        // The last `--set abci=…` counts, as it does in the file.
        grpc.set.push("abci=socket".to_string());
        assert!(!grpc.abci_grpc());
        assert_eq!(
            proxy_app(&grpc).unwrap(),
            format!("unix://{}", socket.display())
        );
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
