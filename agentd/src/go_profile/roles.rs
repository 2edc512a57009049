//! Roles by frame: which part of a Go node's work each CPU sample is
//! (check_tx, proposal, deliver_tx, commit, rpc, consensus_p2p, gc_runtime,
//! other), by a table of function-name patterns.
//!
//! A Go node embeds nothing of ours, so its goroutines carry no role; the
//! function names on a stack say what the work is. The default table
//! (`agentd/roles/cosmos-sdk.toml`, documented there) covers CometBFT, the
//! Cosmos SDK and cosmos/evm; a user's own file extends it for a fork.
//! Every stack gets exactly one role, so a split always sums to the
//! profile's samples.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use feth_profiler_rpc::folded::FoldedStacks;
use serde::{Deserialize, Serialize};

/// The default table: CometBFT, the Cosmos SDK and cosmos/evm.
const DEFAULT_TABLE: &str = include_str!("../../roles/cosmos-sdk.toml");

/// What a sample's work is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameRole {
    /// Mempool admission, recheck, the app-side pool's reorg.
    CheckTx,
    /// PrepareProposal / ProcessProposal and the proposer's reap.
    Proposal,
    /// FinalizeBlock: executing the block.
    DeliverTx,
    /// Commit: store writes, the store's hash, block and state writes.
    Commit,
    /// JSON-RPC and gRPC serving.
    Rpc,
    /// The consensus state machine, p2p and gossip.
    ConsensusP2p,
    /// The garbage collector, the scheduler, the runtime's threads.
    GcRuntime,
    /// Whatever no rule names.
    Other,
}

impl FrameRole {
    /// Every role, in display order.
    pub const ALL: [FrameRole; 8] = [
        FrameRole::CheckTx,
        FrameRole::Proposal,
        FrameRole::DeliverTx,
        FrameRole::Commit,
        FrameRole::Rpc,
        FrameRole::ConsensusP2p,
        FrameRole::GcRuntime,
        FrameRole::Other,
    ];

    /// The role's name in tables, JSON and flamegraph frames.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameRole::CheckTx => "check_tx",
            FrameRole::Proposal => "proposal",
            FrameRole::DeliverTx => "deliver_tx",
            FrameRole::Commit => "commit",
            FrameRole::Rpc => "rpc",
            FrameRole::ConsensusP2p => "consensus_p2p",
            FrameRole::GcRuntime => "gc_runtime",
            FrameRole::Other => "other",
        }
    }

    fn parse(name: &str) -> Result<FrameRole> {
        FrameRole::ALL
            .into_iter()
            .find(|r| r.as_str() == name)
            .with_context(|| {
                let names: Vec<&str> = FrameRole::ALL.iter().map(|r| r.as_str()).collect();
                format!("unknown role {name:?}: use one of {}", names.join(", "))
            })
    }
}

/// Which end of the stack a rule reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum From {
    Leaf,
    Root,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[serde(default)]
    replace: bool,
    #[serde(default)]
    rule: Vec<RuleFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    role: String,
    from: From,
    #[serde(rename = "match")]
    patterns: Vec<String>,
}

/// A glob over a whole function name: `*` matches any run of characters,
/// except right after `(`, where it is the `*` of a Go pointer receiver
/// (`(*BaseApp)`).
#[derive(Clone, Debug)]
struct Glob {
    parts: Vec<String>,
}

impl Glob {
    fn new(pattern: &str) -> Result<Glob> {
        let mut parts = vec![String::new()];
        let mut prev = None;
        for c in pattern.chars() {
            let wildcard = c == '*' && prev != Some('(');
            match (wildcard, parts.last_mut()) {
                (false, Some(part)) => part.push(c),
                _ => parts.push(String::new()),
            }
            prev = Some(c);
        }
        if parts.iter().all(|p| p.trim().is_empty()) {
            bail!("pattern {pattern:?} matches every frame: name a function");
        }
        Ok(Glob { parts })
    }

