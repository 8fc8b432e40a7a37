//! Sessions and devices against real `ptslog serve` processes sharing one database: the devices
//! `account.getAuthorizations` lists (what `initConnection` said, the client's address) over MTProto
//! and JSON, and logging devices out (`account.resetAuthorization`, `auth.resetAuthorizations`,
//! `POST /v1/auth/logout`): the token is refused at once, the MTProto key is signed out, and the
//! device's live connections close, on this process and on a second one.

use std::time::Duration;

use futures::StreamExt;
use mtproto::client::RsaEncoding;
use mtproto::crypto::PublicKey;
use mtproto::transport::Kind;
use serde_json::{json, Value};
use sqlx::Connection;

use super::super::Setup;
use mtproto::tl::{decode_object, Reader, Schema};

use super::{init, Conn, Session, UPDATES, WAIT};

/// A JSON device: its token, on a server's base URL.
struct Json {
    http: reqwest::Client,
    token: String,
}

impl Json {
    async fn login(base: &str, phone: &str) -> Json {
        let http = reqwest::Client::new();
        let body: Value = http
            .post(format!("{base}/v1/auth/login"))
            .json(&json!({"phone": phone, "first_name": "Many"}))
            .send()
            .await
            .expect("login")
            .json()
            .await
            .expect("login body");
        let token = body["token"].as_str().expect("token").to_string();
        Json { http, token }
    }

