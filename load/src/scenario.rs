//! Scenario files: a chain's traffic described once, in TOML, and reused by
//! `feth load`, `feth saturate` and `feth compare` (`--scenario FILE`).
//!
//! ```toml
//! [writes]            # each kind's share of the transactions, summing to 1
//! transfer = 0.6
//! erc20 = 0.3
//! swap = 0.1
//!
//! [reads]             # optional: web3 reads beside the writes
//! rate = 200          # reads per second, open loop
//! mix = { receipt = 8, balance = 5, digest = 1 }
//!
//! [senders]           # optional
//! accounts = "zipf:1.1,2.7"
//! per_sender = 4
//! ```
//!
//! The built-in workloads are scenarios too (`agentd/scenarios/*.toml`):
//! `transfer`, `erc20`, `store`, `swap`, `fullnode` and `read-heavy`. Rates and durations
//! stay on the command line, since `saturate` and `compare` choose them.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use super::pick::{AccountDist, Picker};
use super::plan::{kind_names, LoadPlan, Recipients, WorkloadKind, WriteMix, MAX_PER_SENDER};
use super::reads::{ReadMethod, ReadPlan, MAX_RATE};

/// The built-in scenarios, by name.
const BUILT_IN: [(&str, &str); 6] = [
    ("transfer", include_str!("../scenarios/transfer.toml")),
    ("erc20", include_str!("../scenarios/erc20.toml")),
    ("store", include_str!("../scenarios/store.toml")),
    ("swap", include_str!("../scenarios/swap.toml")),
    ("fullnode", include_str!("../scenarios/fullnode.toml")),
    ("read-heavy", include_str!("../scenarios/read-heavy.toml")),
];

/// A chain's traffic: what the writes do, the reads beside them, and how
/// senders send. What a scenario leaves out keeps the command's default.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The name it was loaded by (a built-in's name or the file's path).
    pub name: String,
    /// The writes' mix.
    pub writes: WriteMix,
    /// Reads beside the writes.
    pub reads: Option<ReadPlan>,
    /// Sender activity.
    pub accounts: Option<AccountDist>,
    /// Transactions in flight per sender.
    pub per_sender: Option<usize>,
    /// Consecutive nonces of one sender per request.
    pub per_request: Option<usize>,
    /// Who receives transfers.
    pub recipients: Option<Recipients>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    writes: BTreeMap<String, f64>,
    reads: Option<ReadsSection>,
    senders: Option<SendersSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadsSection {
    rate: f64,
    mix: Option<BTreeMap<String, u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendersSection {
    accounts: Option<String>,
    per_sender: Option<u64>,
    per_request: Option<u64>,
    recipients: Option<Recipients>,
}

impl Scenario {
    /// The names of the built-in scenarios.
    pub fn built_in_names() -> Vec<&'static str> {
        BUILT_IN.iter().map(|(name, _)| *name).collect()
    }

    /// A built-in scenario by name, or a scenario file by path.
    pub fn load(name_or_path: &str) -> Result<Self> {
        let path = Path::new(name_or_path);
        if path.exists() {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the scenario file {}", path.display()))?;
            return Self::parse(name_or_path, &text)
                .with_context(|| format!("the scenario file {}", path.display()));
        }
        match BUILT_IN.iter().find(|(name, _)| *name == name_or_path) {
            Some((name, text)) => Self::parse(name, text),
            None => bail!(
                "no scenario file {name_or_path:?}, and no built-in scenario of that name (the built-in ones are {})",
                Self::built_in_names().join(", ")
            ),
        }
    }

    /// `plan` with what this scenario says of the writes and the senders
    /// (`senders` accounts send); what it leaves out stays.
    pub fn apply(&self, plan: LoadPlan, senders: usize) -> LoadPlan {
        LoadPlan {
            writes: self.writes.clone(),
            per_sender: self.per_sender.unwrap_or(plan.per_sender),
            per_request: self.per_request.unwrap_or(plan.per_request),
            picker: self
                .accounts
                .map_or(plan.picker.clone(), |dist| Picker::new(dist, senders)),
            recipients: self.recipients.unwrap_or(plan.recipients),
            ..plan
        }
    }

    /// A scenario from its TOML text; `name` names it.
    pub fn parse(name: &str, text: &str) -> Result<Self> {
        // toml's error names the line, the key and the keys allowed there.
        let file: File =
            toml::from_str(text).map_err(|e| anyhow::anyhow!("{}", e.to_string().trim_end()))?;
        let writes = writes(&file.writes).context("[writes]")?;
        let reads = file
            .reads
            .map(|r| reads(r, &writes))
            .transpose()
            .context("[reads]")?;
        let senders = file.senders.map(senders).transpose().context("[senders]")?;
        let senders = senders.unwrap_or_default();
        Ok(Self {
            name: name.to_string(),
            writes,
            reads,
            accounts: senders.accounts,
            per_sender: senders.per_sender,
            per_request: senders.per_request,
            recipients: senders.recipients,
        })
    }
}