    fn matches(&self, name: &str) -> bool {
        let (first, rest) = match self.parts.split_first() {
            Some(split) => split,
            None => return false,
        };
        let Some(mut tail) = name.strip_prefix(first.as_str()) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            return tail.is_empty();
        };
        for part in middle {
            match tail.find(part.as_str()) {
                Some(at) => tail = &tail[at + part.len()..],
                None => return false,
            }
        }
        tail.len() >= last.len() && tail.ends_with(last.as_str())
    }
}

#[derive(Clone, Debug)]
struct Rule {
    role: FrameRole,
    patterns: Vec<Glob>,
}

impl Rule {
    fn matches(&self, frame: &str) -> bool {
        self.patterns.iter().any(|g| g.matches(frame))
    }
}

/// A table of rules: leaf rules (innermost anchor wins), then root rules
/// (the goroutine's entry decides).
#[derive(Clone, Debug)]
pub struct RoleTable {
    leaf: Vec<Rule>,
    root: Vec<Rule>,
}

/// Samples per role, and their total.
pub type RoleSplit = BTreeMap<FrameRole, u64>;

impl RoleTable {
    /// The default table (CometBFT, the Cosmos SDK, cosmos/evm).
    pub fn default_table() -> Result<RoleTable> {
        RoleTable::parse(DEFAULT_TABLE).context("the built-in role table")
    }

    /// The default table extended by the rules of `path` (tried first), or
    /// those rules alone when the file says `replace = true`.
    pub fn with_file(path: &Path) -> Result<RoleTable> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the role table {}", path.display()))?;
        let file: TableFile = toml::from_str(&text)
            .with_context(|| format!("{} is not a role table", path.display()))?;
        let own = RoleTable::build(file.rule)
            .with_context(|| format!("in the role table {}", path.display()))?;
        if file.replace {
            return Ok(own);
        }
        let base = RoleTable::default_table()?;
        Ok(RoleTable {
            leaf: own.leaf.into_iter().chain(base.leaf).collect(),
            root: own.root.into_iter().chain(base.root).collect(),
        })
    }

    /// A table from TOML text (`[[rule]] role, from, match`).
    pub fn parse(text: &str) -> Result<RoleTable> {
        let file: TableFile = toml::from_str(text).context("not a role table")?;
        RoleTable::build(file.rule)
    }

    fn build(rules: Vec<RuleFile>) -> Result<RoleTable> {
        let mut table = RoleTable {
            leaf: Vec::new(),
            root: Vec::new(),
        };
        for (i, rule) in rules.into_iter().enumerate() {
            let role = FrameRole::parse(&rule.role).with_context(|| format!("rule {}", i + 1))?;
            if rule.patterns.is_empty() {
                bail!(
                    "rule {} ({}) matches nothing: give `match`",
                    i + 1,
                    rule.role
                );
            }
            let patterns = rule
                .patterns
                .iter()
                .map(|p| Glob::new(p))
                .collect::<Result<Vec<_>>>()
                .with_context(|| format!("rule {} ({})", i + 1, rule.role))?;
            let rule_of = Rule { role, patterns };
            match rule.from {
                From::Leaf => table.leaf.push(rule_of),
                From::Root => table.root.push(rule_of),
            }
        }
        Ok(table)
    }

    /// The role of one stack, its frames root first (no process label).
    pub fn classify(&self, frames: &[&str]) -> FrameRole {
        self.decide(frames).0
    }

    /// The role of one stack and the index of the frame that decided it
    /// (`None` for [`FrameRole::Other`]).
    pub fn decide(&self, frames: &[&str]) -> (FrameRole, Option<usize>) {
        for (i, frame) in frames.iter().enumerate().rev() {
            if let Some(rule) = self.leaf.iter().find(|r| r.matches(frame)) {
                return (rule.role, Some(i));
            }
        }
        for (i, frame) in frames.iter().enumerate() {
            if let Some(rule) = self.root.iter().find(|r| r.matches(frame)) {
                return (rule.role, Some(i));
            }
        }
        (FrameRole::Other, None)
    }

    /// The role of a folded stack rooted at a process label
    /// (`cometbft;f;g`): the label is not a frame.
    fn classify_labelled(&self, stack: &str) -> FrameRole {
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        self.classify(&frames)
    }

    /// Samples per role of `stacks` (each rooted at a process label); every
    /// role is present, zero when none of its work was sampled.
    pub fn split(&self, stacks: &FoldedStacks) -> RoleSplit {
        let mut split: RoleSplit = FrameRole::ALL.iter().map(|r| (*r, 0)).collect();
        for (stack, count) in stacks.iter() {
            *split.entry(self.classify_labelled(stack)).or_insert(0) += count;
        }
        split
    }

    /// `stacks` with each stack's role as a frame below the process label
    /// (`cometbft;check_tx;f;g`), so a flamegraph shows the roles as
    /// abcid's shows its tagged threads.
    pub fn tag(&self, stacks: &FoldedStacks) -> FoldedStacks {
        let mut tagged = FoldedStacks::new();
        for (stack, count) in stacks.iter() {
            let role = self.classify_labelled(stack).as_str();
            let tagged_stack = match stack.split_once(';') {
                Some((label, rest)) => format!("{label};{role};{rest}"),
                None => format!("{stack};{role}"),
            };
            tagged.add(tagged_stack, count);
        }
        tagged
    }
}

