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
    /// Rebuild read models from the log while the server keeps serving: fresh copies are built
    /// beside the live tables, catch up, and are swapped in within one short lock. Ctrl-C aborts
    /// and leaves the live tables untouched. With --user, repair those accounts' rows in place.
    Rebuild {
        /// Projections to rebuild (what they read is rebuilt with them).
        #[arg(
            value_name = "NAME",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        names: Vec<String>,
        /// Rebuild every projection.
        #[arg(long)]
        all: bool,
        /// Repair only this account's rows, in place (repeatable).
        #[arg(long = "user", value_name = "USER_ID")]
        users: Vec<i64>,
        /// Log events replayed per transaction during the copy and catch-up.
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
        batch_events: i64,
    },
    /// Compare the live tables with a replay of the log (per chunk of accounts, on a snapshot: no
    /// writer waits); print the first differences; exit 1 on any.
    Verify {
        /// Projections to verify (default: all).
        #[arg(value_name = "NAME")]
        names: Vec<String>,
        /// Verify only this account (repeatable).
        #[arg(long = "user", value_name = "USER_ID")]
        users: Vec<i64>,
    },
    /// Each projection's projector version (and whether it is stale), state, last rebuild and lag;
    /// a running rebuild's progress.
    Status {
        /// Print JSON (the same as GET /admin/projections).
        #[arg(long)]
        json: bool,
    },
}
