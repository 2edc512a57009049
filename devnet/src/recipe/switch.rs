//! Switch vars: a recipe var whose value, `true` or `false`, turns a group
//! of a process's arguments (`{ when = "profiler", args = [...] }`) or an
//! endpoint (`endpoints.when`) on or off, so one recipe runs a node with or
//! without a part (`feth devnet up --chain abcid --no-profiler`).

use std::collections::BTreeMap;

use anyhow::{bail, Result};

use super::spec::{ArgSpec, ProcessSpec, SwitchedArgs};
use super::template;

/// Endpoints a switch var may turn off: the node answers without them.
pub(super) const SWITCHED_ENDPOINTS: [&str; 2] = ["pprof", "profiler"];

impl SwitchedArgs {
    /// The var it switches on, and the value that gives its arguments.
    pub fn switch(&self) -> Result<(&str, bool)> {
        match (&self.when, &self.unless) {
            (Some(var), None) => Ok((var, true)),
            (None, Some(var)) => Ok((var, false)),
            _ => bail!(
                "a group of arguments names exactly one of `when` (given when the var is \
                 true) and `unless` (given when it is false)"
            ),
        }
    }
}

/// Switch var `var`'s value in `values` as a bool; anything but `true` or
/// `false` is refused, naming `place`, what it switches.
pub(super) fn is_on(var: &str, values: &BTreeMap<String, String>, place: &str) -> Result<bool> {
    match values.get(var).map(String::as_str) {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => bail!(
            "var `{var}` is `{other}`: it switches {place} on or off, so it takes true or false"
        ),
        None => bail!("{place} switches on `{var}`, which is not one of the recipe's vars"),
    }
}

/// A process's arguments, expanded, each switched group taken or left out
/// as its var says.
pub(super) fn process_args(
    p: &ProcessSpec,
    values: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    let mut out = Vec::with_capacity(p.args.len());
    for arg in &p.args {
        let group = match arg {
            ArgSpec::One(text) => std::slice::from_ref(text),
            ArgSpec::Switched(s) => {
                let (var, gives) = s.switch()?;
                let place = format!("process `{}`'s arguments {:?}", p.name, s.args);
                if is_on(var, values, &place)? != gives {
                    continue;
                }
                &s.args[..]
            }
        };
        for text in group {
            out.push(template::expand(text, values)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(args: &str) -> ProcessSpec {
        toml::from_str(&format!("name = \"node\"\nargs = {args}")).unwrap()
    }

    #[test]
    fn a_group_is_given_as_its_switch_var_says_and_a_bad_value_is_refused() {
        let p = process(
            r#"["start", { when = "prof", args = ["--prof", "${port}"] },
               { unless = "prof", args = ["--no-prof"] }, "--end"]"#,
        );
        let values = |prof: &str| {
            BTreeMap::from([
                ("prof".to_string(), prof.to_string()),
                ("port".into(), "9".into()),
            ])
        };
        let on = process_args(&p, &values("true")).unwrap();
        assert_eq!(on, ["start", "--prof", "9", "--end"]);
        let off = process_args(&p, &values("false")).unwrap();
        assert_eq!(off, ["start", "--no-prof", "--end"]);
        let err = format!("{:#}", process_args(&p, &values("yes")).unwrap_err());
        assert!(
            err.contains("var `prof` is `yes`: it switches process `node`'s arguments"),
            "{err}"
        );
    }

    #[test]
    fn a_group_names_exactly_one_of_when_and_unless() {
        for args in [
            r#"[{ args = ["-x"] }]"#,
            r#"[{ when = "a", unless = "a", args = ["-x"] }]"#,
        ] {
            let p = process(args);
            let ArgSpec::Switched(s) = &p.args[0] else {
                panic!("{args} is a group");
            };
            let err = format!("{:#}", s.switch().unwrap_err());
            assert!(err.contains("exactly one of `when`"), "{err}");
        }
    }
}
