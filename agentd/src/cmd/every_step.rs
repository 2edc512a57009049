//! `--var`, `--set`, `--app` and `--genesis` of `feth compare` and `feth
//! bisect`: what every step's devnet is given beyond its recipe.

use anyhow::{bail, Result};
use clap::Args;

use crate::devnet::recipe::{Overrides, Recipe};

/// Settings every step's devnet shares, before each step's own.
#[derive(Debug, Clone, Default, Args)]
pub struct EveryStepArgs {
    /// Every step's devnet: a recipe var, as NAME=VALUE (repeatable;
    /// `--var block_gas=30000000`), after --timeout-commit and
    /// --block-gas-limit, before a step's own (its patch set).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
    /// Every step's devnet: a CometBFT `config.toml` key, as KEY=VALUE
    /// (repeatable), before a step's own `+comet:` settings.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Every step's devnet: a key of the app's own config (`app.toml`), as
    /// KEY=VALUE (repeatable), before a step's own `+app:` settings.
    #[arg(long = "app", value_name = "KEY=VALUE")]
    app: Vec<String>,
    /// Every step's devnet: a genesis edit, as /POINTER=JSON (repeatable).
    #[arg(long = "genesis", value_name = "/POINTER=JSON")]
    genesis: Vec<String>,
}

impl EveryStepArgs {
    /// Whether none is given.
    pub fn is_empty(&self) -> bool {
        [&self.vars, &self.set, &self.app, &self.genesis]
            .iter()
            .all(|l| l.is_empty())
    }

    /// The settings as `var:NAME=VALUE`, `comet:KEY=VALUE`, `app:KEY=VALUE`
    /// and `genesis:/POINTER=JSON`, each checked against `recipe` (the
    /// chain's, else abcid's) before any devnet starts.
    pub fn settings(&self, recipe: Option<&Recipe>) -> Result<Vec<String>> {
        let recipe = match recipe {
            Some(r) => r.clone(),
            None => Recipe::find("abcid")?,
        };
        let mut out = Vec::new();
        for var in &self.vars {
            recipe.given_var(var)?;
            out.push(format!("var:{var}"));
        }
        let settings = [
            ("comet", &self.set),
            ("app", &self.app),
            ("genesis", &self.genesis),
        ];
        let mut check = Overrides::default();
        for (kind, given) in settings {
            for item in given {
                let setting = format!("{kind}:{item}");
                check.add(&setting)?;
                out.push(setting);
            }
        }
        if !check.app.is_empty() && recipe.spec.files.app.is_none() {
            bail!(
                "--app: recipe `{}` names no app config file; give CometBFT's keys with --set",
                recipe.spec.name
            );
        }
        Ok(out)
    }
}
