//! The per-account cap on calls in flight (docs/security.md, "http-and-accounts") is one cap for
//! both fronts: calls of an account blocked over HTTP leave its MTProto calls only the queue wait
//! and then `420 FLOOD_WAIT_1`, and the other way round, while another account is served at once;
//! a refused call changes nothing. Against an in-process server (HTTP and the MTProto listener on
//! one `App`), with the spec client of `raw.rs`.

use std::time::{Duration, Instant};

use mtproto::client::RsaEncoding;
use mtproto::crypto::{AuthKey, PublicKey};
use mtproto::transport::Kind;
use ptslog_tests::{database_url, drop_database, fresh_database, self_peer, test_config, Device};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, Postgres, Transaction};

use super::raw::{init, Conn, Session};

/// The cap the test runs with: two blocked calls fill it.
const CAP: u32 = 2;
/// Short, so the refusals come quickly.
const QUEUE_WAIT: Duration = Duration::from_millis(500);
/// Long enough for the blocked calls to have taken their permits.
const SETTLE: Duration = Duration::from_millis(300);
/// "At once": well under the time a call past the cap would wait and the lock is held.
const AT_ONCE: Duration = Duration::from_secs(2);

/// Locks the account's sequence row, as a write of it would: its writes wait until released
/// (as `one_account_cannot_take_every_database_connection` does).
async fn lock_account(pool: &PgPool, user_id: i64) -> Transaction<'static, Postgres> {
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM user_sequences WHERE user_id = $1 FOR UPDATE")
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .expect("lock the account");
    tx
}

