//! `ptslog-bench-rebuild`: how fast the online rebuild replays the log, beside how fast Postgres
//! hands out the same rows (docs/performance.md, "Rebuild speed"). Usually run through
//! `scripts/bench-rebuild`.
//!
//! On a fresh database the bench loader writes a log of `--events` events (new messages among
//! `--users` accounts, with their read models); then, each on the same log:
//! - raw reads of `user_update_events` in (user_id, pts) order: `COPY … TO STDOUT`, a server-side
//!   cursor, and the rebuild's own keyset pages with each payload decoded into an event;
//! - the online rebuild of `message_boxes` + `dialogs`, and of every projection.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use domain::events::UserEvent;
use futures::StreamExt;
use projections::online::RebuildControl;
use projections::Projection;
use ptslog_bench::{loader, setup};
use sqlx::{Connection, Row};

#[derive(Parser, Debug)]
#[command(
    name = "ptslog-bench-rebuild",
    about = "Rebuild speed against raw log reads"
)]
struct Args {
    /// Events in the log.
    #[arg(long, default_value_t = 200_000)]
    events: u64,
    /// Accounts.
    #[arg(long, default_value_t = 1000)]
    users: usize,
    /// A markdown document whose <!-- bench-rebuild:begin --> … <!-- bench-rebuild:end --> region
    /// gets the figures.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Keep the database (ptslog_bench_rebuild_<ts>).
    #[arg(long)]
    keep_db: bool,
    #[arg(
        long,
        env = "PTSLOG_TEST_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    admin_url: String,
    #[arg(
        long,
        env = "PTSLOG_TEST_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    redis_url: String,
}

/// Rows and bytes of a `COPY … TO STDOUT`, read to the end.
async fn drain_copy(conn: &mut sqlx::PgConnection, statement: &str) -> anyhow::Result<(u64, u64)> {
    let mut stream = conn.copy_out_raw(statement).await?;
    let (mut rows, mut bytes) = (0u64, 0u64);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        bytes += chunk.len() as u64;
        rows += chunk.iter().filter(|b| **b == b'\n').count() as u64;
    }
    Ok((rows, bytes))
}

struct Figure {
    what: String,
    events: u64,
    took: Duration,
    note: String,
}

impl Figure {
    fn rate(&self) -> f64 {
        self.events as f64 / self.took.as_secs_f64().max(1e-9)
    }
}

/// The serving allocator (server/src/allocator.rs).
#[global_allocator]
static ALLOCATOR: ptslog_server::allocator::Serving = ptslog_server::allocator::Serving;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ptslog-bench-rebuild: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> anyhow::Result<()> {
    let name = format!(
        "ptslog_bench_rebuild_{}",
        chrono::Utc::now().format("%Y%m%d%H%M%S")
    );
    setup::create_database(&args.admin_url, &name).await?;
    let url = setup::database_url(&args.admin_url, &name);
    let result = measure(args, &url, &name).await;
    if !args.keep_db {
        setup::drop_database(&args.admin_url, &name).await?;
    }
    let figures = result?;
    let table = markdown(args, &figures);
    println!("{table}");
    if let Some(path) = &args.markdown {
        let doc =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let out = replace_region(&doc, &table)?;
        std::fs::write(path, out)?;
        println!("figures written into {}", path.display());
    }
    Ok(())
}

