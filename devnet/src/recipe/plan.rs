//! A recipe made concrete for one devnet: the binary found, the vars set,
//! free ports picked, every placeholder expanded. Everything that can be
//! refused is refused here, before any command runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::command::{check_executable, resolve_program, Expanded};
use super::edit::{expand_toml, Overrides};
use super::spec::{CommandSpec, Spec};
use super::{switch, template, Recipe};
use crate::tools;

/// Where a running node answers, expanded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Urls {
    /// CometBFT's RPC.
    pub comet_rpc: String,
    /// web3, for an EVM chain.
    pub web3: Option<String>,
    /// Go pprof.
    pub pprof: Option<String>,
    /// An embedded profiler-rpc server.
    pub profiler: Option<String>,
    /// CometBFT's Prometheus metrics (none recorded by a feth before
    /// 2026-12-06).
    #[serde(default)]
    pub comet_metrics: Option<String>,
    /// The app's own Prometheus metrics (likewise).
    #[serde(default)]
    pub metrics: Option<String>,
}

/// One process to start, expanded; kept in `recipe.json` so that a stopped
/// devnet starts again as it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ProcessPlan {
    /// The recipe's name for it.
    pub name: String,
    /// Its program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Where it listens once up (`HOST:PORT` or `unix://PATH`), if the
    /// recipe says.
    pub listens: Option<String>,
}

/// Everything one devnet of a recipe does, expanded.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub home: PathBuf,
    pub init: Vec<Expanded>,
    pub finish: Vec<Expanded>,
    pub export: Option<Expanded>,
    pub genesis: Vec<(String, serde_json::Value)>,
    pub comet: Vec<(String, toml::Value)>,
    pub app: Vec<(String, toml::Value)>,
    pub processes: Vec<ProcessPlan>,
    pub urls: Urls,
    pub values: BTreeMap<String, String>,
}

/// What the caller fixes: the folder, the binary, vars, settings, ports.
pub(super) struct Inputs<'a> {
    pub dir: &'a Path,
    pub binary: Option<&'a Path>,
    pub vars: &'a [String],
    pub overrides: &'a Overrides,
    pub ports: Vec<u16>,
    pub root_address: Option<String>,
}

impl Plan {
    /// Makes `recipe` concrete.
    pub fn new(recipe: &Recipe, inputs: Inputs<'_>) -> Result<Self> {
        let spec = &recipe.spec;
        let dir = std::path::absolute(inputs.dir)
            .with_context(|| format!("cannot make {} absolute", inputs.dir.display()))?;
        let home = dir.join("home");
        let mut values = BTreeMap::new();
        values.insert("dir".to_string(), text(&dir));
        values.insert("home".to_string(), text(&home));
        set_vars(recipe, inputs.vars, &mut values)?;
        if inputs.ports.len() != spec.ports.len() {
            bail!(
                "{} ports for a recipe that needs {}",
                inputs.ports.len(),
                spec.ports.len()
            );
        }
        for (name, port) in spec.ports.iter().zip(&inputs.ports) {
            values.insert(format!("{name}_port"), port.to_string());
        }
        if let Some(address) = inputs.root_address {
            values.insert("root_address".to_string(), address);
        }
        find_tools(recipe, inputs.binary.is_some(), &mut values)?;
        let binary = binary(spec, inputs.binary, &values)?;
        values.insert("binary".to_string(), text(&binary));
        expand_vars(spec, &mut values)?;
        Self::expand(spec, inputs.overrides, home, values)
    }

