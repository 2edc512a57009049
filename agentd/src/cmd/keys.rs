//! `feth keys`: keys files besides funding them. `feth keys split` cuts a
//! keys file into one shard file per agent, so that each agent (a
//! Kubernetes Job, a compose service, a machine) holds its own senders'
//! keys and nothing else: no other shard, no seed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::accounts::KeySet;
use crate::shard::Shard;

/// `feth keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Split a keys file into N shard files (shard-I.txt, mode 0600): shard
    /// I/N's keys each, without the seed; `feth load --keys shard-I.txt`
    /// runs shard I
    Split(SplitArgs),
}

/// `feth keys split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// The keys file to split (`feth fund --out`)
    #[arg(long, default_value = "feth-keys.txt")]
    keys: PathBuf,
    /// Number of shards: one per agent
    #[arg(long)]
    shards: usize,
    /// Folder to write shard-0.txt … shard-(N-1).txt into; none may exist yet
    #[arg(long, default_value = "feth-keys.shards")]
    out_dir: PathBuf,
}

/// Runs a `feth keys` command.
pub fn run(command: KeysCommand) -> Result<()> {
    match command {
        KeysCommand::Split(args) => split(&args),
    }
}

/// The shard file of shard `index` in `dir`.
pub fn shard_file(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("shard-{index}.txt"))
}

fn split(args: &SplitArgs) -> Result<()> {
    if args.shards == 0 {
        bail!("--shards must be at least 1");
    }
    let keys = KeySet::load(&args.keys)?;
    let shards: Vec<Shard> = (0..args.shards)
        .map(|index| Shard {
            index,
            count: args.shards,
        })
        .collect();
    // Every shard is checked, and no file is overwritten, before one is written.
    for shard in &shards {
        shard.range(keys.len())?;
        let path = shard_file(&args.out_dir, shard.index);
        if path.exists() {
            bail!(
                "{} exists: choose another --out-dir, or remove the old shard files",
                path.display()
            );
        }
    }
    for shard in &shards {
        let path = shard_file(&args.out_dir, shard.index);
        keys.save_shard(*shard, &path)
            .with_context(|| format!("cannot write shard {shard}"))?;
        let range = shard.range(keys.len())?;
        println!(
            "shard {shard}: keys {}–{} ({}) → {}",
            range.start,
            range.end - 1,
            range.len(),
            path.display()
        );
    }
    Ok(())
}
