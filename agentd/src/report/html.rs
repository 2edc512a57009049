//! HTML building blocks: escaping, tables, a chart's figure, an embedded
//! flamegraph, and the page around them (inline style, no external files).

use std::path::Path;

use base64::Engine as _;

use super::chart::Chart;

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A table with a header row; cells are escaped.
pub fn table(class: &str, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("<table class=\"{}\"><thead><tr>", escape(class));
    for h in header {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// Two-column key/value table.
pub fn pairs(rows: &[(&str, String)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(k, v)| vec![k.to_string(), v.clone()])
        .collect();
    table("pairs", &["", ""], &rows)
}

/// A chart inside a `<figure>` whose attributes say how to read it back:
/// `data-chart` (its name), `data-x`/`data-y` (axis ranges), `data-px`
/// (plotting area: left, right, top, bottom) and `data-series` (JSON list of
/// [name, colour]).
pub fn figure(id: &str, chart: &Chart, caption: &str) -> String {
    let series = serde_json::to_string(&chart.legend).unwrap_or_else(|_| "[]".into());
    let (l, r, t, b) = chart.pixels;
    format!(
        "<figure class=\"chart\" id=\"{id}\" data-chart=\"{id}\" data-x=\"{},{}\" data-y=\"{},{}\" data-px=\"{l},{r},{t},{b}\" data-series=\"{}\">{}<figcaption>{}</figcaption></figure>\n",
        chart.x.0,
        chart.x.1,
        chart.y.0,
        chart.y.1,
        escape(&series),
        chart.svg,
        escape(caption),
        id = escape(id),
    )
}

/// A note in place of something a file does not hold.
pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", escape(text))
}

/// An interactive flamegraph SVG (inferno's, with its own script) in an
/// iframe of its own, so its script and ids stay apart from the page's and
/// its frames stay clickable; `None` when the file cannot be read.
pub fn flamegraph(title: &str, path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => format!(
            "<div class=\"flame\"><h4>{}</h4><iframe class=\"flamegraph\" title=\"{}\" src=\"data:image/svg+xml;base64,{}\"></iframe><p class=\"note\">{} (click a frame to zoom, Ctrl-F to search)</p></div>\n",
            escape(title),
            escape(title),
            base64::engine::general_purpose::STANDARD.encode(bytes),
            escape(&path.display().to_string()),
        ),
        Err(e) => note(&format!(
            "{title}: cannot read {}: {e}",
            path.display()
        )),
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:960px;color:#222}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;margin-top:2em}\
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}\
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}\
td:first-child,th:first-child{text-align:left}\
table.pairs thead{display:none}\
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}\
.note{color:#666;font-style:italic}\
iframe.flamegraph{width:100%;height:520px;border:1px solid #ccc}";

/// The whole page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head>\n<body><h1>{t}</h1>\n{body}</body></html>\n",
        t = escape(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_a_missing_flamegraph_is_a_note() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let t = table("t", &["a<b"], &[vec!["1&2".into()]]);
        assert!(
            t.contains("<th>a&lt;b</th>") && t.contains("<td>1&amp;2</td>"),
            "{t}"
        );
        let f = flamegraph("abcid", Path::new("/nonexistent/f.svg"));
        assert!(f.contains("cannot read /nonexistent/f.svg"), "{f}");
    }
}
