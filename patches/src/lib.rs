//! The tunings of abcid as named switches, what each needs, and the one
//! parser of a patch set (`all,-rwlock`) that abcid, the devnet and
//! `feth compare` share, so that a misspelt or unmet patch is refused
//! before anything starts.
//!
//! Every [`Patch`] is a real difference in code path between a "before" that a
//! straightforward first implementation would write and an "after" that the
//! Findora EVM work (Findora's article on EVM TPS optimisation) or later
//! practice found faster. No patch changes what the chain computes: the same
//! blocks give the same app hashes, receipts and CheckTx verdicts with any
//! set of patches (tested in `tests/it/patches.rs`). `none` is the "before"
//! node, `all` the tuned one.

use std::fmt;
use std::str::FromStr;

/// One switchable tuning. Each variant's doc says what the "before" path
/// does and why a reasonable engineer would have written it that way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Patch {
    /// Before: one lock around the whole application; every ABCI call of
    /// every connection and every web3 read waits for it. Why: the ABCI
    /// examples serve one connection at a time, and one lock makes the state
    /// machine obviously race-free. After: the mempool and consensus
    /// connections proceed in parallel on separate check and deliver states.
    ParallelAbci,
    /// Before: a mutex guards the committed state for every reader (web3,
    /// CheckTx, FinalizeBlock). Why: a mutex is the default shared-state tool
    /// and readers "only hold it briefly". After: a read-write lock, so
    /// readers proceed together and only Commit excludes them.
    RwLock,
    /// Before: once admitted, CheckTx executes the transaction with revm
    /// against the check state (the committed world plus what the
    /// transactions admitted since Commit did) exactly as FinalizeBlock does,
    /// builds its receipt and drops it. Why: running the very code consensus
    /// runs is the surest way to admit only what will execute. After: decode,
    /// signature, chain id, nonce, balance and intrinsic gas only. Either way
    /// the verdict is those rules' and the ledger's.
    CheckTxLite,
    /// Before: each transaction of a block executes in an EVM of its own, over
    /// its own copy-on-write layer of the block's state, merged back after
    /// (the Cosmos SDK's cache-wrap per transaction). Why: a failed or
    /// reverted transaction can then never leak a write into the block.
    /// After: one EVM and one overlay for the whole block; revm's own
    /// per-transaction journal does the rollback.
    SessionCache,
    /// Before: FinalizeBlock serialises the block's transactions and results
    /// into the store as JSON keyed by transaction hash, and Commit reads them
    /// back to write the block. Why: nothing of an uncommitted block lives
    /// only in memory, and JSON keyed by hash is what a lookup by hash wants.
    /// After: kept in memory until Commit, written once in a compact binary
    /// encoding keyed by (height, index) with a hash → position index, and
    /// redb's page cache capped.
    RamBlockTxs,
    /// Before: an info line for every transaction in CheckTx and
    /// FinalizeBlock. Why: per-transaction lines are what one reads when
    /// debugging a first node. After: the one per-block line.
    QuietLogs,
    /// Before: sender recovery with the pure-Rust `libsecp256k1` crate, as
    /// the Findora node did. Why: no C toolchain in the build, and the crate
    /// is the usual choice in Substrate-derived code. After: the C
    /// libsecp256k1 through the `secp256k1` crate.
    FastEcrecover,
    /// Before: the sender is recovered in CheckTx, again on every recheck and
    /// again in FinalizeBlock. Why: each step verifies what it is handed, and
    /// a sender is a pure function of the bytes. After: recovered once per
    /// transaction and kept in a bounded cache keyed by transaction hash
    /// (decoding and the other stateless rules still run every time).
    SenderCache,
    /// Before: CometBFT's recheck re-runs the full CheckTx on every
    /// transaction left in the mempool after each block. Why: that is what
    /// recheck means in CometBFT's own examples. After: recheck re-validates
    /// only nonce and balance, from what CheckTx recorded (no decoding,
    /// recovery or execution), and reads the committed state again only for
    /// the senders the block touched.
    LiteRecheck,
    /// Before: a web3 read (a call, an estimate, a balance, a log query)
    /// holds the lock on the committed state (and, without `parallel-abci`,
    /// the application lock) for its whole length, so Commit waits for every
    /// call in progress. Why: the committed state is one object, and reading
    /// it under its lock is the obvious race-free way. After: reads run on an
    /// immutable snapshot that Commit publishes (abcid's `snapshot` module), and on
    /// redb's own read transactions; Commit, FinalizeBlock and CheckTx never
    /// wait for a reader.
    SnapshotReads,
    /// Before: a transaction's sender is first recovered in CheckTx, which
    /// CometBFT's mempool connection runs one transaction at a time (its
    /// socket client pipelines the requests; abcid answers them in order).
    /// Why: CheckTx is where a transaction is verified, and web3 only passes
    /// the bytes on. After: the web3 worker that receives
    /// `eth_sendRawTransaction` decodes the bytes and recovers the sender
    /// into the sender cache before forwarding them, on as many threads as
    /// requests arrive on, so the serial CheckTx finds the sender there.
    /// Works with `sender-cache` (without it there is no cache to fill, and
    /// nothing is done); changes no verdict, since the cache only says which
    /// sender given bytes recover to, and CheckTx still applies every rule.
    Web3Recover,
    /// Before: FinalizeBlock executes the decided block. Why: ABCI 2.0
    /// hands the decided block to FinalizeBlock, and a proposal executed
    /// earlier may never be decided (the round changes), so that work can
    /// be thrown away. After: once ProcessProposal accepts a proposal, a
    /// thread executes it against the committed state while CometBFT signs
    /// and gathers the votes; FinalizeBlock of the same height and block
    /// hash takes that result, and any other proposal's is dropped, as the
    /// Cosmos SDK 0.50's optimistic execution does. Needs `parallel-abci`
    /// (with one application lock the thread would bypass it).
    OptimisticExecution,
    /// Before: `eth_sendRawTransaction` forwards the bytes to CometBFT's RPC
    /// (`broadcast_tx_sync`); CometBFT's mempool connection runs CheckTx one
    /// transaction at a time over the ABCI socket, keeps the transaction,
    /// and hands it to PrepareProposal. Why: CometBFT's mempool is where an
    /// ABCI application's transactions wait, and its gossip reaches every
    /// validator. After: the web3 worker runs the same CheckTx itself and
    /// keeps the transaction in abcid's own pool (abcid's `app_pool` module),
    /// PrepareProposal proposes from it, and Commit drops what the block
    /// included and rechecks the rest, as Cosmos EVM chains do with
    /// CometBFT's mempool off (`mempool.type = "nop"`, which the devnet sets
    /// with this patch). The pool is shared as CometBFT's mempool would be:
    /// each node forwards what clients send it to the pools of its peers
    /// (`--pool-peers`, which a devnet of several nodes sets), so a
    /// transaction sent to any node, a full node included, is proposed by
    /// whichever validator proposes next.
    AppMempool,
    /// Before: Commit writes the block (state, transactions, receipts, the
    /// block and its indexes) in one durable redb transaction, and returns
    /// once it is on disk, while CometBFT holds its mempool lock and no
    /// CheckTx runs. Why: what Commit acknowledges is then on disk, the
    /// plain reading of "commit". After: Commit returns once the block is in
    /// memory and readable; a writer thread writes it, in height order, in
    /// the same transaction; at most four blocks wait (Commit waits beyond);
    /// after a crash the store's head is the last block written and
    /// CometBFT's handshake replays the rest, as Sei's asynchronous storage
    /// does. Needs `ram-block-txs` (without it Commit stays synchronous).
    /// Opt-in, not in `all`: on the reference machine Commit's write no
    /// longer caps anything (the consensus connection is at most 7 % busy),
    /// committed TPS did not change, and node CPU per transaction rose by
    /// 3.4 % in one compare and an inconclusive 1.5 % in another
    /// (docs/MEASUREMENTS.md); it is for disks slower than the chain.
    AsyncCommit,
    /// Not a tuning but a mempool policy, so not in `all`: with it, CheckTx
    /// admits a bounded window of future nonces per sender and keeps them
    /// queued until their predecessors arrive (or a time limit passes), a
    /// queued transaction can be replaced by one paying 10 % more, and
    /// PrepareProposal orders each sender's transactions by nonce and leaves
    /// out any whose predecessor is missing, as Cosmos EVM chains do over
    /// CometBFT's FIFO mempool; ProcessProposal refuses a nonce gap. Without
    /// it (the default), CheckTx refuses a nonce gap (`nonce too high`) and
    /// the proposal keeps the mempool's order. It changes CheckTx verdicts on
    /// gapped input only: on gap-free input every verdict, block and app hash
    /// is the same (tested in `tests/it/patches.rs`).
    NonceQueue,
}

