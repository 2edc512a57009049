//! `feth merge`: several agents' `feth load --out` reports combined, the
//! committed figures read once from the chain (see [`crate::load::merge`]).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use super::args::{emit, NetworkArgs};
use crate::load::merge::{self, Input, MergeConfig};
use crate::load::LoadReport;

/// `feth merge A.json B.json … [--network URL] [--comet-rpc URL]`
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Reports written by `feth load --out FILE` (or `--json`), one per agent.
    #[arg(required = true, value_name = "RUN.json")]
    inputs: Vec<PathBuf>,
    /// A web3 endpoint of the chain the agents loaded (the first is used).
    #[command(flatten)]
    network: NetworkArgs,
    /// CometBFT RPC for ns header times; default: the one the node names.
    #[arg(long, value_name = "URL")]
    comet_rpc: Option<String>,
    /// Committed TPS per window of N blocks over the merged span.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    window_blocks: Option<u64>,
    /// Print the merged report as JSON on stdout; the summary then goes to stderr.
    #[arg(long)]
    json: bool,
    /// Also write the merged JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

fn read(path: &PathBuf) -> Result<Input> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let report: LoadReport = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a `feth load --out` report", path.display()))?;
    Ok(Input {
        name: path.display().to_string(),
        report,
    })
}

/// Runs `feth merge`.
pub async fn run(args: MergeArgs) -> Result<()> {
    let inputs = args.inputs.iter().map(read).collect::<Result<Vec<_>>>()?;
    let cfg = MergeConfig {
        endpoint: args.network.first()?.to_string(),
        comet_rpc: args.comet_rpc.clone(),
        timeout: Duration::from_secs(10),
        window_blocks: args.window_blocks,
    };
    let merged = merge::run(&cfg, &inputs).await?;
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_string_pretty(&merged)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    emit(args.json, &merged, |out| merged.write_summary(out))
}
