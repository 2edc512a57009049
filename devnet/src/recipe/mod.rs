//! Chain recipes: how to make a local devnet of any CometBFT chain from its
//! binary, in one typed TOML file (see `recipes/` and docs/RECIPES.md).
//!
//! A recipe says how a new chain's home is made (init commands, JSON-pointer
//! edits of its genesis, dotted-key edits of `config.toml` and the app's own
//! config), how its root account's key comes to be, which processes run the
//! node and where it answers. [`Recipe::find`] reads and checks one, every
//! placeholder and name resolved, before anything runs; [`RecipeDevnet`]
//! runs it.

mod command;
mod edit;
mod plan;
mod run;
mod same_chain;
mod spec;
mod switch;
mod template;

pub use edit::Overrides;
pub use plan::Urls;
pub use run::{RecipeDevnet, RecipeOptions, RecipeState, RunningProcess, STATE_FILE};
pub use same_chain::Redeploy;
pub use spec::{LoadKind, Spec};

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};

/// The recipes that ship with feth, by name.
const BUILTIN: [(&str, &str); 4] = [
    ("abcid", include_str!("../../../recipes/abcid.toml")),
    ("kvstore", include_str!("../../../recipes/kvstore.toml")),
    ("evmd", include_str!("../../../recipes/evmd.toml")),
    (
        "kvstore-rs",
        include_str!("../../../recipes/kvstore-rs.toml"),
    ),
];

/// The value of a recipe's `abci_addr` var that has CometBFT reach the app
/// over TCP on the devnet's `abci` port (gRPC dials TCP; `--abci-tcp`).
pub const ABCI_TCP_ADDR: &str = "127.0.0.1:${abci_port}";

/// Placeholders every recipe may use.
const BUILTIN_NAMES: [&str; 5] = ["binary", "cometbft", "abcid", "home", "dir"];

/// Log formats the etl reads (`feth etl`), as a recipe names them.
const LOG_FORMATS: [&str; 6] = [
    "plain",
    "json",
    "tracing-plain",
    "tracing-json",
    "sdk-console",
    "sdk-json",
];

/// A recipe read and checked: every placeholder has a value source, every
/// name is unique, the load has what it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Recipe {
    /// The recipe as written.
    pub spec: Spec,
    /// Where it came from (a path, or `builtin:NAME`).
    pub source: String,
}

impl Recipe {
    /// A built-in recipe by name, or the recipe file at `name_or_path`.
    pub fn find(name_or_path: &str) -> Result<Self> {
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Self::parse(text, &format!("builtin:{name}"));
        }
        let path = Path::new(name_or_path);
        if !path.is_file() {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            bail!(
                "--chain {name_or_path}: no such recipe file, and no built-in recipe of that name \
                 (built in: {}); give a recipe's path or one of those names",
                names.join(", ")
            );
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the recipe {}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and checks recipe text; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let spec: Spec = toml::from_str(text).with_context(|| format!("recipe {source}"))?;
        let recipe = Self {
            spec,
            source: source.to_string(),
        };
        recipe
            .check()
            .with_context(|| format!("recipe {source} is not usable"))?;
        Ok(recipe)
    }

