//! What `feth compare` runs: the steps of a ladder and the interleaved order
//! in which their runs are made.
//!
//! A ladder is written as abcid patch sets, each token either absolute
//! (`none`, `all`, or one patch name) or relative to the step before it
//! (`+name` adds a patch, `-name` removes one):
//! `none,+parallel-abci,+rwlock,all` is four steps, the last three
//! cumulative. `--only a,b` is `none` and then each patch alone. Two builds
//! are the steps `a` and `b`, each with its own abcid binary. A step named
//! again (`all,all`) is measured again as `all#2`: an A/A comparison.
//!
//! A step may also change CometBFT's configuration: `+comet:KEY=VALUE`
//! (`+comet:mempool.size=8000`) is the step before with that `config.toml`
//! setting, and `-comet:KEY` drops an earlier one. Settings accumulate like
//! patches and an absolute step starts from CometBFT's defaults again, so
//! `all,+comet:mempool.size=8000,+comet:mempool.recheck=false` shows what
//! each setting buys beside the code changes. On a recipe chain
//! (`--chain`), `+app:KEY=VALUE` sets a key of the app's own config
//! (`app.toml`) and `+genesis:/POINTER=JSON` a genesis value the same way,
//! and the absolute step `base` is the recipe as it is.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use feth_patches::{Patch, PatchError, Patches};
use serde::{Deserialize, Serialize};

/// One step: a node configuration whose committed TPS is measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Name in tables (`none`, `+rwlock`, `a`).
    pub name: String,
    /// The patch set in abcid's `--patches` spelling (`none,parallel-abci`).
    pub patches: String,
    /// CometBFT `config.toml` settings of this step, `KEY=VALUE` as
    /// `feth devnet up --set` takes them, over the devnet's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comet: Vec<String>,
    /// A recipe chain's settings of this step besides CometBFT's:
    /// `app:KEY=VALUE` and `genesis:/POINTER=JSON`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recipe: Vec<String>,
    /// The node binary (abcid's, or a recipe chain's), when not the default.
    pub abcid: Option<PathBuf>,
}

impl Step {
    fn new(name: &str, patches: String) -> Self {
        Self {
            name: name.to_string(),
            patches,
            comet: Vec::new(),
            recipe: Vec::new(),
            abcid: None,
        }
    }
}

/// The prefix of a step that changes CometBFT's configuration.
const COMET: &str = "comet:";
/// The prefixes of a step that changes a recipe chain's app config or genesis.
const RECIPE: [&str; 2] = ["app:", "genesis:"];

/// Steps of a cumulative ladder (see the module docs).
pub fn ladder(spec: &str) -> Result<Vec<Step>> {
    let tokens: Vec<&str> = spec.split(',').map(str::trim).collect();
    let mut steps: Vec<Step> = Vec::with_capacity(tokens.len());
    for token in tokens {
        if token.is_empty() || token == "+" || token == "-" {
            bail!("--ladder `{spec}` has an empty step; write it like `none,+parallel-abci,+rwlock,all`");
        }
        let step = match token.strip_prefix(['+', '-']) {
            Some(item) => relative(&steps, spec, token, item)?,
            None => Step::new(token, token.to_string()),
        };
        // A step named again is measured again, under its own name: `all,all`
        // is an A/A comparison, the noise floor.
        let same = |s: &&Step| {
            (&s.patches, &s.comet, &s.recipe) == (&step.patches, &step.comet, &step.recipe)
                && s.name.starts_with(token)
        };
        let name = match steps.iter().filter(same).count() {
            0 => token.to_string(),
            n => format!("{token}#{}", n + 1),
        };
        steps.push(Step { name, ..step });
    }
    at_least_two(steps, "--ladder")
}

