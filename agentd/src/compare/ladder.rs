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
//! each setting buys beside the code changes.

use std::path::PathBuf;

use anyhow::{bail, Result};
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
    /// The abcid binary, when not the default one.
    pub abcid: Option<PathBuf>,
}

impl Step {
    fn new(name: &str, patches: String) -> Self {
        Self {
            name: name.to_string(),
            patches,
            comet: Vec::new(),
            abcid: None,
        }
    }
}

/// The prefix of a step that changes CometBFT's configuration.
const COMET: &str = "comet:";

/// Steps of a cumulative ladder (see the module docs).
pub fn ladder(spec: &str) -> Result<Vec<Step>> {
    let tokens: Vec<&str> = spec.split(',').map(str::trim).collect();
    let mut steps: Vec<Step> = Vec::with_capacity(tokens.len());
    for token in tokens {
        if token.is_empty() || token == "+" || token == "-" {
            bail!("--ladder `{spec}` has an empty step; write it like `none,+parallel-abci,+rwlock,all`");
        }
        let (patches, comet) = match token.strip_prefix(['+', '-']) {
            Some(item) => relative(&steps, spec, token, item)?,
            None => (token.to_string(), Vec::new()),
        };
        // A step named again is measured again, under its own name: `all,all`
        // is an A/A comparison, the noise floor.
        let repeats = steps
            .iter()
            .filter(|s| s.patches == patches && s.comet == comet && s.name.starts_with(token))
            .count();
        let name = match repeats {
            0 => token.to_string(),
            n => format!("{token}#{}", n + 1),
        };
        steps.push(Step {
            comet,
            ..Step::new(&name, patches)
        });
    }
    at_least_two(steps, "--ladder")
}

/// The step before `token` (`+item` or `-item`) with a patch added or
/// removed (`previous,+name` or `previous,-name` in abcid's spelling), or
/// with a CometBFT setting put or dropped.
fn relative(steps: &[Step], spec: &str, token: &str, item: &str) -> Result<(String, Vec<String>)> {
    let Some(previous) = steps.last() else {
        bail!(
            "--ladder `{spec}` starts with a relative step `{token}`: start from `none` or `all`"
        );
    };
    let Some(setting) = item.strip_prefix(COMET) else {
        let patch = if token.starts_with('+') { item } else { token };
        return Ok((
            format!("{},{patch}", previous.patches),
            previous.comet.clone(),
        ));
    };
    let adding = token.starts_with('+');
    let key = comet_key(spec, token, setting, adding)?;
    let mut comet: Vec<String> = previous
        .comet
        .iter()
        .filter(|s| s.split_once('=').map(|(k, _)| k.trim()) != Some(key))
        .cloned()
        .collect();
    if adding {
        comet.push(setting.trim().to_string());
    } else if comet.len() == previous.comet.len() {
        bail!(
            "--ladder `{spec}`: `{token}` drops a CometBFT setting the step before does not have"
        );
    }
    Ok((previous.patches.clone(), comet))
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
        bail!("--ladder `{spec}`: `{token}`: `{key}` is not a config.toml key like `mempool.size`");
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
        steps.push(Step::new(name, name.to_string()));
    }
    at_least_two(steps, "--only")
}

/// Two builds of abcid, `a` then `b`, with the same patch set.
pub fn builds(a: PathBuf, b: PathBuf, patches: &str) -> Vec<Step> {
    let step = |name: &str, abcid| Step {
        abcid: Some(abcid),
        ..Step::new(name, patches.to_string())
    };
    vec![step("a", a), step("b", b)]
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
                ("+parallel-abci", "none,parallel-abci"),
                ("+rwlock", "none,parallel-abci,rwlock"),
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
                ("+rwlock", "all,rwlock", vec!["mempool.size=4000"]),
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
        assert!(err("all,+comet:mem pool=3").contains("is not a config.toml key"));
        assert!(err("all,+comet:.size=3").contains("is not a config.toml key"));
        assert!(err("all,-comet:mempool.size").contains("does not have"));
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
