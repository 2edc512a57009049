//! Command-line arguments and entry points for `feth etl` (ingest) and
//! `feth etl stats`. The `feth` binary flattens [`EtlArgs`] into its `etl`
//! subcommand and calls [`run`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use crate::{ingest, output, stats};

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    /// Human-readable tables.
    #[default]
    Table,
    /// CSV (for stats: the table chosen with --csv-table).
    Csv,
    /// One JSON document.
    Json,
}

/// `feth etl`: ingest logs, or `feth etl stats`: answer from what was ingested.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EtlArgs {
    /// `stats`; without a subcommand, ingest.
    #[command(subcommand)]
    pub command: Option<EtlCommand>,
    /// Ingest arguments (when no subcommand is given).
    #[command(flatten)]
    pub ingest: IngestArgs,
}

/// Subcommands of `feth etl`.
#[derive(Debug, Clone, Subcommand)]
pub enum EtlCommand {
    /// Block times, TPS, valid/invalid totals and per-window figures from Redis.
    Stats(StatsArgs),
}

/// Reads Tendermint/CometBFT (and abcid) logs into Redis. `Default` gives
/// the command line's defaults (no logs, no Redis).
#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    /// Node logs (Tendermint 0.34, CometBFT 0.37/0.38/1.x; plain or JSON;
    /// plain text or gzip): version and format are detected per line.
    #[arg(long = "tendermint", value_name = "LOG", num_args = 1.., required_unless_present = "abcid")]
    pub tendermint: Vec<PathBuf>,
    /// abcid logs (its per-block `block committed` lines: valid/invalid and
    /// header times for CometBFT 0.38 and later).
    #[arg(long, value_name = "LOG", num_args = 1..)]
    pub abcid: Vec<PathBuf>,
    /// Node RPC (e.g. http://127.0.0.1:26657): header times via
    /// /blockchain, valid/invalid via /block_results.
    #[arg(long, value_name = "URL")]
    pub rpc: Option<String>,
    /// Redis URL, e.g. redis://127.0.0.1:6379/0 (required).
    #[arg(long, value_name = "URL", env = "FETH_REDIS")]
    pub redis: Option<String>,
    /// Chain id (the namespace in Redis). Default: from --rpc, else from the
    /// logs' `Started node` line.
    #[arg(long, value_name = "ID")]
    pub chain_id: Option<String>,
    /// Node name for the lines of these logs (default: the log file's name
    /// without extension and rotation suffix; a `name |` line prefix, as
    /// docker compose writes, names the node of that line).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Keep reading the logs as they grow, across rotation, until Ctrl-C.
    #[arg(long)]
    pub follow: bool,
    /// Time zone of plain logs' timestamps, which carry none: an IANA name
    /// (Europe/Berlin), UTC, local or an offset (+02:00). Default: this
    /// machine's local zone.
    #[arg(long, value_name = "ZONE")]
    pub log_tz: Option<String>,
    /// How long to retry when Redis is unreachable or refuses writes.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub redis_retry_secs: u64,
    /// Heights per /block_results JSON-RPC batch (CometBFT 0.38+ allows 10
    /// by default; larger batches are split when the node refuses them).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub rpc_batch: usize,
    /// RPC requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub rpc_concurrency: usize,
    /// Heights per Redis transaction (MULTI/EXEC).
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub batch_heights: usize,
    /// Output format of the ingest summary.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

impl Default for IngestArgs {
    fn default() -> Self {
        Self {
            tendermint: Vec::new(),
            abcid: Vec::new(),
            rpc: None,
            redis: None,
            chain_id: None,
            node: None,
            follow: false,
            log_tz: None,
            redis_retry_secs: 30,
            rpc_batch: 10,
            rpc_concurrency: 4,
            batch_heights: 20_000,
            format: OutputFormat::Table,
            json: false,
            no_progress: false,
        }
    }
}

impl IngestArgs {
    /// The output format, `--json` winning.
    pub fn output_format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else {
            self.format
        }
    }

    /// Retry budget for Redis.
    pub fn redis_retry(&self) -> Duration {
        Duration::from_secs(self.redis_retry_secs)
    }
}

/// Which table `--format csv` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum CsvTable {
    /// One row per block: `height,txs,valid_txs,block_time,tps` (the original feth's).
    #[default]
    Blocks,
    /// One row per window of --window blocks.
    Windows,
    /// The txs-per-block histogram.
    Histogram,
    /// The summary as `metric,value` rows.
    Summary,
}

