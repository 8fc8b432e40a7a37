//! The HTTP front's, the serving pool's and each account's limits (docs/security.md,
//! "HTTP, WebSocket, Postgres and per-account caps"), against a real server on real sockets:
//! slowloris heads and bodies are cut off, the body size and connection count are capped, a slow
//! handler meets its deadline, Postgres cancels a long statement and ends an idle transaction, one
//! account cannot take every database connection or push socket, and phone look-ups are limited.

use std::time::{Duration, Instant};

use ptslog_server::wiring::Running;
use ptslog_server::Config;
use ptslog_tests::{database_url, drop_database, fresh_database, self_peer, test_config, Device};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, Postgres, Transaction};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Server {
    running: Option<Running>,
    base: String,
    addr: std::net::SocketAddr,
    db: String,
    /// The test's own connections (no timeouts), to hold locks behind the server's back.
    pool: PgPool,
    http: reqwest::Client,
}

impl Server {
    async fn start(adjust: impl FnOnce(&mut Config)) -> Server {
        let db = fresh_database().await.expect("fresh database");
        let mut config = test_config(&db);
        adjust(&mut config);
        let running = ptslog_server::start(&config).await.expect("server starts");
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&database_url(&db))
            .await
            .expect("test pool");
        Server {
            base: format!("http://{}", running.addr),
            addr: running.addr,
            running: Some(running),
            db,
            pool,
            http: reqwest::Client::new(),
        }
    }

    fn running(&self) -> &Running {
        self.running.as_ref().expect("running")
    }

    async fn login(&self, phone: &str) -> Device {
        let body: Value = self
            .http
            .post(format!("{}/v1/auth/login", self.base))
            .json(&json!({"phone": phone, "first_name": "L", "last_name": ""}))
            .send()
            .await
            .expect("login")
            .json()
            .await
            .expect("login body");
        Device {
            base: self.base.clone(),
            http: self.http.clone(),
            token: body["token"].as_str().expect("token").to_string(),
            user_id: body["user_id"].as_i64().expect("user_id"),
        }
    }

    /// Locks the account's sequence row, as a write of it would: its writes wait until released.
    async fn lock_account(&self, user_id: i64) -> Transaction<'static, Postgres> {
        let mut tx = self.pool.begin().await.expect("begin");
        sqlx::query("SELECT 1 FROM user_sequences WHERE user_id = $1 FOR UPDATE")
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .expect("lock the account");
        tx
    }

    async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
        self.pool.close().await;
        drop_database(&self.db).await;
    }
}

/// Reads until the server closes the connection (or `within` passes); answers what it sent and
/// whether it closed in time.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into(), false),
        }
    }
}

fn send_message(random_id: i64) -> Value {
    json!({"peer": self_peer(), "message": "hi", "random_id": random_id})
}

