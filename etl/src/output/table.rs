//! Cell formatting shared by the renderers: optional values, CSV quoting
//! and aligned text tables.

use std::fmt::Write as _;

use feth_comet::time::format_utc;

/// The value, or an empty cell.
pub(super) fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// Three decimals, or an empty cell.
pub(super) fn f3(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| format!("{v:.3}"))
}

/// UTC time of Unix nanoseconds, or an empty cell.
pub(super) fn time(ns: Option<i64>) -> String {
    ns.map_or_else(String::new, format_utc)
}

/// Quotes a CSV field when needed.
pub(super) fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Left-aligned columns separated by two spaces.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let s: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", s.join("  ").trim_end());
    };
    line(header.to_vec(), &mut out);
    for r in rows {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    out
}
