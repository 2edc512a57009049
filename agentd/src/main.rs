//! The `feth` command-line tool; everything it does is in [`feth::cmd`].

use clap::Parser;

use feth::cmd::{Cli, Exit};

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FETH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = Cli::parse().run().await {
        eprintln!("error: {e:#}");
        // 1 for any error; a status of its own for outcomes a script must tell apart.
        std::process::exit(e.downcast_ref::<Exit>().map_or(1, |x| x.status));
    }
}
