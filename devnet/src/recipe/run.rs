//! Running a recipe: a new chain made in a folder, its processes started
//! and watched until the node answers and commits, stopped by PID.
//!
//! Folder layout: `home/` (the chain's home), `logs/NAME.log` per process,
//! `root.key` (mode 0600) for a chain with a root account, `recipe.json`
//! (the recipe, its ports, PIDs and URLs).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::edit::{apply_genesis, apply_toml, Overrides};
use super::plan::{Inputs, Plan, ProcessPlan, Urls};
use super::same_chain::{self, Redeploy};
use super::spec::Spec;
use super::Recipe;
use crate::process;
use feth_chain::eth::EthClient;
use feth_chain::keys;

/// The state file in a recipe devnet's folder.
pub const STATE_FILE: &str = "recipe.json";

/// How one devnet of a recipe is made.
#[derive(Debug, Clone, Default)]
pub struct RecipeOptions {
    /// Its folder (deleted and made anew).
    pub dir: PathBuf,
    /// The chain's node binary, when not the recipe's default.
    pub binary: Option<PathBuf>,
    /// `NAME=VALUE` for the recipe's vars.
    pub vars: Vec<String>,
    /// Settings on top of the recipe's edits.
    pub overrides: Overrides,
    /// Delete a folder that holds something (else refused).
    pub fresh: bool,
    /// Ports fixed by the recipe's name for each (`rpc`, `web3`); the
    /// recipe's other ports are free ones.
    pub ports: BTreeMap<String, u16>,
}

/// One running process of a devnet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningProcess {
    /// The recipe's name for it.
    pub name: String,
    /// Its program.
    pub program: PathBuf,
    /// Its PID.
    pub pid: u32,
    /// Its start time (`/proc/<pid>/stat`), so a reused PID is never signalled.
    pub started: Option<u64>,
    /// Its log file.
    pub log: PathBuf,
}

impl RunningProcess {
    fn exe_name(&self) -> String {
        let real = std::fs::canonicalize(&self.program).unwrap_or_else(|_| self.program.clone());
        real.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    }

    /// Whether it still runs.
    pub fn running(&self) -> bool {
        process::is_ours(self.pid, self.started, &self.exe_name())
    }
}

/// What `recipe.json` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecipeState {
    /// The recipe.
    pub recipe: Spec,
    /// Where the recipe came from.
    pub source: String,
    /// The folder.
    pub dir: PathBuf,
    /// The node binary.
    pub binary: PathBuf,
    /// Its version, when the recipe says how to ask.
    pub binary_version: Option<String>,
    /// Where it answers.
    pub urls: Urls,
    /// Its processes, in start order.
    pub processes: Vec<RunningProcess>,
    /// The root account's key file, for a chain that has one.
    pub root_key: Option<PathBuf>,
    /// The settings given on top of the recipe (`comet:`, `app:`, `genesis:`
    /// and `var:` as given).
    pub settings: Vec<String>,
    /// Its ports, by the recipe's name for each (none recorded by a feth
    /// before 2026-12-06).
    #[serde(default)]
    pub ports: BTreeMap<String, u16>,
    /// Its processes' commands, for a start again after `down`.
    #[serde(default)]
    commands: Vec<ProcessPlan>,
}

