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
    /// The abcid binary, when not the default one.
    pub abcid: Option<PathBuf>,
}

impl Step {
    fn new(name: &str, patches: String) -> Self {
        Self {
            name: name.to_string(),
            patches,
            abcid: None,
        }
    }
}

/// Steps of a cumulative ladder (see the module docs).
pub fn ladder(spec: &str) -> Result<Vec<Step>> {
    let tokens: Vec<&str> = spec.split(',').map(str::trim).collect();
    let mut steps: Vec<Step> = Vec::with_capacity(tokens.len());
    for token in tokens {
        if token.is_empty() || token == "+" || token == "-" {
            bail!("--ladder `{spec}` has an empty step; write it like `none,+parallel-abci,+rwlock,all`");
        }
        let patches = match token.strip_prefix('+') {
            Some(name) => relative(&steps, spec, name)?,
            None if token.starts_with('-') => relative(&steps, spec, token)?,
            None => token.to_string(),
        };
        // A step named again is measured again, under its own name: `all,all`
        // is an A/A comparison, the noise floor.
        let repeats = steps
            .iter()
            .filter(|s| s.patches == patches && s.name.starts_with(token))
            .count();
        let name = match repeats {
            0 => token.to_string(),
            n => format!("{token}#{}", n + 1),
        };
        steps.push(Step::new(&name, patches));
    }
    at_least_two(steps, "--ladder")
}

/// `previous,+name` or `previous,-name` in abcid's spelling.
fn relative(steps: &[Step], spec: &str, item: &str) -> Result<String> {
    let Some(previous) = steps.last() else {
        bail!("--ladder `{spec}` starts with a relative step `{item}`: start from `none` or `all`");
    };
    Ok(format!("{},{item}", previous.patches))
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
        assert!(steps.iter().all(|s| s.abcid.is_none()));
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
