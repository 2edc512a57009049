//! `${name}` placeholders in a recipe's strings (`$$` is a `$`).

use std::collections::BTreeMap;

use anyhow::{bail, Result};

/// The names a string refers to, in order; an error for a `$` that starts
/// no placeholder or a placeholder left open.
pub fn names(text: &str) -> Result<Vec<&str>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            bail!("`{text}`: a `$` starts no `${{name}}` (write `$$` for a dollar sign)");
        };
        let Some(end) = body.find('}') else {
            bail!("`{text}`: `${{` is not closed");
        };
        let name = &body[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!("`{text}`: `${{{name}}}` is not a name (letters, digits and `_`)");
        }
        out.push(name);
        rest = &body[end + 1..];
    }
    Ok(out)
}

/// `text` with every placeholder replaced by its value in `values`; an
/// error names one that has none.
pub fn expand(text: &str, values: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let name = names(&rest[at..])?.into_iter().next().unwrap_or_default();
        let Some(value) = values.get(name) else {
            bail!("`{text}`: no value for `${{{name}}}`");
        };
        out.push_str(value);
        rest = &after[name.len() + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> BTreeMap<String, String> {
        [("home", "/h"), ("rpc_port", "26657")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn placeholders_are_found_and_replaced() {
        let text = "tcp://127.0.0.1:${rpc_port}/${home}$$x";
        assert_eq!(names(text).unwrap(), ["rpc_port", "home"]);
        assert_eq!(
            expand(text, &values()).unwrap(),
            "tcp://127.0.0.1:26657//h$x"
        );
        assert_eq!(expand("plain", &values()).unwrap(), "plain");
        assert_eq!(expand("${home}", &values()).unwrap(), "/h");
    }

    #[test]
    fn malformed_or_unknown_placeholders_are_named() {
        let err = |t: &str| names(t).unwrap_err().to_string();
        assert!(err("a $b").contains("write `$$`"), "{}", err("a $b"));
        assert!(err("${open").contains("not closed"));
        assert!(err("${a-b}").contains("not a name"));
        assert!(err("${}").contains("not a name"));
        let e = expand("x ${nope} y", &values()).unwrap_err().to_string();
        assert!(e.contains("no value for `${nope}`"), "{e}");
    }
}
