//! `feth report`: the pictures of a run. One self-contained HTML page (inline
//! SVG charts drawn by plotters, flamegraphs embedded, no external scripts,
//! fonts or styles) and a Markdown summary beside it.
//!
//! - [`input`]: reading run, comparison and etl files, with clear errors.
//! - [`chart`]: the SVG charts; [`windows`]: the per-window table.
//! - [`load_view`], [`compare_view`], [`saturate_view`]: the page's
//!   sections; [`html`]: its building blocks; [`markdown`]: the summary.

pub mod chart;
pub mod compare_view;
pub mod html;
pub mod input;
pub mod load_view;
pub mod markdown;
pub mod saturate_view;
pub mod windows;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use self::input::RunFile;

/// What to report on and where.
#[derive(Debug, Clone, Default)]
pub struct ReportConfig {
    /// `feth load --json`, `feth compare --json` and `feth saturate --json` files.
    pub inputs: Vec<PathBuf>,
    /// Folder the page and summary are written to (created if needed).
    pub out: PathBuf,
    /// Flamegraphs captured during the run: (role, SVG file).
    pub flamegraphs: Vec<(String, PathBuf)>,
    /// `feth etl stats --json --per-block` figures of the same chain.
    pub etl: Option<PathBuf>,
}

/// The files written.
#[derive(Debug, Clone)]
pub struct Written {
    /// The HTML page.
    pub html: PathBuf,
    /// The Markdown summary.
    pub markdown: PathBuf,
}

/// Page and summary file names inside the output folder.
pub const PAGE: &str = "report.html";
/// The summary's file name.
pub const SUMMARY: &str = "summary.md";

/// Reads the inputs, draws the page and writes both files.
pub fn write(cfg: &ReportConfig) -> Result<Written> {
    if cfg.inputs.is_empty() {
        bail!("give at least one run file (feth load --json > RUN.json)");
    }
    let files = cfg
        .inputs
        .iter()
        .map(|p| input::read(p))
        .collect::<Result<Vec<_>>>()?;
    let etl = cfg.etl.as_deref().map(input::read_etl).transpose()?;
    let body = body(&files, etl.as_deref(), &cfg.flamegraphs)?;
    std::fs::create_dir_all(&cfg.out)
        .with_context(|| format!("cannot create {}", cfg.out.display()))?;
    let written = Written {
        html: cfg.out.join(PAGE),
        markdown: cfg.out.join(SUMMARY),
    };
    std::fs::write(&written.html, html::page("feth report", &body))
        .with_context(|| format!("cannot write {}", written.html.display()))?;
    std::fs::write(&written.markdown, markdown::summary(&files, PAGE))
        .with_context(|| format!("cannot write {}", written.markdown.display()))?;
    Ok(written)
}

fn name(path: &Path) -> String {
    path.display().to_string()
}

fn body(
    files: &[RunFile],
    etl: Option<&[input::EtlBlock]>,
    flames: &[(String, PathBuf)],
) -> Result<String> {
    let mut out = String::new();
    let loads: Vec<(String, &crate::load::LoadReport)> = files
        .iter()
        .filter_map(|f| match f {
            RunFile::Load { path, report } => Some((name(path), report.as_ref())),
            _ => None,
        })
        .collect();
    if loads.len() > 1 {
        out.push_str(&load_view::overlay(&loads)?);
    }
    for (i, (n, r)) in loads.iter().enumerate() {
        out.push_str(&load_view::section(i, n, r, etl)?);
    }
    let compares = files.iter().filter_map(|f| match f {
        RunFile::Compare { path, report } => Some((path, report)),
        _ => None,
    });
    for (i, (path, c)) in compares.enumerate() {
        out.push_str(&compare_view::section(i, path, c)?);
    }
    let searches = files.iter().filter_map(|f| match f {
        RunFile::Saturate { path, report } => Some((path, report)),
        _ => None,
    });
    for (i, (path, r)) in searches.enumerate() {
        out.push_str(&saturate_view::section(i, path, r)?);
    }
    if !flames.is_empty() {
        out.push_str("<section id=\"flamegraphs\"><h2>Flamegraphs captured during the run</h2>\n");
        for (role, path) in flames {
            out.push_str(&html::flamegraph(role, path));
        }
        out.push_str("</section>\n");
    }
    Ok(out)
}
