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
    /// Read the event log: export it, re-publish it to Kafka, replay a user's dialogs as of a pts,
    /// and the payloads' JSON Schemas (docs/events.md).
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Stream the selected events, one log record per line (NDJSON) or row (CSV), in (user, pts)
    /// order, in constant memory. Payloads are upcast to today's version unless --raw.
    Export {
        #[command(flatten)]
        filter: LogFilterArgs,
        /// ndjson (default) or csv.
        #[arg(long, value_enum, default_value_t = ExportFormat::Ndjson)]
        format: ExportFormat,
        /// Write to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Payloads exactly as stored, at their stored version (no upcast).
        #[arg(long)]
        raw: bool,
    },
    /// Re-publish the selected events to a Kafka topic (KAFKA_BROKERS) as the relay's log records,
    /// payloads as stored, keyed by user id.
    Replay {
        /// The only target today; required so the command says where it writes.
        #[arg(long, required = true)]
        to_kafka: bool,
        /// The topic (default: PTSLOG_KAFKA_TOPIC with `.replay` appended, not the live topic).
        #[arg(long)]
        topic: Option<String>,
        #[command(flatten)]
        filter: LogFilterArgs,
    },
    /// A user's dialogs as they were at a pts, folded from the log in memory (not read from the
    /// read models).
    State {
        #[arg(long, value_name = "USER_ID")]
        user: i64,
        /// The pts to stop at, inclusive (default: the head of the log).
        #[arg(long, value_name = "PTS")]
        at_pts: Option<i32>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The JSON Schema of every kind's payload at every version: list them, write them into a
    /// directory, or check that directory is up to date (exit 1 if not).
    Schema {
        /// Write the files into --dir.
        #[arg(long, conflicts_with = "check")]
        write: bool,
        /// Compare --dir with the code; exit 1 on any difference.
        #[arg(long)]
        check: bool,
        #[arg(long, default_value = "docs/events/schema")]
        dir: PathBuf,
    },
}

/// The selection of `events export` and `events replay`.
#[derive(Debug, Clone, clap::Args)]
pub struct LogFilterArgs {
    /// An account (repeatable; `all` or none: every account).
    #[arg(long = "user", value_name = "USER_ID|all")]
    pub users: Vec<String>,
    /// Events whose pts is at least this.
    #[arg(long, value_name = "PTS")]
    pub from_pts: Option<i32>,
    /// Events whose pts is at most this.
    #[arg(long, value_name = "PTS")]
    pub to_pts: Option<i32>,
    /// Committed at or after this time (RFC 3339, e.g. 2025-11-30T09:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Committed before this time (RFC 3339).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only this kind (repeatable).
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
}

pub use crate::events::export::ExportFormat;

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
