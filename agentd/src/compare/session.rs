//! A step's node kept alive across the rounds of a comparison: started
//! from its chain recipe (abcid's built-in one unless `--chain` names
//! another), funded and warmed once, its knee searched once, then paused
//! (SIGSTOP to its processes) while other steps are measured and resumed
//! (SIGCONT) for its own windows. A paused node costs the machine nothing,
//! so it cannot disturb the step being measured, and it keeps its warm
//! caches and funded senders. Its chain grows over the rounds: drift that
//! the interleaving spreads over every step alike.

use std::path::Path;
use std::time::Duration;

use alloy_primitives::{B256, U256};
use anyhow::{Context, Result};

use super::conditions::{NodeConditions, CONFIG_KEYS};
use super::deploy::{Deployer, Phase};
use super::etl::{self, EtlFigures, EtlSource};
use super::ladder::Step;
use super::node::{AfterRun, MeasuredNode, RunRecords};
use super::profile::{self, EmbeddedNode};
use super::report::Settings;
use crate::accounts::KeySet;
use crate::devnet::recipe::{
    LoadKind, Overrides, Recipe, RecipeDevnet, RecipeOptions, RecipeState, ABCI_TCP_ADDR,
};
use crate::eth::EthClient;
use crate::go_profile::blocks::BlocksConfig;
use crate::go_profile::StepGoProfile;
use crate::kvstore::{KvProbe, KvReferenceConfig, KvTarget};
use crate::load::scenario::Scenario;
use crate::progress;
use crate::saturate::{EvmProbe, EvmProbeConfig, Probe, StepMeasure, WindowExtras};

/// Seconds of load under the profiled blocks.
const PROFILE_SECS: f64 = 5.0;

/// The PIDs of a devnet's processes.
fn pids(net: &RecipeDevnet) -> Vec<u32> {
    net.state.processes.iter().map(|p| p.pid).collect()
}

/// The `KEY=VALUE` settings a devnet's `config.toml` holds for `keys`.
fn comet_settings(net: &RecipeDevnet, keys: &[&str]) -> Result<Vec<String>> {
    crate::devnet::config::read_settings(&comet_home(&net.state), keys)
}

/// The folder whose `config/config.toml` is a recipe devnet's CometBFT
/// config (the recipe's `files.comet`, two levels up).
fn comet_home(state: &RecipeState) -> std::path::PathBuf {
    let file = state.home().join(&state.recipe.files.comet);
    file.parent()
        .and_then(Path::parent)
        .map_or_else(|| state.home(), Path::to_path_buf)
}

/// The load on a step's node: signed EVM transactions, or the kvstore
/// application's `key=value` ones.
pub enum StepProbe {
    /// Through web3.
    Evm(EvmProbe),
    /// Through CometBFT's `broadcast_tx_*`.
    Kv(KvProbe),
}

impl StepProbe {
    async fn step(&mut self, rate: f64, seconds: f64) -> Result<StepMeasure> {
        match self {
            Self::Evm(p) => p.step(rate, seconds).await,
            Self::Kv(p) => p.step(rate, seconds).await,
        }
    }

    /// A window with what a comparison reads besides (none for kvstore).
    async fn window(&mut self, rate: f64, seconds: f64) -> Result<(StepMeasure, WindowExtras)> {
        match self {
            Self::Evm(p) => p.step_with_extras(rate, seconds).await,
            Self::Kv(p) => Ok((p.step(rate, seconds).await?, WindowExtras::default())),
        }
    }

    fn rpc_retries(&self) -> u64 {
        match self {
            Self::Evm(p) => p.rpc_retries(),
            Self::Kv(p) => p.rpc_retries(),
        }
    }

    fn web3_url(&self) -> Option<&str> {
        match self {
            Self::Evm(p) => Some(p.web3_url()),
            Self::Kv(_) => None,
        }
    }

    fn comet_rpc(&self) -> Option<&str> {
        match self {
            Self::Evm(p) => p.comet_rpc(),
            Self::Kv(p) => Some(p.rpc_url()),
        }
    }
}