impl Patch {
    /// Every patch, in the order of the ladder.
    pub const ALL: [Patch; 13] = [
        Patch::ParallelAbci,
        Patch::RwLock,
        Patch::CheckTxLite,
        Patch::SessionCache,
        Patch::RamBlockTxs,
        Patch::QuietLogs,
        Patch::FastEcrecover,
        Patch::SenderCache,
        Patch::LiteRecheck,
        Patch::SnapshotReads,
        Patch::Web3Recover,
        Patch::OptimisticExecution,
        Patch::AppMempool,
    ];

    /// Tunings measured without a gain on the reference machine: switches
    /// outside `all`, named on their own (`all,async-commit`).
    pub const OPT_IN: [Patch; 1] = [Patch::AsyncCommit];

    /// The mempool policies: switches outside `all`, named on their own.
    pub const POLICIES: [Patch; 1] = [Patch::NonceQueue];

    /// Every switch: the tunings in ladder order, the opt-in tunings, then
    /// the policies.
    pub fn every() -> impl Iterator<Item = Patch> {
        Patch::ALL
            .into_iter()
            .chain(Patch::OPT_IN)
            .chain(Patch::POLICIES)
    }

    /// The patch this one needs to do anything: with it missing, this one
    /// would be in force but inert, so a set naming this one without it is
    /// refused, and removing it removes this one too.
    pub fn requires(self) -> Option<Patch> {
        match self {
            Patch::OptimisticExecution => Some(Patch::ParallelAbci),
            Patch::AsyncCommit => Some(Patch::RamBlockTxs),
            Patch::Web3Recover => Some(Patch::SenderCache),
            _ => None,
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Patch::ParallelAbci => "parallel-abci",
            Patch::RwLock => "rwlock",
            Patch::CheckTxLite => "check-tx-lite",
            Patch::SessionCache => "session-cache",
            Patch::RamBlockTxs => "ram-block-txs",
            Patch::QuietLogs => "quiet-logs",
            Patch::FastEcrecover => "fast-ecrecover",
            Patch::SenderCache => "sender-cache",
            Patch::LiteRecheck => "lite-recheck",
            Patch::SnapshotReads => "snapshot-reads",
            Patch::Web3Recover => "web3-recover",
            Patch::AsyncCommit => "async-commit",
            Patch::AppMempool => "app-mempool",
            Patch::OptimisticExecution => "optimistic-execution",
            Patch::NonceQueue => "nonce-queue",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of patches in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Patches(u16);

impl Patches {
    /// No patch: the "before" node.
    pub const NONE: Patches = Patches(0);
    /// Every tuning: the tuned node (mempool policies such as `nonce-queue`
    /// are added by name).
    pub const ALL: Patches = Patches((1 << Patch::ALL.len()) - 1);

    /// Only `patch`.
    pub fn only(patch: Patch) -> Self {
        Self(patch.bit())
    }

    /// Whether `patch` is in force.
    pub fn has(self, patch: Patch) -> bool {
        self.0 & patch.bit() != 0
    }

    /// This set with `patch` added.
    pub fn with(self, patch: Patch) -> Self {
        Self(self.0 | patch.bit())
    }

    /// This set without `patch`.
    pub fn without(self, patch: Patch) -> Self {
        Self(self.0 & !patch.bit())
    }

    /// The patches in force, in ladder order, then the policies.
    pub fn iter(self) -> impl Iterator<Item = Patch> {
        Patch::every().filter(move |p| self.has(*p))
    }
}

impl Default for Patches {
    /// The tuned node.
    fn default() -> Self {
        Self::ALL
    }
}

impl fmt::Display for Patches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::NONE {
            return f.write_str("none");
        }
        // `all` less a few tunings reads as such: `all,-app-mempool`.
        let missing = Patches(Self::ALL.0 & !self.0);
        if missing.iter().count() > MOST_LEFT_OUT {
            let names: Vec<&str> = self.iter().map(Patch::name).collect();
            return f.write_str(&names.join(","));
        }
        let mut names = vec!["all".to_string()];
        names.extend(missing.iter().map(|p| format!("-{p}")));
        let extra = Patches(self.0 & !Self::ALL.0);
        names.extend(extra.iter().map(|p| p.name().to_string()));
        f.write_str(&names.join(","))
    }
}

/// Most tunings a set may leave out of `all` and still print as
/// `all,-NAME,…`.
const MOST_LEFT_OUT: usize = 3;

/// Why a patch set is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// A name that is no patch.
    #[error("unknown patch `{name}`: use `none`, `all`, or a comma-separated list of {known}; `all,-NAME` leaves one out")]
    Unknown {
        /// The name given.
        name: String,
        /// Every patch's name.
        known: String,
    },
    /// A patch in force without the one it needs.
    #[error("`{patch}` needs `{needs}`, which the set `{set}` leaves out: add `{needs}`, or leave `{patch}` out too")]
    Unmet {
        /// The patch named.
        patch: Patch,
        /// What it needs.
        needs: Patch,
        /// The set as written.
        set: String,
    },
    /// The same item written twice with the same sign.
    #[error("`{item}` is written twice in `{set}`: write it once")]
    Twice {
        /// The item.
        item: String,
        /// The set as written.
        set: String,
    },
}

