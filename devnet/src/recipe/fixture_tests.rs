//! The shipped evmd recipe's edits on the real files `evmd init` (v0.7.0)
//! writes: every key and pointer exists, and the files say what the recipe
//! means once edited.

use std::path::Path;

use super::plan::{Inputs, Plan};
use super::run::apply_edits;
use super::{Overrides, Recipe};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/evmd-v0.7.0");

/// The evmd recipe planned in `dir` on ports 1..=10 (`/bin/sh` as the
/// binary: nothing runs), with the fixtures as its home's config.
fn planned(dir: &Path, overrides: &Overrides, vars: &[String]) -> (Recipe, Plan) {
    let recipe = Recipe::find("evmd").unwrap();
    let plan = Plan::new(
        &recipe,
        Inputs {
            dir,
            binary: Some(Path::new("/bin/sh")),
            vars,
            overrides,
            ports: (1..=10).collect(),
            root_address: None,
        },
    )
    .unwrap();
    let config = plan.home.join("config");
    std::fs::create_dir_all(&config).unwrap();
    for file in ["genesis.json", "config.toml", "app.toml"] {
        std::fs::copy(Path::new(FIXTURES).join(file), config.join(file)).unwrap();
    }
    (recipe, plan)
}

fn read_toml(path: &Path) -> toml::Table {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

#[test]
fn the_evmd_recipe_edits_what_evmd_init_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (recipe, plan) = planned(dir.path(), &Overrides::default(), &[]);
    apply_edits(&recipe, &plan).unwrap();
    let config = plan.home.join("config");
    let text = std::fs::read_to_string(config.join("genesis.json")).unwrap();
    let genesis: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        genesis["consensus"]["params"]["block"]["max_gas"],
        "10000000"
    );
    assert_eq!(genesis["app_state"]["evm"]["params"]["evm_denom"], "atest");
    assert_eq!(
        genesis["app_state"]["staking"]["params"]["bond_denom"],
        "atest"
    );
    assert_eq!(
        genesis["app_state"]["bank"]["denom_metadata"][0]["denom_units"][1]["exponent"],
        18
    );
    let comet = read_toml(&config.join("config.toml"));
    assert_eq!(comet["consensus"]["timeout_commit"].as_str(), Some("1s"));
    assert_eq!(comet["mempool"]["type"].as_str(), Some("app"));
    assert_eq!(comet["rpc"]["laddr"].as_str(), Some("tcp://127.0.0.1:1"));
    assert_eq!(comet["rpc"]["pprof_laddr"].as_str(), Some("127.0.0.1:3"));
    let app = read_toml(&config.join("app.toml"));
    assert_eq!(app["json-rpc"]["enable"].as_bool(), Some(true));
    assert_eq!(app["json-rpc"]["address"].as_str(), Some("127.0.0.1:5"));
    assert_eq!(app["json-rpc"]["api"].as_str(), Some("eth,txpool,net,web3"));
    assert_eq!(app["minimum-gas-prices"].as_str(), Some("0atest"));
    // What the recipe leaves alone stays as init wrote it.
    assert_eq!(app["evm"]["evm-chain-id"].as_integer(), Some(262144));
    assert_eq!(
        app["evm"]["mempool"]["global-slots"].as_integer(),
        Some(5120)
    );
}

#[test]
fn step_settings_reach_the_evmd_files_and_a_misspelt_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut overrides = Overrides::default();
    overrides.add("app:evm.mempool.global-slots=10240").unwrap();
    overrides
        .add("comet:consensus.timeout_commit=\"500ms\"")
        .unwrap();
    overrides
        .add("genesis:/consensus/params/block/max_gas=\"30000000\"")
        .unwrap();
    let vars = vec!["block_gas=20000000".to_string()];
    let (recipe, plan) = planned(dir.path(), &overrides, &vars);
    apply_edits(&recipe, &plan).unwrap();
    let config = plan.home.join("config");
    let app = read_toml(&config.join("app.toml"));
    assert_eq!(
        app["evm"]["mempool"]["global-slots"].as_integer(),
        Some(10240)
    );
    let comet = read_toml(&config.join("config.toml"));
    assert_eq!(comet["consensus"]["timeout_commit"].as_str(), Some("500ms"));
    let text = std::fs::read_to_string(config.join("genesis.json")).unwrap();
    let genesis: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        genesis["consensus"]["params"]["block"]["max_gas"], "30000000",
        "the step's setting comes last"
    );

    let mut typo = Overrides::default();
    typo.add("app:evm.mempool.global-slot=1").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (recipe, plan) = planned(dir.path(), &typo, &[]);
    let err = format!("{:#}", apply_edits(&recipe, &plan).unwrap_err());
    assert!(
        err.contains("has no key `evm.mempool.global-slot`"),
        "{err}"
    );
}
