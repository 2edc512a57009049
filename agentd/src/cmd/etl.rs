//! `feth etl` (ingest node logs into Redis) and `feth etl stats` (figures
//! from what was ingested): arguments, turned into
//! [`feth_etl::ingest::IngestConfig`] and [`feth_etl::stats::StatsQuery`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use feth_etl::{ingest, output, stats};

use crate::devnet::network;

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

impl From<OutputFormat> for output::Format {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Table => Self::Table,
            OutputFormat::Csv => Self::Csv,
            OutputFormat::Json => Self::Json,
        }
    }
}

/// `--format`, and `--json` which means `--format json`.
#[derive(Debug, Clone, Args)]
pub struct FormatArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Same as --format json: stdout carries one JSON document.
    #[arg(long)]
    pub json: bool,
}

impl FormatArgs {
    /// The output format, `--json` winning.
    pub fn format(&self) -> output::Format {
        if self.json {
            output::Format::Json
        } else {
            self.format.into()
        }
    }
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

/// Reads Tendermint/CometBFT (and abcid) logs into Redis.
#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    /// Node logs (Tendermint 0.34, CometBFT 0.37/0.38/0.39/1.x, or a Cosmos
    /// SDK app's log of them: console or JSON; plain or JSON; plain text or
    /// gzip): version and format are detected per line.
    #[arg(long = "tendermint", value_name = "LOG", num_args = 1.., required_unless_present_any = ["abcid", "devnet"])]
    pub tendermint: Vec<PathBuf>,
    /// abcid logs (its per-block `block committed` lines: valid/invalid and
    /// header times for CometBFT 0.38 and later).
    #[arg(long, value_name = "LOG", num_args = 1..)]
    pub abcid: Vec<PathBuf>,
    /// Every node of the devnet in DIR (`feth devnet up`, one node or
    /// several, or `--chain`'s: the log its recipe names): its CometBFT and
    /// abcid logs, each under the node's name (with --node, that node
    /// only), instead of --tendermint/--abcid.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tendermint", "abcid"])]
    pub devnet: Option<PathBuf>,
    /// CometBFT RPC (e.g. http://127.0.0.1:26657): header times via
    /// /blockchain, valid/invalid via /block_results. Needed for block
    /// times of a Cosmos SDK console log, whose clock has no date.
    #[arg(long, visible_alias = "rpc", value_name = "URL")]
    pub comet_rpc: Option<String>,
    /// Ask the RPC about these heights only (`FROM..TO`, both included):
    /// a window of a long-running node's log, without reading every
    /// height's results since its chain began. The log is read whole.
    #[arg(long, value_name = "FROM..TO", value_parser = parse_heights, requires = "comet_rpc")]
    pub rpc_heights: Option<std::ops::RangeInclusive<u64>>,
    /// Redis URL, e.g. redis://127.0.0.1:6379/0 (required).
    #[arg(long, value_name = "URL", env = "FETH_REDIS")]
    pub redis: Option<String>,
    /// Chain id (the namespace in Redis). Default: from --comet-rpc, else
    /// from the logs' `Started node` line (a Cosmos SDK app logs none: give
    /// --chain-id or --comet-rpc).
    #[arg(long, value_name = "ID")]
    pub chain_id: Option<String>,
    /// Node name for the lines of these logs (default: the log file's name
    /// without extension and rotation suffix; a `name |` line prefix, as
    /// docker compose writes, names the node of that line). With --devnet:
    /// ingest that node only.
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
    #[arg(long, value_name = "SECS", default_value_t = ingest::DEFAULT_REDIS_RETRY.as_secs())]
    pub redis_retry_secs: u64,
    /// Heights per /block_results JSON-RPC batch (CometBFT 0.38+ allows 10
    /// by default; larger batches are split when the node refuses them).
    #[arg(long, value_name = "N", default_value_t = ingest::DEFAULT_RPC_BATCH)]
    pub rpc_batch: usize,
    /// RPC requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = ingest::DEFAULT_RPC_CONCURRENCY)]
    pub rpc_concurrency: usize,
    /// Heights per Redis transaction (MULTI/EXEC).
    #[arg(long, value_name = "N", default_value_t = ingest::DEFAULT_BATCH_HEIGHTS)]
    pub batch_heights: usize,
    /// Output format of the ingest summary.
    #[command(flatten)]
    pub output: FormatArgs,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// `--rpc-heights FROM..TO`.
fn parse_heights(text: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    let usage = || format!("`{text}`: expected FROM..TO, two heights, e.g. 100..200");
    let (from, to) = text.split_once("..").ok_or_else(usage)?;
    let (from, to): (u64, u64) = match (from.trim().parse(), to.trim().parse()) {
        (Ok(from), Ok(to)) => (from, to),
        _ => return Err(usage()),
    };
    if from > to {
        return Err(format!(
            "`{text}`: {from} is above {to}; give the lower height first"
        ));
    }
    Ok(from..=to)
}

impl IngestArgs {
    /// The library's configuration.
    pub fn ingest_config(&self) -> ingest::IngestConfig {
        ingest::IngestConfig {
            tendermint: self.tendermint.clone(),
            abcid: self.abcid.clone(),
            comet_rpc: self.comet_rpc.clone(),
            rpc_heights: self.rpc_heights.clone(),
            redis: self.redis.clone(),
            chain_id: self.chain_id.clone(),
            node: self.node.clone(),
            follow: self.follow,
            log_tz: self.log_tz.clone(),
            redis_retry: Duration::from_secs(self.redis_retry_secs),
            rpc_batch: self.rpc_batch,
            rpc_concurrency: self.rpc_concurrency,
            batch_heights: self.batch_heights,
            progress: !self.no_progress,
        }
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

impl From<CsvTable> for output::CsvTable {
    fn from(t: CsvTable) -> Self {
        match t {
            CsvTable::Blocks => Self::Blocks,
            CsvTable::Windows => Self::Windows,
            CsvTable::Histogram => Self::Histogram,
            CsvTable::Summary => Self::Summary,
        }
    }
}

/// Answers from what was ingested.
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
    #[command(flatten)]
    pub output: FormatArgs,
    /// Table printed by --format csv.
    #[arg(long, value_enum, default_value_t = CsvTable::Blocks)]
    pub csv_table: CsvTable,
    /// Include one entry per block in JSON output.
    #[arg(long)]
    pub per_block: bool,
    /// How long to retry when Redis is unreachable.
    #[arg(long, value_name = "SECS", default_value_t = stats::DEFAULT_REDIS_RETRY.as_secs())]
    pub redis_retry_secs: u64,
}

impl StatsArgs {
    /// The library's query.
    pub fn stats_query(&self) -> stats::StatsQuery {
        stats::StatsQuery {
            redis: self.redis.clone(),
            chain_id: self.chain_id.clone(),
            from: self.from,
            to: self.to,
            window: self.window,
            node: self.node.clone(),
            redis_retry: Duration::from_secs(self.redis_retry_secs),
        }
    }
}

/// Runs `feth etl …`: ingest, or the `stats` subcommand.
pub async fn run(args: EtlArgs) -> anyhow::Result<()> {
    match args.command {
        Some(EtlCommand::Stats(s)) => run_stats(&s).await,
        None => run_ingest(&args.ingest).await,
    }
}

/// `feth etl --tendermint LOG…`: ingests until the logs end (or, with
/// `--follow`, until Ctrl-C) and prints a summary to stdout.
async fn run_ingest(args: &IngestArgs) -> anyhow::Result<()> {
    if let Some(dir) = &args.devnet {
        return run_devnet(args, dir).await;
    }
    let shutdown = async {
        // If the handler cannot be installed, run until the logs end.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let outcome = ingest::run(&args.ingest_config(), shutdown).await?;
    print!("{}", output::ingest(&outcome.report, args.output.format())?);
    if let Some(e) = outcome.rpc_error {
        return Err(anyhow::Error::new(e)
            .context("the logs were ingested, but fetching from the node's RPC failed"));
    }
    Ok(())
}

/// `feth etl --devnet DIR`: every node's logs in turn, each under its own
/// name; one summary per node (one JSON array with --json).
async fn run_devnet(args: &IngestArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    let nodes = network::node_logs(dir, args.node.as_deref())?;
    let format = args.output.format();
    if nodes.len() > 1 && args.follow {
        anyhow::bail!("--follow reads one node's logs: give --node NAME (one command per node)");
    }
    if nodes.len() > 1 && format == output::Format::Csv {
        anyhow::bail!(
            "--format csv prints one node's summary: give --node NAME, or --format table|json"
        );
    }
    let mut reports = Vec::with_capacity(nodes.len());
    for node in nodes {
        let mut cfg = args.ingest_config();
        cfg.tendermint = vec![node.cometbft];
        cfg.abcid = node.abcid.into_iter().collect();
        cfg.node = Some(node.name.clone());
        let shutdown = async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let outcome = ingest::run(&cfg, shutdown)
            .await
            .map_err(|e| anyhow::Error::new(e).context(format!("node {}", node.name)))?;
        if let Some(e) = outcome.rpc_error {
            return Err(anyhow::Error::new(e).context(format!(
                "node {}: the logs were ingested, but fetching from the node's RPC failed",
                node.name
            )));
        }
        if format != output::Format::Json {
            println!("node {}", node.name);
            print!("{}", output::ingest(&outcome.report, format)?);
        }
        reports.push(outcome.report);
    }
    if format == output::Format::Json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(())
}

/// `feth etl stats`: prints the figures to stdout.
async fn run_stats(args: &StatsArgs) -> anyhow::Result<()> {
    let report = stats::query(&args.stats_query()).await?;
    let text = output::stats(
        &report,
        args.output.format(),
        args.csv_table.into(),
        args.per_block,
    )?;
    print!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cmd::{Cli, Command};

    fn parse(args: &[&str]) -> Result<EtlArgs, clap::Error> {
        let argv = ["feth", "etl"].iter().chain(args);
        Cli::try_parse_from(argv).map(|cli| match cli.command {
            Command::Etl(e) => e,
            other => panic!("`feth etl …` parsed as {other:?}"),
        })
    }

    fn ingest(args: &[&str]) -> IngestArgs {
        let e = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert!(e.command.is_none(), "{args:?} is an ingest");
        e.ingest
    }

    fn stats(args: &[&str]) -> StatsArgs {
        match parse(args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .command
        {
            Some(EtlCommand::Stats(s)) => s,
            None => panic!("{args:?} is not `stats`"),
        }
    }

    #[test]
    fn ingest_defaults_are_the_library_defaults() {
        let a = ingest(&["--tendermint", "a.log", "--redis", "redis://r"]);
        assert_eq!(
            a.ingest_config(),
            ingest::IngestConfig {
                tendermint: vec!["a.log".into()],
                redis: Some("redis://r".into()),
                ..Default::default()
            }
        );
        assert_eq!(a.output.format(), output::Format::Table);
    }

    #[test]
    fn stats_defaults_are_the_library_defaults() {
        let s = stats(&["stats", "--redis", "redis://r", "--chain-id", "c"]);
        assert_eq!(
            s.stats_query(),
            stats::StatsQuery {
                redis: "redis://r".into(),
                chain_id: "c".into(),
                ..Default::default()
            }
        );
        assert_eq!(
            (
                s.output.format(),
                output::CsvTable::from(s.csv_table),
                s.per_block
            ),
            (output::Format::Table, output::CsvTable::Blocks, false)
        );
    }

    #[test]
    fn rpc_heights_are_two_heights_the_lower_first() {
        assert_eq!(parse_heights("100..200"), Ok(100..=200));
        assert_eq!(parse_heights("7..7"), Ok(7..=7));
        for bad in ["100", "a..b", "100..", "-1..5"] {
            let err = parse_heights(bad).unwrap_err();
            assert!(err.contains("expected FROM..TO"), "{bad}: {err}");
        }
        let err = parse_heights("9..5").unwrap_err();
        assert!(err.contains("give the lower height first"), "{err}");
    }

    #[test]
    fn every_ingest_flag_reaches_the_config() {
        let a = ingest(&[
            "--tendermint",
            "a.log",
            "b.log.gz",
            "--abcid",
            "app.log",
            "--comet-rpc",
            "http://127.0.0.1:26657",
            "--rpc-heights",
            "5..9",
            "--redis",
            "redis://x",
            "--chain-id",
            "c",
            "--node",
            "n0",
            "--follow",
            "--log-tz",
            "UTC",
            "--redis-retry-secs",
            "3",
            "--rpc-batch",
            "7",
            "--rpc-concurrency",
            "2",
            "--batch-heights",
            "100",
            "--no-progress",
            "--format",
            "csv",
        ]);
        let want = ingest::IngestConfig {
            tendermint: vec!["a.log".into(), "b.log.gz".into()],
            abcid: vec!["app.log".into()],
            comet_rpc: Some("http://127.0.0.1:26657".into()),
            rpc_heights: Some(5..=9),
            redis: Some("redis://x".into()),
            chain_id: Some("c".into()),
            node: Some("n0".into()),
            follow: true,
            log_tz: Some("UTC".into()),
            redis_retry: Duration::from_secs(3),
            rpc_batch: 7,
            rpc_concurrency: 2,
            batch_heights: 100,
            progress: false,
        };
        assert_eq!(a.ingest_config(), want);
        assert_eq!(a.output.format(), output::Format::Csv);
    }

    #[test]
    fn rpc_is_an_alias_of_comet_rpc() {
        let a = ingest(&["--tendermint", "a.log", "--rpc", "http://h:1"]);
        assert_eq!(a.ingest_config().comet_rpc.as_deref(), Some("http://h:1"));
    }

    #[test]
    fn json_means_format_json() {
        let a = ingest(&["--tendermint", "a.log", "--format", "table", "--json"]);
        assert_eq!(a.output.format(), output::Format::Json);
        let s = stats(&[
            "stats",
            "--redis",
            "r",
            "--chain-id",
            "c",
            "--window",
            "100",
            "--from",
            "5",
            "--to",
            "9",
            "--node",
            "n1",
            "--json",
            "--csv-table",
            "windows",
            "--per-block",
        ]);
        assert_eq!(s.output.format(), output::Format::Json);
        assert_eq!(
            s.stats_query(),
            stats::StatsQuery {
                redis: "r".into(),
                chain_id: "c".into(),
                from: Some(5),
                to: Some(9),
                window: Some(100),
                node: Some("n1".into()),
                ..Default::default()
            }
        );
        assert_eq!(
            output::CsvTable::from(s.csv_table),
            output::CsvTable::Windows
        );
        assert!(s.per_block);
    }

    #[test]
    fn a_devnet_stands_for_the_logs_and_excludes_them() {
        let a = ingest(&["--devnet", ".devnet", "--redis", "redis://x"]);
        assert_eq!(a.devnet.as_deref(), Some(std::path::Path::new(".devnet")));
        assert!(a.tendermint.is_empty());
        parse(&["--devnet", ".devnet", "--tendermint", "a.log"])
            .expect_err("--devnet names the logs itself");
    }

    #[test]
    fn a_devnet_names_its_nodes_logs() {
        let dir = tempfile::tempdir().unwrap();
        let e = network::node_logs(dir.path(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("feth devnet up"), "{e}");
    }

    #[test]
    fn a_log_is_required_and_stats_takes_no_ingest_flags() {
        let err = parse(&["--redis", "redis://x"]).expect_err("a log is required");
        assert_eq!(err.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        parse(&["stats", "--chain-id", "c", "--tendermint", "a.log"])
            .expect_err("ingest flags do not belong to stats");
    }
}
