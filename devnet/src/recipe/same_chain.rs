//! Starting a recipe devnet again with another build or setting on the same
//! chain (the redeploy of a pipeline): the plan it was made with is made
//! again from what `recipe.json` recorded, then with the change, and the
//! change is taken only when what makes the chain (init, the genesis edits,
//! finish, the key export) comes out the same.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::command::Expanded;
use super::edit::Overrides;
use super::plan::Plan;
use super::run::{RecipeOptions, RecipeState};
use super::Recipe;
use feth_chain::keys;

/// What a stopped devnet is started again with, on its chain: another
/// node binary, vars, `config.toml` or app settings. A change that would
/// make another chain (a genesis edit, a var init or the genesis uses) is
/// refused, naming what it changes.
#[derive(Debug, Clone, Default)]
pub struct Redeploy {
    /// Another build of the node.
    pub binary: Option<PathBuf>,
    /// `NAME=VALUE` for the recipe's vars, after those it was made with.
    pub vars: Vec<String>,
    /// Settings after those it was made with.
    pub overrides: Overrides,
}

impl Redeploy {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.binary.is_none() && self.vars.is_empty() && self.overrides == Overrides::default()
    }
}

/// The recipe and the options `state`'s devnet was made with, as recorded.
pub(super) fn made_with(state: &RecipeState) -> Result<(Recipe, RecipeOptions)> {
    let recipe = Recipe {
        spec: state.recipe.clone(),
        source: state.source.clone(),
    };
    let mut opts = RecipeOptions {
        dir: state.dir.clone(),
        binary: Some(state.binary.clone()),
        ports: state.ports.clone(),
        ..RecipeOptions::default()
    };
    for setting in &state.settings {
        match setting.strip_prefix("var:") {
            Some(var) => opts.vars.push(var.to_string()),
            None => opts.overrides.add(setting).with_context(|| {
                format!(
                    "recipe.json in {} records a setting feth cannot read",
                    state.dir.display()
                )
            })?,
        }
    }
    Ok((recipe, opts))
}

/// `opts` with `change` after them.
pub(super) fn changed(opts: &RecipeOptions, change: &Redeploy) -> RecipeOptions {
    let mut out = opts.clone();
    if let Some(binary) = &change.binary {
        out.binary = Some(binary.clone());
    }
    out.vars.extend(change.vars.iter().cloned());
    let o = &mut out.overrides;
    o.comet.extend(change.overrides.comet.iter().cloned());
    o.app.extend(change.overrides.app.iter().cloned());
    o.genesis.extend(change.overrides.genesis.iter().cloned());
    out
}

/// The plan of a devnet made in `state`'s folder with `opts`, its ports
/// and root account as recorded.
pub(super) fn plan(state: &RecipeState, recipe: &Recipe, opts: &RecipeOptions) -> Result<Plan> {
    let generated = recipe.spec.root_key.as_ref().is_some_and(|k| k.generate);
    let root_address = match (&state.root_key, generated) {
        (Some(path), true) => Some(keys::address_of(&keys::read_key_file(path)?).to_string()),
        _ => None,
    };
    let ports = recipe
        .spec
        .ports
        .iter()
        .map(|name| {
            state.ports.get(name).copied().with_context(|| {
                format!("recipe.json records no port `{name}`: --fresh makes a new chain")
            })
        })
        .collect::<Result<_>>()?;
    super::run::plan_of(recipe, opts, ports, root_address)
}

/// Refused unless `new` makes the same chain as `old`: the same init,
/// genesis edits, finish and key export (their programs aside, which are
/// the node binary in a chain whose binary inits it).
pub(super) fn same_chain(old: &Plan, new: &Plan) -> Result<()> {
    let fresh = "--fresh makes a new chain with it";
    if old.genesis != new.genesis {
        let (a, b) = (&old.genesis, &new.genesis);
        let differs = a.iter().zip(b).find(|(x, y)| x != y).map(|(x, _)| x);
        let longer = if a.len() > b.len() { a } else { b };
        let pointer = differs
            .or(longer.get(a.len().min(b.len())))
            .map_or("", |(p, _)| p.as_str());
        bail!("that changes the chain's genesis (at `{pointer}`), not only how it runs: {fresh}");
    }
    let export = |p: &Plan| p.export.iter().cloned().collect::<Vec<_>>();
    let lists = [
        (old.init.clone(), new.init.clone()),
        (old.finish.clone(), new.finish.clone()),
        (export(old), export(new)),
    ];
    for (a, b) in &lists {
        if let Some(place) = first_difference(a, b) {
            bail!("that changes `{place}`, a command that makes the chain: {fresh}");
        }
    }
    Ok(())
}

/// Where two command lists first differ in what a command does.
fn first_difference(a: &[Expanded], b: &[Expanded]) -> Option<String> {
    let does = |c: &Expanded| (c.args.clone(), c.stdin.clone());
    if a.len() != b.len() {
        return Some(
            a.first()
                .or(b.first())
                .map_or(String::new(), |c| c.place.clone()),
        );
    }
    a.iter()
        .zip(b)
        .find(|(x, y)| does(x) != does(y))
        .map(|(x, _)| x.place.clone())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::plan::Inputs;
    use super::*;

    const RECIPE: &str = r#"
name = "sh"
load = "kvstore"
ports = ["rpc"]
[binary]
default = "/bin/sh"
[vars]
timeout_commit = "1s"
gas = "-1"
who = "me"
[[init]]
args = ["-c", "init ${who}"]
[[genesis]]
pointer = "/gas"
json = "${gas}"
[comet]
"consensus.timeout_commit" = "${timeout_commit}"
[[process]]
name = "node"
args = ["-c", "sleep 60", "${rpc_port}"]
[endpoints]
comet_rpc = "http://127.0.0.1:${rpc_port}"
"#;

    fn plan(vars: &[&str], binary: &str, overrides: &[&str]) -> Plan {
        let recipe = Recipe::parse(RECIPE, "test").unwrap();
        let vars: Vec<String> = vars.iter().map(|s| s.to_string()).collect();
        let mut settings = Overrides::default();
        overrides.iter().for_each(|s| settings.add(s).unwrap());
        let inputs = Inputs {
            dir: Path::new("/tmp/feth-same-chain"),
            binary: Some(Path::new(binary)),
            vars: &vars,
            overrides: &settings,
            ports: vec![100],
            root_address: None,
        };
        Plan::new(&recipe, inputs).unwrap()
    }

    #[test]
    fn how_a_node_runs_may_change_on_its_chain_and_what_makes_the_chain_may_not() {
        let made = plan(&[], "/bin/sh", &[]);
        let runs = plan(
            &["timeout_commit=9s"],
            "/bin/bash",
            &["comet:mempool.size=5"],
        );
        same_chain(&made, &runs).unwrap();
        let err = same_chain(&made, &plan(&["gas=5"], "/bin/sh", &[])).unwrap_err();
        assert!(
            err.to_string()
                .contains("changes the chain's genesis (at `/gas`)"),
            "{err}"
        );
        let edit = plan(&[], "/bin/sh", &["genesis:/other=1"]);
        let err = same_chain(&made, &edit).unwrap_err().to_string();
        assert!(err.contains("genesis (at `/other`)"), "{err}");
        let err = same_chain(&made, &plan(&["who=you"], "/bin/sh", &[])).unwrap_err();
        assert!(err.to_string().contains("changes `init[0]`"), "{err}");
    }
}