/// The step before `token` (`+item` or `-item`) with a patch added or
/// removed (`previous,+name` or `previous,-name` in abcid's spelling), or
/// with a CometBFT or app setting put or dropped.
fn relative(steps: &[Step], spec: &str, token: &str, item: &str) -> Result<Step> {
    let Some(previous) = steps.last() else {
        bail!(
            "--ladder `{spec}` starts with a relative step `{token}`: start from `none` or `all`"
        );
    };
    let mut step = Step::new(token, previous.patches.clone());
    step.comet = previous.comet.clone();
    step.recipe = previous.recipe.clone();
    let adding = token.starts_with('+');
    let (settings, key, setting) = if let Some(setting) = item.strip_prefix(COMET) {
        let key = comet_key(spec, token, setting, adding)?.to_string();
        (&mut step.comet, key, setting.trim().to_string())
    } else if let Some(kind) = RECIPE.iter().find(|k| item.starts_with(**k)) {
        let rest = &item[kind.len()..];
        let key = match *kind {
            "genesis:" => genesis_key(spec, token, rest, adding)?,
            _ => comet_key(spec, token, rest, adding)?.to_string(),
        };
        (
            &mut step.recipe,
            format!("{kind}{key}"),
            item.trim().to_string(),
        )
    } else {
        step.patches = with_patch(&previous.patches, adding, item)
            .map_err(|e| anyhow!("--ladder `{spec}`: step `{token}`: {e}"))?;
        return Ok(step);
    };
    let before = settings.len();
    settings.retain(|s| s.split_once('=').map(|(k, _)| k.trim()) != Some(key.as_str()));
    if adding {
        settings.push(setting);
    } else if settings.len() == before {
        bail!("--ladder `{spec}`: `{token}` drops a setting the step before does not have");
    }
    Ok(step)
}

/// The patch set `previous` with `name` added (or removed, and what needs
/// it), in abcid's canonical spelling; refused when `name` is no patch or
/// what it needs is not in force. A set that is not abcid's (a recipe's
/// `base`) is left to its chain: `previous,±name`.
fn with_patch(previous: &str, adding: bool, name: &str) -> Result<String, PatchError> {
    let Ok(set) = previous.parse::<Patches>() else {
        let sign = if adding { "" } else { "-" };
        return Ok(format!("{previous},{sign}{name}"));
    };
    let patch: Patch = name.parse()?;
    if !adding {
        return Ok(set.without_dependents(patch).to_string());
    }
    let set = set.with(patch);
    set.checked(&set.to_string()).map(|set| set.to_string())
}

/// Checks each step's patch set as abcid will parse it (`--ladder`,
/// `--only` and `--patches` on abcid's devnet), before any step starts.
pub fn check_patch_sets(steps: &[Step]) -> Result<()> {
    for step in steps {
        if let Err(e) = step.patches.parse::<Patches>() {
            bail!("step `{}`: {e}", step.name);
        }
    }
    Ok(())
}

/// The pointer of `+genesis:/POINTER=JSON` or `-genesis:/POINTER`.
fn genesis_key(spec: &str, token: &str, setting: &str, adding: bool) -> Result<String> {
    let key = match (adding, setting.split_once('=')) {
        (true, Some((key, value))) if !value.trim().is_empty() => key.trim(),
        (false, None) => setting.trim(),
        _ => bail!(
            "--ladder `{spec}`: `{token}`: write `+genesis:/POINTER=JSON` or `-genesis:/POINTER`"
        ),
    };
    if !key.starts_with('/') {
        bail!("--ladder `{spec}`: `{token}`: `{key}` is not a JSON pointer (it starts with `/`)");
    }
    Ok(key.to_string())
}

/// The key of `+comet:KEY=VALUE` or `-comet:KEY`, checked for shape: a
/// dotted `config.toml` key, and a value when one is put. Whether the key
/// is one of CometBFT's is checked when the step's devnet is configured.
fn comet_key<'a>(spec: &str, token: &str, setting: &'a str, adding: bool) -> Result<&'a str> {
    let key = match (adding, setting.split_once('=')) {
        (true, Some((key, value))) if !value.trim().is_empty() => key.trim(),
        (false, None) => setting.trim(),
        (true, _) => {
            bail!("--ladder `{spec}`: `{token}` needs KEY=VALUE, like `+comet:mempool.size=8000`")
        }
        (false, Some(_)) => {
            bail!("--ladder `{spec}`: `{token}` takes a key only, like `-comet:mempool.size`")
        }
    };
    let ok = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !key.split('.').all(ok) {
        bail!(
            "--ladder `{spec}`: `{token}`: `{key}` is not a dotted config key like `mempool.size`"
        );
    }
    Ok(key)
}

/// `none`, then each listed patch alone.
pub fn only(list: &str) -> Result<Vec<Step>> {
    let mut steps = vec![Step::new("none", "none".to_string())];
    for name in list.split(',').map(str::trim) {
        if name.is_empty() || name.starts_with(['+', '-']) || name == "none" {
            bail!("--only takes patch names separated by commas, like `rwlock,sender-cache`; got `{list}`");
        }
        // A patch that needs another runs with it: alone it would be inert.
        let patch: Patch = name.parse().map_err(|e| anyhow!("--only `{list}`: {e}"))?;
        let set = patch.requires().map_or(Patches::only(patch), |needs| {
            Patches::only(needs).with(patch)
        });
        steps.push(Step::new(name, set.to_string()));
    }
    at_least_two(steps, "--only")
}