    /// A given var, `NAME=VALUE`, split; refused unless `NAME` is one of
    /// the recipe's vars (the error lists them).
    pub fn given_var<'a>(&self, item: &'a str) -> Result<(&'a str, &'a str)> {
        let s = &self.spec;
        let (name, value) = item
            .split_once('=')
            .with_context(|| format!("--var {item}: expected NAME=VALUE"))?;
        if !s.vars.contains_key(name) {
            let names: Vec<&str> = s.vars.keys().map(String::as_str).collect();
            bail!(
                "--var {item}: recipe `{}` has no var `{name}` (its vars: {})",
                s.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
        Ok((name, value))
    }

    /// The names placeholders may use: the built-ins, the recipe's vars, its
    /// ports (`NAME_port`) and `root_address` when feth makes the key.
    pub fn known_names(&self) -> BTreeSet<String> {
        let s = &self.spec;
        let mut names: BTreeSet<String> = BUILTIN_NAMES.iter().map(|n| n.to_string()).collect();
        names.extend(s.vars.keys().cloned());
        names.extend(s.ports.iter().map(|p| format!("{p}_port")));
        if s.root_key.as_ref().is_some_and(|k| k.generate) {
            names.insert("root_address".into());
        }
        names
    }

    fn check(&self) -> Result<()> {
        let s = &self.spec;
        check_name("name", &s.name, true)?;
        self.check_names()?;
        self.check_load()?;
        ensure!(
            !s.process.is_empty(),
            "`process`: a node needs at least one process"
        );
        let mut seen = BTreeSet::new();
        for p in &s.process {
            check_name("process.name", &p.name, true)?;
            ensure!(seen.insert(&p.name), "`process`: `{}` twice", p.name);
        }
        if let Some(logs) = &s.logs {
            ensure!(
                seen.contains(&logs.process),
                "`logs.process = \"{}\"` names no process",
                logs.process
            );
            // A var's default is checked here, a value given when planned.
            if let Ok(format) = template::expand(&logs.format, &s.vars) {
                check_log_format(&logs.format, &format)?;
            }
        }
        self.check_switches()?;
        ensure!(
            s.app.is_empty() || s.files.app.is_some(),
            "`app` edits need `files.app`, the app's config file"
        );
        for edit in &s.genesis {
            ensure!(
                edit.pointer.starts_with('/'),
                "`genesis` pointer `{}`: a JSON pointer starts with `/`",
                edit.pointer
            );
            ensure!(
                edit.value.is_some() != edit.json.is_some(),
                "`genesis` at `{}`: give exactly one of `value` and `json`",
                edit.pointer
            );
        }
        self.check_placeholders()
    }

    /// Every switch names one recipe var whose default is `true` or
    /// `false`; only an endpoint the recipe has, and a node can do without,
    /// is switched.
    fn check_switches(&self) -> Result<()> {
        let s = &self.spec;
        for p in &s.process {
            for arg in &p.args {
                let spec::ArgSpec::Switched(group) = arg else {
                    continue;
                };
                let place = format!("process `{}`'s arguments {:?}", p.name, group.args);
                let (var, _) = group.switch().with_context(|| place.clone())?;
                switch::is_on(var, &s.vars, &place)?;
            }
        }
        let e = &s.endpoints;
        for (endpoint, var) in &e.when {
            let place = format!("`endpoints.{endpoint}`");
            let given = match endpoint.as_str() {
                "pprof" => e.pprof.is_some(),
                "profiler" => e.profiler.is_some(),
                _ => bail!(
                    "`endpoints.when.{endpoint}`: only {} may be switched off",
                    switch::SWITCHED_ENDPOINTS.join(" and ")
                ),
            };
            ensure!(
                given,
                "`endpoints.when.{endpoint}`: the recipe has no {place}"
            );
            switch::is_on(var, &s.vars, &place)?;
        }
        Ok(())
    }

    fn check_names(&self) -> Result<()> {
        let s = &self.spec;
        let mut seen: BTreeSet<String> = BUILTIN_NAMES.iter().map(|n| n.to_string()).collect();
        seen.insert("root_address".into());
        for var in s.vars.keys() {
            check_name("vars", var, false)?;
            ensure!(
                seen.insert(var.clone()),
                "`vars.{var}`: a built-in placeholder's name; choose another"
            );
        }
        for port in &s.ports {
            check_name("ports", port, false)?;
            ensure!(
                seen.insert(format!("{port}_port")),
                "`ports`: `{port}` twice, or `{port}_port` is also a var"
            );
        }
        Ok(())
    }

    fn check_load(&self) -> Result<()> {
        let s = &self.spec;
        if let Some(key) = &s.root_key {
            ensure!(
                key.generate != key.export.is_some(),
                "`root_key`: give exactly one of `generate = true` and `export`"
            );
        }
        if s.load == LoadKind::Evm {
            ensure!(
                s.endpoints.web3.is_some(),
                "`load = \"evm\"` needs `endpoints.web3`"
            );
            ensure!(
                s.root_key.is_some(),
                "`load = \"evm\"` needs `root_key`: the funded account the load is paid from"
            );
        }
        Ok(())
    }

    /// Every placeholder in every string names something known, and a
    /// var's value no other var ([`var_uses_no_var`]).
    fn check_placeholders(&self) -> Result<()> {
        for (name, value) in &self.spec.vars {
            var_uses_no_var(&self.spec, name, value)?;
        }
        let known = self.known_names();
        for (place, text) in edit::strings(&self.spec) {
            for name in template::names(&text).with_context(|| format!("`{place}`"))? {
                ensure!(
                    known.contains(name),
                    "`{place}`: `${{{name}}}` is neither a built-in placeholder ({}), \
                     a var nor a port; declare it under `vars` or `ports`",
                    BUILTIN_NAMES.join(", ")
                );
            }
        }
        Ok(())
    }
}

/// A var's value may use the ports, the folders, the tools and
/// `root_address` (`abci_addr = "unix://${dir}/abci.sock"`), but not another
/// var: vars are put in once, before everything else.
pub(super) fn var_uses_no_var(spec: &Spec, name: &str, value: &str) -> Result<()> {
    for used in template::names(value).with_context(|| format!("`vars.{name}`"))? {
        ensure!(
            !spec.vars.contains_key(used),
            "`vars.{name}` = `{value}` uses the var `${{{used}}}`: a var's value may use \
             the ports, `dir`, `home`, the tools and `root_address`, not another var"
        );
    }
    Ok(())
}

/// `logs.format` as written (`written`) is, once expanded, one the etl
/// reads.
pub(super) fn check_log_format(written: &str, format: &str) -> Result<()> {
    let shown = if written == format {
        format!("`logs.format = \"{format}\"`")
    } else {
        format!("`logs.format = \"{written}\"` (`{format}` once expanded)")
    };
    ensure!(
        LOG_FORMATS.contains(&format),
        "{shown}: not one of {}",
        LOG_FORMATS.join(", ")
    );
    Ok(())
}

/// Names are lower-case letters, digits, `_` (and `-` where `dash`),
/// starting with a letter: placeholders take no `-`.
fn check_name(what: &str, name: &str, dash: bool) -> Result<()> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || (dash && c == '-')
        });
    let allowed = if dash { "`_`, `-`" } else { "`_`" };
    ensure!(
        ok,
        "`{what}`: `{name}` is not a name (lower-case letters, digits, {allowed}; a letter first)"
    );
    Ok(())
}

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod tests;