/// Answers from what was ingested. `Default` gives the command line's
/// defaults (empty Redis URL and chain id).
#[derive(Debug, Clone, Args)]
pub struct StatsArgs {
    /// Redis URL, e.g. redis://127.0.0.1:6379/0.
    #[arg(long, value_name = "URL", env = "FETH_REDIS")]
    pub redis: String,
    /// Chain id, as ingested.
    #[arg(long, value_name = "ID")]
    pub chain_id: String,
    /// First height (default: the lowest ingested).
    #[arg(long, value_name = "H")]
    pub from: Option<u64>,
    /// Last height (default: the highest ingested).
    #[arg(long, value_name = "H")]
    pub to: Option<u64>,
    /// Blocks per window in the per-window table (default: a round number
    /// giving at most 25 windows).
    #[arg(long, value_name = "N")]
    pub window: Option<u64>,
    /// Node whose commit log times to use where header times are missing
    /// (default: the node with the most).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
    /// Table printed by --format csv.
    #[arg(long, value_enum, default_value_t = CsvTable::Blocks)]
    pub csv_table: CsvTable,
    /// Include one entry per block in JSON output.
    #[arg(long)]
    pub per_block: bool,
    /// How long to retry when Redis is unreachable.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    pub redis_retry_secs: u64,
}

impl Default for StatsArgs {
    fn default() -> Self {
        Self {
            redis: String::new(),
            chain_id: String::new(),
            from: None,
            to: None,
            window: None,
            node: None,
            format: OutputFormat::Table,
            json: false,
            csv_table: CsvTable::Blocks,
            per_block: false,
            redis_retry_secs: 5,
        }
    }
}

impl StatsArgs {
    /// The output format, `--json` winning.
    pub fn output_format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else {
            self.format
        }
    }
}

/// Runs `feth etl …`: ingest, or the `stats` subcommand.
pub async fn run(args: EtlArgs) -> anyhow::Result<()> {
    match args.command {
        Some(EtlCommand::Stats(s)) => stats(s).await,
        None => ingest(args.ingest).await,
    }
}

/// `feth etl --tendermint LOG…`: ingests until the logs end (or, with
/// `--follow`, until Ctrl-C) and prints a summary to stdout.
pub async fn ingest(args: IngestArgs) -> anyhow::Result<()> {
    let shutdown = async {
        // If the handler cannot be installed, run until the logs end.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let outcome = ingest::run(&args, shutdown).await?;
    print!("{}", output::ingest(&outcome.report, args.output_format())?);
    if let Some(e) = outcome.rpc_error {
        return Err(anyhow::Error::new(e)
            .context("the logs were ingested, but fetching from the node's RPC failed"));
    }
    Ok(())
}

/// `feth etl stats`: prints the figures to stdout.
pub async fn stats(args: StatsArgs) -> anyhow::Result<()> {
    let report = stats::query(&args).await?;
    print!(
        "{}",
        output::stats(
            &report,
            args.output_format(),
            args.csv_table,
            args.per_block
        )?
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Feth {
        #[command(subcommand)]
        cmd: Cmd,
    }
    #[derive(clap::Subcommand)]
    enum Cmd {
        Etl(EtlArgs),
    }

    fn parse(args: &[&str]) -> Result<EtlArgs, clap::Error> {
        let mut v = vec!["feth", "etl"];
        v.extend_from_slice(args);
        Feth::try_parse_from(v).map(|f| match f.cmd {
            Cmd::Etl(e) => e,
        })
    }

    #[test]
    fn defaults_match_the_command_line() {
        let e = parse(&["--tendermint", "a.log"]).expect("parses");
        let d = IngestArgs::default();
        let i = e.ingest;
        assert_eq!(
            (
                i.redis_retry_secs,
                i.rpc_batch,
                i.rpc_concurrency,
                i.batch_heights,
                i.format
            ),
            (
                d.redis_retry_secs,
                d.rpc_batch,
                d.rpc_concurrency,
                d.batch_heights,
                d.format
            )
        );
        let e = parse(&["stats", "--redis", "r", "--chain-id", "c"]).expect("parses");
        let Some(EtlCommand::Stats(s)) = e.command else {
            panic!("stats expected")
        };
        let d = StatsArgs::default();
        assert_eq!(
            (s.redis_retry_secs, s.csv_table, s.format),
            (d.redis_retry_secs, d.csv_table, d.format)
        );
    }

    #[test]
    fn ingest_and_stats_command_lines() {
        let e = parse(&[
            "--tendermint",
            "a.log",
            "b.log.gz",
            "--abcid",
            "app.log",
            "--redis",
            "redis://x",
            "--follow",
            "--log-tz",
            "UTC",
        ])
        .expect("ingest parses");
        assert!(e.command.is_none());
        assert_eq!(e.ingest.tendermint.len(), 2);
        assert_eq!(e.ingest.abcid.len(), 1);
        assert!(e.ingest.follow);
        let e = parse(&[
            "stats",
            "--redis",
            "redis://x",
            "--chain-id",
            "c",
            "--window",
            "100",
            "--json",
        ])
        .expect("stats parses");
        let Some(EtlCommand::Stats(s)) = e.command else {
            panic!("stats expected")
        };
        assert_eq!(
            (s.window, s.output_format()),
            (Some(100), OutputFormat::Json)
        );
        assert!(
            parse(&["--redis", "redis://x"]).is_err(),
            "a log is required"
        );
        assert!(
            parse(&["stats", "--chain-id", "c"]).is_err()
                || std::env::var_os("FETH_REDIS").is_some(),
            "stats needs --redis"
        );
    }
}
