//! Settings, from the environment; a `KEY=VALUE` file named by `--config` (or `PTSLOG_CONFIG`) fills
//! in what the environment leaves unset.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::{anyhow, Context};

#[derive(Debug, Clone)]
pub struct Config {
    /// `DATABASE_URL`.
    pub database_url: String,
    /// `PTSLOG_DB_MAX_CONNECTIONS` (default 32).
    pub db_max_connections: u32,
    /// `REDIS_URL`.
    pub redis_url: String,
    /// `PTSLOG_REDIS_PREFIX`: a prefix for every Redis key (several deployments can share a Redis).
    pub redis_prefix: String,
    /// `PTSLOG_HTTP_ADDR` (default 127.0.0.1:8080).
    pub http_addr: SocketAddr,
    /// `PTSLOG_SEND_RATE_PER_MINUTE` (default 30; 0 turns the limit off).
    pub send_rate_per_minute: u32,
    /// `PTSLOG_DEV_LOGIN` (default true): `POST /v1/auth/login` signs in by phone alone.
    pub dev_login: bool,
}

pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8080";
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/ptslog";
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

impl Config {
    /// Reads the environment, then the optional file.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut vars: HashMap<String, String> = HashMap::new();
        let file = file.map(Path::to_path_buf).or_else(|| std::env::var_os("PTSLOG_CONFIG").map(Into::into));
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading config file {}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = line
                    .split_once('=')
                    .ok_or_else(|| anyhow!("{}:{}: expected KEY=VALUE", path.display(), n + 1))?;
                vars.insert(k.trim().to_string(), v.trim().trim_matches('"').to_string());
            }
        }
        for (k, v) in std::env::vars() {
            vars.insert(k, v);
        }
        Self::from_vars(&vars)
    }

    pub fn from_vars(vars: &HashMap<String, String>) -> anyhow::Result<Self> {
        let get = |k: &str| vars.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let parse_bool = |k: &str, default: bool| -> anyhow::Result<bool> {
            match get(k) {
                None => Ok(default),
                Some("1" | "true" | "yes" | "on") => Ok(true),
                Some("0" | "false" | "no" | "off") => Ok(false),
                Some(other) => Err(anyhow!("{k}: expected true or false, got {other:?}")),
            }
        };
        Ok(Self {
            database_url: get("DATABASE_URL").unwrap_or(DEFAULT_DATABASE_URL).to_string(),
            db_max_connections: get("PTSLOG_DB_MAX_CONNECTIONS").map(str::parse).transpose().context("PTSLOG_DB_MAX_CONNECTIONS")?.unwrap_or(32),
            redis_url: get("REDIS_URL").unwrap_or(DEFAULT_REDIS_URL).to_string(),
            redis_prefix: get("PTSLOG_REDIS_PREFIX").unwrap_or("").to_string(),
            http_addr: get("PTSLOG_HTTP_ADDR").unwrap_or(DEFAULT_HTTP_ADDR).parse().context("PTSLOG_HTTP_ADDR")?,
            send_rate_per_minute: get("PTSLOG_SEND_RATE_PER_MINUTE")
                .map(str::parse)
                .transpose()
                .context("PTSLOG_SEND_RATE_PER_MINUTE")?
                .unwrap_or(domain::limits::DEFAULT_SEND_RATE_PER_MINUTE),
            dev_login: parse_bool("PTSLOG_DEV_LOGIN", true)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(c.http_addr.to_string(), DEFAULT_HTTP_ADDR);
        assert_eq!(c.send_rate_per_minute, 30);
        assert!(c.dev_login);
        let vars = HashMap::from([
            ("PTSLOG_SEND_RATE_PER_MINUTE".to_string(), "0".to_string()),
            ("PTSLOG_DEV_LOGIN".to_string(), "false".to_string()),
        ]);
        let c = Config::from_vars(&vars).unwrap();
        assert_eq!(c.send_rate_per_minute, 0);
        assert!(!c.dev_login);
        let bad = HashMap::from([("PTSLOG_HTTP_ADDR".to_string(), "nope".to_string())]);
        assert!(Config::from_vars(&bad).is_err());
    }
}
