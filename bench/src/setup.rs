//! Fresh databases, the server configuration the bench runs with, and the benchmark's accounts.

use std::collections::HashMap;

use anyhow::{anyhow, bail, Context};
use application::{App, Caller};
use domain::{AuthKeyId, SessionId, UserId};
use ptslog_server::Config;
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::{Connection, PgConnection, PgPool};

/// The URL of database `name` on the server `admin_url` points at.
pub fn database_url(admin_url: &str, name: &str) -> String {
    let (base, query) = match admin_url.split_once('?') {
        Some((b, q)) => (b.to_string(), format!("?{q}")),
        None => (admin_url.to_string(), String::new()),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let cut = base[after_scheme..]
        .rfind('/')
        .map_or(base.len(), |i| after_scheme + i + 1);
    let prefix = if cut == base.len() {
        format!("{base}/")
    } else {
        base[..cut].to_string()
    };
    format!("{prefix}{name}{query}")
}

pub async fn create_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    let mut admin = PgConnection::connect(admin_url).await.with_context(|| {
        format!(
            "connecting to Postgres at {}",
            ptslog_server::wiring::redact(admin_url)
        )
    })?;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .with_context(|| format!("CREATE DATABASE {name}"))?;
    // A standby serving the reads (PTSLOG_BENCH_READ_SERVER) must have it before a server starts.
    if let Ok(standby) = std::env::var("PTSLOG_BENCH_READ_SERVER") {
        let url = database_url(&standby, name);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while PgConnection::connect(&url).await.is_err() {
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "the standby never had {name}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

pub async fn drop_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    let mut admin = PgConnection::connect(admin_url).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await?;
    Ok(())
}

/// The server's settings for the bench: no send-rate limit, its own Redis prefix, a free port.
pub fn server_config(
    db_url: &str,
    redis_url: &str,
    db_name: &str,
    max_connections: u32,
) -> anyhow::Result<Config> {
    server_config_with(db_url, redis_url, db_name, max_connections, &[])
}

/// [`server_config`] with more settings (`PTSLOG_*` variables), which win over the bench's.
pub fn server_config_with(
    db_url: &str,
    redis_url: &str,
    db_name: &str,
    max_connections: u32,
    extra: &[(String, String)],
) -> anyhow::Result<Config> {
    let mut vars = HashMap::from([
        ("DATABASE_URL".to_string(), db_url.to_string()),
        ("REDIS_URL".to_string(), redis_url.to_string()),
        (
            "PTSLOG_REDIS_PREFIX".to_string(),
            format!("bench:{db_name}:"),
        ),
        ("PTSLOG_HTTP_ADDR".to_string(), "127.0.0.1:0".to_string()),
        ("PTSLOG_SEND_RATE_PER_MINUTE".to_string(), "0".to_string()),
        // Benchmark devices sign in by phone (development sign-in).
        ("PTSLOG_DEV_LOGIN".to_string(), "true".to_string()),
        (
            "PTSLOG_DB_MAX_CONNECTIONS".to_string(),
            max_connections.to_string(),
        ),
        // The MTProto front on a free port (the reads phases load it), its RSA key made once per
        // bench process, and no cap on the load generator's key exchanges.
        ("PTSLOG_MTPROTO_ADDR".to_string(), "127.0.0.1:0".to_string()),
        (
            "PTSLOG_MTPROTO_KEY_FILE".to_string(),
            mtproto_key_file().display().to_string(),
        ),
        (
            "PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY".to_string(),
            hex::encode(rand::random::<[u8; 32]>()),
        ),
        (
            "PTSLOG_MTPROTO_HANDSHAKES_PER_MINUTE".to_string(),
            "1000000".to_string(),
        ),
    ]);
    // Group commit and plans as the environment says (e.g. PTSLOG_SEND_BATCH_MAX=0 or
    // PTSLOG_DB_PLAN_CACHE_MODE=auto to measure without them).
    for k in [
        "PTSLOG_DB_PLAN_CACHE_MODE",
        "PTSLOG_SEND_BATCH_MAX",
        "PTSLOG_SEND_BATCH_WAIT_US",
        "PTSLOG_SEND_BATCH_COMMITTERS",
    ] {
        if let Ok(v) = std::env::var(k) {
            vars.insert(k.to_string(), v);
        }
    }
    // Reads on a streaming standby of the bench's Postgres (its admin URL), to measure what
    // DATABASE_READ_URL costs and saves (docs/performance.md, "A read replica").
    if let Ok(standby) = std::env::var("PTSLOG_BENCH_READ_SERVER") {
        vars.insert(
            "DATABASE_READ_URL".to_string(),
            database_url(&standby, db_name),
        );
    }
    vars.extend(extra.iter().cloned());
    Config::from_vars(&vars)
}

/// The MTProto server key of this bench process's servers (removed by `run` at the end).
pub fn mtproto_key_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ptslog-bench-mtproto-{}.pem", std::process::id()))
}

/// One benchmark account with one device.
#[derive(Clone)]
pub struct BenchUser {
    pub caller: Caller,
    pub token: String,
}

impl BenchUser {
    pub fn id(&self) -> UserId {
        self.caller.user_id
    }
}

/// Up to this many accounts are signed in through the application (`App::login`); more are
/// written by a bulk SQL loader that produces the same rows.
pub const APP_LOGIN_MAX: usize = 2000;

/// Creates `n` accounts with one device each. Ids are 1..=n (the database must be fresh).
pub async fn create_users(app: &App, pool: &PgPool, n: usize) -> anyhow::Result<Vec<BenchUser>> {
    if n < 2 {
        bail!("--users must be at least 2");
    }
    let mut users = if n <= APP_LOGIN_MAX {
        login_users(app, n).await?
    } else {
        load_users(pool, n).await?
    };
    users.sort_by_key(|u| u.caller.user_id);
    for (i, u) in users.iter().enumerate() {
        if u.caller.user_id.get() != i as i64 + 1 {
            bail!(
                "expected account ids 1..={n} in a fresh database, found {} at position {i}",
                u.caller.user_id
            );
        }
    }
    Ok(users)
}

/// The phone of account `i` (1-based: account ids follow the phones).
pub fn phone(i: usize) -> String {
    format!("+1999{i:08}")
}

/// Through the application layer, 16 at a time, in order (so ids follow the phones).
async fn login_users(app: &App, n: usize) -> anyhow::Result<Vec<BenchUser>> {
    use application::commands::login::Login;
    let mut out = Vec::with_capacity(n);
    // Created one by one so that ids are 1..=n; then devices in parallel would not matter.
    for i in 1..=n {
        let r = app
            .login(Login {
                phone: phone(i),
                first_name: format!("Bench{i}"),
                last_name: String::new(),
            })
            .await
            .map_err(|e| anyhow!("login of bench user {i}: {e:?}"))?;
        let caller = app
            .authenticate(&r.token)
            .await
            .map_err(|e| anyhow!("authenticating bench user {i}: {e:?}"))?
            .ok_or_else(|| anyhow!("the token of bench user {i} does not authenticate"))?;
        out.push(BenchUser {
            caller,
            token: r.token,
        });
    }
    Ok(out)
}

/// The same rows `PgAccounts::login` writes (users, user_sequences, authorizations with the
/// token's SHA-256), in three statements.
async fn load_users(pool: &PgPool, n: usize) -> anyhow::Result<Vec<BenchUser>> {
    let mut tx = pool.begin().await?;
    let n64 = n as i64;
    sqlx::query(
        "INSERT INTO users (id, phone, first_name) \
         SELECT g, '+1999' || lpad(g::text, 8, '0'), 'Bench' || g FROM generate_series(1, $1::bigint) g",
    )
    .bind(n64)
    .execute(&mut *tx)
    .await?;
    sqlx::query("SELECT setval(pg_get_serial_sequence('users', 'id'), $1)")
        .bind(n64)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO user_sequences (user_id) SELECT g FROM generate_series(1, $1::bigint) g",
    )
    .bind(n64)
    .execute(&mut *tx)
    .await?;
    let mut ids = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    let mut hashes = Vec::with_capacity(n);
    let mut users = Vec::with_capacity(n);
    let mut rng = rand::thread_rng();
    for i in 1..=n64 {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        let token = hex::encode(bytes);
        let auth_key_id = (rng.next_u64() >> 1) as i64 | 1;
        ids.push(i);
        keys.push(auth_key_id);
        hashes.push(Sha256::digest(token.as_bytes()).to_vec());
        let user_id = UserId::new(i).map_err(|_| anyhow!("user id {i}"))?;
        users.push(BenchUser {
            caller: Caller {
                user_id,
                auth_key_id: AuthKeyId(auth_key_id),
                session_id: SessionId(auth_key_id),
            },
            token,
        });
    }
    sqlx::query(
        "INSERT INTO authorizations (auth_key_id, user_id, token_hash) \
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[])",
    )
    .bind(&keys)
    .bind(&ids)
    .bind(&hashes)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls() {
        assert_eq!(
            database_url("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            database_url("postgres://u@h:1/postgres?sslmode=disable", "x"),
            "postgres://u@h:1/x?sslmode=disable"
        );
        assert_eq!(database_url("postgres://u@h:1", "x"), "postgres://u@h:1/x");
    }
}
