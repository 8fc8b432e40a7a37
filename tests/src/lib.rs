//! Test harness: a fresh database per test (cloned from a migrated template), a real ptslog server on
//! a free port, and HTTP devices that talk to it.

pub mod certificates;
pub mod code_receiver;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use ptslog_server::Config;
use rand::Rng;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgConnection, PgPool};

pub fn admin_url() -> String {
    std::env::var("PTSLOG_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

pub fn redis_url() -> String {
    std::env::var("PTSLOG_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The URL of another database on the admin server.
pub fn database_url(name: &str) -> String {
    let admin = admin_url();
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b.to_string(), format!("?{q}")),
        None => (admin.clone(), String::new()),
    };
    let cut = base.rfind('/').map(|i| i + 1).unwrap_or(base.len());
    format!("{}{}{}", &base[..cut], name, query)
}

fn migrations_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../migrations")
}

/// A template database with every migration applied, named by a hash of the migrations so a
/// changed schema gets a new template. Creation is serialized by an advisory lock, across processes.
async fn template() -> anyhow::Result<String> {
    let mut files: Vec<_> = std::fs::read_dir(migrations_dir())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut h = DefaultHasher::new();
    for f in &files {
        std::fs::read(f)?.hash(&mut h);
    }
    let name = format!("ptslog_tpl_{:016x}", h.finish());
    let mut admin = PgConnection::connect(&admin_url())
        .await
        .context("connecting to the test Postgres (PTSLOG_TEST_DATABASE_URL)")?;
    sqlx::query("SELECT pg_advisory_lock(8675309)")
        .execute(&mut admin)
        .await?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&name)
            .fetch_one(&mut admin)
            .await?;
    if !exists {
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        let pool = infrastructure::postgres::connect(&database_url(&name), 2).await?;
        let migrated = infrastructure::postgres::migrate(&pool).await;
        pool.close().await;
        if let Err(e) = migrated {
            sqlx::query(&format!("DROP DATABASE {name}"))
                .execute(&mut admin)
                .await?;
            return Err(anyhow!("migrating the template: {e}"));
        }
    }
    sqlx::query("SELECT pg_advisory_unlock(8675309)")
        .execute(&mut admin)
        .await?;
    Ok(name)
}

/// A new empty, migrated database; answers its name.
pub async fn fresh_database() -> anyhow::Result<String> {
    let tpl = template().await?;
    create_database(Some(&tpl)).await
}

/// A new database without any schema, for tests of the migrations themselves; answers its name.
pub async fn blank_database() -> anyhow::Result<String> {
    create_database(None).await
}

async fn create_database(template: Option<&str>) -> anyhow::Result<String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // The creation time in the name lets later runs drop what a panicked test left behind.
    let name = format!("ptslog_t_{now}_{:08x}", rand::thread_rng().gen::<u32>());
    let mut admin = PgConnection::connect(&admin_url()).await?;
    drop_stale_databases(&mut admin, now).await;
    let from = template
        .map(|t| format!(" TEMPLATE {t}"))
        .unwrap_or_default();
    sqlx::query(&format!("CREATE DATABASE {name}{from}"))
        .execute(&mut admin)
        .await?;
    Ok(name)
}

/// Drops test databases created more than an hour ago (tests that panicked skip their cleanup).
async fn drop_stale_databases(admin: &mut PgConnection, now: u64) {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'ptslog\\_t\\_%'")
            .fetch_all(&mut *admin)
            .await
            .unwrap_or_default();
    for name in names {
        let created = name.split('_').nth(2).and_then(|t| t.parse::<u64>().ok());
        if created.is_some_and(|t| t + 3600 < now) {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut *admin)
                .await;
        }
    }
}