/// A step's devnet with its probe.
pub struct StepNode {
    /// The devnet (stopped when dropped); `None` for a live node.
    pub net: Option<Box<RecipeDevnet>>,
    /// The load on it.
    pub probe: StepProbe,
    /// What the node calls itself.
    pub version: String,
    /// The step's CometBFT settings as its `config.toml` holds them
    /// (`KEY=VALUE`); empty for a live node and for a step that sets none.
    pub comet: Vec<String>,
    /// A live node's deploy command for this step, run before each window.
    pub deployer: Option<Deployer>,
    /// A live node's Go pprof (`--pprof`), profiled per block with
    /// `--profile-blocks`.
    pub pprof: Option<String>,
    paused: bool,
}

impl StepNode {
    /// Starts `step`'s devnet of `recipe` in `dir` and connects the probe:
    /// an EVM chain's senders funded from its root account (the scenario's
    /// contracts deployed), or a kvstore's `key=value` load.
    pub async fn start_recipe(
        recipe: &Recipe,
        step: &Step,
        settings: &Settings,
        load: (Duration, Option<Scenario>),
        dir: &Path,
    ) -> Result<Self> {
        let opts = recipe_options(recipe, step, settings, dir)?;
        let net = RecipeDevnet::up(recipe, &opts)
            .await
            .with_context(|| format!("starting the `{}` devnet", recipe.spec.name))?;
        let (probe, version) = match recipe.spec.load {
            LoadKind::Evm => evm_probe(&net, settings, load, dir).await?,
            LoadKind::Kvstore => kv_probe(&net, load.0)?,
        };
        let comet_keys: Vec<&str> = step
            .comet
            .iter()
            .filter_map(|s| s.split('=').next())
            .collect();
        let comet = comet_settings(&net, &comet_keys)?;
        Ok(Self {
            net: Some(Box::new(net)),
            probe,
            version,
            comet,
            deployer: None,
            pprof: None,
            paused: false,
        })
    }

    /// A running node measured as it is (the probe's first endpoint):
    /// never paused.
    pub async fn live(probe: EvmProbeConfig) -> Result<Self> {
        let web3 = probe
            .endpoints
            .first()
            .context("a live node's web3 endpoint")?;
        let client = EthClient::new(web3, Duration::from_secs(10))?;
        let version: String = client
            .call("web3_clientVersion", serde_json::json!([]))
            .await?;
        let probe = EvmProbe::connect(probe).await?;
        Ok(Self {
            net: None,
            probe: StepProbe::Evm(probe),
            version,
            comet: Vec::new(),
            deployer: None,
            pprof: None,
            paused: false,
        })
    }

    fn signal(&self, sig: libc::c_int) -> Result<()> {
        let Some(net) = &self.net else {
            return Ok(());
        };
        for pid in pids(net) {
            let pid = libc::pid_t::try_from(pid).context("a PID out of range")?;
            // SAFETY: kill(2) with a PID this process started and a valid signal.
            if unsafe { libc::kill(pid, sig) } != 0 {
                let err = std::io::Error::last_os_error();
                anyhow::bail!("cannot signal the node's process {pid}: {err}");
            }
        }
        Ok(())
    }
}

impl Probe for StepNode {
    async fn step(&mut self, rate: f64, seconds: f64) -> Result<StepMeasure> {
        self.probe.step(rate, seconds).await
    }

    fn rpc_retries(&self) -> u64 {
        self.probe.rpc_retries()
    }
}

impl MeasuredNode for StepNode {
    async fn window(&mut self, rate: f64, seconds: f64) -> Result<(StepMeasure, WindowExtras)> {
        self.probe.window(rate, seconds).await
    }

    /// A live node with a deploy command: deployed, waited for, and its
    /// CPU measured over the PIDs the deploy wrote (if any) from now on.
    async fn before(&mut self, phase: Phase) -> Result<()> {
        let Some(deployer) = &self.deployer else {
            return Ok(());
        };
        let deployed = deployer.deploy(phase).await?;
        if let StepProbe::Evm(probe) = &mut self.probe {
            probe.set_node_pids(deployed.pids);
        }
        Ok(())
    }