    fn expand(
        spec: &Spec,
        overrides: &Overrides,
        home: PathBuf,
        values: BTreeMap<String, String>,
    ) -> Result<Self> {
        let v = &values;
        let x = |s: &str| template::expand(s, v);
        let commands = |what: &str, list: &[CommandSpec]| -> Result<Vec<Expanded>> {
            let each = list.iter().enumerate();
            each.map(|(i, c)| command(&format!("{what}[{i}]"), c, v))
                .collect()
        };
        let export = spec.root_key.as_ref().and_then(|k| k.export.as_ref());
        let mut genesis = Vec::new();
        for edit in &spec.genesis {
            let value = match (&edit.value, &edit.json) {
                (Some(value), _) => serde_json::to_value(expand_toml(value, v)?)?,
                (None, Some(json)) => serde_json::from_str(&x(json)?).with_context(|| {
                    format!(
                        "genesis `{}`: `{json}` is not JSON once expanded",
                        edit.pointer
                    )
                })?,
                (None, None) => bail!("genesis `{}`: no value", edit.pointer),
            };
            genesis.push((edit.pointer.clone(), value));
        }
        genesis.extend(overrides.genesis.iter().cloned());
        let table = |t: &BTreeMap<String, toml::Value>, extra: &[(String, toml::Value)]| {
            let mut out = Vec::new();
            for (key, value) in t {
                out.push((key.clone(), expand_toml(value, v)?));
            }
            out.extend(extra.iter().cloned());
            Ok::<_, anyhow::Error>(out)
        };
        let mut processes = Vec::new();
        for p in &spec.process {
            let program = program(p.program.as_deref(), v)?;
            check_executable(&program, &format!("process `{}`", p.name))?;
            let listens = p.listens.as_deref().map(x).transpose()?;
            check_socket_path(&p.name, listens.as_deref())?;
            processes.push(ProcessPlan {
                name: p.name.clone(),
                program,
                args: switch::process_args(p, v)?,
                listens,
            });
        }
        let e = &spec.endpoints;
        let switched = |name: &str, url: &Option<String>| -> Result<Option<String>> {
            if let Some(var) = e.when.get(name) {
                if !switch::is_on(var, v, &format!("`endpoints.{name}`"))? {
                    return Ok(None);
                }
            }
            url.as_deref().map(x).transpose()
        };
        let urls = Urls {
            comet_rpc: x(&e.comet_rpc)?,
            web3: e.web3.as_deref().map(x).transpose()?,
            pprof: switched("pprof", &e.pprof)?,
            profiler: switched("profiler", &e.profiler)?,
            comet_metrics: e.comet_metrics.as_deref().map(x).transpose()?,
            metrics: e.metrics.as_deref().map(x).transpose()?,
        };
        if let Some(logs) = &spec.logs {
            super::check_log_format(&logs.format, &x(&logs.format)?)?;
        }
        if !overrides.app.is_empty() && spec.files.app.is_none() {
            bail!("app: settings given, but the recipe names no app config file (`files.app`)");
        }
        Ok(Self {
            init: commands("init", &spec.init)?,
            finish: commands("finish", &spec.finish)?,
            export: export
                .map(|c| command("root_key.export", c, v))
                .transpose()?,
            genesis,
            comet: table(&spec.comet, &overrides.comet)?,
            app: table(&spec.app, &overrides.app)?,
            processes,
            urls,
            home,
            values,
        })
    }
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

/// The recipe's vars with `NAME=VALUE` overrides; an unknown name is
/// refused with the recipe's own ([`Recipe::given_var`]).
fn set_vars(
    recipe: &Recipe,
    given: &[String],
    values: &mut BTreeMap<String, String>,
) -> Result<()> {
    values.extend(recipe.spec.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    for item in given {
        let (name, value) = recipe.given_var(item)?;
        values.insert(name.to_string(), value.to_string());
    }
    Ok(())
}

/// A `unix://PATH` a process listens on must fit in a socket address
/// (`sun_path`, [`crate::MAX_SOCKET_PATH`] bytes): refused, naming what to
/// do, before anything runs.
fn check_socket_path(process: &str, listens: Option<&str>) -> Result<()> {
    let Some(path) = listens.and_then(|a| a.strip_prefix("unix://")) else {
        return Ok(());
    };
    let len = path.len();
    if len > crate::MAX_SOCKET_PATH {
        bail!(
            "process `{process}` listens on {path}, {len} bytes, longer than a unix socket \
             path takes ({}): give a shorter --dir, or a TCP address through the recipe's var \
             for it (the abcid recipe's: --var 'abci_addr=127.0.0.1:${{abci_port}}')",
            crate::MAX_SOCKET_PATH
        );
    }
    Ok(())
}

/// Each var's value with the names it uses put in (a port, `${dir}`), the
/// recipe's own and those given alike; a var may not use another var.
fn expand_vars(spec: &Spec, values: &mut BTreeMap<String, String>) -> Result<()> {
    for name in spec.vars.keys() {
        let raw = values.get(name).cloned().unwrap_or_default();
        super::var_uses_no_var(spec, name, &raw)?;
        let value = template::expand(&raw, values).with_context(|| format!("var `{name}`"))?;
        values.insert(name.clone(), value);
    }
    Ok(())
}

/// The node binary: the one given, else the recipe's default.
fn binary(spec: &Spec, given: Option<&Path>, values: &BTreeMap<String, String>) -> Result<PathBuf> {
    let path = match (given, &spec.binary.default) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(default)) => PathBuf::from(template::expand(default, values)?),
        (None, None) => bail!(
            "recipe `{}` has no default binary: give the chain's node binary with --binary PATH",
            spec.name
        ),
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    check_executable(&path, "--binary")?;
    Ok(path)
}

/// The pinned CometBFT (installed when missing) and this workspace's abcid,
/// found only when the recipe uses `${cometbft}` or `${abcid}`.
fn find_tools(
    recipe: &Recipe,
    binary_given: bool,
    values: &mut BTreeMap<String, String>,
) -> Result<()> {
    let used = tools_used(recipe, binary_given);
    if used.contains(&"cometbft") {
        values.insert("cometbft".into(), text(&tools::cometbft(true)?));
    }
    if used.contains(&"abcid") {
        values.insert("abcid".into(), text(&tools::abcid()?));
    }
    Ok(())
}

/// Which of the tools (`cometbft`, `abcid`) the recipe's strings use; the
/// default binary's only when no binary is given (`--binary`, a build of
/// `feth compare`), so a given binary needs no default one to be found.
fn tools_used(recipe: &Recipe, binary_given: bool) -> Vec<&'static str> {
    let strings = super::edit::strings(&recipe.spec);
    let uses = |name: &str| {
        strings
            .iter()
            .filter(|(place, _)| !(binary_given && place == "binary.default"))
            .any(|(_, t)| template::names(t).is_ok_and(|n| n.contains(&name)))
    };
    ["cometbft", "abcid"]
        .into_iter()
        .filter(|tool| uses(tool))
        .collect()
}