/// One role of a profile, with the frames that put samples in it.
#[derive(Debug, Clone, Serialize)]
pub struct RoleExplained {
    /// The role.
    pub role: FrameRole,
    /// Its samples.
    pub samples: u64,
    /// Its share of all, in per cent.
    pub share: f64,
    /// The deciding frames (for `other`: the goroutines' entries) with the
    /// most samples, most first.
    pub anchors: Vec<(String, u64)>,
}

impl RoleTable {
    /// Each role of `stacks` (rooted at a process label) with its `top`
    /// deciding frames: what to read when writing rules for a fork.
    pub fn explain(&self, stacks: &FoldedStacks, top: usize) -> Vec<RoleExplained> {
        let mut anchors: BTreeMap<FrameRole, BTreeMap<String, u64>> = BTreeMap::new();
        for (stack, count) in stacks.iter() {
            let frames: Vec<&str> = stack.split(';').skip(1).collect();
            let (role, at) = self.decide(&frames);
            let frame = frames.get(at.unwrap_or(0)).copied().unwrap_or("[no frame]");
            *anchors
                .entry(role)
                .or_default()
                .entry(frame.to_string())
                .or_insert(0) += count;
        }
        let total = stacks.total().max(1) as f64;
        FrameRole::ALL
            .iter()
            .map(|role| {
                let mut frames: Vec<(String, u64)> = anchors
                    .remove(role)
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                let samples = frames.iter().map(|(_, n)| n).sum();
                frames.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                frames.truncate(top);
                RoleExplained {
                    role: *role,
                    samples,
                    share: 100.0 * samples as f64 / total,
                    anchors: frames,
                }
            })
            .collect()
    }
}

/// `stacks` without the role frame [`RoleTable::tag`] put below the label,
/// when every stack has one (a session's `all.folded`); else as they are.
pub fn untag(stacks: &FoldedStacks) -> FoldedStacks {
    let is_role = |f: &str| FrameRole::ALL.iter().any(|r| r.as_str() == f);
    let tagged = stacks
        .iter()
        .all(|(s, _)| s.split(';').nth(1).is_some_and(is_role));
    if !tagged || stacks.is_empty() {
        return stacks.clone();
    }
    let mut plain = FoldedStacks::new();
    for (stack, n) in stacks.iter() {
        let mut frames: Vec<&str> = stack.split(';').collect();
        frames.remove(1);
        plain.add(frames.join(";"), n);
    }
    plain
}