async fn http_login(base: &str, phone: &str) -> Device {
    let http = reqwest::Client::new();
    let body: Value = http
        .post(format!("{base}/v1/auth/login"))
        .json(&json!({"phone": phone, "first_name": "Cap", "last_name": ""}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login body");
    Device {
        base: base.to_string(),
        http,
        token: body["token"].as_str().expect("token").to_string(),
        user_id: body["user_id"].as_i64().expect("user_id"),
    }
}

/// A new auth key signed in over MTProto to the account `device` made over HTTP (same phone, same
/// account), its session, and the key and salt for more connections.
async fn mtproto_sign_in(
    port: u16,
    key: &PublicKey,
    phone: &str,
    device: &Device,
) -> (Session, AuthKey, i64) {
    let mut conn = Conn::open(port, Kind::Abridged, false).await;
    let (auth_key, salt) = conn.handshake(key, RsaEncoding::Old, None).await;
    let mut s = Session::new(conn, auth_key.clone(), salt);
    let sent = s
        .call(init(
            json!({"_": "auth.sendCode", "phone_number": phone, "api_id": 1, "api_hash": "x",
            "settings": {"_": "codeSettings"}}),
        ))
        .await
        .expect("sentCode");
    let signed = s
        .call(json!({"_": "auth.signIn", "phone_number": phone,
            "phone_code_hash": sent["phone_code_hash"], "phone_code": "12345"}))
        .await
        .expect("signIn");
    assert_eq!(signed["_"], "auth.authorization", "{signed}");
    assert_eq!(signed["user"]["id"], device.user_id, "the HTTP account");
    (s, auth_key, salt)
}

fn send_self(text: &str, random_id: i64) -> Value {
    json!({"_": "messages.sendMessage", "peer": {"_": "inputPeerSelf"}, "message": text,
        "random_id": random_id})
}

fn http_send(text: &str, random_id: i64) -> Value {
    json!({"peer": self_peer(), "message": text, "random_id": random_id})
}

async fn self_history(d: &Device) -> Vec<String> {
    let h = d
        .rpc(
            "messages.getHistory",
            json!({"peer": self_peer(), "limit": 100}),
        )
        .await;
    let mut texts: Vec<String> = h["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["message"].as_str().expect("text").to_string())
        .collect();
    texts.sort();
    texts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_account_cap_is_shared_by_the_http_and_mtproto_fronts() {
    let db = fresh_database().await.expect("fresh database");
    let key_dir = std::env::temp_dir().join(format!("ptslog-account-cap-{db}"));
    let mut config = test_config(&db);
    config.limits.account_max_concurrent_requests = CAP;
    config.limits.account_queue_wait = QUEUE_WAIT;
    config.mtproto_addr = Some("127.0.0.1:0".parse().unwrap());
    config.mtproto_key_file = key_dir.join("mtproto_rsa_key.pem");
    let mut running = ptslog_server::start(&config).await.expect("server starts");
    let port = running
        .start_mtproto(&config)
        .await
        .expect("MTProto front starts")
        .expect("MTProto front on")
        .port();
    let info = running.mtproto_key.get().expect("the server key");
    let key = PublicKey::new(
        &hex::decode(&info.modulus_hex).unwrap(),
        &hex::decode(&info.exponent_hex).unwrap(),
    );
    let base = format!("http://{}", running.addr);
    // The test's own connections, to hold locks behind the server's back.
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&database_url(&db))
        .await
        .expect("test pool");

    let (alice_phone, bob_phone) = ("+15557100001", "+15557100002");
    let alice = http_login(&base, alice_phone).await;
    let bob = http_login(&base, bob_phone).await;
    let (mut alice_mt, alice_key, alice_salt) =
        mtproto_sign_in(port, &key, alice_phone, &alice).await;
    let (mut bob_mt, _, _) = mtproto_sign_in(port, &key, bob_phone, &bob).await;

    // HTTP fills Alice's cap: two sends wait on her lock, each holding a permit.
    let lock = lock_account(&pool, alice.user_id).await;
    let blocked_http: Vec<_> = (1..=i64::from(CAP))
        .map(|i| {
            let alice = alice.clone();
            tokio::spawn(async move {
                alice
                    .call("messages.sendMessage", http_send("http", i))
                    .await
            })
        })
        .collect();
    tokio::time::sleep(SETTLE).await;

    // Bob, over MTProto, is served at once meanwhile (a write: his own account's lock is free).
    let started = Instant::now();
    let bob_sent = bob_mt.call(send_self("bob", 10)).await;
    assert!(bob_sent.is_ok(), "{bob_sent:?}");
    assert!(started.elapsed() < AT_ONCE, "{:?}", started.elapsed());

    // Alice over MTProto: the cap is full, so after the queue wait she is told to wait.
    let started = Instant::now();
    let refused = alice_mt.call_coded(send_self("refused mtproto", 20)).await;
    let waited = started.elapsed();
    assert_eq!(refused, Err((420, "FLOOD_WAIT_1".to_string())));
    assert!(
        waited >= QUEUE_WAIT && waited < AT_ONCE,
        "refused after {waited:?}, not after the queue wait"
    );
    assert!(
        blocked_http.iter().all(|call| !call.is_finished()),
        "the HTTP calls were holding the cap"
    );

    // Released: the HTTP calls go through, and Alice's MTProto call is served on the same session.
    lock.rollback().await.expect("release");
    for call in blocked_http {
        let (status, body) = call.await.expect("task");
        assert_eq!(status, 200, "{body}");
    }
    let served = alice_mt.call(send_self("mtproto", 21)).await;
    assert!(served.is_ok(), "{served:?}");

    // The other way round: two MTProto calls (two connections of her key) fill the cap, and her
    // HTTP call is refused.
    let lock = lock_account(&pool, alice.user_id).await;
    let mut blocked_mt = Vec::new();
    for i in 0..i64::from(CAP) {
        let conn = Conn::open(port, Kind::Intermediate, false).await;
        let mut s = Session::new(conn, alice_key.clone(), alice_salt);
        blocked_mt.push(tokio::spawn(async move {
            s.call(send_self("blocked mtproto", 30 + i)).await
        }));
    }
    tokio::time::sleep(SETTLE).await;
    let started = Instant::now();
    let (status, body) = alice
        .call("messages.sendMessage", http_send("refused http", 40))
        .await;
    let waited = started.elapsed();
    assert_eq!(
        (status, body["error_message"].as_str()),
        (420, Some("FLOOD_WAIT_1")),
        "{body}"
    );
    assert!(waited >= QUEUE_WAIT && waited < AT_ONCE, "{waited:?}");
    // Bob over HTTP is not affected.
    let started = Instant::now();
    bob.rpc("updates.getState", json!({})).await;
    assert!(started.elapsed() < AT_ONCE, "{:?}", started.elapsed());
    lock.rollback().await.expect("release");
    for call in blocked_mt {
        let sent = call.await.expect("task");
        assert!(sent.is_ok(), "{sent:?}");
    }

    // The refused calls changed nothing: only the served ones are in Alice's history.
    assert_eq!(
        self_history(&alice).await,
        [
            "blocked mtproto",
            "blocked mtproto",
            "http",
            "http",
            "mtproto"
        ]
    );

    running.shutdown().await;
    pool.close().await;
    drop_database(&db).await;
    let _ = std::fs::remove_dir_all(&key_dir);
}
