//! `ptslog projections rebuild | verify | status`.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use domain::UserId;
use projections::online::{Progress, RebuildControl};
use projections::status::{ProjectionStatus, RebuildState};
use projections::{Projection, ProjectionError};
use sqlx::PgPool;

use crate::cli::ProjectionsCommand;
use crate::http::admin_projections::status_json;

pub async fn run(pool: &PgPool, command: ProjectionsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ProjectionsCommand::Rebuild {
            names,
            all,
            users,
            batch_events,
        } => {
            let selected = if all {
                Projection::ALL.to_vec()
            } else {
                parse_names(&names)?
            };
            if users.is_empty() {
                rebuild(pool, &selected, all, batch_events).await
            } else {
                repair(pool, &selected, &parse_users(&users)?).await
            }
        }
        ProjectionsCommand::Verify { names, users } => {
            let selected = if names.is_empty() {
                Projection::ALL.to_vec()
            } else {
                parse_names(&names)?
            };
            let users = parse_users(&users)?;
            let only = (!users.is_empty()).then_some(users.as_slice());
            let report = projections::verify_selected(pool, &selected, only).await?;
            println!(
                "replayed {} events; checked {}; {} difference(s)",
                report.events_replayed,
                report.tables_checked.join(", "),
                report.total_differences
            );
            for d in &report.differences {
                println!("  {d}");
            }
            if report.differences.len() as u64 != report.total_differences {
                println!(
                    "  … and {} more",
                    report.total_differences - report.differences.len() as u64
                );
            }
            Ok(if report.is_clean() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        ProjectionsCommand::Status { json } => {
            let status = projections::status::load(pool, true).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status_json(&status))?);
            } else {
                print!("{}", status_table(&status));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn parse_names(names: &[String]) -> anyhow::Result<Vec<Projection>> {
    names
        .iter()
        .map(|n| {
            Projection::from_name(n).ok_or_else(|| {
                anyhow!(
                    "unknown projection {n:?}; the projections are: {}",
                    Projection::ALL.map(|p| p.name()).join(", ")
                )
            })
        })
        .collect()
}

fn parse_users(users: &[i64]) -> anyhow::Result<Vec<UserId>> {
    users
        .iter()
        .map(|u| UserId::new(*u).map_err(|_| anyhow!("--user {u}: not a user id")))
        .collect()
}

async fn rebuild(
    pool: &PgPool,
    selected: &[Projection],
    all: bool,
    batch_events: i64,
) -> anyhow::Result<ExitCode> {
    let control = RebuildControl {
        batch_events,
        ..RebuildControl::default()
    };
    let cancel = control.cancel.clone();
    let interrupt = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nrebuild: aborting; the live tables stay as they are (Ctrl-C again to quit at once)");
            cancel.store(true, Ordering::Relaxed);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let mut last_print = Instant::now() - Duration::from_secs(60);
    let mut print = |p: &Progress| {
        if last_print.elapsed() < Duration::from_secs(2) {
            return;
        }
        last_print = Instant::now();
        eprintln!("rebuild: {}", describe_progress(p));
        let _ = std::io::stderr().flush();
    };
    let outcome = projections::rebuild_online(pool, selected, &control, &mut print).await;
    interrupt.abort();
    match outcome {
        Ok(report) => {
            let names: Vec<&str> = report.projections.iter().map(|p| p.name()).collect();
            if all {
                println!(
                    "rebuilt every projection from {} events",
                    report.events_applied
                );
            } else {
                println!(
                    "rebuilt {} from {} events",
                    names.join(", "),
                    report.events_applied
                );
            }
            let pulled: Vec<&str> = report
                .projections
                .iter()
                .filter(|p| !selected.contains(p))
                .map(|p| p.name())
                .collect();
            if !pulled.is_empty() {
                println!(
                    "  also rebuilt (read by what was asked): {}",
                    pulled.join(", ")
                );
            }
            println!(
                "  {} catch-up round(s); swap applied the last {} event(s) and held writers for {:.1} ms ({} attempt(s)); total {:.1} s, {:.0} events/s",
                report.catch_up_rounds,
                report.swap_delta_events,
                report.writers_held.as_secs_f64() * 1000.0,
                report.swap_attempts,
                report.elapsed.as_secs_f64(),
                report.events_applied as f64 / report.elapsed.as_secs_f64().max(1e-9)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(ProjectionError::Aborted(why)) => {
            println!("rebuild aborted ({why}); the shadow copies were dropped");
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e).context("rebuild failed; the live tables are untouched"),
    }
}

async fn repair(
    pool: &PgPool,
    selected: &[Projection],
    users: &[UserId],
) -> anyhow::Result<ExitCode> {
    if users.is_empty() {
        bail!("no account to repair");
    }
    let report = projections::repair_users(pool, selected, users).await?;
    println!(
        "repaired {} for {} account(s): {} row(s) replaced by a replay of {} events; their writers waited {:.1} ms",
        report
            .projections
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", "),
        users.len(),
        report.rows_deleted,
        report.events_applied,
        report.accounts_held.as_secs_f64() * 1000.0
    );
    Ok(ExitCode::SUCCESS)
}

fn describe_progress(p: &Progress) -> String {
    let percent = if p.events_total > 0 {
        format!(
            " ({:.0}%)",
            100.0 * p.events_done as f64 / p.events_total as f64
        )
    } else {
        String::new()
    };
    let eta = p
        .eta()
        .map(|d| format!(", ETA {:.0} s", d.as_secs_f64()))
        .unwrap_or_default();
    format!(
        "{} {}/{} events{percent}, {:.0} events/s{eta}",
        p.phase.as_str(),
        p.events_done,
        p.events_total,
        p.rate
    )
}

/// The human-readable status: one line per projection, then the rebuild progress and errors.
pub fn status_table(status: &[ProjectionStatus]) -> String {
    let mut out = format!(
        "{:<24} {:>7} {:>5} {:<11} {:<6} {:>14} {:<22} {:>10} {:>4}\n",
        "projection",
        "version",
        "code",
        "state",
        "stale",
        "events applied",
        "last rebuilt",
        "lock ms",
        "lag"
    );
    let mut notes = Vec::new();
    for s in status {
        let opt = |v: Option<i32>| v.map_or("?".to_string(), |v| v.to_string());
        out.push_str(&format!(
            "{:<24} {:>7} {:>5} {:<11} {:<6} {:>14} {:<22} {:>10} {:>4}\n",
            s.name,
            opt(s.version),
            opt(s.code_version),
            s.state.as_str(),
            if s.is_stale() { "STALE" } else { "no" },
            s.events_applied,
            s.last_rebuilt_at
                .map(|t| t.format("%Y-%m-%d %H:%M:%SZ").to_string())
                .unwrap_or_else(|| "never".to_string()),
            s.last_lock_ms
                .map(|ms| format!("{ms:.1}"))
                .unwrap_or_else(|| "-".to_string()),
            s.lag()
        ));
        if s.projection.is_none() {
            notes.push(format!(
                "{}: not a projection of this code (left from an older version)",
                s.name
            ));
        } else if s.is_stale() {
            notes.push(format!(
                "{}: stale: built by projector version {} but this code has {}; run `ptslog projections rebuild {}`",
                s.name,
                opt(s.version),
                opt(s.code_version),
                s.name
            ));
        }
        if let Some(r) = &s.rebuild {
            let eta = r
                .eta_seconds()
                .map(|e| format!(", ETA {e:.0} s"))
                .unwrap_or_default();
            let lag = r
                .shadow_lag_pts
                .map(|l| format!("; the shadow copy is {l} pts behind the log"))
                .unwrap_or_default();
            let abandoned = if r.abandoned() {
                format!(
                    " (no progress for {:.0} s: the rebuild process is probably gone)",
                    r.seconds_since_update
                )
            } else {
                String::new()
            };
            notes.push(format!(
                "{}: rebuilding, {}: {}/{} events, {:.0} events/s{eta}{lag}{abandoned}",
                s.name, r.phase, r.events_done, r.events_total, r.rate
            ));
        }
        if let Some(e) = &s.error {
            let what = if s.state == RebuildState::Failed {
                "last rebuild failed"
            } else {
                "note"
            };
            notes.push(format!("{}: {what}: {e}", s.name));
        }
    }
    out.push_str(
        "lag: events of the log not yet in the live table; 0 by construction, every command projects its events inline in its own transaction\n",
    );
    for n in notes {
        out.push_str(&format!("  {n}\n"));
    }
    out
}