async fn measure(args: &Args, url: &str, name: &str) -> anyhow::Result<Vec<Figure>> {
    let config = setup::server_config(url, &args.redis_url, name, 8)?;
    let (app, pool) = ptslog_server::wiring::build(&config).await?;
    setup::create_users(&app, &pool, args.users).await?;
    println!(
        "loading {} events among {} accounts …",
        args.events, args.users
    );
    loader::load_to(&pool, args.users, args.events, true).await?;
    loader::vacuum_analyze(&pool).await?;
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&pool)
        .await?;
    let events = events as u64;
    let mut figures = Vec::new();
    let order = "SELECT user_id, pts, kind, payload_version, payload FROM user_update_events ORDER BY user_id, pts";

    // Raw: COPY out, in the rebuild's order.
    let mut conn = pool.acquire().await?;
    let t = Instant::now();
    let (rows, bytes) = drain_copy(&mut conn, &format!("COPY ({order}) TO STDOUT")).await?;
    figures.push(Figure {
        what: "raw read: `COPY (SELECT … ORDER BY user_id, pts) TO STDOUT`".into(),
        events: rows,
        took: t.elapsed(),
        note: format!("{:.0} MB", bytes as f64 / 1e6),
    });

    // Raw: a server-side cursor, 2000 rows per FETCH.
    let t = Instant::now();
    let mut tx = conn.begin().await?;
    sqlx::query(&format!("DECLARE c NO SCROLL CURSOR FOR {order}"))
        .execute(&mut *tx)
        .await?;
    let mut rows = 0u64;
    loop {
        let batch = sqlx::query("FETCH 2000 FROM c").fetch_all(&mut *tx).await?;
        if batch.is_empty() {
            break;
        }
        rows += batch.len() as u64;
    }
    tx.commit().await?;
    figures.push(Figure {
        what: "raw read: cursor, `FETCH 2000`".into(),
        events: rows,
        took: t.elapsed(),
        note: String::new(),
    });

    // The rebuild's own read path: keyset pages of 2000 plus decoding each payload.
    let t = Instant::now();
    let page = "SELECT user_id, pts, kind, payload_version, payload FROM user_update_events \
                WHERE (user_id, pts) > ($1, $2) ORDER BY user_id, pts LIMIT 2000";
    let mut after = (i64::MIN, 0i32);
    let mut rows = 0u64;
    loop {
        let batch = sqlx::query(page)
            .bind(after.0)
            .bind(after.1)
            .fetch_all(&mut *conn)
            .await?;
        for r in &batch {
            let kind: String = r.try_get("kind")?;
            let version: i16 = r.try_get("payload_version")?;
            let payload: serde_json::Value = r.try_get("payload")?;
            UserEvent::decode(&kind, version, payload)
                .map_err(|e| anyhow::anyhow!("decoding: {e}"))?;
            after = (r.try_get("user_id")?, r.try_get("pts")?);
        }
        rows += batch.len() as u64;
        if batch.len() < 2000 {
            break;
        }
    }
    figures.push(Figure {
        what: "rebuild's read path: keyset pages of 2000 + decode".into(),
        events: rows,
        took: t.elapsed(),
        note: String::new(),
    });
    drop(conn);

    for (what, selected, workers) in [
        (
            "online rebuild: `message_boxes` + `dialogs`, 1 copy connection",
            vec![Projection::Dialogs],
            1,
        ),
        (
            "online rebuild: `message_boxes` + `dialogs`, 4 copy connections (default)",
            vec![Projection::Dialogs],
            4,
        ),
        (
            "online rebuild: `--all`, 4 copy connections",
            Projection::ALL.to_vec(),
            4,
        ),
    ] {
        let what = if selected.len() == Projection::ALL.len() {
            what.replace(
                "`--all`",
                &format!("`--all` ({} projections)", selected.len()),
            )
        } else {
            what.to_string()
        };
        let what = what.as_str();
        let control = RebuildControl {
            copy_workers: workers,
            ..RebuildControl::default()
        };
        let mut last = Instant::now();
        let report = projections::rebuild_online(&pool, &selected, &control, &mut |p| {
            if last.elapsed() > Duration::from_secs(5) {
                last = Instant::now();
                println!(
                    "  {what}: {}/{} events, {:.0}/s",
                    p.events_done, p.events_total, p.rate
                );
            }
        })
        .await?;
        figures.push(Figure {
            what: what.into(),
            events: report.events_applied,
            took: report.elapsed,
            note: format!(
                "swap held writers {:.1} ms",
                report.writers_held.as_secs_f64() * 1000.0
            ),
        });
    }
    let t = Instant::now();
    let report = projections::verify(&pool).await?;
    anyhow::ensure!(
        report.is_clean(),
        "verify after the rebuilds: {:?}",
        report.differences
    );
    figures.push(Figure {
        what: "`projections verify` (every projection, chunks of 256 accounts on snapshots)".into(),
        events: report.events_replayed,
        took: t.elapsed(),
        note: String::new(),
    });
    anyhow::ensure!(events == rows, "read {rows} of {events} events");
    Ok(figures)
}

fn markdown(args: &Args, figures: &[Figure]) -> String {
    let mut out = format!(
        "Log of {} events (new messages among {} accounts, loaded by the bench loader), {} on {} cores, {}.\n\n\
         | what | events | seconds | events/s | |\n|---|---:|---:|---:|---|\n",
        figures.first().map_or(args.events, |f| f.events),
        args.users,
        chrono::Utc::now().format("%Y-%m-%d"),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        "`scripts/bench-rebuild`"
    );
    let raw = figures.first().map(Figure::rate).unwrap_or(0.0);
    for f in figures {
        out.push_str(&format!(
            "| {} | {} | {:.2} | {:.0} | {}{} |\n",
            f.what,
            f.events,
            f.took.as_secs_f64(),
            f.rate(),
            if raw > 0.0 {
                format!("{:.1}% of COPY", 100.0 * f.rate() / raw)
            } else {
                String::new()
            },
            if f.note.is_empty() {
                String::new()
            } else {
                format!("; {}", f.note)
            }
        ));
    }
    out
}

const BEGIN: &str = "<!-- bench-rebuild:begin -->";
const END: &str = "<!-- bench-rebuild:end -->";

fn replace_region(doc: &str, body: &str) -> anyhow::Result<String> {
    let b = doc.find(&format!("\n{BEGIN}\n")).map(|i| i + 1);
    let e = doc.find(&format!("\n{END}")).map(|i| i + 1);
    match (b, e) {
        (Some(b), Some(e)) if b < e => Ok(format!(
            "{}{BEGIN}\n{}\n{}",
            &doc[..b],
            body.trim_end(),
            &doc[e..]
        )),
        _ => anyhow::bail!(
            "the document has no {BEGIN} … {END} region (each marker alone on its line)"
        ),
    }
}
