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
/// No lines at all (a window in which the process used no CPU: an idle Go
/// node's profile has no samples) is drawn as a page that says so, where
/// inferno would refuse it.
pub(crate) fn svg_from_lines<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    options: &mut flamegraph::Options<'_>,
) -> Result<Vec<u8>, ProfilerError> {
    let lines: Vec<&str> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return Ok(no_samples_svg(options));
    }
    let mut svg = Vec::new();
    flamegraph::from_lines(options, lines, &mut svg).map_err(|e| ProfilerError::Render {
        what: "SVG flamegraph".into(),
        reason: e.to_string(),
    })?;
    Ok(svg)
}

/// A flamegraph page without frames: the title, the subtitle, and that no
/// sample was taken.
fn no_samples_svg(options: &flamegraph::Options<'_>) -> Vec<u8> {
    let mut rows = vec![escape(&options.title)];
    rows.extend(options.subtitle.as_deref().map(escape));
    rows.push(
        "no samples: the process used no CPU while it was profiled, so there is nothing to draw"
            .into(),
    );
    let text: String = rows
        .iter()
        .enumerate()
        .map(|(i, row)| format!("<text x=\"600\" y=\"{}\">{row}</text>", 24 + 24 * i))
        .collect();
    format!(
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"1200\" \
         height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\"><g text-anchor=\"middle\" \
         font-family=\"Verdana\" font-size=\"14\">{text}</g></svg>\n",
        24 * rows.len() + 24
    )
    .into_bytes()
}

/// Text made safe inside an XML element.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_without_samples_is_a_page_that_says_so_not_an_error() {
        let title = "cometbft <idle> & quiet".to_string();
        let svg = flamegraph_svg(["", "  "], title, Some("1 s".into())).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with("<?xml"), "{svg}");
        assert!(
            svg.contains(">cometbft &lt;idle&gt; &amp; quiet</text>"),
            "{svg}"
        );
        assert!(
            svg.contains(">1 s</text>") && svg.contains("no samples"),
            "{svg}"
        );
        let drawn = flamegraph_svg(["main;f 3"], "t".into(), None).unwrap();
        let drawn = String::from_utf8(drawn).unwrap();
        assert!(drawn.contains("main") && !drawn.contains("no samples"));
    }
}