#[tokio::test]
async fn slowloris_heads_and_bodies_are_cut_off() {
    let server = Server::start(|c| {
        c.limits.http.header_timeout = Duration::from_millis(400);
        c.limits.http.body_timeout = Duration::from_millis(400);
    })
    .await;
    // Half a head, then nothing: closed once the header timeout passes.
    let started = Instant::now();
    let mut half = TcpStream::connect(server.addr).await.unwrap();
    half.write_all(b"POST /v1/rpc/updates.getState HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (_, closed) = read_until_closed(&mut half, Duration::from_secs(3)).await;
    assert!(closed, "a stalled head must be cut off");
    assert!(
        started.elapsed() >= Duration::from_millis(350),
        "{:?}",
        started.elapsed()
    );
    // A connection that never sends a byte is let go the same way.
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let (_, closed) = read_until_closed(&mut silent, Duration::from_secs(3)).await;
    assert!(closed, "an idle connection must be cut off");
    // A whole head, then a body that stops short: 408 REQUEST_TIMEOUT.
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(
        b"POST /v1/rpc/updates.getState HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":",
    )
    .await
    .unwrap();
    let (answer, closed) = read_until_closed(&mut slow, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
    assert!(closed, "{answer}");
    // The server still serves.
    let ok = server
        .http
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    server.stop().await;
}

#[tokio::test]
async fn request_body_size_is_capped_at_the_boundary() {
    let server = Server::start(|_| {}).await;
    let alice = server.login("+15557000001").await;
    let max = ptslog_server::http::serve::MAX_REQUEST_BODY_BYTES;
    // `{}` padded with whitespace to exactly the limit: accepted.
    let mut at_limit = b"{}".to_vec();
    at_limit.resize(max, b' ');
    let resp = server
        .http
        .post(format!("{}/v1/rpc/updates.getState", server.base))
        .bearer_auth(&alice.token)
        .body(at_limit.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // One byte more: 413 REQUEST_TOO_LARGE, whether its length is declared (refused before a byte
    // of the body is read) or the body is chunked (refused once it passes the limit).
    let head = format!(
        "POST /v1/rpc/updates.getState HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        max + 1
    );
    let mut declared = TcpStream::connect(server.addr).await.unwrap();
    declared.write_all(head.as_bytes()).await.unwrap();
    let (answer, _) = read_until_closed(&mut declared, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("REQUEST_TOO_LARGE"), "{answer}");
    let mut chunked = TcpStream::connect(server.addr).await.unwrap();
    chunked
        .write_all(b"POST /v1/rpc/updates.getState HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    at_limit.push(b' ');
    for chunk in at_limit.chunks(64 * 1024) {
        chunked
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
        chunked.write_all(chunk).await.unwrap();
        chunked.write_all(b"\r\n").await.unwrap();
    }
    let (answer, _) = read_until_closed(&mut chunked, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn connections_past_the_cap_are_refused_at_once() {
    let server = Server::start(|c| c.limits.http.max_connections = 2).await;
    let first = TcpStream::connect(server.addr).await.unwrap();
    let mut second = TcpStream::connect(server.addr).await.unwrap();
    // Both are served (the second answers a request).
    second
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(5), second.read(&mut buf))
        .await
        .expect("the second connection is served")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // The third: 503 CONNECTIONS_TOO_MUCH and closed, without waiting for anything.
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    let (answer, closed) = read_until_closed(&mut third, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.contains("CONNECTIONS_TOO_MUCH"), "{answer}");
    assert!(closed);
    // A closed connection frees its place.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut next = TcpStream::connect(server.addr).await.unwrap();
        next.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let (answer, _) = read_until_closed(&mut next, Duration::from_secs(2)).await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < deadline, "no place freed: {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn a_handler_past_the_deadline_answers_503_timeout() {
    let server = Server::start(|c| {
        c.limits.http.request_timeout = Duration::from_millis(500);
    })
    .await;
    let alice = server.login("+15557000011").await;
    let lock = server.lock_account(alice.user_id).await;
    let started = Instant::now();
    let call = tokio::time::timeout(
        Duration::from_secs(5),
        alice.call("messages.sendMessage", send_message(1)),
    )
    .await
    .expect("the call must meet its deadline");
    assert_eq!(call.0, 503, "{:?}", call.1);
    assert_eq!(call.1["error_message"], "TIMEOUT");
    assert!(started.elapsed() >= Duration::from_millis(450));
    lock.rollback().await.unwrap();
    // Nothing is stuck: the account writes again.
    alice.rpc("messages.sendMessage", send_message(2)).await;
    server.stop().await;
}

#[tokio::test]
async fn postgres_cancels_long_statements_and_idle_transactions() {
    let server = Server::start(|c| {
        c.limits.db.statement = Some(Duration::from_millis(300));
        c.limits.db.idle_in_transaction = Some(Duration::from_millis(300));
    })
    .await;
    let alice = server.login("+15557000021").await;
    // A write that waits on a lock longer than the statement timeout: cancelled, 503 TIMEOUT.
    let lock = server.lock_account(alice.user_id).await;
    let started = Instant::now();
    let (status, body) = tokio::time::timeout(
        Duration::from_secs(5),
        alice.call("messages.sendMessage", send_message(1)),
    )
    .await
    .expect("the statement must be cancelled");
    assert_eq!(
        (status, body["error_message"].as_str()),
        (503, Some("TIMEOUT")),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    lock.rollback().await.unwrap();
    // The pool keeps working, and the send (retried) goes through once.
    alice.rpc("messages.sendMessage", send_message(1)).await;
    assert_eq!(alice.state().await["pts"], 1);
    // The serving pool's sessions: a long statement is cancelled, a transaction left idle is
    // ended by Postgres, and the pool hands out working connections afterwards.
    let pool = &server.running().pool;
    let slow = sqlx::query("SELECT pg_sleep(2)").execute(pool).await;
    let code = slow
        .unwrap_err()
        .into_database_error()
        .and_then(|e| e.code().map(|c| c.to_string()));
    assert_eq!(code.as_deref(), Some("57014"));
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT 1").execute(&mut *tx).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(sqlx::query("SELECT 1").execute(&mut *tx).await.is_err());
    drop(tx);
    for _ in 0..10 {
        sqlx::query("SELECT 1").execute(pool).await.unwrap();
    }
    server.stop().await;
}

#[tokio::test]
async fn one_account_cannot_take_every_database_connection() {
    // 8 database connections (test_config), at most 2 calls in flight per account.
    let server = Server::start(|c| {
        c.limits.account_max_concurrent_requests = 2;
        c.limits.account_queue_wait = Duration::from_millis(500);
    })
    .await;
    let alice = server.login("+15557000031").await;
    let bob = server.login("+15557000032").await;
    let lock = server.lock_account(alice.user_id).await;
    // Alice fires 16 sends at once; each would wait on her lock holding a connection.
    let flood: Vec<_> = (0..16)
        .map(|i| {
            let alice = alice.clone();
            tokio::spawn(async move {
                alice
                    .call("messages.sendMessage", send_message(100 + i))
                    .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Bob is served at once meanwhile.
    let started = Instant::now();
    for _ in 0..5 {
        let answer = tokio::time::timeout(
            Duration::from_secs(2),
            bob.call("updates.getState", json!({})),
        )
        .await
        .expect("another account's calls must not wait on Alice's");
        assert_eq!(answer.0, 200, "{:?}", answer.1);
    }
    bob.rpc("messages.sendMessage", send_message(1)).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Alice's calls beyond her cap are refused once they have waited the queue wait.
    let deadline = Instant::now() + Duration::from_secs(10);
    while flood.iter().filter(|call| call.is_finished()).count() < 14 {
        assert!(
            Instant::now() < deadline,
            "the calls past the cap were not refused"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    lock.rollback().await.unwrap();
    let mut statuses = Vec::new();
    for call in flood {
        let (status, body) = call.await.unwrap();
        if status != 200 {
            assert_eq!(
                (status, body["error_message"].as_str()),
                (420, Some("FLOOD_WAIT_1")),
                "{body}"
            );
        }
        statuses.push(status);
    }
    // The two in flight went through once the lock was gone; the other 14 were told to wait.
    let served = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(served, 2, "{statuses:?}");
    server.stop().await;
}

async fn open_socket(
    base: &str,
    token: &str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    let url = format!(
        "{}/v1/updates?token={token}",
        base.replacen("http://", "ws://", 1)
    );
    tokio_tungstenite::connect_async(url)
        .await
        .map(|(ws, _)| ws)
}

#[tokio::test]
async fn push_sockets_are_capped_per_account() {
    let server = Server::start(|c| c.limits.account_max_push_sockets = 2).await;
    let alice = server.login("+15557000041").await;
    let alice_2 = server.login("+15557000041").await;
    let bob = server.login("+15557000042").await;
    let first = open_socket(&server.base, &alice.token)
        .await
        .expect("first socket");
    let _second = open_socket(&server.base, &alice_2.token)
        .await
        .expect("second socket");
    // The third of the account (whichever device): refused before the upgrade with 429.
    match open_socket(&server.base, &alice.token).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 429);
            let body: Value =
                serde_json::from_slice(response.body().as_deref().unwrap_or_default())
                    .expect("a JSON rpc_error");
            assert_eq!(body["error_message"], "PUSH_SOCKETS_TOO_MUCH");
        }
        other => panic!(
            "the third socket must be refused, got {:?}",
            other.map(|_| ())
        ),
    }
    // Another account is not affected.
    let _bob = open_socket(&server.base, &bob.token)
        .await
        .expect("bob's socket");
    // A closed socket frees its place.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    while open_socket(&server.base, &alice.token).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the closed socket's place was not freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn phone_lookups_are_limited_per_account() {
    let server = Server::start(|c| c.limits.phone_lookups_per_day = 3).await;
    let alice = server.login("+15557000051").await;
    let _bob = server.login("+15557000052").await;
    // Three distinct numbers (found or not) are the limit.
    alice
        .rpc("contacts.resolvePhone", json!({"phone": "+15557000052"}))
        .await;
    for phone in ["+15557000053", "+15557000054"] {
        let (status, name) = alice
            .rpc_err("contacts.resolvePhone", json!({"phone": phone}))
            .await;
        assert_eq!((status, name.as_str()), (400, "PHONE_NOT_OCCUPIED"));
    }
    // The fourth: FLOOD_WAIT_X, X the seconds left of the day's window.
    let (status, name) = alice
        .rpc_err("contacts.resolvePhone", json!({"phone": "+15557000055"}))
        .await;
    assert_eq!(status, 420);
    let secs: u32 = name
        .strip_prefix("FLOOD_WAIT_")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{name}"));
    assert!((1..=86_400).contains(&secs), "{secs}");
    // A number already looked up costs nothing.
    alice
        .rpc("contacts.resolvePhone", json!({"phone": "+15557000052"}))
        .await;
    let (status, name) = alice
        .rpc_err(
            "contacts.importContacts",
            json!({"contacts": [
                {"client_id": 1, "phone": "+15557000056", "first_name": "X"},
            ]}),
        )
        .await;
    assert_eq!(
        (status, name.starts_with("FLOOD_WAIT_")),
        (420, true),
        "{name}"
    );
    // Another account has its own budget; an import past it names the rest in retry_contacts.
    let carol = server.login("+15557000061").await;
    let r = carol
        .rpc(
            "contacts.importContacts",
            json!({"contacts": [
                {"client_id": 1, "phone": "+15557000052", "first_name": "Bob"},
                {"client_id": 2, "phone": "+15557000071", "first_name": "N"},
                {"client_id": 3, "phone": "+15557000052", "first_name": "Bob"},
                {"client_id": 4, "phone": "+15557000072", "first_name": "N"},
                {"client_id": 5, "phone": "+15557000051", "first_name": "Alice"},
            ]}),
        )
        .await;
    assert_eq!(r["retry_contacts"], json!([5]), "{r}");
    let imported: Vec<i64> = r["imported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["client_id"].as_i64().unwrap())
        .collect();
    assert_eq!(imported, vec![3], "{r}");
    server.stop().await;
}

#[tokio::test]
async fn phone_lookups_are_allowed_while_redis_is_down() {
    let server = Server::start(|c| {
        c.limits.phone_lookups_per_day = 1;
        c.redis_url = "redis://127.0.0.1:1".into();
    })
    .await;
    let alice = server.login("+15557000081").await;
    for n in 0..3 {
        let (status, name) = alice
            .rpc_err(
                "contacts.resolvePhone",
                json!({"phone": format!("+1555700009{n}")}),
            )
            .await;
        assert_eq!((status, name.as_str()), (400, "PHONE_NOT_OCCUPIED"));
    }
    server.stop().await;
}