/// Two builds of a node, `a` then `b`, with the same patch set (`base` for
/// a recipe chain's builds, run as given).
pub fn builds(a: PathBuf, b: PathBuf, patches: &str) -> Vec<Step> {
    named_builds(vec![("a".to_string(), a), ("b".to_string(), b)], patches)
}

/// Builds of a node, each a step of its own name, in the order given, with
/// the same patch set (`feth bisect`'s good endpoint, probe and bad one).
pub fn named_builds(builds: Vec<(String, PathBuf)>, patches: &str) -> Vec<Step> {
    builds
        .into_iter()
        .map(|(name, abcid)| Step {
            abcid: Some(abcid),
            ..Step::new(&name, patches.to_string())
        })
        .collect()
}

/// A running node, measured as it is: one step named `name`.
pub fn live(name: &str) -> Step {
    Step::new(name, "as deployed".to_string())
}

fn at_least_two(steps: Vec<Step>, flag: &str) -> Result<Vec<Step>> {
    if steps.len() < 2 {
        bail!("{flag} needs at least two steps to compare");
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_and_sets(steps: &[Step]) -> Vec<(&str, &str)> {
        steps
            .iter()
            .map(|s| (s.name.as_str(), s.patches.as_str()))
            .collect()
    }

    #[test]
    fn a_ladder_accumulates_relative_steps_and_restarts_at_absolute_ones() {
        let steps = ladder("none, +parallel-abci,+rwlock,all,-quiet-logs").unwrap();
        assert_eq!(
            names_and_sets(&steps),
            [
                ("none", "none"),
                ("+parallel-abci", "parallel-abci"),
                ("+rwlock", "parallel-abci,rwlock"),
                ("all", "all"),
                ("-quiet-logs", "all,-quiet-logs"),
            ]
        );
        assert!(steps
            .iter()
            .all(|s| s.abcid.is_none() && s.comet.is_empty()));
    }

    #[test]
    fn bad_ladders_are_refused_with_the_reason() {
        let err = |spec: &str| ladder(spec).unwrap_err().to_string();
        assert!(err("+rwlock,all").contains("starts with a relative step"));
        assert!(err("none,,all").contains("empty step"));
        let aa = ladder("all,all").unwrap();
        assert_eq!(names_and_sets(&aa), [("all", "all"), ("all#2", "all")]);
        assert!(err("all").contains("at least two"));
    }

    #[test]
    fn comet_steps_accumulate_settings_over_the_same_patches() {
        let steps = ladder(
            "all,+comet:mempool.size=8000,+comet:mempool.recheck=false,\
             +comet:mempool.size=4000,-comet:mempool.recheck,+rwlock,none",
        )
        .unwrap();
        let comet: Vec<(&str, &str, Vec<&str>)> = steps
            .iter()
            .map(|s| {
                let settings = s.comet.iter().map(String::as_str).collect();
                (s.name.as_str(), s.patches.as_str(), settings)
            })
            .collect();
        assert_eq!(
            comet,
            [
                ("all", "all", vec![]),
                ("+comet:mempool.size=8000", "all", vec!["mempool.size=8000"]),
                (
                    "+comet:mempool.recheck=false",
                    "all",
                    vec!["mempool.size=8000", "mempool.recheck=false"]
                ),
                (
                    "+comet:mempool.size=4000",
                    "all",
                    vec!["mempool.recheck=false", "mempool.size=4000"]
                ),
                ("-comet:mempool.recheck", "all", vec!["mempool.size=4000"]),
                ("+rwlock", "all", vec!["mempool.size=4000"]),
                ("none", "none", vec![]),
            ]
        );
        let aa = ladder("all,+comet:mempool.size=8000,all,+comet:mempool.size=8000").unwrap();
        let names: Vec<&str> = aa.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "all",
                "+comet:mempool.size=8000",
                "all#2",
                "+comet:mempool.size=8000#2"
            ]
        );
    }

    #[test]
    fn bad_comet_steps_name_the_problem() {
        let err = |spec: &str| ladder(spec).unwrap_err().to_string();
        assert!(err("+comet:mempool.size=1,all").contains("starts with a relative step"));
        assert!(err("all,+comet:mempool.size").contains("needs KEY=VALUE"));
        assert!(err("all,+comet:mempool.size=").contains("needs KEY=VALUE"));
        assert!(err("all,-comet:mempool.size=3").contains("takes a key only"));
        assert!(err("all,+comet:mem pool=3").contains("is not a dotted config key"));
        assert!(err("all,+comet:.size=3").contains("is not a dotted config key"));
        assert!(err("all,-comet:mempool.size").contains("does not have"));
    }

    #[test]
    fn a_patch_step_is_checked_as_abcid_parses_it() {
        let err = |spec: &str| ladder(spec).unwrap_err().to_string();
        let misspelt = err("none,+rwlok");
        assert!(
            misspelt.contains("step `+rwlok`: unknown patch `rwlok`"),
            "{misspelt}"
        );
        let unmet = err("none,+web3-recover");
        assert!(
            unmet.contains("`web3-recover` needs `sender-cache`"),
            "{unmet}"
        );
        let steps = ladder("all,-parallel-abci,+parallel-abci").unwrap();
        assert_eq!(
            names_and_sets(&steps)[1..],
            [
                ("-parallel-abci", "all,-parallel-abci,-optimistic-execution"),
                ("+parallel-abci", "all,-optimistic-execution"),
            ]
        );
        // An absolute step is checked with the rest, before anything starts.
        let steps = ladder("none,rwlok").unwrap();
        let err = check_patch_sets(&steps).unwrap_err().to_string();
        assert!(err.contains("step `rwlok`: unknown patch `rwlok`"), "{err}");
        assert!(check_patch_sets(&ladder("none,+rwlock,all").unwrap()).is_ok());
    }

    #[test]
    fn only_runs_a_patch_that_needs_another_with_it() {
        let steps = only("web3-recover").unwrap();
        assert_eq!(
            names_and_sets(&steps),
            [
                ("none", "none"),
                ("web3-recover", "sender-cache,web3-recover")
            ]
        );
        let err = only("rwlok").unwrap_err().to_string();
        assert!(err.contains("unknown patch `rwlok`"), "{err}");
    }

    #[test]
    fn only_compares_each_patch_alone_with_none() {
        let steps = only("rwlock,sender-cache").unwrap();
        assert_eq!(
            names_and_sets(&steps),
            [
                ("none", "none"),
                ("rwlock", "rwlock"),
                ("sender-cache", "sender-cache")
            ]
        );
        assert!(only("+rwlock").is_err());
        assert!(only("").is_err());
    }

    #[test]
    fn builds_are_two_steps_with_their_own_binaries() {
        let steps = builds("/x/abcid".into(), "/y/abcid".into(), "all");
        assert_eq!(names_and_sets(&steps), [("a", "all"), ("b", "all")]);
        assert_eq!(steps[1].abcid.as_deref(), Some("/y/abcid".as_ref()));
    }
}

