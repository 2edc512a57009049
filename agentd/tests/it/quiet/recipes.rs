//! Devnets from chain recipes: CometBFT's kvstore and abcid made by their
//! shipped recipes, run, paused, loaded and stopped by PID; `feth devnet up
//! --chain` refusing bad input before anything starts.

use std::process::Command;
use std::time::Duration;

use alloy_primitives::{B256, U256};
use feth::compare::StepRun;
use feth::devnet::recipe::{Recipe, RecipeDevnet, RecipeOptions};
use feth::eth::EthClient;

/// The state letter of `pid` (`S`, `R`, `T` for stopped).
fn state_of(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim().chars().next()
}

/// Whether `pid`'s state comes to satisfy `want` within 5 s (a signal is
/// delivered asynchronously).
fn comes_to(pid: u32, want: impl Fn(Option<char>) -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if want(state_of(pid)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

async fn broadcast(rpc: &str, tx: &str) -> serde_json::Value {
    let url = format!("{rpc}/broadcast_tx_commit?tx=\"{tx}\"");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    http.get(url).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn the_kvstore_recipe_makes_a_devnet_that_commits_pauses_and_stops_by_pid() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RecipeOptions {
        dir: dir.path().join("kv"),
        vars: vec!["timeout_commit=200ms".into()],
        ..RecipeOptions::default()
    };
    let net = RecipeDevnet::up(&Recipe::find("kvstore").unwrap(), &opts)
        .await
        .unwrap();
    let rpc = net.state.urls.comet_rpc.clone();
    let done = broadcast(&rpc, "feth=recipe").await;
    assert_eq!(done["result"]["tx_result"]["code"], 0, "{done}");
    let height: u64 = done["result"]["height"].as_str().unwrap().parse().unwrap();
    assert!(height > 0, "{done}");
    let config = std::fs::read_to_string(net.state.home().join("config/config.toml")).unwrap();
    assert!(
        config.contains("timeout_commit = \"200ms\""),
        "the var reached config.toml"
    );

    let pid = net.state.processes[0].pid;
    net.pause();
    assert!(comes_to(pid, |s| s == Some('T')), "paused: SIGSTOP");
    net.resume();
    assert!(comes_to(pid, |s| s != Some('T')), "resumed: SIGCONT");
    let again = broadcast(&rpc, "feth=again").await;
    assert_eq!(again["result"]["tx_result"]["code"], 0, "{again}");
    drop(net);
    assert!(state_of(pid).is_none_or(|s| s == 'Z'), "stopped by PID");
}

#[tokio::test]
async fn the_abcid_recipe_makes_an_evm_devnet_that_feth_funds() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RecipeOptions {
        dir: dir.path().join("abcid"),
        vars: vec!["timeout_commit=200ms".into(), "block_gas=30000000".into()],
        ..RecipeOptions::default()
    };
    let net = RecipeDevnet::up(&Recipe::find("abcid").unwrap(), &opts)
        .await
        .unwrap();
    let web3 = net.state.urls.web3.clone().unwrap();
    let client = EthClient::new(&web3, Duration::from_secs(10)).unwrap();
    let version: String = client
        .call("web3_clientVersion", serde_json::json!([]))
        .await
        .unwrap();
    assert!(version.starts_with("abcid"), "{version}");
    let key_file = net.state.root_key.clone().unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&key_file).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let root = feth::keys::read_key_file(&key_file).unwrap();
    let amount = U256::from(10u64).pow(U256::from(18u64));
    let (keys, _) = feth::fund::fund_seeded(
        &client,
        &root,
        B256::repeat_byte(3),
        4,
        amount,
        &dir.path().join("keys.txt"),
    )
    .await
    .unwrap();
    let addresses = keys.addresses.clone();
    for balance in client.balances(&addresses).await {
        assert_eq!(balance.unwrap(), amount);
    }
    let genesis = std::fs::read_to_string(net.state.home().join("config/genesis.json")).unwrap();
    let genesis: serde_json::Value = serde_json::from_str(&genesis).unwrap();
    assert_eq!(genesis["consensus_params"]["block"]["max_gas"], "30000000");
    assert_eq!(genesis["app_state"]["block_gas_limit"], 30_000_000);
}

