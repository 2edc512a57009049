//! `feth report`: an HTML page with the run's charts, flamegraphs and
//! parameters, and a Markdown summary beside it.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::report::{self, ReportConfig};

/// `feth report RUN.json [RUN2.json …] --out DIR`
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Files written by `feth load --json` or `feth compare --json`.
    #[arg(required = true, value_name = "RUN.json")]
    inputs: Vec<PathBuf>,
    /// Folder for report.html and summary.md (created if needed).
    #[arg(long, default_value = "feth-report")]
    out: PathBuf,
    /// A flamegraph captured during the run, as ROLE=FILE.svg (or FILE.svg,
    /// its name then being the role); repeatable.
    #[arg(long, value_name = "[ROLE=]FILE")]
    flamegraph: Vec<String>,
    /// Valid/invalid per block: `feth etl stats --json --per-block` output.
    #[arg(long, value_name = "FILE")]
    etl: Option<PathBuf>,
}

/// `ROLE=FILE` or `FILE` (the role then being the file's name).
fn role_and_path(text: &str) -> Result<(String, PathBuf)> {
    let (role, path) = match text.split_once('=') {
        Some((role, path)) => (role.to_string(), PathBuf::from(path)),
        None => {
            let path = PathBuf::from(text);
            let role = path
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
            (role, path)
        }
    };
    if role.is_empty() || path.as_os_str().is_empty() {
        bail!("--flamegraph {text}: expected ROLE=FILE.svg or FILE.svg");
    }
    Ok((role, path))
}

/// Runs `feth report`.
pub async fn run(args: ReportArgs) -> Result<()> {
    let cfg = ReportConfig {
        inputs: args.inputs,
        out: args.out,
        flamegraphs: args
            .flamegraph
            .iter()
            .map(|f| role_and_path(f))
            .collect::<Result<_>>()?,
        etl: args.etl,
    };
    let written = tokio::task::spawn_blocking(move || report::write(&cfg)).await??;
    println!("report: {}", written.html.display());
    println!("summary: {}", written.markdown.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::role_and_path;

    #[test]
    fn a_flamegraph_is_named_by_its_role_or_file() {
        let (r, p) = role_and_path("abcid=fg/a.svg").unwrap();
        assert_eq!((r.as_str(), p.to_str().unwrap()), ("abcid", "fg/a.svg"));
        assert_eq!(role_and_path("fg/cometbft.svg").unwrap().0, "cometbft");
        assert!(role_and_path("abcid=").is_err());
    }
}
