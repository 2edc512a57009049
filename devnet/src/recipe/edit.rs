//! Edits of a new chain's files: JSON-pointer sets in its genesis, dotted
//! keys in `config.toml` and the app's TOML config. A key the file lacks is
//! refused (init writes every key the node reads, so a missing one is a
//! typo the node would silently ignore), and a refused edit writes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::spec::{ArgSpec, CommandSpec, Spec};
use super::template;
use crate::config::{get_key, parse_override, set_key};

/// Settings of one devnet on top of its recipe's: a comparison's step
/// (`+comet:KEY=VALUE`, `+app:KEY=VALUE`, `+genesis:/POINTER=JSON`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `config.toml` keys.
    pub comet: Vec<(String, toml::Value)>,
    /// The app config's keys.
    pub app: Vec<(String, toml::Value)>,
    /// Genesis pointers and their JSON values.
    pub genesis: Vec<(String, serde_json::Value)>,
}

impl Overrides {
    /// Adds one `KIND:KEY=VALUE` setting (`comet:mempool.size=5000`,
    /// `app:evm.max-tx-gas-wanted=0`, `genesis:/consensus/params/block/max_gas="30000000"`).
    pub fn add(&mut self, setting: &str) -> Result<()> {
        let bad = || {
            format!(
                "setting `{setting}`: expected comet:KEY=VALUE, app:KEY=VALUE or \
                 genesis:/POINTER=JSON"
            )
        };
        let (kind, rest) = setting.split_once(':').with_context(bad)?;
        match kind {
            "comet" => self.comet.push(parse_override(rest).with_context(bad)?),
            "app" => self.app.push(parse_override(rest).with_context(bad)?),
            "genesis" => {
                let (pointer, json) = rest.split_once('=').with_context(bad)?;
                if !pointer.starts_with('/') {
                    bail!("{}: a JSON pointer starts with `/`", bad());
                }
                let value = serde_json::from_str(json)
                    .with_context(|| format!("{}: `{json}` is not JSON", bad()))?;
                self.genesis.push((pointer.to_string(), value));
            }
            _ => bail!(bad()),
        }
        Ok(())
    }
}

/// Every string of a recipe that may hold placeholders, with where it is.
pub(super) fn strings(spec: &Spec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut push = |place: String, text: &str| out.push((place, text.to_string()));
    if let Some(default) = &spec.binary.default {
        push("binary.default".into(), default);
    }
    let commands = |what: &str, list: &[CommandSpec], push: &mut dyn FnMut(String, &str)| {
        for (i, c) in list.iter().enumerate() {
            command_strings(&format!("{what}[{i}]"), c, push);
        }
    };
    for (name, value) in &spec.vars {
        push(format!("vars.{name}"), value);
    }
    commands("init", &spec.init, &mut push);
    commands("finish", &spec.finish, &mut push);
    if let Some(export) = spec.root_key.as_ref().and_then(|k| k.export.as_ref()) {
        command_strings("root_key.export", export, &mut push);
    }
    for p in &spec.process {
        let place = format!("process `{}`", p.name);
        p.program
            .iter()
            .for_each(|t| push(format!("{place}.program"), t));
        for arg in &p.args {
            match arg {
                ArgSpec::One(t) => push(format!("{place}.args"), t),
                ArgSpec::Switched(g) => {
                    g.args.iter().for_each(|t| push(format!("{place}.args"), t))
                }
            }
        }
        p.listens
            .iter()
            .for_each(|t| push(format!("{place}.listens"), t));
    }
    let e = &spec.endpoints;
    push("endpoints.comet_rpc".into(), &e.comet_rpc);
    for (name, url) in [
        ("web3", &e.web3),
        ("pprof", &e.pprof),
        ("profiler", &e.profiler),
        ("comet_metrics", &e.comet_metrics),
        ("metrics", &e.metrics),
    ] {
        url.iter()
            .for_each(|t| push(format!("endpoints.{name}"), t));
    }
    for (table, edits) in [("comet", &spec.comet), ("app", &spec.app)] {
        for (key, value) in edits {
            toml_strings(value, &mut |t| push(format!("{table}.\"{key}\""), t));
        }
    }
    if let Some(logs) = &spec.logs {
        push("logs.format".into(), &logs.format);
    }
    for edit in &spec.genesis {
        let place = format!("genesis `{}`", edit.pointer);
        edit.json.iter().for_each(|t| push(place.clone(), t));
        if let Some(v) = &edit.value {
            toml_strings(v, &mut |t| push(place.clone(), t));
        }
    }
    out
}

fn command_strings(place: &str, c: &CommandSpec, push: &mut dyn FnMut(String, &str)) {
    c.program
        .iter()
        .for_each(|t| push(format!("{place}.program"), t));
    c.args.iter().for_each(|t| push(format!("{place}.args"), t));
    c.stdin
        .iter()
        .for_each(|t| push(format!("{place}.stdin"), t));
}

fn toml_strings(value: &toml::Value, push: &mut dyn FnMut(&str)) {
    match value {
        toml::Value::String(s) => push(s),
        toml::Value::Array(items) => items.iter().for_each(|v| toml_strings(v, push)),
        toml::Value::Table(t) => t.values().for_each(|v| toml_strings(v, push)),
        _ => {}
    }
}

