use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use ptslog_server::cli::{Cli, Command};
use ptslog_server::Config;
use tracing_subscriber::EnvFilter;

/// The serving allocator (server/src/allocator.rs).
#[global_allocator]
static ALLOCATOR: ptslog_server::allocator::Serving = ptslog_server::allocator::Serving;

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to stderr: stdout carries what commands print (an export streams there).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    match run().await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ptslog: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let config = Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Serve => {
            if config.dev_login {
                // Loud on purpose: with this on, anyone signs in as anyone.
                let warning = ptslog_server::config::DEV_LOGIN_WARNING;
                eprintln!("{warning}");
                tracing::warn!("{warning}");
            }
            let mut running = ptslog_server::start(&config).await?;
            running.start_feed(&config)?;
            running.start_mtproto(&config).await?;
            tracing::info!(addr = %running.addr, "ptslog is serving");
            if let Some(admin) = running.admin_addr {
                tracing::info!(addr = %admin, "admin endpoints are serving");
            }
            tokio::select! {
                r = &mut running.task => { r.context("server task")?.context("HTTP server")?; }
                _ = tokio::signal::ctrl_c() => {
                    tracing::info!("shutting down");
                    running.shutdown().await;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Relay => {
            ptslog_server::relay_command::run(&config).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            let pool = infrastructure::postgres::connect(&config.database_url, 2).await?;
            infrastructure::postgres::migrate(&pool).await?;
            println!("migrations applied");
            Ok(ExitCode::SUCCESS)
        }
        Command::Events { command } => ptslog_server::events::command::run(&config, command).await,
        Command::Projections { command } => {
            let pool = infrastructure::postgres::connect(&config.database_url, 4).await?;
            infrastructure::postgres::migrate(&pool).await?;
            ptslog_server::projections_command::run(&pool, command).await
        }
    }
}
