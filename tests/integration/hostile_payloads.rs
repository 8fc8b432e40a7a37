//! Poison events (issue 11, item 1): what a hostile client puts in an entity never reaches the log,
//! and a row the application did not write (too deep for serde_json, of an unknown version) stops
//! neither the relay, nor getDifference, nor verify: every other event still reaches pushes and
//! getDifference, for that account and for everyone else.

// Shared with `push`; not every helper is used here.
#[allow(dead_code)]
#[path = "push/client.rs"]
pub(crate) mod client;

use std::time::Duration;

use ptslog_tests::Device;
use serde_json::{json, Value};

use client::Socket;

const WAIT: Duration = Duration::from_secs(20);

/// A server with its in-process relay streaming, and a way to sign in.
pub(crate) struct System {
    pub running: ptslog_server::Running,
    pub base: String,
    http: reqwest::Client,
    pub pool: sqlx::PgPool,
    db: String,
}

impl System {
    pub async fn start() -> System {
        let db = ptslog_tests::fresh_database().await.expect("db");
        let mut config = ptslog_tests::test_config(&db);
        config.relay_slot = format!("relay_{}", db.trim_start_matches("ptslog_t_"));
        config.relay = true;
        let mut running = ptslog_server::start(&config).await.expect("server");
        running.start_feed(&config).expect("feed");
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .connect(&ptslog_tests::database_url(&db))
            .await
            .expect("pool");
        System {
            base: format!("http://{}", running.addr),
            running,
            http: reqwest::Client::new(),
            pool,
            db,
        }
    }

    pub async fn login(&self, phone: &str, name: &str) -> Device {
        let body: Value = self
            .http
            .post(format!("{}/v1/auth/login", self.base))
            .json(&json!({"phone": phone, "first_name": name, "last_name": ""}))
            .send()
            .await
            .expect("login")
            .json()
            .await
            .expect("body");
        Device {
            base: self.base.clone(),
            http: self.http.clone(),
            token: body["token"].as_str().expect("token").into(),
            user_id: body["user_id"].as_i64().expect("id"),
        }
    }

    pub async fn relay_health(&self) -> Value {
        self.http
            .get(format!("{}/healthz/relay", self.base))
            .send()
            .await
            .expect("healthz")
            .json()
            .await
            .expect("health body")
    }

    async fn metric(&self, name: &str) -> f64 {
        let text = self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics body");
        ptslog_tests::metric_in(&text, name)
    }

    async fn log_rows(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM user_update_events")
            .fetch_one(&self.pool)
            .await
            .expect("count")
    }

    /// Appends a row behind the application's back, as the next pts of `user`, and answers its pts.
    async fn insert_raw(&self, user: i64, kind: &str, version: i16, payload: &str) -> i64 {
        let mut tx = self.pool.begin().await.expect("tx");
        let pts: i32 = sqlx::query_scalar(
            "UPDATE user_sequences SET pts = pts + 1 WHERE user_id = $1 RETURNING pts",
        )
        .bind(user)
        .fetch_one(&mut *tx)
        .await
        .expect("sequence");
        sqlx::query(
            "INSERT INTO user_update_events (user_id, pts, pts_count, kind, payload_version, payload) \
             VALUES ($1, $2, 1, $3, $4, $5::jsonb)",
        )
        .bind(user)
        .bind(pts)
        .bind(kind)
        .bind(version)
        .bind(payload)
        .execute(&mut *tx)
        .await
        .expect("raw insert");
        tx.commit().await.expect("commit");
        i64::from(pts)
    }

    pub async fn stop(self) {
        self.pool.close().await;
        self.running.shutdown().await;
        ptslog_tests::drop_database(&self.db).await;
    }
}

/// `{"x": {"x": … 1 …}}`, `levels` objects deep.
fn nested(levels: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..levels {
        v = json!({ "x": v });
    }
    v
}

async fn pts(d: &Device) -> i64 {
    d.state().await["pts"].as_i64().expect("pts")
}

/// Waits for a push of `pts` on `socket`.
async fn pushed(socket: &Socket, pts: i64) {
    let arrived = socket
        .wait_until(WAIT, |p| p.iter().any(|p| p.pts == pts))
        .await;
    assert!(arrived, "no push of pts {pts}: {:?}", socket.raw());
}

