//! Runs `ptslog events …`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use domain::UserId;
use infrastructure::postgres::log_export::LogExport;

use super::export::{export, LineEncoder};
use super::filter::FilterText;
use super::{replay, schema, state};
use crate::cli::{EventsCommand, LogFilterArgs};
use crate::config::Config;
use crate::feed::kafka_config;

fn filter_text(args: &LogFilterArgs) -> FilterText {
    FilterText {
        users: args.users.clone(),
        from_pts: args.from_pts,
        to_pts: args.to_pts,
        since: args.since.clone(),
        until: args.until.clone(),
        kinds: args.kinds.clone(),
    }
}

async fn pool(config: &Config) -> anyhow::Result<sqlx::PgPool> {
    let pool = infrastructure::postgres::connect(&config.database_url, 2)
        .await
        .with_context(|| {
            format!(
                "connecting to Postgres at {}",
                crate::wiring::redact(&config.database_url)
            )
        })?;
    infrastructure::postgres::migrate(&pool)
        .await
        .context("applying migrations")?;
    Ok(pool)
}

pub async fn run(config: &Config, command: EventsCommand) -> anyhow::Result<ExitCode> {
    match command {
        EventsCommand::Export {
            filter,
            format,
            out,
            raw,
        } => {
            let filter = filter_text(&filter).parse()?;
            let pool = pool(config).await?;
            let plan = LogExport::new(filter);
            let encoder = LineEncoder { format, raw };
            let mut sink: Box<dyn Write> = match &out {
                Some(path) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("creating {}", path.display()))?,
                )),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            let n = export(&pool, &plan, encoder, |chunk| {
                let written = sink.write_all(&chunk).map_err(Into::into);
                async move { written }
            })
            .await?;
            sink.flush()?;
            if out.is_some() {
                eprintln!("exported {n} events");
            }
            Ok(ExitCode::SUCCESS)
        }
        EventsCommand::Replay {
            to_kafka: _,
            topic,
            filter,
        } => {
            let filter = filter_text(&filter).parse()?;
            let brokers = config
                .kafka_brokers
                .as_deref()
                .ok_or_else(|| anyhow!("`ptslog events replay --to-kafka` needs KAFKA_BROKERS"))?;
            let mut kafka = kafka_config(config, brokers);
            kafka.topic = topic.unwrap_or_else(|| replay::default_topic(&config.kafka_topic));
            let pool = pool(config).await?;
            let topic = kafka.topic.clone();
            let n = replay::replay(&pool, &LogExport::new(filter), kafka).await?;
            println!("published {n} events to {topic}");
            Ok(ExitCode::SUCCESS)
        }
        EventsCommand::State { user, at_pts, json } => {
            let user = UserId::new(user).map_err(|_| anyhow!("--user {user}: not a user id"))?;
            let pool = pool(config).await?;
            let fold = state::fold(&pool, user, at_pts).await?;
            if json {
                println!("{}", state::to_json(user, &fold));
            } else {
                print!("{}", state::to_table(user, &fold));
            }
            Ok(ExitCode::SUCCESS)
        }
        EventsCommand::Schema { write, check, dir } => {
            if write {
                let n = schema::write(&dir)?;
                println!("wrote {n} schemas into {}", dir.display());
                Ok(ExitCode::SUCCESS)
            } else if check {
                let problems = schema::check(&dir);
                for p in &problems {
                    println!("{p}");
                }
                Ok(if problems.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                })
            } else {
                for s in domain::events::schema::payload_schemas() {
                    println!("{}", s.file_name());
                }
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}