    /// Stops the devnet's processes where they are (SIGSTOP); a live node
    /// is left alone.
    fn pause(&mut self) -> Result<()> {
        self.signal(libc::SIGSTOP)?;
        self.paused = true;
        Ok(())
    }

    /// Lets them go on (SIGCONT).
    fn resume(&mut self) -> Result<()> {
        self.signal(libc::SIGCONT)?;
        self.paused = false;
        Ok(())
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn comet(&self) -> &[String] {
        &self.comet
    }

    /// Read from the node; for a devnet, its `config.toml` too.
    async fn conditions(&self) -> NodeConditions {
        let config = match &self.net {
            Some(net) => comet_settings(net, &CONFIG_KEYS),
            None => Ok(Vec::new()),
        };
        let (config, unread) = match config {
            Ok(c) => (c, None),
            Err(e) => (Vec::new(), Some(format!("config.toml: {e:#}"))),
        };
        let web3 = self.probe.web3_url();
        let mut c = NodeConditions::read(web3, self.probe.comet_rpc(), &config).await;
        c.unread.extend(unread);
        c
    }

    /// A devnet's logs through the etl, and its profiles when asked; a
    /// live node's logs are not feth's to read.
    async fn after_run(&mut self, ctx: AfterRun<'_>) -> Result<RunRecords> {
        let (first, last) = (ctx.window.first_height + 1, ctx.window.last_height);
        let source = self.net.as_ref().and_then(|n| EtlSource::recipe(&n.state));
        let etl = match source {
            Some(source) => recipe_etl(&source, first, last, &ctx).await,
            None => None,
        };
        let records = match (ctx.profile_blocks > 0, self.embedded()) {
            (false, _) => RunRecords::default(),
            (true, Some(node)) => self.profiled(&node, &ctx).await?,
            (true, None) => RunRecords {
                go: self.go_profiled(&ctx).await,
                ..RunRecords::default()
            },
        };
        Ok(RunRecords { etl, ..records })
    }
}

/// A recipe devnet's log through the etl; `None`, with a warning, when the
/// etl cannot read it (a chain's log it does not know): the comparison goes
/// on without those figures.
async fn recipe_etl(
    source: &EtlSource,
    first: u64,
    last: u64,
    ctx: &AfterRun<'_>,
) -> Option<EtlFigures> {
    match etl::window(source, first, last).await {
        Ok(figures) => Some(figures),
        Err(e) => {
            let step = &ctx.step.name;
            progress::println(ctx.bar, format!("warning: step {step}: no etl: {e:#}"));
            None
        }
    }
}

impl StepNode {
    /// The step's node when its app embeds profiler-rpc (abcid, or any
    /// recipe devnet whose recipe names a `profiler` endpoint).
    fn embedded(&self) -> Option<EmbeddedNode> {
        let s = &self.net.as_ref()?.state;
        let app = s.processes.iter().find(|p| p.name != "cometbft");
        Some(EmbeddedNode {
            app: app.map_or_else(|| s.recipe.name.clone(), |p| p.name.clone()),
            profiler: s.urls.profiler.clone()?,
            comet_rpc: s.urls.comet_rpc.clone(),
            pprof: s.urls.pprof.clone(),
        })
    }