/// `value` with its strings expanded.
pub(super) fn expand_toml(
    value: &toml::Value,
    values: &BTreeMap<String, String>,
) -> Result<toml::Value> {
    Ok(match value {
        toml::Value::String(s) => toml::Value::String(template::expand(s, values)?),
        toml::Value::Array(items) => toml::Value::Array(
            items
                .iter()
                .map(|v| expand_toml(v, values))
                .collect::<Result<_>>()?,
        ),
        toml::Value::Table(t) => toml::Value::Table(
            t.iter()
                .map(|(k, v)| Ok((k.clone(), expand_toml(v, values)?)))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

/// Sets dotted `edits` in the TOML file at `path`; `what` names the file's
/// edits in errors (`comet`, `app`).
pub(super) fn apply_toml(path: &Path, what: &str, edits: &[(String, toml::Value)]) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read {}, which init should have written",
            path.display()
        )
    })?;
    let mut doc: toml::Table = text
        .parse()
        .with_context(|| format!("cannot parse {}", path.display()))?;
    for (key, value) in edits {
        if get_key(&doc, key).is_none() {
            bail!(
                "`{what}.\"{key}\"`: {} has no key `{key}`; check its spelling against that file",
                path.display()
            );
        }
        set_key(&mut doc, key, value.clone())?;
    }
    let out = toml::to_string(&doc).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// Sets each pointer of `edits` in the genesis JSON at `path`.
pub(super) fn apply_genesis(path: &Path, edits: &[(String, serde_json::Value)]) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read {}, which init should have written",
            path.display()
        )
    })?;
    let mut doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))?;
    for (pointer, value) in edits {
        set_pointer(&mut doc, pointer, value.clone())
            .with_context(|| format!("genesis `{pointer}` in {}", path.display()))?;
    }
    let out = serde_json::to_string_pretty(&doc)?;
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// Sets `pointer` (RFC 6901) in `doc`: its parent must exist; an object's
/// key may be new, an array's index must exist.
pub(super) fn set_pointer(
    doc: &mut serde_json::Value,
    pointer: &str,
    value: serde_json::Value,
) -> Result<()> {
    let Some((at, last)) = pointer.rsplit_once('/') else {
        bail!("a JSON pointer starts with `/`");
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    let Some(parent) = doc.pointer_mut(at) else {
        bail!("the file has no `{at}`; check the pointer against the file init wrote");
    };
    match parent {
        serde_json::Value::Object(map) => {
            map.insert(last, value);
        }
        serde_json::Value::Array(items) => {
            let slot = last
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get_mut(i))
                .with_context(|| format!("`{last}` is no index of the array there"))?;
            *slot = value;
        }
        _ => bail!("`{at}` is neither an object nor an array"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn step_settings_parse_by_kind() {
        let mut o = Overrides::default();
        o.add("comet:mempool.size=5000").unwrap();
        o.add("app:json-rpc.enable=true").unwrap();
        o.add(r#"genesis:/consensus/params/block/max_gas="30000000""#)
            .unwrap();
        assert_eq!(
            o.comet,
            [("mempool.size".into(), toml::Value::Integer(5000))]
        );
        assert_eq!(
            o.app,
            [("json-rpc.enable".into(), toml::Value::Boolean(true))]
        );
        assert_eq!(
            o.genesis,
            [("/consensus/params/block/max_gas".into(), json!("30000000"))]
        );
        for bad in [
            "mempool.size=1",
            "toml:a=1",
            "genesis:a=1",
            "genesis:/a=not json",
        ] {
            let err = format!("{:#}", o.add(bad).unwrap_err());
            assert!(err.contains(&format!("setting `{bad}`")), "{err}");
        }
    }

    #[test]
    fn a_pointer_sets_into_an_existing_parent_only() {
        let mut doc = json!({"a": {"b": [1, 2]}, "x~y/z": 0});
        set_pointer(&mut doc, "/a/c", json!("new")).unwrap();
        set_pointer(&mut doc, "/a/b/1", json!(3)).unwrap();
        set_pointer(&mut doc, "/x~0y~1z", json!(9)).unwrap();
        assert_eq!(doc, json!({"a": {"b": [1, 3], "c": "new"}, "x~y/z": 9}));
        let err = set_pointer(&mut doc, "/missing/key", json!(1)).unwrap_err();
        assert!(err.to_string().contains("no `/missing`"), "{err}");
        let err = set_pointer(&mut doc, "/a/b/7", json!(1)).unwrap_err();
        assert!(err.to_string().contains("no index"), "{err}");
        let err = set_pointer(&mut doc, "/a/c/d", json!(1)).unwrap_err();
        assert!(err.to_string().contains("neither an object"), "{err}");
    }

    #[test]
    fn a_toml_key_the_file_lacks_is_refused_and_nothing_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.toml");
        let written = "[json-rpc]\nenable = false\naddress = \"0.0.0.0:8545\"\n";
        std::fs::write(&path, written).unwrap();
        let edits = |key: &str| vec![(key.to_string(), toml::Value::Boolean(true))];
        let err = apply_toml(&path, "app", &edits("json-rpc.enabled")).unwrap_err();
        assert!(
            err.to_string().contains("has no key `json-rpc.enabled`"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
        apply_toml(&path, "app", &edits("json-rpc.enable")).unwrap();
        let doc: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert_eq!(doc["json-rpc"]["enable"], toml::Value::Boolean(true));
        assert_eq!(doc["json-rpc"]["address"].as_str(), Some("0.0.0.0:8545"));
    }
}
