//! With the raw client (no Telethon needed): one push per auth key when a client has two
//! connections on it with one session (as Telegram Desktop does while it tries transports, and for
//! config and media), and calls the server cannot decode counted by constructor in `/metrics`.

use std::time::Duration;

use mtproto::client::RsaEncoding;
use mtproto::crypto::PublicKey;
use mtproto::service::{PING, PONG, RPC_ERROR, RPC_RESULT};
use mtproto::tl::{decode_object, Reader, Schema, Writer};
use mtproto::transport::Kind;
use serde_json::{json, Value};

use super::super::Setup;
use super::{init, Conn, Session, UPDATES};

/// A constructor id no layer has.
const UNKNOWN: u32 = 0x1234_5678;

/// Sends a call whose body is raw bytes and answers its rpc_error message (`Ok(())` on a result).
async fn call_bytes(s: &mut Session, body: &[u8]) -> Result<(), String> {
    let msg_id = s.conn.msg_id();
    let salt = s.salt;
    let packet = s.packet(msg_id, salt, body);
    s.conn.send(&packet).await;
    loop {
        let body = s.next().await.expect("an answer before close");
        let mut r = Reader::new(&body);
        if r.u32().unwrap() != RPC_RESULT || r.i64().unwrap() != msg_id {
            continue;
        }
        let rest = r.remaining();
        if rest[..4] == RPC_ERROR.to_le_bytes() {
            let mut e = Reader::new(&rest[4..]);
            let _code = e.i32().unwrap();
            return Err(e.string().unwrap());
        }
        return Ok(());
    }
}

/// The `updates` pushed to a connection before the pong of a ping sent now: everything the
/// server queued for it earlier has been written by then.
async fn pushes_until_pong(s: &mut Session) -> Vec<Value> {
    let id = s.conn.msg_id();
    let mut w = Writer::new();
    w.u32(PING).i64(id);
    let salt = s.salt;
    let packet = s.packet(id, salt, &w.buf);
    s.conn.send(&packet).await;
    let mut pushed = Vec::new();
    loop {
        let body = s.next().await.expect("pong");
        if body[..4] == PONG.to_le_bytes() {
            return pushed;
        }
        if body[..4] == UPDATES.to_le_bytes() {
            pushed.push(decode_object(Schema::api(), &mut Reader::new(&body)).expect("updates"));
        }
    }
}

/// Waits until `s` was pushed an `updates` (or panics after `WAIT`).
async fn next_push(s: &mut Session) -> Value {
    let got = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let body = s.next().await.expect("a push");
            if body[..4] == UPDATES.to_le_bytes() {
                return decode_object(Schema::api(), &mut Reader::new(&body)).expect("updates");
            }
        }
    })
    .await;
    got.expect("a push in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_push_per_auth_key_and_unknown_calls_are_counted() {
    let setup = Setup::fresh("mtproto").await;
    let mut server = setup.spawn();
    let key_info = setup.wait_ready(&mut server).await;
    let key = PublicKey::new(
        &hex::decode(key_info["modulus_hex"].as_str().unwrap()).unwrap(),
        &hex::decode(key_info["exponent_hex"].as_str().unwrap()).unwrap(),
    );
    let port = setup.mt_port;

    // A key, signed up on a first connection.
    let mut conn = Conn::open(port, Kind::Abridged, false).await;
    let (perm, salt) = conn.handshake(&key, RsaEncoding::Old, None).await;
    let mut a = Session::new(conn, perm.clone(), salt);
    let phone = "+15559980001";
    let sent = a
        .call(init(
            json!({"_": "auth.sendCode", "phone_number": phone, "api_id": 1, "api_hash": "x",
            "settings": {"_": "codeSettings"}}),
        ))
        .await
        .expect("sentCode");
    let hash = sent["phone_code_hash"].clone();
    let r = a
        .call(json!({"_": "auth.signIn", "phone_number": phone, "phone_code_hash": hash, "phone_code": "12345"}))
        .await
        .expect("signIn");
    assert_eq!(r["_"], "auth.authorizationSignUpRequired");
    a.call(
        json!({"_": "auth.signUp", "phone_number": phone, "phone_code_hash": hash,
        "first_name": "Two", "last_name": "Conns"}),
    )
    .await
    .expect("signUp");

    // An unknown constructor: INPUT_METHOD_INVALID, counted by its id in /metrics.
    let mut body = UNKNOWN.to_le_bytes().to_vec();
    body.extend_from_slice(&[0; 8]);
    for _ in 0..2 {
        assert_eq!(
            call_bytes(&mut a, &body).await,
            Err("INPUT_METHOD_INVALID".to_string())
        );
    }
    let metrics = reqwest::get(format!("{}/metrics", setup.http()))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics body");
    assert!(
        metrics
            .lines()
            .any(|l| l
                == "ptslog_mtproto_unknown_constructor_calls_total{constructor=\"0x12345678\"} 2"),
        "{metrics}"
    );

    // A second connection on the same key and the same session, with a call of its own.
    let mut b = Session::new(
        Conn::open(port, Kind::Intermediate, false).await,
        perm.clone(),
        salt,
    );
    b.id = a.id;
    let dc = b.call(json!({"_": "help.getNearestDc"})).await;
    assert_eq!(dc.expect("nearestDc")["_"], "nearestDc");

    // Another account writes over HTTP.
    let http = reqwest::Client::new();
    let login: Value = http
        .post(format!("{}/v1/auth/login", setup.http()))
        .json(&json!({"phone": "+15559980002", "first_name": "Sender"}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login body");
    let token = login["token"].as_str().expect("token").to_string();
    let rpc = |method: &str, body: Value| {
        http.post(format!("{}/v1/rpc/{method}", setup.http()))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    let resolved: Value = rpc("contacts.resolvePhone", json!({"phone": phone}))
        .await
        .expect("resolve")
        .json()
        .await
        .expect("resolved");
    let user = &resolved["users"][0];
    let peer =
        json!({"_": "inputPeerUser", "user_id": user["id"], "access_hash": user["access_hash"]});
    let send = |text: &'static str, random_id: i64| {
        rpc(
            "messages.sendMessage",
            json!({"peer": peer, "message": text, "random_id": random_id}),
        )
    };

    // One message: pushed once, to the connection called last (b), none to a.
    assert_eq!(send("first", 1).await.expect("send").status(), 200);
    let p = next_push(&mut b).await;
    assert_eq!(p["updates"][0]["message"]["message"], "first");
    assert_eq!(pushes_until_pong(&mut b).await, Vec::<Value>::new());
    assert_eq!(
        pushes_until_pong(&mut a).await,
        Vec::<Value>::new(),
        "the other connection of the key got the same push"
    );

    // A call on a makes it the current connection: the next message goes there only.
    let dc = a.call(json!({"_": "help.getNearestDc"})).await;
    assert_eq!(dc.expect("nearestDc")["_"], "nearestDc");
    assert_eq!(send("second", 2).await.expect("send").status(), 200);
    let p = next_push(&mut a).await;
    assert_eq!(p["updates"][0]["message"]["message"], "second");
    assert_eq!(pushes_until_pong(&mut b).await, Vec::<Value>::new());

    // The current connection closes: the key's other connection takes over.
    drop(a);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(send("third", 3).await.expect("send").status(), 200);
    let p = next_push(&mut b).await;
    assert_eq!(p["updates"][0]["message"]["message"], "third");
}