fn feth_up(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(["devnet", "up", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "refused");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `feth devnet up` with these arguments; its output and whether it
/// succeeded.
fn feth_devnet(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .arg("devnet")
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(if out.status.success() {
        &out.stdout
    } else {
        &out.stderr
    });
    (out.status.success(), text.into_owned())
}

/// `key`'s value in a kvstore, as its `abci_query` answers.
async fn kv_value(rpc: &str, key: &str) -> String {
    let url = format!("{rpc}/abci_query?data=\"{key}\"");
    let body: serde_json::Value = reqwest::get(url).await.unwrap().json().await.unwrap();
    let b64 = body["result"]["response"]["value"]
        .as_str()
        .unwrap_or_default();
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
    String::from_utf8(bytes).unwrap()
}

/// A kvstore devnet on the ports given by `feth devnet up`'s flags, stopped
/// and started again by `feth devnet up` on its folder: the same chain (a
/// transaction committed before is there), the same ports, its logs and Go
/// pprof found from its folder; started again with another build and
/// settings of how it runs, on the same chain; a restart that would change
/// the chain or its ports, another recipe, or a second devnet on a port
/// taken, is refused.
#[tokio::test]
async fn a_stopped_recipe_devnet_starts_again_as_it_was_made() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kv");
    let d = dir.to_str().unwrap();
    let ports = feth::devnet::free_ports(4).unwrap();
    let p: Vec<String> = ports.iter().map(u16::to_string).collect();
    let flags = [
        "--rpc-port",
        &p[0],
        "--p2p-port",
        &p[1],
        "--cometbft-pprof-port",
        &p[2],
        "--metrics-port",
        &p[3],
    ];
    // abcid's devnet flags set the same CometBFT keys in any recipe's node.
    let mut up = vec!["up", "--chain", "kvstore", "--dir", d, "--json"];
    up.extend(["--timeout-commit", "200ms", "--mempool-size", "3000"]);
    let (ok, out) = feth_devnet(&[&up[..], &flags].concat());
    assert!(ok, "{out}");
    let config = std::fs::read_to_string(dir.join("home/config/config.toml")).unwrap();
    let config: toml::Table = config.parse().unwrap();
    assert_eq!(
        config["consensus"]["timeout_commit"].as_str(),
        Some("200ms")
    );
    assert_eq!(config["mempool"]["size"].as_integer(), Some(3000));
    let state: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rpc = format!("http://127.0.0.1:{}", ports[0]);
    assert_eq!(state["urls"]["comet_rpc"], rpc.as_str());
    let want = serde_json::json!({"rpc": ports[0], "p2p": ports[1], "pprof": ports[2], "metrics": ports[3]});
    assert_eq!(state["ports"], want);
    let done = broadcast(&rpc, "feth=kept").await;
    let height: u64 = done["result"]["height"].as_str().unwrap().parse().unwrap();
    assert_eq!(kv_value(&rpc, "feth").await, "kept");

    let (ok, out) = feth_devnet(&["down", "--dir", d]);
    assert!(ok && out.contains("stopped 1 process"), "{out}");
    let (ok, err) = feth_devnet(&["up", "--dir", d, "--p2p-port", "1"]);
    let made = format!("whose `p2p` port is {}, not 1", p[1]);
    assert!(!ok && err.contains(&made), "{err}");
    let (ok, err) = feth_devnet(&[
        "up",
        "--dir",
        d,
        "--chain",
        "kvstore",
        "--var",
        "block_gas=5",
    ]);
    let genesis = "changes the chain's genesis (at `/consensus_params/block/max_gas`)";
    assert!(!ok && err.contains(genesis), "{err}");
    let (ok, err) = feth_devnet(&["up", "--dir", d, "--chain", "abcid"]);
    assert!(
        !ok && err.contains("holds a devnet of `kvstore`, not `abcid`"),
        "{err}"
    );

    // Another build of the node and settings of how it runs, on the same
    // chain (a pipeline's redeploy): a copy of CometBFT under another name.
    let build = tmp.path().join("cometbft-b");
    std::fs::copy(feth::devnet::tools::cometbft(false).unwrap(), &build).unwrap();
    let b = build.to_str().unwrap();
    let mut redeploy = vec![
        "up", "--dir", d, "--json", "--chain", "kvstore", "--binary", b,
    ];
    redeploy.extend(["--timeout-commit", "300ms", "--set", "mempool.size=5"]);
    let (ok, out) = feth_devnet(&redeploy);
    assert!(ok, "{out}");
    let again: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(again["ports"], want);
    assert_eq!(again["binary"], b);
    assert_eq!(again["processes"][0]["program"], b, "{again}");
    let config = std::fs::read_to_string(dir.join("home/config/config.toml")).unwrap();
    let config: toml::Table = config.parse().unwrap();
    let consensus = config["consensus"]["timeout_commit"].as_str();
    assert_eq!(consensus, Some("300ms"));
    assert_eq!(config["mempool"]["size"].as_integer(), Some(5));
    assert_eq!(kv_value(&rpc, "feth").await, "kept", "the same chain");
    let status: serde_json::Value = reqwest::get(format!("{rpc}/status"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let now: u64 = status["result"]["sync_info"]["latest_block_height"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(now > height, "it goes on from height {height}: {now}");

    // feth's commands that take a devnet's folder find the recipe's.
    let logs = feth::devnet::network::node_logs(&dir, None).unwrap();
    assert_eq!(logs[0].cometbft, dir.join("logs/cometbft.log"));
    assert_eq!(logs[0].abcid, None, "the kvstore recipe runs no abcid");
    let flames = tmp.path().join("flames");
    let profile = [
        "profiler",
        "cometbft",
        "--dir",
        d,
        "--seconds",
        "1",
        "--json",
        "--out",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args(profile)
        .arg(&flames)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let capture: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(capture["chain_id"], "feth-kvstore", "{capture}");
    assert!(
        capture["heights"].as_array().is_some_and(|h| !h.is_empty()),
        "{capture}"
    );

    let other = tmp.path().join("other");
    let o = other.to_str().unwrap();
    let q: Vec<String> = feth::devnet::free_ports(3)
        .unwrap()
        .iter()
        .map(u16::to_string)
        .collect();
    let mut second = vec!["up", "--chain", "kvstore", "--dir", o, "--rpc-port", &p[0]];
    second.extend([
        "--p2p-port",
        &q[0],
        "--cometbft-pprof-port",
        &q[1],
        "--metrics-port",
        &q[2],
    ]);
    let (ok, err) = feth_devnet(&["up", "--chain", "kvstore", "--dir", o, "--port", "ws=1"]);
    assert!(!ok && err.contains("has no port `ws`"), "{err}");
    assert!(!other.join("recipe.json").exists(), "nothing was made");
    let (ok, err) = feth_devnet(&second);
    let taken = format!("port {} (`rpc`) on 127.0.0.1 is taken", ports[0]);
    assert!(!ok && err.contains(&taken), "{err}");
    let (ok, out) = feth_devnet(&["status", "--dir", o, "--json"]);
    let made: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        ok && made["processes"] == serde_json::json!([]),
        "made, none started: {out}"
    );
    assert!(made["height"].is_null(), "not the other's chain: {out}");
    let (ok, out) = feth_devnet(&["status", "--dir", d, "--json"]);
    let running: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(ok && running["height"].as_u64() >= Some(now), "{out}");
    let (ok, out) = feth_devnet(&["down", "--dir", d]);
    assert!(ok, "{out}");
}

#[test]
fn feth_devnet_up_chain_refuses_bad_input_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("net");
    let err = feth_up(&net, &["--chain", "kvstore", "--var", "timeout=1s"]);
    assert!(err.contains("has no var `timeout`"), "{err}");
    let err = feth_up(&net, &["--chain", "evmd"]);
    assert!(
        err.contains("give the chain's node binary with --binary PATH"),
        "{err}"
    );
    let err = feth_up(&net, &["--chain", "evmd", "--binary", "/no/such/evmd"]);
    assert!(err.contains("/no/such/evmd does not exist"), "{err}");
    let err = feth_up(&net, &["--chain", "kvstore", "--app", "x=1"]);
    assert!(err.contains("names no app config file"), "{err}");
    let err = feth_up(&net, &["--chain", "kvstore", "--set", "mempool.sise=1"]);
    assert!(err.contains("no key `mempool.sise`"), "{err}");
    let err = feth_up(&net, &["--chain", "kvstore", "--root-balance", "1"]);
    assert!(
        err.contains("--root-balance sets a recipe's var `root_balance`"),
        "{err}"
    );
    let err = feth_up(&net, &["--chain", "kvstore", "--no-profiler"]);
    assert!(
        err.contains("--no-profiler sets a recipe's var `profiler`, and recipe `kvstore` has none"),
        "{err}"
    );
    let err = feth_up(&net, &["--chain", "kvstore", "--patches", "none"]);
    assert!(
        err.contains("--patches sets a recipe's var `patches`, and recipe `kvstore` has none"),
        "{err}"
    );
    let recipe = dir.path().join("bad.toml");
    std::fs::write(&recipe, "name = \"x\"\nload = \"evm\"\n").unwrap();
    let err = feth_up(&net, &["--chain", recipe.to_str().unwrap()]);
    assert!(err.contains("missing field"), "{err}");
    assert!(!net.join("recipe.json").exists(), "nothing was started");
}

/// `feth devnet up --chain abcid` with abcid's own devnet flags for the
/// genesis, the logs and the ABCI transport: the root account holds the
/// balance given, the genesis has the fee market, CometBFT reaches abcid
/// over TCP, both processes log JSON lines, abcid runs without its
/// profiler (nothing listens on its port; the devnet has no profiler URL)
/// and its own pool is bounded by `--mempool-size`; both processes'
/// metrics answer where the devnet says.
#[tokio::test]
async fn abcid_devnet_flags_reach_the_abcid_recipes_genesis_logs_and_transport() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("net");
    let d = dir.to_str().unwrap();
    let ports: Vec<String> = feth::devnet::free_ports(8)
        .unwrap()
        .iter()
        .map(u16::to_string)
        .collect();
    let flags = [
        "--rpc-port",
        "--p2p-port",
        "--abci-port",
        "--web3-port",
        "--profiler-port",
        "--metrics-port",
        "--cometbft-metrics-port",
        "--cometbft-pprof-port",
    ];
    let mut args = vec!["up", "--chain", "abcid", "--dir", d, "--json"];
    for (flag, port) in flags.iter().zip(&ports) {
        args.extend([*flag, port.as_str()]);
    }
    let balance = "123456789000000000000";
    args.extend(["--root-balance", balance, "--fee-market", "--abci-tcp"]);
    args.extend(["--log-format", "json", "--timeout-commit", "200ms"]);
    args.extend(["--no-profiler", "--mempool-size", "3000"]);
    let (ok, out) = feth_devnet(&args);
    assert!(ok, "{out}");
    let state: serde_json::Value = serde_json::from_str(&out).unwrap();
    let abcid = state["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "abcid")
        .unwrap();
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", abcid["pid"])).unwrap();
    let cmdline: Vec<_> = cmdline
        .split(|b| *b == 0)
        .map(String::from_utf8_lossy)
        .collect();
    let pool = cmdline
        .windows(2)
        .any(|w| w[0] == "--app-mempool-size" && w[1] == "3000");
    assert!(
        pool,
        "abcid's own pool is bounded as CometBFT's: {cmdline:?}"
    );
    assert_eq!(state["urls"]["profiler"], serde_json::Value::Null, "{out}");
    let profiler = format!("127.0.0.1:{}", ports[4]);
    let refused = std::net::TcpStream::connect(&profiler).map(|_| ());
    assert_eq!(
        refused.map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionRefused),
        "abcid runs without its profiler; nothing listens on {profiler}"
    );

    for name in ["metrics", "comet_metrics"] {
        let url = state["urls"][name].as_str().unwrap();
        let body = reqwest::get(url).await.unwrap().text().await.unwrap();
        assert!(body.contains("# TYPE"), "{name} at {url}: {body}");
    }
    let web3 = state["urls"]["web3"].as_str().unwrap();
    let client = EthClient::new(web3, Duration::from_secs(10)).unwrap();
    let root = feth::keys::read_key_file(&dir.join("root.key")).unwrap();
    let address = feth::keys::address_of(&root);
    let held = client.balances(&[address]).await.remove(0).unwrap();
    assert_eq!(held, balance.parse::<U256>().unwrap());
    let home = dir.join("home/config");
    let genesis = std::fs::read_to_string(home.join("genesis.json")).unwrap();
    let genesis: serde_json::Value = serde_json::from_str(&genesis).unwrap();
    let fee = serde_json::json!({"elasticity": 2, "max_change_denominator": 8});
    assert_eq!(genesis["app_state"]["fee_market"], fee);
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    let config: toml::Table = config.parse().unwrap();
    let abci = format!("127.0.0.1:{}", ports[2]);
    assert_eq!(config["proxy_app"].as_str(), Some(abci.as_str()));
    assert_eq!(config["log_format"].as_str(), Some("json"));
    for name in ["cometbft", "abcid"] {
        let log = std::fs::read_to_string(dir.join(format!("logs/{name}.log"))).unwrap();
        let first = log.lines().find(|l| !l.trim().is_empty()).unwrap();
        let line: Result<serde_json::Value, _> = serde_json::from_str(first);
        assert!(line.is_ok_and(|v| v.is_object()), "{name}: {first}");
    }
    let (ok, out) = feth_devnet(&["down", "--dir", d]);
    assert!(ok && out.contains("stopped 2 process"), "{out}");
}

/// A short comparison of two settings of CometBFT's kvstore, both devnets
/// made by its recipe with settings every step shares (`--var`, `--set`):
/// each step's conditions are read from its own node, and a 300-transaction
/// mempool (the step's own setting, over the shared 5,000) is seen to hold
/// at most 300 and every block to at most that many, where 5,000 backs up
/// past it under the overload. Each step's first round profiles CometBFT per block
/// (its Go pprof): both steps' CPU split by role, and the second step's
/// differential flamegraph against the first.
#[test]
fn a_compare_of_two_kvstore_settings_runs_on_recipe_devnets() {
    let profiles = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .args([
            "compare",
            "--chain",
            "kvstore",
            "--ladder",
            "base,+comet:mempool.size=300",
        ])
        .args(["--var", "block_gas=100000000", "--set", "mempool.size=5000"])
        .args([
            "--timeout-commit",
            "200ms",
            "--rounds",
            "2",
            "--seconds",
            "2",
        ])
        .args([
            "--step-secs",
            "2",
            "--warmup-secs",
            "1",
            "--max-steps",
            "4",
            "--start",
            "400",
        ])
        .args([
            "--no-reference",
            "--profile-blocks",
            "2",
            "--out",
            profiles.path().to_str().unwrap(),
            "--quiet",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r: feth::compare::CompareReport = serde_json::from_slice(&out.stdout).unwrap();
    let mempools: Vec<_> = r
        .setups
        .iter()
        .map(|s| s.conditions.as_ref().unwrap().mempool.clone().unwrap())
        .collect();
    assert_eq!(mempools, ["flood, size 5000", "flood, size 300"]);
    let shared = ["var:block_gas=100000000", "comet:mempool.size=5000"];
    assert_eq!(r.settings.every_step, shared);
    for setup in &r.setups {
        let c = setup.conditions.as_ref().unwrap();
        assert_eq!(c.timeout_commit.as_deref(), Some("200ms"), "{c:?}");
        assert_eq!(c.block_max_gas, Some(100_000_000), "--var block_gas: {c:?}");
    }
    assert_eq!(r.runs.len(), 4, "2 steps × 2 rounds");
    for run in &r.runs {
        // CometBFT's log, as the recipe names it, through the etl.
        let etl = run.etl.as_ref();
        let etl = etl.unwrap_or_else(|| panic!("the recipe's log through the etl: {stderr}"));
        assert!(etl.valid > 0 && etl.blocks > 0, "{etl:?}");
    }
    let pooled = |m: &feth::saturate::StepMeasure| m.mempool_start.max(m.mempool_end).unwrap();
    for run in r.runs.iter().filter(|run| run.step != "base") {
        let m = &run.measure;
        let per_block = m.committed_tps * m.block_time_p50_ms / 1000.0;
        assert!(
            per_block <= 300.0 * 1.25,
            "{per_block} tx a block with a 300-tx mempool: {m:?}"
        );
        // Admission checks run side by side and each tests fullness before
        // it adds: the pool may pass its size by the checks in flight.
        assert!(pooled(m) as f64 <= 300.0 * 1.25, "{m:?}");
    }
    let base = r.runs.iter().filter(|run| run.step == "base");
    let most = base.map(|run| pooled(&run.measure)).max().unwrap();
    assert!(
        most as f64 > 300.0 * 1.25,
        "a 5,000-transaction mempool backs up past 300 under the overload: {:?}",
        r.runs
    );
    check_role_splits(&r);
}

/// Both steps' first rounds were profiled per block, their CPU split by
/// role over every sample; the second step's differential flamegraph
/// against the first is drawn, and the report says the split.
fn check_role_splits(r: &feth::compare::CompareReport) {
    let first: Vec<_> = r.runs.iter().filter(|run| run.round == 0).collect();
    assert_eq!(first.len(), 2);
    for run in &first {
        let g = run.go_profile.as_ref().expect("a per-block profile");
        assert!(g.samples > 0 && g.heights.1 > g.heights.0, "{g:?}");
        let total: f64 = g.role_shares.values().sum();
        assert!((total - 100.0).abs() < 1e-6, "{g:?}");
        assert!(g.dir.join("all.folded").is_file() && g.dir.join("session.json").is_file());
    }
    assert!(r
        .runs
        .iter()
        .filter(|run| run.round > 0)
        .all(|run| run.go_profile.is_none()));
    let (base, other): (Vec<&&StepRun>, Vec<_>) = first.iter().partition(|run| run.step == "base");
    assert!(base[0].go_diff_flamegraph.is_none());
    let diff = other[0]
        .go_diff_flamegraph
        .as_ref()
        .expect("the second step's diff");
    let svg = std::fs::read_to_string(diff).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("check_tx"),
        "role frames in the diff"
    );
    let table = feth::compare::render::table(r);
    assert!(table.contains("CPU by role, step base"), "{table}");
}

/// tendermint-abci's kvstore example app, profiler-rpc embedded in a few
/// lines (`profiler-rpc/examples/kvstore_profiled.rs`), run beside the
/// pinned CometBFT from its recipe and loaded: armed for eight one-second
/// blocks, the profiler outside abcid captures eight consecutive blocks,
/// each window
/// from one Commit to the next with the app's FinalizeBlock marked in it,
/// and splits their samples by the app's own marks: both roles, check_tx
/// and deliver_tx, each sampled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_abci_app_of_ones_own_is_profiled_per_block_from_its_recipe() {
    // The app's own CPU is small (its CheckTx and store writes are cheap):
    // enough blocks of a second each that both roles are sampled.
    const BLOCKS: usize = 8;
    use feth::kvstore::load::{client, OpenLoop, SendConfig};
    use feth_profiler_rpc::api::{EnableParams, ProfileSummary};
    use feth_profiler_rpc::{ProfilerClient, Work};

    let examples = std::path::Path::new(env!("CARGO_BIN_EXE_feth")).with_file_name("examples");
    let binary = examples.join("kvstore_profiled");
    assert!(
        binary.is_file(),
        "{} is missing: cargo build -p feth-profiler-rpc --example kvstore_profiled",
        binary.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let opts = RecipeOptions {
        dir: dir.path().join("kvrs"),
        binary: Some(binary),
        vars: vec!["timeout_commit=1s".into()],
        ..RecipeOptions::default()
    };
    let net = RecipeDevnet::up(&Recipe::find("kvstore-rs").unwrap(), &opts)
        .await
        .unwrap();
    let rpc = net.state.urls.comet_rpc.clone();
    let send = SendConfig {
        url: rpc,
        rate: 3000.0,
        slots: 32,
        batch: 10,
        run: 1,
    };
    let load = OpenLoop::start(client(32, Duration::from_secs(10)).unwrap(), send).unwrap();

    let profiler = ProfilerClient::new(net.state.urls.profiler.as_ref().unwrap(), None).unwrap();
    let params = EnableParams {
        blocks: Some(BLOCKS as i64),
        frequency_hz: Some(997),
    };
    profiler.enable(params).await.unwrap();
    let status = profiler.wait_idle(Duration::from_secs(60)).await.unwrap();
    load.stop().await.unwrap();
    assert!(!status.armed);
    let profiles = profiler.list().await.unwrap();
    assert_eq!(profiles.len(), BLOCKS, "{profiles:?}");
    let heights: Vec<u64> = profiles.iter().map(|p| p.height).collect();
    let consecutive: Vec<u64> = (0..BLOCKS as u64).map(|i| heights[0] + i).collect();
    assert_eq!(heights, consecutive);
    for p in &profiles {
        let execution = p.execution_ms.expect("the app marks FinalizeBlock");
        assert!(execution > 0.0 && execution < p.duration_ms, "{p:?}");
    }
    // Both roles, each from the app's own marks: CheckTx on the mempool
    // connection, FinalizeBlock and its store's driver thread.
    let work = |kind: Work| -> u64 {
        let of = |p: &ProfileSummary| p.work_samples.get(&kind).copied().unwrap_or(0);
        profiles.iter().map(of).sum()
    };
    let (admission, execution) = (work(Work::CheckTx), work(Work::DeliverTx));
    eprintln!(
        "kvstore-rs samples over {BLOCKS} blocks: check_tx {admission}, deliver_tx {execution}"
    );
    assert!(admission > 0 && execution > 0, "{profiles:?}");
    let checked: u64 = profiles.iter().map(|p| p.check_tx_samples).sum();
    assert_eq!(checked, admission, "check_tx files hold the check_tx work");
}
