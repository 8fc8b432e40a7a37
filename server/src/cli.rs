//! The `ptslog` command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "ptslog",
    version,
    about = "Event-sourced Telegram-compatible messaging backend"
)]
pub struct Cli {
    /// A KEY=VALUE file with settings the environment does not set.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations and serve the JSON API and live pushes (with a relay candidate unless
    /// PTSLOG_RELAY=off).
    Serve,
    /// Run only the relay, producing the committed log to Kafka (needs KAFKA_BROKERS).
    Relay,
    /// Apply pending migrations and exit.
    Migrate,
    /// Operate on the read models projected from the log.
    Projections {
        #[command(subcommand)]
        command: ProjectionsCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProjectionsCommand {
    /// Truncate every projection and replay the whole log into it.
    Rebuild,
    /// Replay the log into scratch state and compare with the live tables; exit 1 on any difference.
    Verify,
}
