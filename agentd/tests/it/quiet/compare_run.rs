//! `feth compare` end to end on devnets: steps set up once and measured in
//! short interleaved rounds (a saturation window and a fixed-rate window
//! each), the tables, the JSON, the Markdown and the gate's exit statuses.
//! An A/A step and removing fast-ecrecover are measured in `feth bisect`'s
//! test (`quiet/bisect.rs`), whose probe is that ladder as three builds.

use std::process::{Command, Output};

use feth::cmd::compare::INCONCLUSIVE_STATUS;
use feth::compare::{CompareReport, Metric};
use feth::stats::Change;

/// Small, quick settings: 100 senders, 2 s windows, a search from
/// `--start` (each test's, near the devnets' knees: doubling while a step
/// keeps up, halving while it falls behind), five steps at most.
///
/// `--max-busy 50`: CI's machines are shared VMs whose steal reaches 10–30 %
/// of a 2 s window (CI saw 22 %), which the default 10 % guard rightly calls
/// a busy machine. These tests are about the comparison, not that guard; the
/// guard is tested on a machine made busy on purpose (`compare_live`).
const QUICK: [&str; 14] = [
    "--max-busy",
    "50",
    "--seconds",
    "2",
    "--senders",
    "100",
    "--step-secs",
    "2",
    "--warmup-secs",
    "1",
    "--max-steps",
    "5",
    "--quiet",
    "--json",
];

fn compare(args: &[&str]) -> (Output, Option<CompareReport>) {
    let out = Command::new(env!("CARGO_BIN_EXE_feth"))
        .arg("compare")
        .args(args)
        .args(QUICK)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).ok();
    (out, report)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The machine's load was measured in every window and judged against the
/// threshold asked for; each step's node was asked what it ran under (its
/// config.toml for what RPC does not say); one overload for every step, and
/// a fixed rate each sustains.
pub(super) fn check_conditions_and_windows(r: &CompareReport) {
    assert_eq!(r.settings.max_lost, 0.5);
    assert_eq!(r.machine.windows, 2 * r.runs.len());
    assert_eq!(r.machine.unmeasured, 0, "{:?}", r.machine);
    assert!(!r.machine.is_busy(), "{:?}", r.machine);
    for setup in &r.setups {
        let node = setup.conditions.as_ref().expect("conditions read");
        assert_eq!(node.block_max_gas, Some(150_000_000), "{node:?}");
        assert!(
            node.timeout_commit.is_some() && node.mempool.is_some(),
            "{node:?}"
        );
        assert!(node.unread.is_empty(), "{node:?}");
        assert_eq!(setup.overload_tps, r.setups[0].overload_tps);
    }
    for run in &r.runs {
        assert_eq!(run.measure.offered_tps, r.setups[0].overload_tps);
        let fixed = run.fixed.as_ref().expect("a fixed-rate window");
        assert_eq!(fixed.measure.offered_tps, r.settings.fixed_rate);
        assert!(fixed.measure.node_cpu_us_per_tx.unwrap() > 0.0, "{run:?}");
        assert!(run.extras.gas_per_sec.unwrap() > 0.0, "{run:?}");
        assert!(run.etl.as_ref().unwrap().valid > 0);
    }
}

/// A step's first round, profiled under `flames`: abcid's blocks by work,
/// CometBFT's own profile over the same load (CometBFT's frames, in its
/// `cometbft/` folder) and the whole node with both processes.
fn check_first_round_profiles(run: &feth::compare::StepRun, flames: &std::path::Path) {
    check_block_profiles_by_work(run);
    let dir = run.cometbft_profile.as_ref().expect("CometBFT's profile");
    let under_cometbft = dir.components().any(|c| c.as_os_str() == "cometbft");
    assert!(
        dir.starts_with(flames) && under_cometbft,
        "{}",
        dir.display()
    );
    let folded = std::fs::read_to_string(dir.join("cometbft.folded")).unwrap();
    assert!(
        folded
            .lines()
            .any(|l| l.contains("github.com/cometbft/cometbft/")),
        "{folded}"
    );
    let node = run.node_profile.as_ref().expect("the whole node's profile");
    let folded = std::fs::read_to_string(node.join("node.folded")).unwrap();
    for root in ["abcid;", "cometbft;"] {
        assert!(folded.lines().any(|l| l.starts_with(root)), "{folded}");
    }
}

