//! The baseline: `pgbench` running, at the same concurrency and against the same tables, the SQL
//! statements one `messages.sendMessage` runs (see [`crate::sendsql`]), so the ratio app/pgbench
//! says how much the application costs on top of the database work it cannot avoid.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use infrastructure::postgres::SessionSettings;
use serde::Serialize;

use crate::sendsql;
use crate::stats::{OpStats, Recorder};

/// Where pgbench is: the newest server's bin folder first (Debian's /usr/bin/pgbench is a wrapper),
/// then PATH.
pub fn find_pgbench() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let p = e.path().join("bin/pgbench");
            p.exists().then_some((v, p))
        })
        .collect();
    versions.sort();
    if let Some((_, p)) = versions.pop() {
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("pgbench"))
            .find(|p| p.exists())
    })
}

/// The custom script: one send per transaction between two distinct random accounts of 1..=n.
pub fn script(n_users: usize, date: i32) -> String {
    sendsql::pgbench_script(n_users, date)
}

#[derive(Debug, Clone, Serialize)]
pub struct PgbenchRun {
    pub transactions: u64,
    pub failed: u64,
    pub tps: f64,
    pub stats: OpStats,
    pub command: String,
}

/// Runs pgbench for `duration` with `clients` connections; latencies come from its per-transaction
/// log. Its sessions carry the server's serving sessions' settings (`plan_cache_mode` and the
/// statement and idle-in-transaction timeouts, through `PGOPTIONS`), so both sides run the same
/// SQL the same way.
pub async fn run(
    pgbench: &Path,
    db_url: &str,
    scripts: &[(PathBuf, usize)],
    clients: usize,
    duration: Duration,
    work_dir: &Path,
    session: &SessionSettings,
) -> anyhow::Result<PgbenchRun> {
    let secs = duration.as_secs().max(1);
    let threads = clients.clamp(1, 2);
    let log_dir = work_dir.join(format!("pgbench-log-{clients}"));
    let _ = std::fs::remove_dir_all(&log_dir);
    std::fs::create_dir_all(&log_dir)?;
    let prefix = log_dir.join("tx");
    let mut args: Vec<String> = vec![
        "-n".into(),
        "-M".into(),
        "prepared".into(),
        "-c".into(),
        clients.to_string(),
        "-j".into(),
        threads.to_string(),
        "-T".into(),
        secs.to_string(),
    ];
    for (path, weight) in scripts {
        // `file@weight`: each transaction runs one script, chosen in proportion to the weights.
        args.extend(["-f".into(), format!("{}@{weight}", path.display())]);
    }
    args.extend([
        "-l".into(),
        format!("--log-prefix={}", prefix.display()),
        db_url.to_string(),
    ]);
    let pgoptions = Some(
        session
            .options()
            .iter()
            .map(|(k, v)| format!("-c {k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
    )
    .filter(|o| !o.is_empty());
    let command = format!(
        "{}pgbench {}",
        pgoptions
            .as_ref()
            .map(|o| format!("PGOPTIONS='{o}' "))
            .unwrap_or_default(),
        args[..args.len() - 1].join(" ")
    );
    let mut cmd = tokio::process::Command::new(pgbench);
    cmd.args(&args);
    if let Some(o) = &pgoptions {
        cmd.env("PGOPTIONS", o);
    }
    let out = cmd
        .output()
        .await
        .with_context(|| format!("running {}", pgbench.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        bail!("pgbench failed ({}):\n{stdout}\n{stderr}", out.status);
    }
    let field = |label: &str| -> Option<String> {
        stdout.lines().find_map(|l| {
            l.trim()
                .strip_prefix(label)
                .map(|rest| rest.trim().to_string())
        })
    };
    let transactions: u64 = field("number of transactions actually processed:")
        .and_then(|v| {
            v.split_whitespace()
                .next()
                .and_then(|n| n.split('/').next())
                .and_then(|n| n.parse().ok())
        })
        .ok_or_else(|| anyhow!("no transaction count in pgbench output:\n{stdout}\n{stderr}"))?;
    let failed: u64 = field("number of failed transactions:")
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0);
    let tps: f64 = stdout
        .lines()
        .find(|l| l.starts_with("tps = ") && l.contains("without initial connection time"))
        .and_then(|l| {
            l.trim_start_matches("tps = ")
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
        })
        .ok_or_else(|| anyhow!("no tps in pgbench output:\n{stdout}"))?;

    // Per-transaction log lines: client_id transaction_no time_us script_no epoch epoch_us.
    let mut rec = Recorder::new();
    for entry in std::fs::read_dir(&log_dir)? {
        let text = std::fs::read_to_string(entry?.path())?;
        for line in text.lines() {
            let mut f = line.split_whitespace();
            match f.nth(2) {
                Some(t) => match t.parse::<u64>() {
                    Ok(us) => rec.record_micros(us),
                    Err(_) => rec.record(Duration::ZERO, Err(format!("pgbench: {line}"))),
                },
                None => continue,
            }
        }
    }
    let _ = std::fs::remove_dir_all(&log_dir);
    let mut stats = rec.summary(Duration::from_secs(secs));
    // pgbench's own count and rate are authoritative (the log may hold a partial last second).
    stats.throughput_per_s = crate::stats::round1(tps);
    Ok(PgbenchRun {
        transactions,
        failed,
        tps,
        stats,
        command,
    })
}