fn writes(table: &BTreeMap<String, f64>) -> Result<WriteMix> {
    let mut shares = Vec::new();
    for (name, share) in table {
        let kind = WorkloadKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .with_context(|| {
                format!(
                    "{name:?} is not a write kind; the kinds are {}",
                    kind_names()
                )
            })?;
        shares.push((kind, *share));
    }
    shares.sort_by_key(|(kind, _)| *kind);
    WriteMix::new(shares)
}

fn reads(section: ReadsSection, writes: &WriteMix) -> Result<ReadPlan> {
    if !(section.rate > 0.0 && section.rate <= MAX_RATE) {
        bail!(
            "rate = {}: the reads' rate is reads per second, above 0 and at most {MAX_RATE}",
            section.rate
        );
    }
    let mut plan = ReadPlan::wallets(section.rate);
    match section.mix {
        Some(mix) => {
            let pairs = mix.iter().map(|(m, w)| (m.as_str(), *w));
            plan.mix = ReadPlan::mix_of(pairs).context("mix")?;
        }
        None if writes.contains(WorkloadKind::Erc20) => {
            plan.mix.push((ReadMethod::TokenBalance, 3));
        }
        None => {}
    }
    if plan.calls(ReadMethod::TokenBalance) && !writes.contains(WorkloadKind::Erc20) {
        bail!("token_balance reads call the run's token: give [writes] an erc20 share, or leave token_balance out of the mix");
    }
    Ok(plan)
}

#[derive(Debug, Default)]
struct Senders {
    accounts: Option<AccountDist>,
    per_sender: Option<usize>,
    per_request: Option<usize>,
    recipients: Option<Recipients>,
}