impl RecipeState {
    /// Reads `recipe.json` in `dir`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("no recipe devnet in {} (no {STATE_FILE})", dir.display()))?;
        serde_json::from_str(&text).with_context(|| format!("cannot parse {}", path.display()))
    }

    fn save(&self) -> Result<()> {
        let path = self.dir.join(STATE_FILE);
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The PIDs of its processes still running.
    pub fn pids(&self) -> Vec<u32> {
        self.processes
            .iter()
            .filter(|p| p.running())
            .map(|p| p.pid)
            .collect()
    }

    /// CometBFT's latest height, when a process of the devnet runs and its
    /// RPC answers (within 2 s); a stopped devnet's port may be another's.
    pub async fn height(&self) -> Option<u64> {
        if self.pids().is_empty() {
            return None;
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .ok()?;
        latest_height(&http, &format!("{}/status", self.urls.comet_rpc)).await
    }

    /// The chain's home folder.
    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    /// The log the etl reads, when the recipe names one.
    pub fn etl_log(&self) -> Option<PathBuf> {
        self.log_of(&self.recipe.logs.as_ref()?.process)
    }

    /// The log of the recipe's process `name` (running or not), if it has
    /// one of that name.
    pub fn log_of(&self, name: &str) -> Option<PathBuf> {
        self.recipe.process.iter().find(|p| p.name == name)?;
        Some(log_path(&self.dir, name))
    }

    /// Stops every process, the last started first (SIGTERM, then SIGKILL
    /// after `grace`). Returns how many were stopped.
    pub fn stop(&mut self, grace: Duration) -> usize {
        let mut stopped = 0;
        for p in self.processes.drain(..).rev() {
            let name = p.exe_name();
            stopped += usize::from(process::stop_spawned(p.pid, p.started, &name, grace));
        }
        stopped
    }

    /// Stops a devnet started earlier (`feth devnet down`): its processes
    /// by PID, then the state saved with none running.
    pub fn down(mut self) -> Result<usize> {
        self.signal(libc::SIGCONT);
        let stopped = self.stop(Duration::from_secs(10));
        self.save()?;
        Ok(stopped)
    }

    /// Sends `signal` to every process still running (SIGSTOP, SIGCONT).
    pub fn signal(&self, signal: i32) {
        for p in self.processes.iter().filter(|p| p.running()) {
            process::signal(p.pid, signal);
        }
    }
}

/// A recipe devnet owned by the caller: stopped when dropped.
#[derive(Debug)]
pub struct RecipeDevnet {
    /// Its recorded state.
    pub state: RecipeState,
}

impl RecipeDevnet {
    /// Makes a new chain of `recipe` in `opts.dir` and starts it; waits
    /// until CometBFT's RPC (and web3, for an EVM chain) answer and a block
    /// is committed after start. A failure stops what was started; the
    /// folder and its logs stay for a look.
    pub async fn up(recipe: &Recipe, opts: &RecipeOptions) -> Result<Self> {
        refuse_running(&opts.dir)?;
        refuse_occupied(&opts.dir, opts.fresh)?;
        let root = recipe
            .spec
            .root_key
            .as_ref()
            .filter(|k| k.generate)
            .map(|_| keys::random_key());
        let ports = choose_ports(&recipe.spec, &opts.ports)?;
        let root_address = root.as_ref().map(|k| keys::address_of(k).to_string());
        let plan = plan_of(recipe, opts, ports.clone(), root_address)?;
        let dir = plan
            .home
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot delete the old chain in {}", dir.display()))?;
        }
        std::fs::create_dir_all(dir.join("logs"))
            .with_context(|| format!("cannot create {}", dir.display()))?;
        if let Some(key) = &root {
            keys::write_secret_file(&dir.join("root.key"), keys::key_hex(key).as_bytes())?;
        }
        make_chain(recipe, &plan, &dir)?;
        let state = RecipeState {
            recipe: recipe.spec.clone(),
            source: recipe.source.clone(),
            binary: PathBuf::from(&plan.values["binary"]),
            binary_version: binary_version(recipe, &plan, &dir),
            urls: plan.urls.clone(),
            processes: Vec::new(),
            root_key: recipe.spec.root_key.as_ref().map(|_| dir.join("root.key")),
            settings: settings_text(opts),
            ports: recipe.spec.ports.iter().cloned().zip(ports).collect(),
            commands: plan.processes.clone(),
            dir,
        };
        Self::start(state).await
    }

    /// Starts the stopped devnet in `dir` again, its chain, ports and
    /// settings as it was made (`feth devnet up` on its folder); waits as
    /// [`RecipeDevnet::up`] does.
    pub async fn restart(dir: &Path) -> Result<Self> {
        refuse_running(dir)?;
        let mut state = RecipeState::load(dir)?;
        if state.commands.is_empty() {
            bail!(
                "the devnet in {} was made by an older feth that kept no commands to start \
                 it again: --fresh makes a new chain",
                dir.display()
            );
        }
        state.processes.clear();
        Self::start(state).await
    }

    /// Starts the stopped devnet in `dir` again on its chain with `change`
    /// (another build, vars or settings that leave the chain as it is:
    /// [`Redeploy`]), its `config.toml` and app config edited again; with
    /// no change, as it was made. Waits as [`RecipeDevnet::up`] does.
    pub async fn redeploy(dir: &Path, change: &Redeploy) -> Result<Self> {
        if change.is_empty() {
            return Self::restart(dir).await;
        }
        refuse_running(dir)?;
        let mut state = RecipeState::load(dir)?;
        let (recipe, made) = same_chain::made_with(&state)?;
        // The old build may be gone: the chain is compared under the new one.
        let build = Redeploy {
            binary: change.binary.clone(),
            ..Redeploy::default()
        };
        let old = same_chain::plan(&state, &recipe, &same_chain::changed(&made, &build))?;
        let opts = same_chain::changed(&made, change);
        let new = same_chain::plan(&state, &recipe, &opts)?;
        same_chain::same_chain(&old, &new)?;
        apply_configs(&recipe, &new)?;
        state.binary = PathBuf::from(&new.values["binary"]);
        state.binary_version = binary_version(&recipe, &new, &state.dir);
        state.urls = new.urls;
        state.settings = settings_text(&opts);
        state.commands = new.processes;
        state.processes.clear();
        Self::start(state).await
    }

    /// Starts `state`'s processes, once its ports are seen free, and
    /// records them; a failure stops what was started.
    async fn start(mut state: RecipeState) -> Result<Self> {
        state.save()?;
        check_free(&state.ports)?;
        let started = start_all(&mut state).await;
        state.save()?;
        if let Err(e) = started {
            state.stop(Duration::ZERO);
            state.save()?;
            return Err(e);
        }
        Ok(Self { state })
    }

    /// Leaves it running past this value (`feth devnet up`): its state, for
    /// [`RecipeState::down`] later.
    pub fn detach(self) -> RecipeState {
        let this = std::mem::ManuallyDrop::new(self);
        this.state.clone()
    }

    /// Stops its processes where they are (SIGSTOP).
    pub fn pause(&self) {
        self.state.signal(libc::SIGSTOP);
    }

    /// Lets them go on (SIGCONT).
    pub fn resume(&self) {
        self.state.signal(libc::SIGCONT);
    }
}