    /// Profiles a few blocks of the step under the overload, as abcid's
    /// steps are, on any node whose app embeds profiler-rpc: the app's block
    /// profiles (under `<out>/<step>/`), CometBFT's own CPU over the same
    /// load (under `<out>/cometbft/<step>/`) and the whole node's profile
    /// of both (in `<out>/node/<step>/`). What could not be taken is left
    /// out with a warning; the comparison goes on.
    async fn profiled(&mut self, node: &EmbeddedNode, ctx: &AfterRun<'_>) -> Result<RunRecords> {
        let folder = file_name(&ctx.step.name);
        let app_dir = ctx.out.join(&folder);
        let comet_dir = ctx.out.join("cometbft").join(&folder);
        let load = self.probe.step(ctx.rate, PROFILE_SECS);
        let app = profile::capture(node, ctx.profile_blocks, &app_dir, load);
        let comet = profile::capture_cometbft(node, &comet_dir);
        let (app, comet) = tokio::join!(app, comet);
        let warn = |what: &str, why: String| {
            let step = &ctx.step.name;
            progress::println(ctx.bar, format!("warning: step {step}: no {what}: {why}"));
        };
        let app = match app? {
            profile::Captured::Profiles(dir) => Some(dir),
            profile::Captured::Nothing(why) => {
                warn("flamegraph", why);
                None
            }
        };
        let (cometbft, window) = comet
            .map_err(|e| warn("CometBFT profile", format!("{e:#}")))
            .ok()
            .unzip();
        let whole = match (&app, window) {
            (Some(blocks), Some(window)) => {
                let (step, name) = (&ctx.step.name, &node.app);
                let title = format!("step {step}: the whole node, {name} and CometBFT");
                let dir = ctx.out.join("node").join(&folder);
                profile::whole_node(name, blocks, window, &dir, &title)
                    .map_err(|e| warn("whole-node profile", format!("{e:#}")))
                    .ok()
            }
            _ => None,
        };
        Ok(RunRecords {
            etl: None,
            app,
            cometbft,
            node: whole,
            go: None,
        })
    }

    /// A Go node profiled per block under the overload (under
    /// `<out>/go/<step>/`), its samples split by role: a recipe chain's
    /// node, or a live one given `--pprof`. `None`, with a warning, when its
    /// recipe names no pprof endpoint or the capture fails.
    async fn go_profiled(&mut self, ctx: &AfterRun<'_>) -> Option<StepGoProfile> {
        let warn = |why: String| {
            let step = &ctx.step.name;
            progress::println(
                ctx.bar,
                format!("warning: step {step}: no per-block profile: {why}"),
            );
        };
        let (pprof_url, comet_rpc, label) = match self.go_endpoints() {
            Ok(Some(endpoints)) => endpoints,
            Ok(None) => return None,
            Err(why) => {
                warn(why);
                return None;
            }
        };
        let cfg = BlocksConfig {
            pprof_url,
            comet_rpc,
            blocks: ctx.profile_blocks,
            capture_secs: None,
            label,
            timeout: Duration::from_secs(120),
        };
        let out = ctx.out.join("go").join(file_name(&ctx.step.name));
        let block_secs = (ctx.window.block_time_p50_ms / 1e3).max(1.0);
        let secs = PROFILE_SECS.max(2.0 + f64::from(ctx.profile_blocks) * block_secs);
        let load = self.probe.step(ctx.rate, secs);
        match profile::capture_go(&cfg, &out, load).await {
            Ok(report) => Some(StepGoProfile::from(&report)),
            Err(e) => {
                warn(format!("{e:#}"));
                None
            }
        }
    }