fn program(given: Option<&str>, values: &BTreeMap<String, String>) -> Result<PathBuf> {
    resolve_program(&template::expand(given.unwrap_or("${binary}"), values)?)
}

fn command(place: &str, c: &CommandSpec, values: &BTreeMap<String, String>) -> Result<Expanded> {
    let x = |s: &str| template::expand(s, values);
    Ok(Expanded {
        place: place.to_string(),
        program: program(c.program.as_deref(), values).with_context(|| place.to_string())?,
        args: c.args.iter().map(|a| x(a)).collect::<Result<_>>()?,
        stdin: c.stdin.as_deref().map(x).transpose()?,
        secret: c.secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SH: &str = r#"
name = "sh"
load = "kvstore"
ports = ["rpc", "p2p"]
[binary]
default = "/bin/sh"
[vars]
timeout_commit = "1s"
[[init]]
args = ["-c", "mkdir -p ${home}/config"]
[comet]
"rpc.laddr" = "tcp://127.0.0.1:${rpc_port}"
"consensus.timeout_commit" = "${timeout_commit}"
[[genesis]]
pointer = "/gas"
json = "${rpc_port}"
[[process]]
name = "node"
args = ["-c", "sleep 60", "${p2p_port}"]
[endpoints]
comet_rpc = "http://127.0.0.1:${rpc_port}"
comet_metrics = "http://127.0.0.1:${p2p_port}/metrics"
"#;

    fn plan(vars: &[&str], binary: Option<&Path>) -> Result<Plan> {
        plan_of(&Recipe::parse(SH, "test").unwrap(), vars, binary)
    }

    /// `recipe` planned in `/tmp/feth-plan` with `vars`, ports 100 and 200.
    fn plan_of(recipe: &Recipe, vars: &[&str], binary: Option<&Path>) -> Result<Plan> {
        let vars: Vec<String> = vars.iter().map(|s| s.to_string()).collect();
        let inputs = Inputs {
            dir: Path::new("/tmp/feth-plan"),
            binary,
            vars: &vars,
            overrides: &Overrides::default(),
            ports: vec![100, 200],
            root_address: None,
        };
        Plan::new(recipe, inputs)
    }

    #[test]
    fn a_given_binary_needs_no_default_binary_found() {
        let abcid = Recipe::find("abcid").unwrap();
        assert_eq!(tools_used(&abcid, false), ["cometbft", "abcid"]);
        assert_eq!(tools_used(&abcid, true), ["cometbft"]);
    }

    #[test]
    fn every_placeholder_is_expanded_from_vars_ports_and_folders() {
        let p = plan(&["timeout_commit=250ms"], None).unwrap();
        assert_eq!(p.home, Path::new("/tmp/feth-plan/home"));
        assert_eq!(
            p.init[0].args,
            ["-c", "mkdir -p /tmp/feth-plan/home/config"]
        );
        assert_eq!(p.init[0].program, Path::new("/bin/sh"));
        assert_eq!(
            p.comet,
            [
                (
                    "consensus.timeout_commit".into(),
                    toml::Value::String("250ms".into())
                ),
                (
                    "rpc.laddr".into(),
                    toml::Value::String("tcp://127.0.0.1:100".into())
                ),
            ]
        );
        assert_eq!(p.genesis, [("/gas".into(), serde_json::json!(100))]);
        assert_eq!(p.processes[0].args, ["-c", "sleep 60", "200"]);
        assert_eq!(p.urls.comet_rpc, "http://127.0.0.1:100");
        let metrics = p.urls.comet_metrics.as_deref();
        assert_eq!(metrics, Some("http://127.0.0.1:200/metrics"));
        assert_eq!(p.urls.metrics, None, "none in the recipe");
    }

    #[test]
    fn a_vars_value_takes_ports_and_folders_the_recipes_and_a_given_one_alike() {
        let text = SH.replace(
            "timeout_commit = \"1s\"",
            "timeout_commit = \"1s\"\naddr = \"unix://${dir}/node.sock\"",
        );
        let text = text.replace("\"sleep 60\"", "\"${addr}\"");
        let text = text.replace("name = \"node\"", "name = \"node\"\nlistens = \"${addr}\"");
        let recipe = Recipe::parse(&text, "test").unwrap();
        let args =
            |vars: &[&str]| plan_of(&recipe, vars, None).map(|p| p.processes[0].args.clone());
        let own = args(&[]).unwrap();
        assert_eq!(own, ["-c", "unix:///tmp/feth-plan/node.sock", "200"]);
        let given = args(&["addr=127.0.0.1:${p2p_port}"]).unwrap();
        assert_eq!(given, ["-c", "127.0.0.1:200", "200"]);
        let err = format!("{:#}", args(&["addr=${timeout_commit}"]).unwrap_err());
        assert!(err.contains("uses the var `${timeout_commit}`"), "{err}");
        let err = format!("{:#}", args(&["addr=${nothing}"]).unwrap_err());
        assert!(
            err.contains("var `addr`") && err.contains("${nothing}"),
            "{err}"
        );
        let long = format!("addr=unix:///{}/node.sock", "d".repeat(100));
        let err = format!("{:#}", args(&[&long]).unwrap_err());
        assert!(
            err.contains("longer than a unix socket path takes (107)"),
            "{err}"
        );
        let looped = text.replace("node.sock", "${timeout_commit}");
        let err = format!("{:#}", Recipe::parse(&looped, "test").unwrap_err());
        assert!(err.contains("`vars.addr`"), "{err}");
    }

    #[test]
    fn a_log_format_held_in_a_var_is_checked_with_its_default_and_when_given() {
        let text = SH.replace(
            "timeout_commit = \"1s\"",
            "timeout_commit = \"1s\"\nlog = \"plain\"",
        );
        let text = format!("{text}[logs]\nprocess = \"node\"\nformat = \"${{log}}\"\n");
        let recipe = Recipe::parse(&text, "test").unwrap();
        let planned = |var: &str| plan_of(&recipe, &[var], None).map(|_| ());
        planned("log=json").unwrap();
        let err = format!("{:#}", planned("log=xml").unwrap_err());
        assert!(
            err.contains("`logs.format = \"${log}\"` (`xml` once expanded): not one of plain"),
            "{err}"
        );
        let bad_default = text.replace("log = \"plain\"", "log = \"xml\"");
        let err = format!("{:#}", Recipe::parse(&bad_default, "test").unwrap_err());
        assert!(err.contains("(`xml` once expanded)"), "{err}");
    }

    #[test]
    fn a_switch_var_turns_a_processs_arguments_and_an_endpoint_on_and_off() {
        let text = SH.replace(
            "timeout_commit = \"1s\"",
            "timeout_commit = \"1s\"\nprof = \"true\"",
        );
        let group = r#"{ when = "prof", args = ["--prof", "${p2p_port}"] },
            { unless = "prof", args = ["--no-prof"] }]"#;
        let text = text.replace("\"${p2p_port}\"]", group);
        let endpoint = "profiler = \"http://127.0.0.1:${p2p_port}\"\n";
        let text = format!("{text}{endpoint}[endpoints.when]\nprofiler = \"prof\"\n");
        let recipe = Recipe::parse(&text, "test").unwrap();
        let on = plan_of(&recipe, &[], None).unwrap();
        assert_eq!(on.processes[0].args, ["-c", "sleep 60", "--prof", "200"]);
        assert_eq!(on.urls.profiler.as_deref(), Some("http://127.0.0.1:200"));
        let off = plan_of(&recipe, &["prof=false"], None).unwrap();
        assert_eq!(off.processes[0].args, ["-c", "sleep 60", "--no-prof"]);
        assert_eq!(off.urls.profiler, None);
        let err = format!("{:#}", plan_of(&recipe, &["prof=no"], None).unwrap_err());
        assert!(err.contains("var `prof` is `no`"), "{err}");
    }

    #[test]
    fn an_unknown_var_or_a_missing_binary_is_refused_before_anything_runs() {
        let err = format!("{:#}", plan(&["timeout=1s"], None).unwrap_err());
        assert!(
            err.contains("has no var `timeout` (its vars: timeout_commit)"),
            "{err}"
        );
        let err = format!("{:#}", plan(&["timeout_commit"], None).unwrap_err());
        assert!(err.contains("expected NAME=VALUE"), "{err}");
        let missing = Path::new("/no/such/evmd");
        let err = format!("{:#}", plan(&[], Some(missing)).unwrap_err());
        assert!(
            err.contains("--binary: /no/such/evmd does not exist"),
            "{err}"
        );
    }
}
