//! What the live-push benchmarks share: the benchmark database, signing in devices, calling RPCs,
//! and writing figures into a marked region of docs/performance.md.

use std::path::Path;

use anyhow::{anyhow, bail, Context};
use serde_json::{json, Value};
use sqlx::{Connection, PgConnection};

/// The URL of database `name` on the server `admin_url` points at.
pub fn database_url(admin_url: &str, name: &str) -> String {
    let (base, query) = match admin_url.split_once('?') {
        Some((b, q)) => (b.to_string(), format!("?{q}")),
        None => (admin_url.to_string(), String::new()),
    };
    let cut = base.rfind('/').map(|i| i + 1).unwrap_or(base.len());
    format!("{}{}{}", &base[..cut], name, query)
}

pub async fn admin(admin_url: &str, sql: &str) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(admin_url)
        .await
        .context("connecting to the admin database")?;
    sqlx::query(sql)
        .execute(&mut conn)
        .await
        .with_context(|| sql.to_string())?;
    Ok(())
}

pub struct Device {
    pub user_id: i64,
    pub token: String,
}

pub async fn login(http: &reqwest::Client, base: &str, phone: &str) -> anyhow::Result<Device> {
    let body: Value = http
        .post(format!("{base}/v1/auth/login"))
        .json(&json!({"phone": phone, "first_name": "bench", "last_name": ""}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(Device {
        user_id: body["user_id"]
            .as_i64()
            .ok_or_else(|| anyhow!("no user_id"))?,
        token: body["token"]
            .as_str()
            .ok_or_else(|| anyhow!("no token"))?
            .to_string(),
    })
}

pub async fn rpc(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let r = http
        .post(format!("{base}/v1/rpc/{method}"))
        .bearer_auth(token)
        .json(&params)
        .send()
        .await?;
    let status = r.status();
    let body: Value = r.json().await?;
    if !status.is_success() {
        bail!("{method}: {status} {body}");
    }
    Ok(body)
}

/// Rewrites the region between `<!-- {tag}:begin -->` and `<!-- {tag}:end -->` of a markdown
/// document with `body` (appending the region under `heading` if the document has none).
pub fn write_region(path: &Path, tag: &str, heading: &str, body: &str) -> anyhow::Result<()> {
    let begin = format!("<!-- {tag}:begin -->");
    let end = format!("<!-- {tag}:end -->");
    let mut doc = std::fs::read_to_string(path).unwrap_or_else(|_| "# Performance\n".to_string());
    if !doc.contains(&begin) || !doc.contains(&end) {
        doc.push_str(&format!("\n## {heading}\n\n{begin}\n{end}\n"));
    }
    let (head, rest) = doc
        .split_once(&begin)
        .ok_or_else(|| anyhow!("no {begin}"))?;
    let (_, tail) = rest.split_once(&end).ok_or_else(|| anyhow!("no {end}"))?;
    std::fs::write(path, format!("{head}{begin}\n{}\n{end}{tail}", body.trim()))?;
    Ok(())
}

/// The machine's load average, as /proc/loadavg prints it (three figures).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