/// getDifference from 0 answers 200 with the account's current pts and every message text.
async fn difference_texts(d: &Device) -> Vec<String> {
    let diff = d
        .rpc(
            "updates.getDifference",
            json!({"pts": 0, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(diff["state"]["pts"].as_i64(), Some(pts(d).await), "{diff}");
    diff["new_messages"]
        .as_array()
        .expect("new_messages")
        .iter()
        .map(|m| m["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn assert_relay_healthy(system: &System) {
    let health = system.relay_health().await;
    assert_eq!(health["relay"]["role"], "leader", "{health}");
    assert_eq!(health["relay"]["last_error"], Value::Null, "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_entities_are_refused_and_everyone_keeps_working() {
    let system = System::start().await;
    let alice = system.login("+15557110001", "Alice").await;
    let bob = system.login("+15557110002", "Bob").await;
    let carol = system.login("+15557110003", "Carol").await;
    let to_bob = alice.peer_of("+15557110002").await;
    let to_carol = bob.peer_of("+15557110003").await;
    let bob_socket = Socket::connect(&system.base, &bob.token, true).await;
    let carol_socket = Socket::connect(&system.base, &carol.token, true).await;
    ptslog_tests::wait_relay_streaming(&system.running.relay_status, Duration::from_secs(240))
        .await;
    let first = alice.send(&to_bob, "hello").await;
    pushed(&bob_socket, pts(&bob).await).await;
    let rows_before = system.log_rows().await;
    let alice_pts = pts(&alice).await;

    // The confirmed attack: an extra field nested 124 levels deep inside a bold entity.
    let deep_bold =
        json!({"_": "messageEntityBold", "offset": 0, "length": 5, "extra": nested(124)});
    // The confirmed 1.5 MB url no longer reaches the entity parser: the HTTP front's body cap
    // (1 MiB, docs/security.md) refuses the request first. A 900 KB url fits under that cap and
    // is refused by the entity's own limit.
    let url_of = |n: usize| {
        json!({"_": "messageEntityTextUrl", "offset": 0, "length": 5,
                          "url": format!("https://e.example/{}", "a".repeat(n))})
    };
    let (huge_url, long_url) = (url_of(1_500_000), url_of(900_000));
    let send = |entity: &Value| json!({"peer": to_bob, "message": "hello", "random_id": rand_id(), "entities": [entity]});
    let huge_body = send(&huge_url).to_string();
    let (status, error) = declared_too_large(&alice, "messages.sendMessage", huge_body.len()).await;
    assert_eq!(
        (status, error.as_str()),
        (413, "REQUEST_TOO_LARGE"),
        "1.5 MB url"
    );
    for (what, entity) in [("deep field", &deep_bold), ("900 KB url", &long_url)] {
        let (status, error) = alice.rpc_err("messages.sendMessage", send(entity)).await;
        assert_eq!((status, error.as_str()), (400, "ENTITY_INVALID"), "{what}");
    }
    // A url one byte past the limit, and one at it.
    let url = |n: usize| json!({"_": "messageEntityTextUrl", "offset": 0, "length": 5, "url": "u".repeat(n)});
    let limit = domain::limits::MAX_ENTITY_URL_BYTES;
    let (_, error) = alice
        .rpc_err("messages.sendMessage", send(&url(limit + 1)))
        .await;
    assert_eq!(error, "ENTITY_INVALID");
    // The same entities in a quote, an edit and a dialog filter title (less deep: these bodies
    // nest the entity deeper, and the body parser's own depth limit would refuse it first).
    let deep_bold =
        json!({"_": "messageEntityBold", "offset": 0, "length": 5, "extra": nested(100)});
    let reply = json!({"peer": to_bob, "message": "re", "random_id": rand_id(),
        "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": first["id"],
                     "quote_text": "hello", "quote_entities": [deep_bold]}});
    assert_eq!(
        alice.rpc_err("messages.sendMessage", reply).await.1,
        "ENTITY_INVALID"
    );
    let edit =
        json!({"peer": to_bob, "id": first["id"], "message": "hello", "entities": [long_url]});
    assert_eq!(
        alice.rpc_err("messages.editMessage", edit).await.1,
        "ENTITY_INVALID"
    );
    let filter = json!({"id": 2, "filter": {"_": "dialogFilter", "contacts": true,
        "title": {"_": "textWithEntities", "text": "hello", "entities": [deep_bold]},
        "pinned_peers": [], "include_peers": [], "exclude_peers": []}});
    assert_eq!(
        alice.rpc_err("messages.updateDialogFilter", filter).await.1,
        "ENTITY_INVALID"
    );
    let emoticon = json!({"id": 2, "filter": {"_": "dialogFilter", "contacts": true,
        "title": "Work", "emoticon": "x".repeat(domain::limits::MAX_DIALOG_FILTER_EMOTICON_CODE_POINTS + 1),
        "pinned_peers": [], "include_peers": [], "exclude_peers": []}});
    assert_eq!(
        alice
            .rpc_err("messages.updateDialogFilter", emoticon)
            .await
            .1,
        "EMOTICON_INVALID"
    );
    let at_limit = json!({"id": 2, "filter": {"_": "dialogFilter", "contacts": true,
        "title": "Work", "emoticon": "x".repeat(domain::limits::MAX_DIALOG_FILTER_EMOTICON_CODE_POINTS),
        "pinned_peers": [], "include_peers": [], "exclude_peers": []}});
    alice.rpc("messages.updateDialogFilter", at_limit).await;
    // A mention must name a user the sender can reach, with its access hash.
    let bare_mention = json!({"_": "messageEntityMentionName", "offset": 0, "length": 5, "user_id": carol.user_id});
    assert_eq!(
        alice
            .rpc_err("messages.sendMessage", send(&bare_mention))
            .await
            .1,
        "ENTITY_MENTION_USER_INVALID"
    );
    let forged = json!({"_": "inputMessageEntityMentionName", "offset": 0, "length": 5,
                        "user_id": {"_": "inputUser", "user_id": carol.user_id, "access_hash": 1}});
    assert_eq!(
        alice.rpc_err("messages.sendMessage", send(&forged)).await.1,
        "ENTITY_MENTION_USER_INVALID"
    );

    // Each entity within its limits, but together over the per-event payload cap: 100 URLs of
    // 2048 bytes in the text and 100 more in the quote.
    let many: Vec<Value> = (0..domain::limits::MAX_MESSAGE_ENTITIES)
        .map(|_| url(limit))
        .collect();
    let too_large = json!({"peer": to_bob, "message": "hello", "random_id": rand_id(), "entities": many,
        "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": first["id"],
                     "quote_text": "hello", "quote_entities": many}});
    assert_eq!(
        alice.rpc_err("messages.sendMessage", too_large).await,
        (400, "EVENT_TOO_LARGE".to_string())
    );

    // Nothing was appended but the one valid filter, and the attacker's own account still works.
    assert_eq!(system.log_rows().await, rows_before + 1);
    assert_eq!(pts(&alice).await, alice_pts + 1);
    let ok_url = url(limit);
    let sent = alice.rpc("messages.sendMessage", send(&ok_url)).await;
    pushed(&bob_socket, pts(&bob).await).await;
    assert!(sent["pts"].as_i64() > Some(alice_pts));
    // A resolved mention is stored as messageEntityMentionName.
    let mention = json!({"_": "inputMessageEntityMentionName", "offset": 0, "length": 5,
                         "user_id": {"_": "inputUserSelf"}});
    alice.rpc("messages.sendMessage", send(&mention)).await;
    let bob_diff = bob
        .rpc(
            "updates.getDifference",
            json!({"pts": 0, "date": 0, "qts": 0}),
        )
        .await;
    let last = bob_diff["new_messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["entities"],
        json!([{"_": "messageEntityMentionName", "offset": 0, "length": 5, "user_id": alice.user_id}])
    );
    // A user Alice can reach (with her access hash) may be mentioned; Bob then gets that user.
    let carol_hash = alice.peer_of("+15557110003").await["access_hash"].clone();
    let mention = json!({"_": "inputMessageEntityMentionName", "offset": 0, "length": 5,
        "user_id": {"_": "inputUser", "user_id": carol.user_id, "access_hash": carol_hash}});
    alice.rpc("messages.sendMessage", send(&mention)).await;
    let bob_diff = bob
        .rpc(
            "updates.getDifference",
            json!({"pts": 0, "date": 0, "qts": 0}),
        )
        .await;
    assert!(
        bob_diff["users"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["id"] == carol.user_id),
        "{bob_diff}"
    );

    // Everyone else: pushes and getDifference.
    bob.send(&to_carol, "still here").await;
    pushed(&carol_socket, pts(&carol).await).await;
    assert_eq!(difference_texts(&carol).await, ["still here"]);
    assert_eq!(difference_texts(&bob).await.len(), 5);
    assert_eq!(difference_texts(&alice).await.len(), 4);
    assert_relay_healthy(&system).await;
    let report = projections::verify::verify(&system.pool)
        .await
        .expect("verify");
    assert_eq!(report.total_differences, 0, "{:?}", report.differences);
    system.stop().await;
}

fn rand_id() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static NEXT: AtomicI64 = AtomicI64::new(7_000_001);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_the_relay_cannot_read_does_not_stop_anything() {
    let system = System::start().await;
    let alice = system.login("+15557120001", "Alice").await;
    let bob = system.login("+15557120002", "Bob").await;
    let to_bob = alice.peer_of("+15557120002").await;
    let to_alice = bob.peer_of("+15557120001").await;
    let alice_socket = Socket::connect(&system.base, &alice.token, true).await;
    let bob_socket = Socket::connect(&system.base, &bob.token, true).await;
    ptslog_tests::wait_relay_streaming(&system.running.relay_status, Duration::from_secs(240))
        .await;
    alice.send(&to_bob, "before").await;
    pushed(&bob_socket, pts(&bob).await).await;

    // Written behind the application's back: valid jsonb one level past serde_json's recursion
    // limit in Bob's log, and a payload version no release wrote in Alice's.
    let deep = format!(
        "{{\"message\": {}}}",
        serde_json::to_string(&nested(130)).unwrap()
    );
    let poisoned = system
        .insert_raw(bob.user_id, "new_message", 1, &deep)
        .await;
    let future = system
        .insert_raw(alice.user_id, "peer_blocked", 99, r#"{"peer_id": 1}"#)
        .await;

    // Later events still reach both accounts' devices, live and through getDifference.
    alice.send(&to_bob, "after").await;
    let bob_pts = pts(&bob).await;
    assert_eq!(bob_pts, poisoned + 1);
    pushed(&bob_socket, bob_pts).await;
    bob.send(&to_alice, "reply").await;
    let alice_pts = pts(&alice).await;
    assert!(alice_pts > future);
    pushed(&alice_socket, alice_pts).await;
    assert_eq!(difference_texts(&bob).await, ["before", "after", "reply"]);
    assert_eq!(difference_texts(&alice).await, ["before", "after", "reply"]);
    // From just before the bad row: the state moves past it.
    let diff = bob
        .rpc(
            "updates.getDifference",
            json!({"pts": poisoned - 1, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(diff["state"]["pts"].as_i64(), Some(bob_pts + 1), "{diff}");

    // The relay published it as undecodable, counted it, and is healthy.
    assert_relay_healthy(&system).await;
    assert!(
        system
            .metric("ptslog_relay_undecodable_records_total")
            .await
            >= 1.0
    );
    // Verify and rebuild read past both rows.
    let report = projections::verify::verify(&system.pool)
        .await
        .expect("verify");
    assert_eq!(report.total_differences, 0, "{:?}", report.differences);
    projections::rebuild::rebuild_all(&system.pool)
        .await
        .expect("rebuild");
    projections::rebuild_online(
        &system.pool,
        &[projections::Projection::MessageBoxes],
        &projections::RebuildControl::default(),
        &mut |_| {},
    )
    .await
    .expect("online rebuild");
    assert_eq!(difference_texts(&bob).await, ["before", "after", "reply"]);
    system.stop().await;
}

/// A request whose head declares a body of `len` bytes, sent without the body: the server must
/// refuse it from the head alone (`MAX_REQUEST_BODY_BYTES`, before a byte of the body is read).
/// A client writing the whole body could see the connection cut under its write instead of
/// reading the answer, which made this a race (a broken pipe in one run of many).
async fn declared_too_large(device: &Device, method: &str, len: usize) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = device.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /v1/rpc/{method} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: {len}\r\n\r\n",
        device.token
    );
    stream
        .write_all(head.as_bytes())
        .await
        .expect("write the head");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let body: Value = text
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or_else(|| panic!("no JSON body: {text:?}"));
    assert_eq!(body["_"], "rpc_error", "{body}");
    (
        status,
        body["error_message"].as_str().unwrap_or("").to_string(),
    )
}