impl Patches {
    /// This set without `patch` and without every patch that needs it.
    pub fn without_dependents(self, patch: Patch) -> Self {
        Patch::every()
            .filter(|p| p.requires() == Some(patch))
            .fold(self.without(patch), Patches::without_dependents)
    }

    /// This set, or the refusal of its first patch in force without what it
    /// needs (`written`: the set as given, for the message).
    pub fn checked(self, written: &str) -> Result<Self, PatchError> {
        match self.unmet() {
            Some((patch, needs)) => Err(PatchError::Unmet {
                patch,
                needs,
                set: written.to_string(),
            }),
            None => Ok(self),
        }
    }

    /// The first patch in force whose requirement is not, with it.
    fn unmet(self) -> Option<(Patch, Patch)> {
        self.iter().find_map(|p| {
            let needs = p.requires()?;
            (!self.has(needs)).then_some((p, needs))
        })
    }
}

impl FromStr for Patches {
    type Err = PatchError;

    /// Parses `none`, `all`, `a,b,…`, or `all,-a` (every patch but `a`, and
    /// but what needs `a`), items applied left to right; refuses an unknown
    /// name, an item written twice with the same sign, and a set with a
    /// patch in force whose requirement is not ([`Patch::requires`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Patches::parse_in(s, Patches::ALL)
    }
}

