//! The recipe checks: what is refused, with what words.

use super::*;

const MINIMAL: &str = r#"
name = "mini"
load = "kvstore"
ports = ["rpc"]
[vars]
timeout_commit = "1s"
[[process]]
name = "node"
args = ["start", "--rpc", "${rpc_port}", "--commit", "${timeout_commit}"]
[endpoints]
comet_rpc = "http://127.0.0.1:${rpc_port}"
"#;

fn refusal(text: &str) -> String {
    format!("{:#}", Recipe::parse(text, "test").unwrap_err())
}

#[test]
fn the_shipped_recipes_are_usable() {
    for (name, _) in BUILTIN {
        let recipe = Recipe::find(name).unwrap();
        assert_eq!(recipe.spec.name, name);
        assert_eq!(recipe.source, format!("builtin:{name}"));
    }
    let abcid = Recipe::find("abcid").unwrap();
    assert_eq!(abcid.spec.load, LoadKind::Evm);
    assert!(abcid.known_names().contains("root_address"));
    assert!(abcid.known_names().contains("web3_port"));
}

#[test]
fn a_minimal_recipe_parses_and_a_file_is_found_by_path() {
    let recipe = Recipe::parse(MINIMAL, "test").unwrap();
    assert_eq!(recipe.spec.ready_secs, 60);
    assert_eq!(recipe.spec.files.genesis, "config/genesis.json");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mini.toml");
    std::fs::write(&path, MINIMAL).unwrap();
    let found = Recipe::find(path.to_str().unwrap()).unwrap();
    assert_eq!(found.spec, recipe.spec);
    let err = format!("{:#}", Recipe::find("no-such-chain").unwrap_err());
    assert!(
        err.contains("no built-in recipe") && err.contains("kvstore"),
        "{err}"
    );
}

#[test]
fn a_misspelt_key_is_named() {
    let err = refusal(&MINIMAL.replace("[endpoints]", "[endpoint]"));
    assert!(err.contains("unknown field `endpoint`"), "{err}");
    let err = refusal(&MINIMAL.replace("args =", "argz ="));
    assert!(err.contains("unknown field `argz`"), "{err}");
}

#[test]
fn an_unknown_placeholder_is_named_with_where_it_is() {
    let err = refusal(&MINIMAL.replace("${timeout_commit}", "${timeout}"));
    assert!(err.contains("process `node`.args"), "{err}");
    assert!(err.contains("`${timeout}` is neither a built-in"), "{err}");
    let err = refusal(&MINIMAL.replace("\"--rpc\", \"${rpc_port}\"", "\"--rpc\", \"$rpc_port\""));
    assert!(err.contains("write `$$`"), "{err}");
}

#[test]
fn an_evm_load_needs_web3_and_a_root_key() {
    let evm = MINIMAL.replace("\"kvstore\"", "\"evm\"");
    assert!(refusal(&evm).contains("needs `endpoints.web3`"));
    let with_web3 = format!("{evm}web3 = \"http://127.0.0.1:${{rpc_port}}\"\n");
    assert!(refusal(&with_web3).contains("needs `root_key`"));
    let both = with_web3.replace(
        "[[process]]",
        "[root_key]\ngenerate = true\nexport = { args = [\"x\"] }\n[[process]]",
    );
    assert!(refusal(&both).contains("exactly one of `generate = true` and `export`"));
    let generated = with_web3.replace("[[process]]", "[root_key]\ngenerate = true\n[[process]]");
    assert!(Recipe::parse(&generated, "test").is_ok());
}

#[test]
fn names_must_be_unique_and_plain() {
    let twice = format!("{MINIMAL}[[process]]\nname = \"node\"\nargs = []\n");
    assert!(refusal(&twice).contains("`node` twice"));
    let builtin = MINIMAL.replace("timeout_commit = \"1s\"", "home = \"/x\"");
    assert!(refusal(&builtin).contains("built-in placeholder"));
    let dashed = MINIMAL.replace("ports = [\"rpc\"]", "ports = [\"rpc\", \"a-b\"]");
    assert!(refusal(&dashed).contains("`a-b` is not a name"));
    let logs = format!("{MINIMAL}[logs]\nprocess = \"other\"\nformat = \"plain\"\n");
    assert!(refusal(&logs).contains("names no process"));
    let format = format!("{MINIMAL}[logs]\nprocess = \"node\"\nformat = \"xml\"\n");
    assert!(refusal(&format).contains("not one of plain, json"));
}

#[test]
fn genesis_edits_take_one_value_and_app_edits_need_the_file() {
    let both = format!("{MINIMAL}[[genesis]]\npointer = \"/a\"\nvalue = 1\njson = \"2\"\n");
    assert!(refusal(&both).contains("exactly one of `value` and `json`"));
    let relative = format!("{MINIMAL}[[genesis]]\npointer = \"a\"\nvalue = 1\n");
    assert!(refusal(&relative).contains("starts with `/`"));
    let app = format!("{MINIMAL}[app]\n\"json-rpc.enable\" = true\n");
    assert!(refusal(&app).contains("need `files.app`"));
}

#[test]
fn a_switch_names_a_var_that_is_true_or_false_and_an_endpoint_a_node_can_lack() {
    let group = "{ when = \"prof\", args = [\"--prof\"] }, \"--commit\"";
    let switched = MINIMAL.replace("\"--commit\"", group);
    let err = refusal(&switched);
    assert!(
        err.contains("switches on `prof`, which is not one of the recipe's vars"),
        "{err}"
    );
    let var = "timeout_commit = \"1s\"\nprof = \"on\"";
    let with_var = switched.replace("timeout_commit = \"1s\"", var);
    let err = refusal(&with_var);
    assert!(err.contains("var `prof` is `on`"), "{err}");
    let ok = with_var.replace("\"on\"", "\"true\"");
    Recipe::parse(&ok, "test").unwrap();
    let err = refusal(&ok.replace("when =", "whn ="));
    assert!(err.contains("unknown field `whn`"), "{err}");
    let err = refusal(&ok.replace("\"start\"", "7"));
    assert!(err.contains("an argument (a string) or a group"), "{err}");

    let web3 = format!("{ok}web3 = \"http://x\"\n[endpoints.when]\nweb3 = \"prof\"\n");
    let err = refusal(&web3);
    assert!(
        err.contains("only pprof and profiler may be switched off"),
        "{err}"
    );
    let absent = format!("{ok}[endpoints.when]\nprofiler = \"prof\"\n");
    let err = refusal(&absent);
    assert!(err.contains("has no `endpoints.profiler`"), "{err}");
    let given = format!("{ok}profiler = \"http://x\"\n[endpoints.when]\nprofiler = \"prof\"\n");
    Recipe::parse(&given, "test").unwrap();
}
