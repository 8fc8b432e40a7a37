//! The system under test in either mode: a ptslog server (in this process) on a fresh database,
//! fed by an in-process relay with the local sink, or by Kafka with the relay as a separate
//! `ptslog relay` process that the test can kill.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ptslog_server::wiring::Running;
use ptslog_tests::{database_url, drop_database, fresh_database, test_config, Device};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use super::broker::Broker;
use crate::two_processes::ptslog_binary;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No broker: the server's own relay feeds its fanout.
    InProcess,
    /// Relay process → tansu → the server's consumer.
    Kafka,
}

pub struct System {
    pub mode: Mode,
    pub db: String,
    pub slot: String,
    pub pool: PgPool,
    pub http: reqwest::Client,
    pub base: String,
    pub running: Option<Running>,
    pub broker: Option<Broker>,
    relay_process: Option<Child>,
    relay_port: u16,
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl System {
    pub async fn start(mode: Mode, broker: Option<Broker>) -> System {
        let db = fresh_database().await.expect("fresh database");
        // Slot names are per Postgres server; every test database needs its own.
        let slot = format!("relay_{}", db.trim_start_matches("ptslog_t_"));
        let mut config = test_config(&db);
        config.relay_slot = slot.clone();
        config.push_buffer = 1024;
        match mode {
            Mode::InProcess => config.relay = true,
            Mode::Kafka => {
                config.kafka_brokers = Some(broker.as_ref().expect("a broker").address());
                // The relay runs as its own process (killed and restarted by the test).
                config.relay = false;
            }
        }
        let mut running = ptslog_server::start(&config).await.expect("server starts");
        running.start_feed(&config).expect("feed starts");
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&database_url(&db))
            .await
            .expect("test pool");
        let mut system = System {
            mode,
            db,
            slot,
            pool,
            http: reqwest::Client::new(),
            base: format!("http://{}", running.addr),
            running: Some(running),
            broker,
            relay_process: None,
            relay_port: free_port(),
        };
        if mode == Mode::Kafka {
            system.start_relay();
        }
        system
    }

    pub async fn login(&self, phone: &str, name: &str) -> Device {
        let r = self
            .http
            .post(format!("{}/v1/auth/login", self.base))
            .json(&json!({"phone": phone, "first_name": name, "last_name": ""}))
            .send()
            .await
            .expect("login");
        assert_eq!(r.status(), 200, "login {phone}");
        let body: Value = r.json().await.expect("login body");
        Device {
            base: self.base.clone(),
            http: self.http.clone(),
            token: body["token"].as_str().expect("token").to_string(),
            user_id: body["user_id"].as_i64().expect("user_id"),
        }
    }

    /// The device's auth_key_id (what log rows record as their origin).
    pub async fn auth_key_id(&self, device: &Device) -> i64 {
        sqlx::query_scalar("SELECT auth_key_id FROM authorizations WHERE token_hash = sha256(convert_to($1, 'UTF8'))")
            .bind(&device.token)
            .fetch_one(&self.pool)
            .await
            .expect("auth_key_id of a device")
    }

    /// The relay: in-process (restartable task) or a `ptslog relay` process.
    pub fn start_relay(&mut self) {
        match self.mode {
            Mode::InProcess => self.in_process_relay().start(),
            Mode::Kafka => {
                assert!(
                    self.relay_process.is_none(),
                    "relay process already running"
                );
                let bin = ptslog_binary().expect("the ptslog binary");
                let broker = self.broker.as_ref().expect("a broker").address();
                let child = Command::new(bin)
                    .arg("relay")
                    .env_remove("PTSLOG_CONFIG")
                    .env("DATABASE_URL", database_url(&self.db))
                    .env("KAFKA_BROKERS", broker)
                    .env("PTSLOG_RELAY_SLOT", &self.slot)
                    .env("PTSLOG_HTTP_ADDR", format!("127.0.0.1:{}", self.relay_port))
                    .env(
                        "RUST_LOG",
                        std::env::var("PTSLOG_TEST_RELAY_LOG").unwrap_or_else(|_| "warn".into()),
                    )
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("spawning ptslog relay");
                self.relay_process = Some(child);
            }
        }
    }

    /// Kills the relay mid-stream: SIGKILL for the process, an abort for the in-process task.
    pub fn kill_relay(&mut self) {
        match self.mode {
            Mode::InProcess => self.in_process_relay().kill(),
            Mode::Kafka => {
                if let Some(mut child) = self.relay_process.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }

    fn in_process_relay(&self) -> std::sync::Arc<ptslog_server::feed::RelayControl> {
        self.running
            .as_ref()
            .and_then(|r| r.feed.relay.clone())
            .expect("an in-process relay")
    }

    async fn health(&self, base: &str) -> Option<Value> {
        let r = self
            .http
            .get(format!("{base}/healthz/relay"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        r.json().await.ok()
    }

    /// Waits until the relay streams (and, with Kafka, the consumer has its partitions).
    pub async fn wait_ready(&self, timeout: Duration) {
        let _nudge = ptslog_tests::SnapshotNudge::start();
        let deadline = Instant::now() + timeout;
        let relay_base = match self.mode {
            Mode::InProcess => self.base.clone(),
            Mode::Kafka => format!("http://127.0.0.1:{}", self.relay_port),
        };
        loop {
            let relay = self.health(&relay_base).await;
            let server = self.health(&self.base).await;
            let relay_ok = relay.as_ref().is_some_and(|h| {
                h["relay"]["role"] == "leader" && h["relay"]["sessions_started"].as_u64() > Some(0)
            });
            let consumer_ok = self.mode == Mode::InProcess
                || server
                    .as_ref()
                    .is_some_and(|h| h["consumer"]["partitions"].as_u64() > Some(0));
            if relay_ok && consumer_ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not ready within {timeout:?}: relay {relay:?}, server {server:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Log rows of one account after `after`: (pts, pts_count, kind, auth_key_id).
    pub async fn log_of(&self, user: i64, after: i64) -> Vec<(i32, i32, String, i64)> {
        sqlx::query_as("SELECT pts, pts_count, kind, auth_key_id FROM user_update_events WHERE user_id = $1 AND pts > $2 ORDER BY pts")
            .bind(user)
            .bind(after as i32)
            .fetch_all(&self.pool)
            .await
            .expect("reading the log")
    }

    pub async fn stop(mut self) {
        self.kill_relay();
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
        if let Some(mut broker) = self.broker.take() {
            broker.stop();
        }
        self.pool.close().await;
        // Ends the relay's replication session if it lingers, then drops the database and its slot.
        drop_database(&self.db).await;
    }
}

impl Drop for System {
    fn drop(&mut self) {
        if let Some(mut child) = self.relay_process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