impl Patches {
    /// Parses a set as [`Patches::from_str`] does, for a build whose `all`
    /// is `all` (an older abcid's `all` holds fewer tunings than this one's);
    /// `-all` still leaves every tuning out.
    pub fn parse_in(s: &str, all: Patches) -> Result<Self, PatchError> {
        let mut set = Patches::NONE;
        let mut seen = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if seen.contains(&item) {
                return Err(PatchError::Twice {
                    item: item.to_string(),
                    set: s.to_string(),
                });
            }
            seen.push(item);
            set = match item.strip_prefix('-') {
                Some("none") => set,
                Some("all") => Patch::ALL
                    .into_iter()
                    .fold(set, Patches::without_dependents),
                Some(name) => set.without_dependents(find(name)?),
                None => match item {
                    "none" => set,
                    "all" => Patches(set.0 | all.0),
                    name => set.with(find(name)?),
                },
            };
        }
        set.checked(s)
    }
}

impl FromStr for Patch {
    type Err = PatchError;

    /// One patch by its name ([`Patch::name`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        find(s.trim())
    }
}

fn find(name: &str) -> Result<Patch, PatchError> {
    Patch::every()
        .find(|p| p.name() == name)
        .ok_or_else(|| PatchError::Unknown {
            name: name.to_string(),
            known: Patch::every()
                .map(Patch::name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_every_form() {
        assert_eq!("none".parse::<Patches>().unwrap(), Patches::NONE);
        assert_eq!("all".parse::<Patches>().unwrap(), Patches::ALL);
        assert_eq!("".parse::<Patches>().unwrap(), Patches::NONE);
        let two: Patches = "rwlock, quiet-logs".parse().unwrap();
        assert!(two.has(Patch::RwLock) && two.has(Patch::QuietLogs));
        assert_eq!(two.iter().count(), 2);
        assert_eq!(two.to_string(), "rwlock,quiet-logs");
        let but_one: Patches = "all,-sender-cache".parse().unwrap();
        assert!(!but_one.has(Patch::SenderCache));
        // and what needs it: web3-recover.
        assert!(!but_one.has(Patch::Web3Recover));
        assert_eq!(but_one.iter().count(), Patch::ALL.len() - 2);
        let but_one: Patches = "all,-rwlock".parse().unwrap();
        assert_eq!(but_one.iter().count(), Patch::ALL.len() - 1);
        for patch in Patch::every().filter(|p| p.requires().is_none()) {
            let round: Patches = patch.name().parse().unwrap();
            assert_eq!(round, Patches::only(patch));
            assert_eq!(round.to_string(), patch.name());
        }
        assert_eq!(Patches::ALL.to_string(), "all");
        assert_eq!(Patches::ALL.iter().count(), 13);
        assert!(Patches::ALL.has(Patch::AppMempool));
        assert!(!Patches::ALL.has(Patch::AsyncCommit));
        let opt_in: Patches = "all,async-commit".parse().unwrap();
        assert_eq!(opt_in.to_string(), "all,async-commit");
        let queued: Patches = "all,nonce-queue".parse().unwrap();
        assert!(queued.has(Patch::NonceQueue) && !Patches::ALL.has(Patch::NonceQueue));
        assert_eq!(queued.to_string(), "all,nonce-queue");
        assert_eq!(queued.iter().count(), 14);
        let shy: Patches = "all,-app-mempool,nonce-queue".parse().unwrap();
        assert_eq!(shy.to_string(), "all,-app-mempool,nonce-queue");
        assert_eq!(shy.to_string().parse::<Patches>().unwrap(), shy);
        let few: Patches = "rwlock,quiet-logs,-rwlock".parse().unwrap();
        assert_eq!(few.to_string(), "quiet-logs");
    }

    #[test]
    fn unknown_name_is_refused_with_the_known_ones() {
        let err = "rwlock,turbo".parse::<Patches>().unwrap_err();
        assert!(
            matches!(&err, PatchError::Unknown { name, .. } if name == "turbo"),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.contains("`turbo`") && err.contains("lite-recheck"),
            "{err}"
        );
        let err = "all,-turbo".parse::<Patches>().unwrap_err();
        assert!(matches!(err, PatchError::Unknown { .. }), "{err:?}");
    }

    #[test]
    fn a_patch_without_what_it_needs_is_refused_naming_both() {
        for (set, patch, needs) in [
            (
                "optimistic-execution",
                Patch::OptimisticExecution,
                Patch::ParallelAbci,
            ),
            (
                "rwlock,web3-recover",
                Patch::Web3Recover,
                Patch::SenderCache,
            ),
            (
                "all,-ram-block-txs,async-commit",
                Patch::AsyncCommit,
                Patch::RamBlockTxs,
            ),
        ] {
            let err = set.parse::<Patches>().unwrap_err();
            assert_eq!(
                err,
                PatchError::Unmet {
                    patch,
                    needs,
                    set: set.to_string()
                }
            );
            let text = err.to_string();
            assert!(text.contains(&format!("add `{needs}`")), "{text}");
        }
        let with_it: Patches = "parallel-abci,optimistic-execution".parse().unwrap();
        assert!(with_it.has(Patch::OptimisticExecution));
    }

    #[test]
    fn removing_a_patch_removes_what_needs_it() {
        let set: Patches = "all,-parallel-abci".parse().unwrap();
        assert!(!set.has(Patch::ParallelAbci) && !set.has(Patch::OptimisticExecution));
        assert!(set.has(Patch::RwLock));
        assert_eq!(set.to_string(), "all,-parallel-abci,-optimistic-execution");
        assert_eq!(set.to_string().parse::<Patches>().unwrap(), set);
        let opt_in: Patches = "all,async-commit,-ram-block-txs".parse().unwrap();
        assert!(!opt_in.has(Patch::AsyncCommit));
        let bare: Patches = "all,async-commit,nonce-queue,-all".parse().unwrap();
        assert_eq!(bare, Patches::only(Patch::NonceQueue));
    }

    #[test]
    fn an_item_written_twice_is_refused() {
        for (set, item) in [
            ("rwlock,rwlock", "rwlock"),
            ("all,-rwlock,-rwlock", "-rwlock"),
        ] {
            let err = set.parse::<Patches>().unwrap_err();
            assert_eq!(
                err,
                PatchError::Twice {
                    item: item.to_string(),
                    set: set.to_string()
                }
            );
        }
        // Put back after it was left out is no repeat.
        let back: Patches = "all,-rwlock,rwlock".parse().unwrap();
        assert_eq!(back, Patches::ALL);
    }

    #[test]
    fn all_with_any_switch_added_meets_every_requirement() {
        for patch in Patch::every() {
            let set = format!("all,{patch}");
            let parsed: Patches = set.parse().unwrap_or_else(|e| panic!("{set}: {e}"));
            assert_eq!(parsed.unmet(), None);
        }
    }

    #[test]
    fn all_means_the_builds_all() {
        let older = Patches::ALL.without(Patch::AppMempool);
        let parse = |set: &str| Patches::parse_in(set, older).unwrap();
        assert!(!parse("all").has(Patch::AppMempool));
        assert!(parse("all").has(Patch::RwLock));
        assert!(parse("all,app-mempool").has(Patch::AppMempool));
        assert!(parse("app-mempool,-all").iter().next().is_none());
        assert!("all".parse::<Patches>().unwrap().has(Patch::AppMempool));
        assert!(matches!(
            Patches::parse_in("all,-rw-lock", older),
            Err(PatchError::Unknown { .. })
        ));
    }
}