/// Drops a test database, and with it any replication slot of a relay the test started.
///
/// `WITH (FORCE)` ends ordinary sessions but not a relay's replication session, and Postgres refuses
/// to drop a database whose slot is in use; a left-over database keeps its slot, and slots are few
/// (`max_replication_slots`). So end those sessions first, and retry while they wind down.
pub async fn drop_database(name: &str) {
    let Ok(mut admin) = PgConnection::connect(&admin_url()).await else {
        return;
    };
    let mut last_error = None;
    for _ in 0..40 {
        let _ = sqlx::query(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots \
             WHERE database = $1 AND active_pid IS NOT NULL",
        )
        .bind(name)
        .execute(&mut admin)
        .await;
        let dropped = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut admin)
            .await;
        match dropped {
            Ok(_) => return,
            Err(e) => last_error = Some(e),
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    // Not fatal: the harness drops left-over databases an hour later.
    eprintln!("could not drop the test database {name}: {last_error:?}");
}

/// Settings for a test server on a fresh database: a free port, its own Redis key prefix, no
/// send-rate limit unless a test sets one, and development sign-in on.
pub fn test_config(db: &str) -> Config {
    let mut vars = std::collections::HashMap::new();
    vars.insert("DATABASE_URL".to_string(), database_url(db));
    vars.insert("REDIS_URL".to_string(), redis_url());
    vars.insert("PTSLOG_REDIS_PREFIX".to_string(), format!("test:{}:", db));
    vars.insert("PTSLOG_HTTP_ADDR".to_string(), "127.0.0.1:0".to_string());
    vars.insert("PTSLOG_SEND_RATE_PER_MINUTE".to_string(), "0".to_string());
    vars.insert("PTSLOG_DB_MAX_CONNECTIONS".to_string(), "8".to_string());
    // Warming 16 read connections at start costs a test server seconds of database time; the
    // warm-up has its own test (infrastructure/tests/infrastructure/pool.rs).
    vars.insert(
        "PTSLOG_DB_WARM_READ_CONNECTIONS".to_string(),
        "false".to_string(),
    );
    // Blobs and upload parts in a folder of this test's own (removed by `TestServer::stop`).
    vars.insert(
        "PTSLOG_BLOB_DIR".to_string(),
        blob_dir(db).to_string_lossy().into_owned(),
    );
    // The harness signs devices in with POST /v1/auth/login (development sign-in); tests of
    // production sign-in set `dev_login = false` (and `dev_login_code = None`).
    vars.insert("PTSLOG_DEV_LOGIN".to_string(), "true".to_string());
    Config::from_vars(&vars).expect("test config is valid")
}

/// The blob folder of the test server on database `db`.
pub fn blob_dir(db: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ptslog-blobs-{db}"))
}

/// Signs `phone` in at `base` by development login (creating the account on first use) and
/// answers the new device.
pub async fn login(http: &reqwest::Client, base: &str, phone: &str, first_name: &str) -> Device {
    let resp = http
        .post(format!("{base}/v1/auth/login"))
        .json(&json!({"phone": phone, "first_name": first_name, "last_name": ""}))
        .send()
        .await
        .expect("login request");
    assert_eq!(resp.status(), 200, "login of {phone}");
    let body: Value = resp.json().await.expect("login body");
    Device {
        base: base.to_string(),
        http: http.clone(),
        token: body["token"].as_str().expect("token").to_string(),
        user_id: body["user_id"].as_i64().expect("user_id"),
    }
}

/// A server on the database `db` whose relay feeds its push gateway, on a replication slot of its
/// own: for the tests that watch live pushes (wait for `wait_relay_streaming` before counting).
pub async fn start_with_pushes(db: &str) -> ptslog_server::Running {
    let mut config = test_config(db);
    config.relay_slot = format!("relay_{}", db.trim_start_matches("ptslog_t_"));
    config.relay = true;
    let mut running = ptslog_server::start(&config).await.expect("server");
    running.start_feed(&config).expect("feed");
    running
}

/// A running server on its own database.
/// One sample of a `/metrics` text: `series` is the metric's name with its labels, as printed.
pub fn metric_in(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} missing from /metrics"))
        .trim()
        .parse()
        .expect("a number")
}

pub struct TestServer {
    pub base: String,
    /// Where the admin endpoints are: `base`, or the `PTSLOG_ADMIN_ADDR` listener when set.
    pub admin_base: String,
    pub db: String,
    pub pool: PgPool,
    pub http: reqwest::Client,
    /// The server's application, for what no front exposes yet (taking an upload) or what a
    /// test moves in time (sweeps).
    pub app: application::App,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Self {
        let db = fresh_database().await.expect("fresh database");
        let mut config = test_config(&db);
        adjust(&mut config);
        Self::start_on(db, &config).await
    }

    /// A server with `config` on the database `db` (`config.database_url`'s, which may be on
    /// another server than the suite's).
    pub async fn start_on(db: String, config: &Config) -> Self {
        let running = ptslog_server::start(config).await.expect("server starts");
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&config.database_url)
            .await
            .expect("test pool");
        Self {
            base: format!("http://{}", running.addr),
            admin_base: format!("http://{}", running.admin_addr.unwrap_or(running.addr)),
            db,
            pool,
            http: reqwest::Client::new(),
            app: running.app.clone(),
            task: running.task,
        }
    }

    /// Signs in (creating the account on first use) and answers a new device of it.
    pub async fn login(&self, phone: &str, first_name: &str) -> Device {
        login(&self.http, &self.base, phone, first_name).await
    }

    /// The server's `/metrics` text.
    pub async fn metrics(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics body")
    }

    /// One sample of `/metrics`: `series` is the metric's name with its labels, as printed.
    pub async fn metric(&self, series: &str) -> f64 {
        metric_in(&self.metrics().await, series)
    }

    pub async fn stop(self) {
        self.task.abort();
        self.pool.close().await;
        drop_database(&self.db).await;
        let _ = std::fs::remove_dir_all(blob_dir(&self.db));
    }
}

