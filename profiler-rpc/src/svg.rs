//! SVG flamegraphs drawn by inferno, in memory: the node's per-block flamegraphs and the
//! client's merged and differential ones. inferno's errors are returned, never unwrapped.

use inferno::flamegraph;

use crate::error::ProfilerError;

/// Draws folded lines (`stack count`) as a flamegraph of samples under `title`.
pub(crate) fn flamegraph_svg<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    title: String,
    subtitle: Option<String>,
) -> Result<Vec<u8>, ProfilerError> {
    let mut options = flamegraph::Options::default();
    options.title = title;
    options.subtitle = subtitle;
    options.count_name = "samples".into();
    svg_from_lines(lines, &mut options)
}

/// Runs inferno on folded lines (one or two counts per line) into a buffer.
pub(crate) fn svg_from_lines<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    options: &mut flamegraph::Options<'_>,
) -> Result<Vec<u8>, ProfilerError> {
    let mut svg = Vec::new();
    flamegraph::from_lines(options, lines, &mut svg).map_err(|e| ProfilerError::Render {
        what: "SVG flamegraph".into(),
        reason: e.to_string(),
    })?;
    Ok(svg)
}