impl Drop for RecipeDevnet {
    fn drop(&mut self) {
        self.state.signal(libc::SIGCONT);
        self.state.stop(Duration::from_secs(10));
        let _ = self.state.save();
    }
}

/// Refuses a folder whose recipe devnet still runs.
fn refuse_running(dir: &Path) -> Result<()> {
    if let Ok(old) = RecipeState::load(dir) {
        if !old.pids().is_empty() {
            bail!(
                "a recipe devnet is running in {}; stop it with `feth devnet down --dir {}`",
                dir.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// The recipe's ports in its order: the ones `fixed` names, free ones for
/// the rest. A name the recipe lacks, port 0 or one given twice is refused
/// ([`check_free`] refuses one taken, when the processes are to start).
fn choose_ports(spec: &Spec, fixed: &BTreeMap<String, u16>) -> Result<Vec<u16>> {
    if let Some(name) = fixed.keys().find(|n| !spec.ports.contains(n)) {
        bail!(
            "recipe `{}` has no port `{name}` (its ports: {})",
            spec.name,
            spec.ports.join(", ")
        );
    }
    let mut seen = BTreeMap::new();
    for (name, &port) in fixed {
        if port == 0 {
            bail!("port `{name}` is 0: give a port number from 1 to 65535");
        }
        if let Some(other) = seen.insert(port, name) {
            bail!("ports `{other}` and `{name}` are both {port}: give each its own");
        }
    }
    // The fixed ones that can be are held while the free ones are picked,
    // so that none is picked twice.
    let held: Vec<TcpListener> = fixed
        .values()
        .filter_map(|&port| TcpListener::bind(("127.0.0.1", port)).ok())
        .collect();
    let mut free = crate::free_ports(spec.ports.len() - fixed.len())?.into_iter();
    drop(held);
    spec.ports
        .iter()
        .map(|name| match fixed.get(name) {
            Some(&port) => Ok(port),
            None => free.next().context("ran out of free ports"),
        })
        .collect()
}

/// Refuses a port taken on 127.0.0.1 (each is bound and let go: the
/// node's to take next), naming it.
fn check_free(ports: &BTreeMap<String, u16>) -> Result<()> {
    for (name, &port) in ports {
        TcpListener::bind(("127.0.0.1", port)).with_context(|| {
            format!(
                "port {port} (`{name}`) on 127.0.0.1 is taken: stop what holds it \
                 (another devnet: `feth devnet down --dir DIR`) or give `{name}` another port"
            )
        })?;
    }
    Ok(())
}

/// Refuses a folder that holds anything, unless `fresh`.
fn refuse_occupied(dir: &Path, fresh: bool) -> Result<()> {
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if occupied && !fresh {
        bail!(
            "{} is not empty; a recipe makes a new chain: --fresh deletes what is there, \
             or choose another --dir",
            dir.display()
        );
    }
    Ok(())
}

/// `recipe` planned with `opts`, on `ports` (in the recipe's order), its
/// generated root account's address when it has one.
pub(super) fn plan_of(
    recipe: &Recipe,
    opts: &RecipeOptions,
    ports: Vec<u16>,
    root_address: Option<String>,
) -> Result<Plan> {
    Plan::new(
        recipe,
        Inputs {
            dir: &opts.dir,
            binary: opts.binary.as_deref(),
            vars: &opts.vars,
            overrides: &opts.overrides,
            ports,
            root_address,
        },
    )
}

fn settings_text(opts: &RecipeOptions) -> Vec<String> {
    let o = &opts.overrides;
    let vars = opts.vars.iter().map(|v| format!("var:{v}"));
    let comet = o.comet.iter().map(|(k, v)| format!("comet:{k}={v}"));
    let app = o.app.iter().map(|(k, v)| format!("app:{k}={v}"));
    let genesis = o.genesis.iter().map(|(k, v)| format!("genesis:{k}={v}"));
    vars.chain(comet).chain(app).chain(genesis).collect()
}

/// Init, the edits, finish and the key export.
fn make_chain(recipe: &Recipe, plan: &Plan, dir: &Path) -> Result<()> {
    for cmd in &plan.init {
        cmd.run(dir)?;
    }
    apply_edits(recipe, plan)?;
    for cmd in &plan.finish {
        cmd.run(dir)?;
    }
    if let Some(export) = &plan.export {
        let out = export.run(dir)?;
        let line = out
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        let key = keys::parse_key(line)
            .context("root_key.export: its last line is not a hex private key (not shown)")?;
        keys::write_secret_file(&dir.join("root.key"), keys::key_hex(&key).as_bytes())?;
    }
    Ok(())
}

/// The genesis, `config.toml` and app config edits, in that order.
pub(super) fn apply_edits(recipe: &Recipe, plan: &Plan) -> Result<()> {
    let files = &recipe.spec.files;
    apply_genesis(&plan.home.join(&files.genesis), &plan.genesis)?;
    apply_configs(recipe, plan)
}

/// The `config.toml` and app config edits.
fn apply_configs(recipe: &Recipe, plan: &Plan) -> Result<()> {
    let files = &recipe.spec.files;
    apply_toml(&plan.home.join(&files.comet), "comet", &plan.comet)?;
    if let Some(app) = &files.app {
        apply_toml(&plan.home.join(app), "app", &plan.app)?;
    }
    Ok(())
}

/// The binary's own version line, when the recipe says how to ask.
fn binary_version(recipe: &Recipe, plan: &Plan, dir: &Path) -> Option<String> {
    let args = &recipe.spec.binary.version;
    if args.is_empty() {
        return None;
    }
    let out = Command::new(&plan.values["binary"])
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(if out.stdout.is_empty() {
        &out.stderr
    } else {
        &out.stdout
    })
    .trim()
    .to_string();
    text.lines()
        .next()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
}

/// Starts the processes in order, each after the one before listens.
async fn start_all(state: &mut RecipeState) -> Result<()> {
    let home = state.home();
    for p in state.commands.clone() {
        let running = spawn(&p, &state.dir, &home)?;
        state.processes.push(running.clone());
        if let Some(addr) = &p.listens {
            wait_listening(&running, addr).await?;
        }
    }
    wait_ready(state, Duration::from_secs(state.recipe.ready_secs)).await
}

/// Where process `name`'s output goes.
fn log_path(dir: &Path, name: &str) -> PathBuf {
    dir.join("logs").join(format!("{name}.log"))
}

fn spawn(p: &ProcessPlan, dir: &Path, home: &Path) -> Result<RunningProcess> {
    let log = log_path(dir, &p.name);
    let mut cmd = Command::new(&p.program);
    cmd.args(&p.args).current_dir(home);
    let pid = process::spawn_logged(cmd, &log)?;
    Ok(RunningProcess {
        name: p.name.clone(),
        program: p.program.clone(),
        pid,
        started: process::start_time(pid),
        log,
    })
}

fn exited(p: &RunningProcess) -> anyhow::Error {
    anyhow::anyhow!(
        "process `{}` exited during start-up (see {}):\n{}",
        p.name,
        p.log.display(),
        process::tail(&p.log, 20)
    )
}

/// Waits until `p` listens on `addr` (`HOST:PORT` or `unix://PATH`).
async fn wait_listening(p: &RunningProcess, addr: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let up = match addr.strip_prefix("unix://") {
            Some(path) => std::os::unix::net::UnixStream::connect(path).is_ok(),
            None => std::net::TcpStream::connect(addr).is_ok(),
        };
        if up {
            return Ok(());
        }
        if !p.running() {
            return Err(exited(p));
        }
        if Instant::now() > deadline {
            bail!(
                "process `{}` did not listen on {addr} within 30 s (see {})",
                p.name,
                p.log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until CometBFT's RPC answers and, after that, one more block is
/// committed; for an EVM chain, until web3 answers too.
async fn wait_ready(state: &RecipeState, wait: Duration) -> Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let status = format!("{}/status", state.urls.comet_rpc);
    let web3 = match &state.urls.web3 {
        Some(url) => Some(EthClient::new(url, Duration::from_secs(2))?),
        None => None,
    };
    let deadline = Instant::now() + wait;
    let mut first = None;
    loop {
        if let Some(p) = state.processes.iter().find(|p| !p.running()) {
            return Err(exited(p));
        }
        let height = latest_height(&http, &status).await;
        let web3_up = match &web3 {
            Some(client) => client.block_number().await.is_ok(),
            None => true,
        };
        match (first, height) {
            (Some(h), Some(now)) if now > h && web3_up => return Ok(()),
            (None, Some(now)) => first = Some(now),
            _ => {}
        }
        if Instant::now() > deadline {
            let logs: Vec<String> = state
                .processes
                .iter()
                .map(|p| p.log.display().to_string())
                .collect();
            bail!(
                "the node answered and committed no block within {} s (`ready_secs`); see {}",
                wait.as_secs(),
                logs.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// CometBFT's latest height from `/status`, if it answers.
async fn latest_height(http: &reqwest::Client, url: &str) -> Option<u64> {
    let body: serde_json::Value = http.get(url).send().await.ok()?.json().await.ok()?;
    body.pointer("/result/sync_info/latest_block_height")?
        .as_str()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = r#"
name = "two"
load = "kvstore"
ports = ["rpc", "p2p", "web3"]
[[process]]
name = "node"
args = ["${rpc_port}"]
[endpoints]
comet_rpc = "http://127.0.0.1:${rpc_port}"
"#;

    fn fixed(ports: &[(&str, u16)]) -> BTreeMap<String, u16> {
        ports.iter().map(|&(n, p)| (n.to_string(), p)).collect()
    }

    fn refusal(ports: &[(&str, u16)]) -> String {
        let spec = Recipe::parse(RECIPE, "test").unwrap().spec;
        format!("{:#}", choose_ports(&spec, &fixed(ports)).unwrap_err())
    }

    #[test]
    fn fixed_ports_keep_their_places_and_the_others_are_free_and_distinct() {
        let spec = Recipe::parse(RECIPE, "test").unwrap().spec;
        let given = crate::free_port().unwrap();
        let ports = choose_ports(&spec, &fixed(&[("p2p", given)])).unwrap();
        assert_eq!(ports.len(), 3);
        assert_eq!(ports[1], given, "in the recipe's order");
        assert!(ports[0] != given && ports[2] != given && ports[0] != ports[2]);
        assert!(ports.iter().all(|&p| p != 0));
    }

    #[test]
    fn a_port_the_recipe_lacks_given_twice_zero_or_taken_is_refused_naming_it() {
        let err = refusal(&[("ws", 8546)]);
        assert!(
            err.contains("has no port `ws` (its ports: rpc, p2p, web3)"),
            "{err}"
        );
        let err = refusal(&[("rpc", 40001), ("web3", 40001)]);
        assert!(err.contains("`rpc` and `web3` are both 40001"), "{err}");
        let err = refusal(&[("rpc", 0)]);
        assert!(err.contains("port `rpc` is 0"), "{err}");
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let err = format!("{:#}", check_free(&fixed(&[("web3", port)])).unwrap_err());
        assert!(
            err.contains(&format!("port {port} (`web3`) on 127.0.0.1 is taken")),
            "{err}"
        );
    }
}
