//! Before reading: the inputs checked, the RPC asked, the chain id found,
//! and each log file given its node name.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::config::IngestConfig;
use super::error::IngestError;
use super::reader::Job;
use crate::parse::{Event, Line, Parser};
use crate::source::{self, Sink, SourceError};
use feth_comet::rpc::Rpc;

/// How far into each log to look for the chain id when none is given.
const CHAIN_ID_SCAN: u64 = 64 << 20;

/// What a run needs before it reads.
pub(super) struct Setup {
    /// Redis URL.
    pub(super) redis_url: String,
    /// Logs in reading order: abcid's first, so their valid/invalid counts
    /// are known when the node logs' batches decide what to ask the RPC for.
    pub(super) paths: Vec<PathBuf>,
    /// The node's RPC, if given.
    pub(super) rpc: Option<Rpc>,
    /// The chain id written.
    pub(super) chain: String,
    /// Where it came from.
    pub(super) chain_id_from: &'static str,
}

/// Checks the configuration, asks the RPC (if any) and finds the chain id.
pub(super) async fn prepare(cfg: &IngestConfig) -> Result<Setup, IngestError> {
    if cfg.tendermint.is_empty() && cfg.abcid.is_empty() {
        return Err(IngestError::NoLogs);
    }
    let redis_url = cfg.redis.clone().ok_or(IngestError::NoRedis)?;
    let paths: Vec<PathBuf> = cfg.abcid.iter().chain(&cfg.tendermint).cloned().collect();
    if let Some(p) = paths.iter().find(|p| !p.is_file()) {
        return Err(IngestError::NotAFile(p.clone()));
    }
    if let Some(n) = &cfg.node {
        check_name("node name", n)?;
    }
    let rpc = match &cfg.comet_rpc {
        Some(url) => Some(Rpc::new(url, cfg.rpc_batch, cfg.rpc_concurrency)?),
        None => None,
    };
    let (chain, chain_id_from) = resolve_chain(cfg, rpc.as_ref()).await?;
    check_name("chain id", &chain)?;
    Ok(Setup {
        redis_url,
        paths,
        rpc,
        chain,
        chain_id_from,
    })
}

impl Setup {
    /// One job per log: its path and the node name of its unprefixed lines.
    pub(super) fn jobs(&self, node: Option<&str>) -> Vec<Job> {
        self.paths
            .iter()
            .map(|p| Job {
                path: p.clone(),
                node: Arc::from(node.map_or_else(|| node_name_from_path(p), str::to_string)),
            })
            .collect()
    }
}

/// The chain id: `--chain-id`, checked against the RPC; else the RPC's;
/// else the node logs' `Started node` lines.
async fn resolve_chain(
    cfg: &IngestConfig,
    rpc: Option<&Rpc>,
) -> Result<(String, &'static str), IngestError> {
    let status = match rpc {
        Some(r) => Some(r.status().await?),
        None => None,
    };
    match (&cfg.chain_id, &status) {
        (Some(c), Some(s)) if *c != s.network => Err(IngestError::ChainMismatch(format!(
            "--chain-id is {c:?} but the node at --comet-rpc {} serves chain {:?}",
            cfg.comet_rpc.as_deref().unwrap_or_default(),
            s.network
        ))),
        (Some(c), _) => Ok((c.clone(), "--chain-id")),
        (None, Some(s)) => Ok((s.network.clone(), "RPC /status")),
        (None, None) => Ok((
            chain_from_logs(&cfg.tendermint)?,
            "the logs' `Started node` line",
        )),
    }
}

/// The one chain id the logs' `Started node` lines name.
fn chain_from_logs(logs: &[PathBuf]) -> Result<String, IngestError> {
    let mut found: Option<(String, &PathBuf)> = None;
    for p in logs {
        let Some(id) = scan_chain_id(p)? else {
            continue;
        };
        match &found {
            Some((other, op)) if *other != id => {
                return Err(IngestError::ChainMismatch(format!(
                    "the logs are from different chains: {other:?} ({}) and {id:?} ({}); ingest them separately with --chain-id",
                    op.display(),
                    p.display()
                )))
            }
            Some(_) => {}
            None => found = Some((id, p)),
        }
    }
    Ok(found.ok_or(IngestError::NoChainId)?.0)
}

/// The node name a log file gives its lines: the file name without `.gz`,
/// a rotation suffix after the extension (`.1`, `-20261121`), the extension
/// (`.log`, `.json`, `.txt`, `.out`) and a date before it (`-20261121`).
pub fn node_name_from_path(path: &Path) -> String {
    const EXTS: [&str; 4] = [".log", ".json", ".txt", ".out"];
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    if let Some(s) = name.strip_suffix(".gz") {
        name = s.to_string();
    }
    if let Some(p) = name.rfind(['.', '-']) {
        if digits(&name[p + 1..]) && EXTS.iter().any(|e| name[..p].ends_with(e)) {
            name.truncate(p);
        }
    }
    while let Some(e) = EXTS
        .iter()
        .find(|e| name.len() > e.len() && name.ends_with(*e))
    {
        name.truncate(name.len() - e.len());
    }
    if let Some(p) = name.rfind(['-', '_']) {
        if p > 0 && name.len() - p > 6 && digits(&name[p + 1..]) {
            name.truncate(p);
        }
    }
    if name.is_empty() {
        "node".to_string()
    } else {
        name
    }
}

fn check_name(what: &'static str, value: &str) -> Result<(), IngestError> {
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        return Err(IngestError::BadName {
            what,
            value: value.to_string(),
        });
    }
    Ok(())
}

/// Looks for the chain id in the first 64 MiB of a log.
fn scan_chain_id(path: &Path) -> Result<Option<String>, SourceError> {
    struct Scan {
        parser: Parser,
        found: Option<String>,
        stop: Arc<AtomicBool>,
        read: Arc<AtomicU64>,
    }
    impl Sink for Scan {
        fn line(&mut self, line: &[u8]) {
            if self.found.is_some() {
                return;
            }
            if let Line::Event(r) = self.parser.parse(line) {
                if let Event::Network(n) = r.event {
                    self.found = Some(n.to_string());
                    self.stop.store(true, Ordering::Relaxed);
                }
            }
            if self.read.load(Ordering::Relaxed) > CHAIN_ID_SCAN {
                self.stop.store(true, Ordering::Relaxed);
            }
        }
    }
    let read = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut scan = Scan {
        parser: Parser::new(),
        found: None,
        stop: stop.clone(),
        read: read.clone(),
    };
    source::read_all(path, read, &stop, &mut scan)?;
    Ok(scan.found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_from_file_names() {
        for (file, node) in [
            ("/var/log/node0.log", "node0"),
            ("node0.log.1", "node0"),
            ("node0.log.3.gz", "node0"),
            ("validator-2.log-20261121.gz", "validator-2"),
            ("cometbft-20261121.log", "cometbft"),
            ("cometbft-v0.37.18.json.log", "cometbft-v0.37.18"),
            ("val.json", "val"),
            ("node", "node"),
            (".log", ".log"),
        ] {
            assert_eq!(node_name_from_path(Path::new(file)), node, "{file}");
        }
    }
}