/// A step's first round holds abcid's block profiles, downloaded from its
/// profiler, every sample under the work it was (`work;thread;…`): the
/// admission the overload keeps busy is sampled as check_tx.
fn check_block_profiles_by_work(run: &feth::compare::StepRun) {
    use feth_profiler_rpc::{diff::load_profile_set, RoleFilter, Work};
    let dir = run.flamegraph.as_ref().expect("the run's flamegraph");
    let set =
        load_profile_set(dir, RoleFilter::All).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert!(
        set.sources.len() >= 2,
        "two profiled blocks: {:?}",
        set.sources
    );
    let mut by_work = std::collections::BTreeMap::new();
    for (stack, n) in set.stacks.iter() {
        let work = stack.split(';').next().unwrap_or_default();
        assert!(
            Work::from_name(work).is_some(),
            "{stack} in {}",
            dir.display()
        );
        *by_work.entry(work.to_string()).or_insert(0u64) += n;
    }
    assert!(
        by_work.get("check_tx").is_some_and(|n| *n > 0),
        "{by_work:?}"
    );
}

/// Two rounds are too few for a verdict, whatever the steps: the gate says
/// inconclusive. The steps are devnets of the abcid recipe (`--chain
/// abcid`: abcid and CometBFT made as any recipe chain's nodes are), the
/// second with a CometBFT setting, which is read back from its node. Each
/// step's first round is profiled as abcid's devnet steps are: abcid's
/// blocks downloaded from its embedded profiler, CometBFT's own CPU, the
/// whole node of both, and the differential flamegraphs.
#[test]
fn a_gate_run_on_the_abcid_recipe_with_too_few_rounds_is_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let flames = dir.path().join("flamegraphs");
    let (out, report) = compare(&[
        "--chain",
        "abcid",
        // The recipe's blocks are 500 ms apart; 300 ms ones, as abcid's
        // devnets have, end every block-bound wait sooner.
        "--timeout-commit",
        "300ms",
        "--ladder",
        "base,+comet:mempool.size=8000",
        // No knee search: the saturation windows from 12,800 tx/s (the
        // search is the kvstore recipe compare's and compare_live's).
        "--overload-tps",
        "12800",
        "--rounds",
        "2",
        "--profile-blocks",
        "2",
        "--out",
        flames.to_str().unwrap(),
        "--max-regression",
        "5",
    ]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(INCONCLUSIVE_STATUS), "{text}");
    assert!(
        text.contains("INCONCLUSIVE: step +comet:mempool.size=8000 against base"),
        "{text}"
    );
    assert!(text.contains("a verdict needs at least 5 rounds"), "{text}");
    assert!(text.contains("base; comet mempool.size=8000"), "{text}");
    let r = report.unwrap();
    assert_eq!(
        r.steps[1].figure(Metric::Tps).unwrap().change,
        Change::TooFewRounds
    );
    assert!(r.steps[0].comet.is_empty());
    assert_eq!(r.steps[1].comet, ["mempool.size=8000"]);
    // Read from each node: the recipe's block gas, each step's mempool.
    let mempools: Vec<_> = r
        .setups
        .iter()
        .map(|s| {
            let c = s.conditions.as_ref().expect("conditions read");
            assert_eq!(c.block_max_gas, Some(150_000_000), "{c:?}");
            c.mempool.clone().unwrap()
        })
        .collect();
    assert_eq!(mempools, ["flood, size 10000", "flood, size 8000"]);
    for run in &r.runs {
        assert!(run.measure.committed_tps > 0.0, "{run:?}");
        let fixed = run.fixed.as_ref().expect("a fixed-rate window");
        // The recipe's processes (abcid and CometBFT) are the node.
        assert!(fixed.measure.node_cpu_us_per_tx.unwrap() > 0.0, "{run:?}");
        // Its log (the recipe's `[logs]`) through the etl, as abcid's own
        // devnet steps have it.
        let etl = run.etl.as_ref().expect("the recipe's log through the etl");
        assert!(etl.valid > 0 && etl.blocks > 0, "{etl:?}");
    }
    for run in r.runs.iter().filter(|x| x.step != "base") {
        assert_eq!(run.comet, ["mempool.size=8000"]);
    }
    check_recipe_profiles(&r, &flames);
    // CometBFT's own kvstore application, measured as the consensus
    // engine's ceiling beside the steps.
    let reference = r.reference.as_ref().expect("the kvstore reference");
    assert!(reference.measure.committed_tps > 0.0, "{reference:?}");
}

/// Each step's first round of a recipe compare is profiled as abcid's
/// devnet steps are ([`check_first_round_profiles`]); the second step has
/// its differential flamegraphs.
fn check_recipe_profiles(r: &CompareReport, flames: &std::path::Path) {
    for run in r.runs.iter().filter(|x| x.round == 0) {
        check_first_round_profiles(run, flames);
    }
    let second = r.runs.iter().find(|x| x.round == 0 && x.step != "base");
    let second = second.expect("the second step's first round");
    for svg in [&second.diff_flamegraph, &second.node_diff_flamegraph] {
        let svg = svg.as_ref().expect("a differential flamegraph");
        assert!(std::fs::read_to_string(svg).unwrap().contains("<svg"));
    }
}
