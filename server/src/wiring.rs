//! Builds the application from configuration and starts the HTTP front.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use application::{App, AppConfig};
use infrastructure::{access_hash_key, PgAccounts, PgStore, RedisRateLimiter};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::http;

/// Connects to Postgres, applies pending migrations and wires the adapters into an [`App`].
pub async fn build(config: &Config) -> anyhow::Result<(App, PgPool)> {
    let pool = infrastructure::connect(&config.database_url, config.db_max_connections)
        .await
        .with_context(|| format!("connecting to Postgres at {}", redact(&config.database_url)))?;
    infrastructure::migrate(&pool).await.context("applying migrations")?;
    let keys = access_hash_key(&pool).await.context("loading the access hash key")?;
    let limiter = RedisRateLimiter::new(&config.redis_url, config.redis_prefix.clone(), config.send_rate_per_minute)
        .context("setting up the Redis rate limiter")?;
    let app = App::new(
        Arc::new(PgStore::new(pool.clone())),
        Arc::new(PgAccounts::new(pool.clone())),
        Arc::new(limiter),
        keys,
        AppConfig { dev_login: config.dev_login },
    );
    Ok((app, pool))
}

/// A started server.
pub struct Running {
    pub addr: SocketAddr,
    pub app: App,
    pub pool: PgPool,
    pub task: JoinHandle<std::io::Result<()>>,
}

/// Builds everything and serves HTTP on `config.http_addr` (port 0 picks a free one) until the task
/// is aborted.
pub async fn start(config: &Config) -> anyhow::Result<Running> {
    let (app, pool) = build(config).await?;
    let listener = TcpListener::bind(config.http_addr).await.with_context(|| format!("binding {}", config.http_addr))?;
    let addr = listener.local_addr()?;
    let router = http::router(http::HttpState { app: app.clone(), pool: pool.clone() });
    let task = tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(Running { addr, app, pool, task })
}

/// A connection URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..scheme + 3], user, &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_redacted() {
        assert_eq!(super::redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(super::redact("postgres://u@h/db"), "postgres://u@h/db");
    }
}