fn senders(section: SendersSection) -> Result<Senders> {
    let in_range = |key: &str, v: Option<u64>| -> Result<Option<usize>> {
        match v {
            Some(n) if n == 0 || n > MAX_PER_SENDER as u64 => {
                bail!("{key} = {n}: it is 1 to {MAX_PER_SENDER}")
            }
            other => Ok(other.map(|n| n as usize)),
        }
    };
    let per_sender = in_range("per_sender", section.per_sender)?;
    let per_request = in_range("per_request", section.per_request)?;
    if let (Some(r), k) = (per_request, per_sender.unwrap_or(1)) {
        if r > k {
            bail!("per_request = {r} is more than per_sender = {k}: a request carries at most a sender's transactions in flight");
        }
    }
    let accounts = section
        .accounts
        .map(|a| a.parse::<AccountDist>())
        .transpose()
        .context("accounts")?;
    Ok(Senders {
        accounts,
        per_sender,
        per_request,
        recipients: section.recipients,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        format!("{:#}", Scenario::parse("test", text).unwrap_err())
    }

    #[test]
    fn every_built_in_scenario_parses_and_the_single_kinds_are_the_workloads() {
        for name in Scenario::built_in_names() {
            let s = Scenario::load(name).unwrap();
            assert_eq!(s.name, name);
        }
        for kind in WorkloadKind::ALL {
            let s = Scenario::load(kind.name()).unwrap();
            assert_eq!(s.writes, WriteMix::from(kind));
            assert_eq!((s.reads, s.per_sender), (None, None));
        }
        let full = Scenario::load("fullnode").unwrap();
        let kinds: Vec<_> = full.writes.shares().iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, WorkloadKind::ALL, "every kind, in the kinds' order");
        let reads = full.reads.unwrap();
        assert_eq!(reads.rate, 200.0);
        assert!(reads.calls(ReadMethod::Digest) && reads.calls(ReadMethod::TokenBalance));
        let heavy = Scenario::load("read-heavy").unwrap();
        assert_eq!(heavy.writes, full.writes);
        let heavy_reads = heavy.reads.unwrap();
        assert_eq!((heavy_reads.rate, heavy_reads.mix), (800.0, reads.mix));
    }

    #[test]
    fn a_file_sets_the_mix_the_reads_and_the_senders() {
        let s = Scenario::parse(
            "mine",
            r#"
            [writes]
            swap = 0.25
            transfer = 0.75
            [reads]
            rate = 50.5
            mix = { digest = 2, receipt = 1 }
            [senders]
            accounts = "zipf:1.2,0"
            per_sender = 8
            per_request = 2
            recipients = "existing"
            "#,
        )
        .unwrap();
        assert_eq!(
            s.writes.shares(),
            [(WorkloadKind::Transfer, 0.75), (WorkloadKind::Swap, 0.25)]
        );
        let reads = s.reads.unwrap();
        assert_eq!(reads.rate, 50.5);
        assert_eq!(
            reads.mix,
            [(ReadMethod::Digest, 2), (ReadMethod::Receipt, 1)]
        );
        assert_eq!(s.accounts, Some(AccountDist::Zipf { s: 1.2, v: 0.0 }));
        assert_eq!((s.per_sender, s.per_request), (Some(8), Some(2)));
        assert_eq!(s.recipients, Some(Recipients::Existing));
    }

    #[test]
    fn each_bad_file_gets_an_error_naming_the_key_and_what_is_allowed() {
        let cases = [
            (
                "[writes]\ntransfer = 1\n[sender]\nper_sender = 2",
                "unknown field `sender`",
            ),
            (
                "[writes]\ntransfer = 1\n[senders]\nper_senders = 2",
                "unknown field `per_senders`",
            ),
            (
                "[writes]\nnft = 1",
                "\"nft\" is not a write kind; the kinds are transfer, erc20, store, swap",
            ),
            ("[writes]\ntransfer = 0.5\nerc20 = 0.2", "sum to 0.7, not 1"),
            (
                "[writes]\ntransfer = 1.5\nerc20 = -0.5",
                "the share of transfer is 1.5",
            ),
            (
                "[writes]\ntransfer = 1\n[reads]\nrate = -5",
                "rate = -5: the reads' rate is reads per second, above 0",
            ),
            (
                "[writes]\ntransfer = 1\n[reads]\nrate = 5\nmix = { gossip = 1 }",
                "\"gossip\" is not a read method",
            ),
            (
                "[writes]\ntransfer = 1\n[reads]\nrate = 5\nmix = { token_balance = 1 }",
                "give [writes] an erc20 share",
            ),
            (
                "[writes]\ntransfer = 1\n[senders]\nper_sender = 0",
                "per_sender = 0: it is 1 to 1024",
            ),
            (
                "[writes]\ntransfer = 1\n[senders]\nper_request = 4",
                "per_request = 4 is more than per_sender = 1",
            ),
            (
                "[writes]\ntransfer = 1\n[senders]\naccounts = \"pareto\"",
                "expected `uniform` or `zipf:S,V`",
            ),
            ("[senders]\nper_sender = 2", "missing field `writes`"),
        ];
        for (text, wanted) in cases {
            let got = error(text);
            assert!(
                got.contains(wanted),
                "{text:?}: {got:?} does not say {wanted:?}"
            );
        }
        assert!(error("[writes]\nnft = 1").starts_with("[writes]: "));
        assert!(error("[writes]\ntransfer = 1\n[reads]\nrate = 0").starts_with("[reads]: "));
    }

    #[test]
    fn a_name_that_is_neither_a_file_nor_built_in_lists_the_built_in_ones() {
        let e = Scenario::load("no-such-scenario.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("transfer, erc20, store, swap, fullnode, read-heavy"),
            "{e}"
        );
    }
}
