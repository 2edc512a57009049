//! The recipe file's shape: what a TOML recipe may say, typed. Unknown keys
//! are refused, so a misspelt key is named when the recipe is read, never
//! silently ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A chain recipe as written in its TOML file (placeholders unexpanded).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Short name (`evmd`, `kvstore`), used in folder and report names.
    pub name: String,
    /// One line on what the chain is.
    #[serde(default)]
    pub about: String,
    /// What feth's load sends to it.
    pub load: LoadKind,
    /// The chain's node binary.
    #[serde(default)]
    pub binary: BinarySpec,
    /// Named values with their defaults (`timeout_commit = "1s"`), usable as
    /// `${name}` and set per devnet (`--var NAME=VALUE`).
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// Ports feth picks free for each devnet, usable as `${NAME_port}`.
    #[serde(default)]
    pub ports: Vec<String>,
    /// Commands that make a new chain's home, run in order.
    #[serde(default)]
    pub init: Vec<CommandSpec>,
    /// The files the edits apply to, relative to `${home}`.
    #[serde(default)]
    pub files: Files,
    /// Edits of the genesis file, after init.
    #[serde(default)]
    pub genesis: Vec<JsonEdit>,
    /// Dotted `config.toml` keys and their values, after init.
    #[serde(default)]
    pub comet: BTreeMap<String, toml::Value>,
    /// Dotted keys of the app's own config file (`app.toml`) and their values.
    #[serde(default)]
    pub app: BTreeMap<String, toml::Value>,
    /// Commands run after the edits, before the node starts (`collect-gentxs`).
    #[serde(default)]
    pub finish: Vec<CommandSpec>,
    /// The funded account feth's load is paid from.
    #[serde(default)]
    pub root_key: Option<RootKeySpec>,
    /// The processes of a running node, started in order, stopped in reverse.
    pub process: Vec<ProcessSpec>,
    /// Where the node answers.
    pub endpoints: Endpoints,
    /// Where its logs are and what they look like.
    #[serde(default)]
    pub logs: Option<LogsSpec>,
    /// How long the node may take to answer and commit a block after start.
    #[serde(default = "default_ready_secs")]
    pub ready_secs: u64,
}

fn default_ready_secs() -> u64 {
    60
}

/// What a chain takes as load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadKind {
    /// Signed Ethereum transactions through web3 (`endpoints.web3` and a
    /// `root_key` are required).
    Evm,
    /// `key=value` transactions through CometBFT's `broadcast_tx_*`.
    Kvstore,
}

/// The node binary: `--binary PATH`, else `default`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BinarySpec {
    /// The binary when none is given: a path, or `${cometbft}` (the pinned
    /// CometBFT) or `${abcid}` (this workspace's abcid).
    #[serde(default)]
    pub default: Option<String>,
    /// Arguments that make it print its version (`["version"]`).
    #[serde(default)]
    pub version: Vec<String>,
}

/// One command: the program (default `${binary}`) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// The program; `${binary}` when absent.
    #[serde(default)]
    pub program: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Text written to its standard input (a mnemonic to `--recover`).
    #[serde(default)]
    pub stdin: Option<String>,
    /// Its output may hold a secret (a mnemonic, a key): never shown, even
    /// when it fails.
    #[serde(default)]
    pub secret: bool,
}

/// The config files, relative to `${home}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Files {
    /// The genesis file.
    #[serde(default = "default_genesis")]
    pub genesis: String,
    /// CometBFT's `config.toml`.
    #[serde(default = "default_comet")]
    pub comet: String,
    /// The app's own TOML config, when it has one (`config/app.toml`).
    #[serde(default)]
    pub app: Option<String>,
}

impl Default for Files {
    fn default() -> Self {
        Self {
            genesis: default_genesis(),
            comet: default_comet(),
            app: None,
        }
    }
}

fn default_genesis() -> String {
    "config/genesis.json".into()
}

fn default_comet() -> String {
    "config/config.toml".into()
}

/// One genesis edit: the value at a JSON pointer (RFC 6901) set. The
/// pointer's parent must exist; the key itself may be new.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JsonEdit {
    /// Where (`/consensus/params/block/max_gas`).
    pub pointer: String,
    /// A TOML value, converted to JSON (strings expanded).
    #[serde(default)]
    pub value: Option<toml::Value>,
    /// JSON text, expanded then parsed (`"${block_gas}"` as a number).
    #[serde(default)]
    pub json: Option<String>,
}

/// How the root account's key comes to be.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RootKeySpec {
    /// feth makes a new key before init; `${root_address}` is its address.
    #[serde(default)]
    pub generate: bool,
    /// A command (after `finish`) that prints the key as hex on its last
    /// line (`evmd keys unsafe-export-eth-key …`); never logged.
    #[serde(default)]
    pub export: Option<CommandSpec>,
}

/// One process of a running node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// Its name, and its log's (`logs/NAME.log`).
    pub name: String,
    /// The program; `${binary}` when absent.
    #[serde(default)]
    pub program: Option<String>,
    /// Its arguments: each a string, or a group taken only as a switch var
    /// says (`{ when = "profiler", args = [...] }`).
    pub args: Vec<ArgSpec>,
    /// An address it listens on before the next process may start:
    /// `127.0.0.1:PORT` or `unix:///path`.
    #[serde(default)]
    pub listens: Option<String>,
}

/// One entry of a process's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ArgSpec {
    /// One argument.
    One(String),
    /// Arguments given only when a switch var is `true` (`when`) or
    /// `false` (`unless`).
    Switched(SwitchedArgs),
}

/// A string is one argument; a table is a group, read as [`SwitchedArgs`]
/// so that a misspelt key in it is named.
impl<'de> Deserialize<'de> for ArgSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ArgSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an argument (a string) or a group { when|unless = VAR, args = [...] }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ArgSpec, E> {
                Ok(ArgSpec::One(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ArgSpec, A::Error> {
                let group = serde::de::value::MapAccessDeserializer::new(map);
                SwitchedArgs::deserialize(group).map(ArgSpec::Switched)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Arguments a switch var turns on or off: exactly one of `when` and
/// `unless` names a var whose value is `true` or `false`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchedArgs {
    /// Given when this var is `true`.
    #[serde(default)]
    pub when: Option<String>,
    /// Given when this var is `false`.
    #[serde(default)]
    pub unless: Option<String>,
    /// The arguments.
    pub args: Vec<String>,
}

/// Where a running node answers (placeholders allowed).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoints {
    /// CometBFT's RPC.
    pub comet_rpc: String,
    /// The Ethereum JSON-RPC (web3).
    #[serde(default)]
    pub web3: Option<String>,
    /// Go pprof (`/debug/pprof/…` under it).
    #[serde(default)]
    pub pprof: Option<String>,
    /// An embedded `profiler-rpc` server.
    #[serde(default)]
    pub profiler: Option<String>,
    /// CometBFT's Prometheus metrics (`…/metrics`).
    #[serde(default)]
    pub comet_metrics: Option<String>,
    /// The app's own Prometheus metrics (`…/metrics`).
    #[serde(default)]
    pub metrics: Option<String>,
    /// Endpoints (`pprof`, `profiler`) a node has only while a switch var
    /// is `true`: `profiler = "profiler"` names the var.
    #[serde(default)]
    pub when: BTreeMap<String, String>,
}

/// The node's log for the etl.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogsSpec {
    /// The process whose log holds CometBFT's lines.
    pub process: String,
    /// Its format, as `feth etl --format` names it, or a var holding it
    /// (`${log_format}`).
    pub format: String,
}