    /// `(status, body)` of an RPC on `base`.
    async fn rpc(&self, base: &str, method: &str, params: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{base}/v1/rpc/{method}"))
            .bearer_auth(&self.token)
            .json(&params)
            .send()
            .await
            .expect("rpc");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// The hash of this device in its own listing.
    async fn hash(&self, base: &str) -> i64 {
        let (status, list) = self.rpc(base, "account.getAuthorizations", json!({})).await;
        assert_eq!(status, 200, "{list}");
        list["authorizations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["current"] == true)
            .and_then(|a| a["hash"].as_i64())
            .expect("a current device")
    }
}

/// Opens this device's push WebSocket on `base`: a stream that ends when the server closes it.
async fn push_socket(
    base: &str,
    token: &str,
) -> impl futures::Stream<Item = Result<tokio_tungstenite::tungstenite::Message, impl std::fmt::Debug>>
{
    let url = format!(
        "{}/v1/updates?token={token}",
        base.replacen("http", "ws", 1)
    );
    let (ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("WebSocket connects");
    ws
}

/// The next `updates` frame of a push socket; panics after `WAIT`.
async fn next_updates<S, E>(ws: &mut S) -> Value
where
    S: futures::Stream<Item = Result<tokio_tungstenite::tungstenite::Message, E>> + Unpin,
{
    tokio::time::timeout(WAIT, async {
        loop {
            match ws.next().await {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) => {
                    let v: Value = serde_json::from_str(&t).expect("JSON frame");
                    if v["_"] == "updates" {
                        return v;
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("the push socket ended: {other:?}", other = other.is_none()),
            }
        }
    })
    .await
    .expect("a pushed frame in time")
}

/// Waits until the socket ends (close frame, error or end); panics after `WAIT`.
async fn closes<S, T, E>(ws: &mut S)
where
    S: futures::Stream<Item = Result<T, E>> + Unpin,
    T: std::fmt::Debug,
{
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match ws.next().await {
                None | Some(Err(_)) => return,
                Some(Ok(m)) if format!("{m:?}").starts_with("Close") => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the push socket was not closed in time");
}

/// Whether a socket is still open a moment from now (nothing ends it).
async fn stays_open<S, T, E>(ws: &mut S) -> bool
where
    S: futures::Stream<Item = Result<T, E>> + Unpin,
    T: std::fmt::Debug,
{
    tokio::time::timeout(Duration::from_millis(500), async {
        loop {
            match ws.next().await {
                None | Some(Err(_)) => return,
                Some(Ok(m)) if format!("{m:?}").starts_with("Close") => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await
    .is_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_are_listed_and_logged_out_everywhere() {
    let setup = Setup::fresh("sessions").await;
    let mut server = setup.spawn();
    let key_info = setup.wait_ready(&mut server).await;
    // A second process on the same database (no relay of its own, sign-in by code only).
    let (_second, b_http, _) = setup.spawn_production().await;
    let (a, b) = (setup.http(), format!("http://127.0.0.1:{b_http}"));
    let key = PublicKey::new(
        &hex::decode(key_info["modulus_hex"].as_str().unwrap()).unwrap(),
        &hex::decode(key_info["exponent_hex"].as_str().unwrap()).unwrap(),
    );

    // An MTProto device, signed up with initConnection's description.
    let phone = "+15559970001";
    let mut conn = Conn::open(setup.mt_port, Kind::Abridged, false).await;
    let (perm, salt) = conn.handshake(&key, RsaEncoding::Old, None).await;
    let mut m = Session::new(conn, perm.clone(), salt);
    let sent = m
        .call(init(
            json!({"_": "auth.sendCode", "phone_number": phone, "api_id": 1,
            "api_hash": "x", "settings": {"_": "codeSettings"}}),
        ))
        .await
        .expect("sentCode");
    let hash = sent["phone_code_hash"].clone();
    m.call(
        json!({"_": "auth.signIn", "phone_number": phone, "phone_code_hash": hash,
        "phone_code": "12345"}),
    )
    .await
    .expect("signIn");
    m.call(
        json!({"_": "auth.signUp", "phone_number": phone, "phone_code_hash": hash,
        "first_name": "Many", "last_name": ""}),
    )
    .await
    .expect("signUp");

    // Two JSON devices of the same account.
    let j1 = Json::login(&a, phone).await;
    let j2 = Json::login(&a, phone).await;

    // (1) The listing over MTProto: three devices, this one first and current, as it described
    // itself (raw::init) from loopback.
    let list = m
        .call(json!({"_": "account.getAuthorizations"}))
        .await
        .expect("authorizations");
    assert_eq!(list["_"], "account.authorizations");
    assert_eq!(list["authorization_ttl_days"], 180);
    let devices = list["authorizations"].as_array().expect("a list");
    assert_eq!(devices.len(), 3, "{list}");
    let me = &devices[0];
    assert_eq!(me["current"], true, "{list}");
    assert_eq!(
        (
            &me["device_model"],
            &me["system_version"],
            &me["app_version"]
        ),
        (&json!("raw"), &json!("1"), &json!("1"))
    );
    assert_eq!((&me["api_id"], &me["ip"]), (&json!(1), &json!("127.0.0.1")));
    assert!(me["date_created"].as_i64().unwrap() > 1_700_000_000);
    assert!(devices[1..]
        .iter()
        .all(|d| d.get("current").is_none() || d["current"] == false));
    let m_hash = me["hash"].as_i64().unwrap();
    // The same list over JSON, on either process, marking the caller's device.
    let j1_hash = j1.hash(&a).await;
    let j2_hash = j2.hash(&b).await;
    let (_, from_b) = j1.rpc(&b, "account.getAuthorizations", json!({})).await;
    let mut hashes: Vec<i64> = from_b["authorizations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["hash"].as_i64().unwrap())
        .collect();
    hashes.sort();
    let mut expected = vec![m_hash, j1_hash, j2_hash];
    expected.sort();
    assert_eq!(hashes, expected);

    // (2)+(3) j2's push socket is on the second process; the MTProto device ends j2: its token is
    // refused at once on both, and the second process closes its socket.
    let mut j2_ws = push_socket(&b, &j2.token).await;
    let mut j1_ws = push_socket(&a, &j1.token).await;
    // (5) A new sign-in on the first process: the account's other devices get
    // updateNewAuthorization with its hash, on the second process's socket and over MTProto.
    let j5 = Json::login(&a, phone).await;
    let j5_hash = j5.hash(&a).await;
    // A notice of an earlier sign-in may still be on its way to an instance when a socket
    // connects there (LISTEN delivery is asynchronous): such a late notice names an earlier
    // device, never the socket's own; anything else fails.
    loop {
        let pushed = next_updates(&mut j2_ws).await;
        let update = &pushed["updates"][0];
        assert_eq!(update["_"], "updateNewAuthorization", "{pushed}");
        let hash = update["hash"].as_i64().unwrap();
        if hash == j5_hash {
            break;
        }
        assert!([m_hash, j1_hash].contains(&hash), "{pushed}");
    }
    tokio::time::timeout(WAIT, async {
        loop {
            let body = m.next().await.expect("a push");
            if body[..4] != UPDATES.to_le_bytes() {
                continue;
            }
            let pushed = decode_object(Schema::api(), &mut Reader::new(&body)).expect("updates");
            let update = &pushed["updates"][0];
            assert_eq!(update["_"], "updateNewAuthorization", "{pushed}");
            let hash = update["hash"].as_i64().unwrap();
            if hash == j5_hash {
                return;
            }
            assert!([j1_hash, j2_hash].contains(&hash), "{pushed}");
        }
    })
    .await
    .expect("updateNewAuthorization over MTProto in time");

    // Own device or unknown: HASH_INVALID, nothing ended.
    for bad in [m_hash, 12345] {
        let e = m
            .call(json!({"_": "account.resetAuthorization", "hash": bad}))
            .await;
        assert_eq!(e, Err("HASH_INVALID".to_string()));
    }
    let ok = m
        .call(json!({"_": "account.resetAuthorization", "hash": j2_hash}))
        .await
        .expect("resetAuthorization");
    assert_eq!(ok, json!(true));
    for base in [&a, &b] {
        let (status, e) = j2.rpc(base, "updates.getState", json!({})).await;
        assert_eq!(
            (status, &e["error_message"]),
            (401, &json!("AUTH_KEY_UNREGISTERED"))
        );
    }
    closes(&mut j2_ws).await;
    assert!(
        stays_open(&mut j1_ws).await,
        "another device's socket stays open"
    );

    // POST /v1/auth/logout ends j1 (on this process): token refused, socket closed.
    let out = j1
        .http
        .post(format!("{a}/v1/auth/logout"))
        .bearer_auth(&j1.token)
        .send()
        .await
        .expect("logout");
    assert_eq!(out.status(), 200);
    let (status, _) = j1.rpc(&b, "updates.getState", json!({})).await;
    assert_eq!(status, 401);
    closes(&mut j1_ws).await;

    // A second connection of the MTProto device that asked for no pushes (as clients do for
    // media): it is closed too.
    let mut quiet = Session::new(
        Conn::open(setup.mt_port, Kind::Intermediate, false).await,
        perm.clone(),
        salt,
    );
    let state = quiet
        .call(json!({"_": "invokeWithoutUpdates", "query": {"_": "updates.getState"}}))
        .await
        .expect("getState without updates");
    assert_eq!(state["_"], "updates.state");

    // A JSON device on the second process ends the MTProto device: its connection (on the first
    // process) closes, and its key is no longer signed in.
    let j3 = Json::login(&a, phone).await;
    let (status, r) = j3
        .rpc(&b, "account.resetAuthorization", json!({"hash": m_hash}))
        .await;
    assert_eq!(status, 200, "{r}");
    let closed = tokio::time::timeout(WAIT, async { while m.next().await.is_some() {} }).await;
    assert!(closed.is_ok(), "the MTProto connection was not closed");
    let closed = tokio::time::timeout(WAIT, async { while quiet.next().await.is_some() {} }).await;
    assert!(
        closed.is_ok(),
        "the connection without updates was not closed"
    );
    let mut again = Session::new(
        Conn::open(setup.mt_port, Kind::Intermediate, false).await,
        perm,
        salt,
    );
    let e = again
        .call_coded(json!({"_": "account.getAuthorizations"}))
        .await;
    assert_eq!(e, Err((401, "AUTH_KEY_UNREGISTERED".to_string())));

    // POST /v1/auth/resetAuthorizations: every other device ends, the caller's stays.
    let j4 = Json::login(&a, phone).await;
    let r = j3
        .http
        .post(format!("{b}/v1/auth/resetAuthorizations"))
        .bearer_auth(&j3.token)
        .send()
        .await
        .expect("resetAuthorizations");
    assert_eq!(r.status(), 200);
    assert_eq!(j4.rpc(&a, "updates.getState", json!({})).await.0, 401);
    let (status, list) = j3.rpc(&a, "account.getAuthorizations", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(
        list["authorizations"].as_array().unwrap().len(),
        1,
        "{list}"
    );

    // Over MTProto, on the signed-out key: sign in again, auth.resetAuthorizations ends j3,
    // auth.logOut ends this device (the connection stays, signed out).
    let sent = again
        .call(init(
            json!({"_": "auth.sendCode", "phone_number": phone, "api_id": 1,
            "api_hash": "x", "settings": {"_": "codeSettings"}}),
        ))
        .await
        .expect("sentCode");
    let signed = again
        .call(json!({"_": "auth.signIn", "phone_number": phone,
            "phone_code_hash": sent["phone_code_hash"], "phone_code": "12345"}))
        .await
        .expect("signIn");
    assert_eq!(signed["_"], "auth.authorization");
    let ok = again
        .call(json!({"_": "auth.resetAuthorizations"}))
        .await
        .expect("resetAuthorizations");
    assert_eq!(ok, json!(true));
    assert_eq!(j3.rpc(&a, "updates.getState", json!({})).await.0, 401);
    let list = again
        .call(json!({"_": "account.getAuthorizations"}))
        .await
        .expect("authorizations");
    assert_eq!(
        list["authorizations"].as_array().unwrap().len(),
        1,
        "{list}"
    );
    let out = again
        .call(json!({"_": "auth.logOut"}))
        .await
        .expect("logOut");
    assert_eq!(out["_"], "auth.loggedOut");
    let e = again
        .call_coded(json!({"_": "account.getAuthorizations"}))
        .await;
    assert_eq!(e, Err((401, "AUTH_KEY_UNREGISTERED".to_string())));
    let mut db = sqlx::PgConnection::connect(&ptslog_tests::database_url(&setup.db))
        .await
        .expect("database");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM authorizations")
        .fetch_one(&mut db)
        .await
        .expect("count");
    assert_eq!(left, 0, "every device of the account ended");
}