#[cfg(test)]
mod recipe_tests {
    use super::*;

    #[test]
    fn app_and_genesis_steps_accumulate_and_drop_like_comet_ones() {
        let spec = "base,+app:evm.mempool.global-slots=10240,\
                    +genesis:/consensus/params/block/max_gas=\"30000000\",\
                    +comet:mempool.size=8000,-app:evm.mempool.global-slots";
        let steps = ladder(spec).unwrap();
        let recipe: Vec<&[String]> = steps.iter().map(|s| s.recipe.as_slice()).collect();
        assert_eq!(recipe[0], [] as [String; 0]);
        assert_eq!(recipe[1], ["app:evm.mempool.global-slots=10240"]);
        assert_eq!(
            recipe[2],
            [
                "app:evm.mempool.global-slots=10240",
                "genesis:/consensus/params/block/max_gas=\"30000000\""
            ]
        );
        assert_eq!(steps[3].comet, ["mempool.size=8000"]);
        assert_eq!(recipe[3], recipe[2]);
        assert_eq!(
            recipe[4],
            ["genesis:/consensus/params/block/max_gas=\"30000000\""]
        );
        assert!(steps.iter().all(|s| s.patches == "base"));
        // A setting put again replaces the one before.
        let again = ladder("base,+app:a.b=1,+app:a.b=2").unwrap();
        assert_eq!(again[2].recipe, ["app:a.b=2"]);
    }

    #[test]
    fn malformed_app_and_genesis_steps_are_refused() {
        let err = |spec: &str| ladder(spec).unwrap_err().to_string();
        assert!(err("base,-app:x.y").contains("drops a setting the step before does not have"));
        assert!(err("base,+genesis:consensus=1").contains("is not a JSON pointer"));
        assert!(err("base,+genesis:/a").contains("write `+genesis:/POINTER=JSON`"));
        assert!(err("base,+app:x y=1").contains("is not a dotted config key"));
    }
}