    /// The Go pprof, CometBFT RPC and process label of the node to profile
    /// per block: a recipe devnet's (an error naming the recipe when it
    /// serves no pprof), a live node's given `--pprof`; `None` otherwise.
    fn go_endpoints(&self) -> Result<Option<(String, String, String)>, String> {
        match &self.net {
            Some(net) => {
                let s = &net.state;
                let pprof = s.urls.pprof.clone().ok_or_else(|| {
                    format!("the {} recipe names no pprof endpoint", s.recipe.name)
                })?;
                let label = s
                    .recipe
                    .logs
                    .as_ref()
                    .map_or("node", |l| l.process.as_str());
                Ok(Some((pprof, s.urls.comet_rpc.clone(), label.to_string())))
            }
            None => match (&self.pprof, self.probe.comet_rpc()) {
                (Some(pprof), Some(rpc)) => {
                    Ok(Some((pprof.clone(), rpc.to_string(), "node".into())))
                }
                (Some(_), None) => {
                    Err("the node's CometBFT RPC is not known: give --comet-rpc".into())
                }
                (None, _) => Ok(None),
            },
        }
    }
}

/// A step name as a file name (`+rwlock` → `plus-rwlock`).
pub fn file_name(step: &str) -> String {
    step.replace('+', "plus-").replace(['/', ' ', '#'], "_")
}

impl Drop for StepNode {
    /// Resumes a paused node so that the devnet's own stop (SIGTERM, then
    /// SIGKILL) finds it running and it exits cleanly.
    fn drop(&mut self) {
        if self.paused {
            let _ = self.signal(libc::SIGCONT);
        }
    }
}

/// The EVM load on a recipe devnet: its senders funded from the root
/// account; and what the node calls itself.
async fn evm_probe(
    net: &RecipeDevnet,
    settings: &Settings,
    (warmup, scenario): (Duration, Option<Scenario>),
    dir: &Path,
) -> Result<(StepProbe, String)> {
    let s = &net.state;
    let web3 = s
        .urls
        .web3
        .clone()
        .context("an EVM recipe's web3 endpoint")?;
    let key_file = s.root_key.clone().context("an EVM recipe's root key")?;
    let client = EthClient::new(&web3, Duration::from_secs(10))?;
    let version: String = client
        .call("web3_clientVersion", serde_json::json!([]))
        .await?;
    let root = crate::keys::read_key_file(&key_file)?;
    let keys = fund(&client, &root, settings.senders, dir).await?;
    let probe = EvmProbe::connect(EvmProbeConfig {
        comet_rpc: Some(s.urls.comet_rpc.clone()),
        node_pids: pids(net),
        warmup,
        scenario,
        ..EvmProbeConfig::new(vec![web3], keys)
    })
    .await?;
    Ok((StepProbe::Evm(probe), version))
}

/// The kvstore load on a recipe devnet; the binary's version as its name.
fn kv_probe(net: &RecipeDevnet, warmup: Duration) -> Result<(StepProbe, String)> {
    let s = &net.state;
    let log = s.etl_log().unwrap_or_else(|| s.dir.join("logs"));
    let target = KvTarget::running(s.urls.comet_rpc.clone(), pids(net), log);
    let cfg = KvReferenceConfig {
        warmup,
        ..KvReferenceConfig::new(&s.dir)
    };
    let name = format!(
        "{} {}",
        s.recipe.name,
        s.binary_version
            .as_deref()
            .unwrap_or("(version not printed)")
    );
    Ok((StepProbe::Kv(KvProbe::connect(target, cfg)?), name))
}

/// A recipe devnet's options for `step`: its binary, the comparison's
/// `timeout_commit` and block gas as the recipe's vars of those names (when
/// given and the recipe has them), abcid's patch set as its `patches` var,
/// and the step's `comet:` and `app:` settings. A `comet:abci=…` step also
/// sets the recipe's `abci` var when it has one: the app must serve the
/// transport CometBFT dials (abcid's `--abci-protocol`); for gRPC, which
/// dials TCP, its `abci_addr` var becomes `127.0.0.1:${abci_port}`.
fn recipe_options(
    recipe: &Recipe,
    step: &Step,
    settings: &Settings,
    dir: &Path,
) -> Result<RecipeOptions> {
    let has = |name: &str| recipe.spec.vars.contains_key(name);
    let mut vars = Vec::new();
    if let Some(t) = settings
        .timeout_commit
        .as_ref()
        .filter(|_| has("timeout_commit"))
    {
        vars.push(format!("timeout_commit={t}"));
    }
    if let Some(gas) = settings.block_gas_limit.filter(|_| has("block_gas")) {
        vars.push(format!("block_gas={gas}"));
    }
    let (shared_vars, shared): (Vec<&String>, Vec<&String>) = settings
        .every_step
        .iter()
        .partition(|s| s.starts_with("var:"));
    vars.extend(shared_vars.iter().map(|s| s["var:".len()..].to_string()));
    match step.patches.as_str() {
        "base" => {}
        patches if has("patches") => vars.push(format!("patches={patches}")),
        other => anyhow::bail!(
            "step `{}`: `{other}` is a patch set, and recipe `{}` has no `patches` var; \
             start a recipe chain's ladder from `base`",
            step.name,
            recipe.spec.name
        ),
    }
    if let Some(abci) = abci_transport(&step.comet)?.filter(|_| has("abci")) {
        if abci == "grpc" && has("abci_addr") {
            vars.push(format!("abci_addr={ABCI_TCP_ADDR}"));
        }
        vars.push(format!("abci={abci}"));
    }
    let mut overrides = Overrides::default();
    let comet = step.comet.iter().map(|s| format!("comet:{s}"));
    let own = comet.chain(step.recipe.iter().cloned());
    for setting in shared.into_iter().cloned().chain(own) {
        overrides.add(&setting)?;
    }
    Ok(RecipeOptions {
        dir: dir.to_path_buf(),
        binary: step.abcid.clone(),
        vars,
        overrides,
        fresh: true,
        // Every step's ports free: steps run side by side.
        ports: Default::default(),
    })
}

/// The ABCI transport a step's CometBFT settings set (`abci=grpc`), if any.
fn abci_transport(comet: &[String]) -> Result<Option<String>> {
    let mut transport = None;
    for setting in comet {
        let (key, value) = crate::devnet::config::parse_override(setting)?;
        if key == "abci" {
            transport = Some(match value {
                toml::Value::String(s) => s,
                other => other.to_string(),
            });
        }
    }
    Ok(transport)
}

/// The senders, funded from the devnet's root account.
async fn fund(
    client: &EthClient,
    root: &secp256k1::SecretKey,
    senders: usize,
    dir: &Path,
) -> Result<KeySet> {
    let (keys, _) = crate::fund::fund_seeded(
        client,
        root,
        B256::repeat_byte(12),
        senders,
        U256::from(10u64).pow(U256::from(20u64)),
        &dir.join("keys.txt"),
    )
    .await
    .context("funding the senders")?;
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ladder::ladder;
    use crate::compare::report::Kind;
    use crate::compare::testing;

    fn vars(recipe: &str, spec: &str) -> Vec<Vec<String>> {
        let recipe = Recipe::find(recipe).unwrap();
        let settings = testing::settings(Kind::Patches, 1);
        ladder(spec)
            .unwrap()
            .iter()
            .map(|step| {
                recipe_options(&recipe, step, &settings, Path::new("/tmp/x"))
                    .unwrap()
                    .vars
            })
            .collect()
    }

    #[test]
    fn abcids_patch_ladder_sets_the_recipes_vars_and_a_grpc_step_its_transport() {
        let steps = vars("abcid", "none,all,+comet:abci=grpc,-comet:abci");
        let common = ["timeout_commit=500ms", "block_gas=150000000"];
        let with = |extra: &[&str]| -> Vec<String> {
            common.iter().chain(extra).map(|s| s.to_string()).collect()
        };
        assert_eq!(steps[0], with(&["patches=none"]));
        assert_eq!(steps[1], with(&["patches=all"]));
        let grpc = [
            "patches=all",
            "abci_addr=127.0.0.1:${abci_port}",
            "abci=grpc",
        ];
        assert_eq!(steps[2], with(&grpc));
        assert_eq!(steps[3], with(&["patches=all"]));
    }

    #[test]
    fn every_steps_settings_come_before_each_steps_own() {
        let recipe = Recipe::find("abcid").unwrap();
        let mut settings = testing::settings(Kind::Patches, 1);
        settings.every_step = vec![
            "var:patches=none".into(),
            "var:root_balance=5".into(),
            "comet:mempool.size=300".into(),
        ];
        let steps = ladder("all,+comet:mempool.size=7").unwrap();
        let options = |step| recipe_options(&recipe, step, &settings, Path::new("/x")).unwrap();
        let first = options(&steps[0]);
        let vars = [
            "timeout_commit=500ms",
            "block_gas=150000000",
            "patches=none",
            "root_balance=5",
            "patches=all",
        ];
        assert_eq!(first.vars, vars, "the step's patch set wins");
        let size = |n| ("mempool.size".to_string(), toml::Value::Integer(n));
        assert_eq!(first.overrides.comet, [size(300)]);
        assert_eq!(options(&steps[1]).overrides.comet, [size(300), size(7)]);
    }

    #[test]
    fn a_transport_step_on_a_recipe_without_an_abci_var_is_only_cometbfts() {
        let steps = vars("kvstore", "base,+comet:abci=\"grpc\"");
        assert!(steps
            .iter()
            .all(|v| v.iter().all(|s| !s.starts_with("abci="))));
    }
}