/// One signed-in device.
#[derive(Clone)]
pub struct Device {
    pub base: String,
    pub http: reqwest::Client,
    pub token: String,
    pub user_id: i64,
}

impl Device {
    /// Calls a method and answers (HTTP status, JSON body).
    pub async fn call(&self, method: &str, params: Value) -> (u16, Value) {
        let resp = self
            .http
            .post(format!("{}/v1/rpc/{method}", self.base))
            .bearer_auth(&self.token)
            .json(&params)
            .send()
            .await
            .expect("rpc request");
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// Calls a method that must succeed.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let (status, body) = self.call(method, params.clone()).await;
        assert_eq!(status, 200, "{method} {params} answered {body}");
        body
    }

    /// Calls a method that must fail; answers (status, error_message).
    pub async fn rpc_err(&self, method: &str, params: Value) -> (u16, String) {
        let (status, body) = self.call(method, params.clone()).await;
        assert_ne!(
            status, 200,
            "{method} {params} should fail but answered {body}"
        );
        assert_eq!(body["_"], "rpc_error", "error body {body}");
        assert_eq!(
            body["error_code"].as_u64(),
            Some(status as u64),
            "error code is the status: {body}"
        );
        (
            status,
            body["error_message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    }

    /// The `inputPeerUser` of another account, found by phone as a client would.
    pub async fn peer_of(&self, phone: &str) -> Value {
        let r = self
            .rpc("contacts.resolvePhone", json!({"phone": phone}))
            .await;
        let user = &r["users"][0];
        json!({"_": "inputPeerUser", "user_id": user["id"], "access_hash": user["access_hash"]})
    }

    /// Sends a text message; answers the `updateShortSentMessage`.
    pub async fn send(&self, peer: &Value, text: &str) -> Value {
        let random_id: i64 = rand::thread_rng().gen_range(1..i64::MAX);
        self.rpc(
            "messages.sendMessage",
            json!({"peer": peer, "message": text, "random_id": random_id}),
        )
        .await
    }

    pub async fn state(&self) -> Value {
        self.rpc("updates.getState", json!({})).await
    }
}

/// An operator token for tests that turn the admin endpoints on.
pub const TEST_ADMIN_TOKEN: &str = "test-admin-token-0123456789";

/// Turns the admin endpoints on with [`TEST_ADMIN_TOKEN`], on the public listener or (`separate`)
/// on a listener of their own.
pub fn with_admin(config: &mut Config, separate: bool) {
    config.admin_token =
        Some(ptslog_server::admin_token::AdminToken::new(TEST_ADMIN_TOKEN).expect("a valid token"));
    config.admin_addr = separate.then(|| "127.0.0.1:0".parse().expect("an address"));
}

pub fn self_peer() -> Value {
    json!({"_": "inputPeerSelf"})
}

/// Speeds up the creation of a logical replication slot while a test waits for a relay to stream.
///
/// Postgres builds a new slot's starting snapshot from "running transactions" WAL records, and
/// needs up to three of them, each after the transactions the previous one saw have ended. Without
/// help they come every 15 s from the background writer, so in a busy suite a slot takes a minute
/// or more. Each CHECKPOINT writes one at once. A test aid only: the relay itself never does this,
/// since a production slot is created once.
pub struct SnapshotNudge(tokio::task::JoinHandle<()>);

impl SnapshotNudge {
    pub fn start() -> Self {
        SnapshotNudge(tokio::spawn(async {
            loop {
                if let Ok(mut admin) = PgConnection::connect(&admin_url()).await {
                    let _ = sqlx::query("CHECKPOINT").execute(&mut admin).await;
                    let _ = admin.close().await;
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }))
    }
}

impl Drop for SnapshotNudge {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits until an in-process relay streams its replication feed (creating its slot on first
/// start), speeding that up with [`SnapshotNudge`]; panics after `timeout`.
pub async fn wait_relay_streaming(
    status: &infrastructure::relay::RelayStatus,
    timeout: std::time::Duration,
) {
    let _nudge = SnapshotNudge::start();
    let deadline = std::time::Instant::now() + timeout;
    while status.role() != infrastructure::relay::Role::Leader
        || status.health().sessions_started == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "relay not streaming within {timeout:?}: {:?}",
            status.health()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