/// Each role's share of `split`'s samples, in per cent (0 when none).
pub fn shares(split: &RoleSplit) -> BTreeMap<FrameRole, f64> {
    let total: u64 = split.values().sum();
    split
        .iter()
        .map(|(role, n)| {
            let share = match total {
                0 => 0.0,
                t => 100.0 * *n as f64 / t as f64,
            };
            (*role, share)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let g = |p: &str, name: &str| Glob::new(p).unwrap().matches(name);
        assert!(g("*.FinalizeBlock", "x/baseapp.(*BaseApp).FinalizeBlock"));
        assert!(!g(
            "*.FinalizeBlock",
            "x/baseapp.(*BaseApp).FinalizeBlock.func1"
        ));
        assert!(g(
            "*.FinalizeBlock.*",
            "x/baseapp.(*BaseApp).FinalizeBlock.func1"
        ));
        assert!(!g(
            "*.FinalizeBlock*",
            "x/types.(*ResponseFinalizeBlock).Size"
        ));
        assert!(g("runtime.bgsweep", "runtime.bgsweep"));
        assert!(!g("runtime.bgsweep", "runtime.bgsweep2"));
        assert!(g("a*b*c", "abc") && g("a*b*c", "a-b-c") && !g("a*b*c", "a-c-b"));
        assert!(!g("ab*ba", "aba"), "the prefix and suffix may not overlap");
        // `(*` is a pointer receiver, not a wildcard.
        assert!(g("*.(*Rechecker).*", "m.(*Rechecker).Run"));
        assert!(!g("*.(*Rechecker).*", "m.(*TxRechecker).Run"));
        assert!(Glob::new("**").is_err() && Glob::new(" ").is_err());
    }

    #[test]
    fn the_innermost_leaf_anchor_wins_then_the_goroutine_root() {
        let table = RoleTable::parse(
            r#"
            [[rule]]
            role = "check_tx"
            from = "leaf"
            match = ["*.CheckTx"]
            [[rule]]
            role = "deliver_tx"
            from = "leaf"
            match = ["*.FinalizeBlock"]
            [[rule]]
            role = "rpc"
            from = "root"
            match = ["net/http.*"]
            [[rule]]
            role = "consensus_p2p"
            from = "root"
            match = ["c.loop"]
            "#,
        )
        .unwrap();
        let role = |s: &str| table.classify(&s.split(';').collect::<Vec<_>>());
        assert_eq!(
            role("net/http.serve;h.rpc;m.CheckTx;k.hash"),
            FrameRole::CheckTx
        );
        assert_eq!(role("c.loop;a.FinalizeBlock;x.CheckTx"), FrameRole::CheckTx);
        assert_eq!(role("c.loop;a.FinalizeBlock;k.hash"), FrameRole::DeliverTx);
        assert_eq!(role("net/http.serve;h.call"), FrameRole::Rpc);
        // Root rules read from the root: the outer goroutine entry decides.
        assert_eq!(role("c.loop;net/http.get"), FrameRole::ConsensusP2p);
        assert_eq!(role("z.main;k.hash"), FrameRole::Other);
    }

    #[test]
    fn split_counts_every_sample_once_and_tag_puts_the_role_below_the_label() {
        let table = RoleTable::default_table().unwrap();
        let stacks = FoldedStacks::parse(
            "cometbft;runtime.gcBgMarkWorker;runtime.gcDrain 3\n\
             cometbft;x/consensus.(*State).receiveRoutine;y.(*BaseApp).FinalizeBlock;runtime.mallocgc;runtime.gcAssistAlloc;runtime.gcDrainN 2\n\
             cometbft;x/consensus.(*State).receiveRoutine;y.(*BaseApp).FinalizeBlock;k.hash 5\n\
             cometbft;main.main 1\n",
        )
        .unwrap();
        let split = table.split(&stacks);
        assert_eq!(split.values().sum::<u64>(), stacks.total());
        assert_eq!(split[&FrameRole::GcRuntime], 5);
        assert_eq!(split[&FrameRole::DeliverTx], 5);
        assert_eq!(split[&FrameRole::Other], 1);
        assert_eq!(split[&FrameRole::CheckTx], 0);
        let tagged = table.tag(&stacks);
        assert_eq!(tagged.total(), stacks.total());
        assert_eq!(
            untag(&tagged),
            stacks,
            "a session's stacks read back untagged"
        );
        assert_eq!(untag(&stacks), stacks, "untagged stacks are left alone");
        assert!(tagged
            .iter()
            .any(|(s, n)| s == "cometbft;other;main.main" && n == 1));
        let shares = shares(&split);
        assert!((shares[&FrameRole::DeliverTx] - 100.0 * 5.0 / 11.0).abs() < 1e-9);
    }

    /// Folded stacks of a real node, checked in (`tests/fixtures/go-stacks`).
    fn fixture(name: &str) -> FoldedStacks {
        let path = format!(
            "{}/tests/fixtures/go-stacks/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        FoldedStacks::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// The samples of the stacks holding every one of `frames` (as whole
    /// frame names' ends), by the role each got.
    fn roles_of(table: &RoleTable, stacks: &FoldedStacks, frames: &[&str]) -> RoleSplit {
        let mut found = RoleSplit::new();
        for (stack, n) in stacks.iter() {
            let names: Vec<&str> = stack.split(';').skip(1).collect();
            if frames
                .iter()
                .all(|f| names.iter().any(|name| name.ends_with(f)))
            {
                *found.entry(table.classify(&names)).or_insert(0) += n;
            }
        }
        found
    }

    /// Asserts that the stacks holding `frames` exist and all got `role`,
    /// apart from GC work inside them (an assist or sweep credit is GC's).
    fn all_in(table: &RoleTable, stacks: &FoldedStacks, frames: &[&str], role: FrameRole) {
        let mut found = roles_of(table, stacks, frames);
        if role != FrameRole::GcRuntime {
            found.remove(&FrameRole::GcRuntime);
        }
        found.retain(|_, n| *n > 0);
        assert_eq!(
            found.keys().collect::<Vec<_>>(),
            [&role],
            "{frames:?}: {found:?}"
        );
    }

    #[test]
    fn a_real_evmds_stacks_fall_in_their_roles_each_once() {
        let table = RoleTable::default_table().unwrap();
        let stacks = fixture("evmd-v0.7.0-150tps.folded");
        let split = table.split(&stacks);
        assert_eq!(
            split.values().sum::<u64>(),
            stacks.total(),
            "each sample once"
        );
        assert_eq!(table.tag(&stacks).total(), stacks.total());
        let eth = "/rpc/namespaces/ethereum/eth.(*PublicAPI)";
        for (frames, role) in [
            (vec![".(*TxRechecker).RecheckEVM"], FrameRole::CheckTx),
            (vec![".(*Backend).SendRawTransaction"], FrameRole::CheckTx),
            (
                vec!["legacypool.(*LegacyPool).runReorg"],
                FrameRole::CheckTx,
            ),
            (vec![".(*Mempool).SelectBy"], FrameRole::Proposal),
            (
                vec![
                    "baseapp.(*BaseApp).deliverTx",
                    "keeper.(*Keeper).ApplyTransaction",
                ],
                FrameRole::DeliverTx,
            ),
            // The app-side pool's removal of a delivered transaction is
            // mempool work, wherever it runs.
            (
                vec![
                    "baseapp.(*BaseApp).deliverTx",
                    "mempool.(*Mempool).RemoveWithReason",
                ],
                FrameRole::CheckTx,
            ),
            // An EVM state's Commit inside a transaction is execution.
            (
                vec!["baseapp.(*BaseApp).deliverTx", "statedb.(*StateDB).Commit"],
                FrameRole::DeliverTx,
            ),
            (vec!["iavl.(*MutableTree).SaveVersion"], FrameRole::Commit),
            (vec![&format!("{eth}.GetBlockByNumber")], FrameRole::Rpc),
            (
                vec![
                    "consensus.(*State).receiveRoutine",
                    "consensus.(*State).handleMsg",
                ],
                FrameRole::ConsensusP2p,
            ),
            (vec!["runtime.gcBgMarkWorker"], FrameRole::GcRuntime),
        ] {
            let frames: Vec<&str> = frames.iter().map(|f| f.as_ref()).collect();
            if frames[0] == "consensus.(*State).receiveRoutine" {
                // Consensus work that reaches FinalizeBlock or Commit is theirs.
                let found = roles_of(&table, &stacks, &frames);
                assert!(found.get(&role).copied().unwrap_or(0) > 0, "{found:?}");
                continue;
            }
            all_in(&table, &stacks, &frames, role);
        }
        let shares = shares(&split);
        // What this profile holds, as read by hand: admission and recheck
        // far above proposal, GC near a fifth, little left unnamed.
        assert!(
            shares[&FrameRole::CheckTx] > 10.0 * shares[&FrameRole::Proposal],
            "{shares:?}"
        );
        assert!(
            (10.0..30.0).contains(&shares[&FrameRole::GcRuntime]),
            "{shares:?}"
        );
        assert!(shares[&FrameRole::Other] < 5.0, "{shares:?}");
    }

    #[test]
    fn a_real_cometbfts_stacks_fall_in_their_roles() {
        let table = RoleTable::default_table().unwrap();
        let stacks = fixture("cometbft-v0.38.17-kvstore.folded");
        assert_eq!(table.split(&stacks).values().sum::<u64>(), stacks.total());
        all_in(
            &table,
            &stacks,
            &["mempool.(*CListMempool).CheckTx"],
            FrameRole::CheckTx,
        );
        all_in(
            &table,
            &stacks,
            &["state.(*BlockExecutor).CreateProposalBlock"],
            FrameRole::Proposal,
        );
        all_in(
            &table,
            &stacks,
            &["abci/client.(*localClient).Commit"],
            FrameRole::Commit,
        );
        all_in(
            &table,
            &stacks,
            &["net/http.(*response).finishRequest"],
            FrameRole::Rpc,
        );
        let applied = roles_of(&table, &stacks, &["state.(*BlockExecutor).applyBlock"]);
        assert!(
            applied.get(&FrameRole::DeliverTx).copied().unwrap_or(0) > 0,
            "{applied:?}"
        );
    }

    #[test]
    fn a_users_table_extends_the_default_or_replaces_it_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("fork.toml");
        let own = "[[rule]]\nrole = \"deliver_tx\"\nfrom = \"leaf\"\nmatch = [\"fork.Exec\"]\n";
        std::fs::write(&file, own).unwrap();
        let table = RoleTable::with_file(&file).unwrap();
        let role = |t: &RoleTable, s: &str| t.classify(&s.split(';').collect::<Vec<_>>());
        assert_eq!(
            role(&table, "net/http.(*conn).serve;fork.Exec"),
            FrameRole::DeliverTx
        );
        assert_eq!(
            role(&table, "runtime.gcBgMarkWorker;x"),
            FrameRole::GcRuntime
        );
        std::fs::write(&file, format!("replace = true\n{own}")).unwrap();
        let alone = RoleTable::with_file(&file).unwrap();
        assert_eq!(role(&alone, "runtime.gcBgMarkWorker;x"), FrameRole::Other);
        let bad = |text: &str| {
            std::fs::write(&file, text).unwrap();
            format!("{:#}", RoleTable::with_file(&file).unwrap_err())
        };
        let e = bad("[[rule]]\nrole = \"exec\"\nfrom = \"leaf\"\nmatch = [\"a\"]\n");
        assert!(
            e.contains("unknown role \"exec\"") && e.contains("deliver_tx"),
            "{e}"
        );
        let e = bad("[[rule]]\nrole = \"rpc\"\nfrom = \"middle\"\nmatch = [\"a\"]\n");
        assert!(e.contains("fork.toml is not a role table"), "{e}");
        let e = bad("[[rule]]\nrole = \"rpc\"\nfrom = \"leaf\"\nmatch = [\"*\"]\n");
        assert!(e.contains("matches every frame"), "{e}");
        let e = bad("[[rule]]\nrole = \"rpc\"\nfrom = \"leaf\"\nmatch = []\n");
        assert!(e.contains("matches nothing"), "{e}");
        assert!(RoleTable::with_file(&dir.path().join("none.toml")).is_err());
    }
}
