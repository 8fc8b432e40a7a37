//! Sign-in by code over MTProto with the spec client (mtproto/src/client.rs), development sign-in
//! off and the webhook provider posting codes to a local receiver: a container of many wrong
//! auth.signIn calls gets no more tries than the limit, the dead hash locks that auth key out,
//! and a new key signs up with the code the webhook got (resendCode and cancelCode on the way).

use application::login_codes::MAX_CODE_ATTEMPTS;
use mtproto::client::RsaEncoding;
use mtproto::crypto::{PublicKey, Side};
use mtproto::service::{MSG_CONTAINER, RPC_RESULT};
use mtproto::session::{encrypt, Plain};
use mtproto::tl::{encode_object, Reader, Schema, Writer};
use mtproto::transport::Kind;
use ptslog_tests::code_receiver::{Answer, CodeReceiver};
use ptslog_tests::{fresh_database, test_config};
use serde_json::{json, Value};

use super::{init, Conn, Session};

fn send_code(phone: &str) -> Value {
    json!({"_": "auth.sendCode", "phone_number": phone, "api_id": 1, "api_hash": "x",
        "settings": {"_": "codeSettings"}})
}

fn sign_in(phone: &str, hash: &Value, code: &str) -> Value {
    json!({"_": "auth.signIn", "phone_number": phone, "phone_code_hash": hash, "phone_code": code})
}

/// Sends the calls in one msg_container and answers each call's error message (or "ok").
async fn in_one_container(s: &mut Session, calls: &[Value]) -> Vec<String> {
    let mut w = Writer::new();
    w.u32(MSG_CONTAINER).i32(calls.len() as i32);
    let mut ids = Vec::new();
    for call in calls {
        let mut body = Writer::new();
        encode_object(Schema::api(), call, &mut body).expect("call encodes");
        let id = s.conn.msg_id();
        s.content += 1;
        w.i64(id)
            .i32(s.content * 2 - 1)
            .i32(body.buf.len() as i32)
            .raw(&body.buf);
        ids.push(id);
    }
    let msg_id = s.conn.msg_id();
    let packet = encrypt(
        &s.key,
        Side::Client,
        &Plain {
            salt: s.salt,
            session_id: s.id,
            msg_id,
            seq_no: s.content * 2,
            body: w.buf,
        },
    );
    s.conn.send(&packet).await;
    let mut answers = vec![None; ids.len()];
    while answers.iter().any(Option::is_none) {
        let body = s.next().await.expect("answers before close");
        let mut r = Reader::new(&body);
        if r.u32().unwrap() != RPC_RESULT {
            continue;
        }
        let req = r.i64().unwrap();
        let Some(i) = ids.iter().position(|&id| id == req) else {
            continue;
        };
        let rest = r.remaining();
        answers[i] = Some(if rest[..4] == 0x2144ca19u32.to_le_bytes() {
            Reader::new(&rest[8..]).string().unwrap()
        } else {
            "ok".to_string()
        });
    }
    answers.into_iter().map(Option::unwrap).collect()
}

#[tokio::test]
async fn mtproto_sign_in_by_webhook_code_with_the_attempt_limit_per_hash() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let db = fresh_database().await.expect("fresh database");
    let dir = std::env::temp_dir().join(format!("ptslog-signin-{db}"));
    let mut config = test_config(&db);
    config.dev_login = false;
    config.dev_login_code = None;
    config.login_webhook_url = Some(receiver.url.clone());
    config.mtproto_addr = Some("127.0.0.1:0".parse().unwrap());
    config.data_dir = dir.clone();
    config.mtproto_key_file = dir.join("mtproto_rsa_key.pem");
    config.mtproto_limits.handshakes_per_minute = 1000;
    let mut running = ptslog_server::start(&config).await.expect("server starts");
    let port = running
        .start_mtproto(&config)
        .await
        .expect("MTProto starts")
        .expect("MTProto on")
        .port();
    let info = running.mtproto_key.get().expect("the server key").clone();
    let key = PublicKey::new(
        &hex::decode(&info.modulus_hex).unwrap(),
        &hex::decode(&info.exponent_hex).unwrap(),
    );

    let mut conn = Conn::open(port, Kind::Abridged, false).await;
    let (auth, salt) = conn.handshake(&key, RsaEncoding::Old, None).await;
    let mut s = Session::new(conn, auth, salt);
    let phone = "+15554440001";
    let sent = s.call(init(send_code(phone))).await.expect("sentCode");
    assert_eq!(sent["type"]["_"], "auth.sentCodeTypeSms");
    assert_eq!(sent["type"]["length"], 5);
    assert_eq!(sent["next_type"]["_"], "auth.codeTypeSms");
    let hash = sent["phone_code_hash"].clone();
    let code = receiver.code_for(phone).await;

    // Twenty wrong codes in one container: only the first MAX_CODE_ATTEMPTS are tried.
    let n: u32 = code.parse().unwrap();
    let guesses: Vec<Value> = (1..=20)
        .map(|i| sign_in(phone, &hash, &format!("{:05}", (n + i) % 100000)))
        .collect();
    let answers = in_one_container(&mut s, &guesses).await;
    let invalid = answers
        .iter()
        .filter(|a| *a == "PHONE_CODE_INVALID")
        .count();
    let expired = answers
        .iter()
        .filter(|a| *a == "PHONE_CODE_EXPIRED")
        .count();
    assert_eq!(
        (invalid, expired),
        (MAX_CODE_ATTEMPTS as usize, 20 - MAX_CODE_ATTEMPTS as usize),
        "{answers:?}"
    );
    // Dead: the right code no longer works, and this key gets no new codes, for any phone.
    assert_eq!(
        s.call(sign_in(phone, &hash, &code)).await,
        Err("PHONE_CODE_EXPIRED".to_string())
    );
    for p in [phone, "+15554440002"] {
        let flood = s.call(send_code(p)).await.expect_err("flood wait");
        assert!(flood.starts_with("FLOOD_WAIT_"), "{flood}");
    }

    // Another key (another device) signs a new phone up with the code the webhook got.
    let mut conn = Conn::open(port, Kind::Intermediate, false).await;
    let (auth, salt) = conn.handshake(&key, RsaEncoding::Old, None).await;
    let mut t = Session::new(conn, auth, salt);
    let phone = "+15554440003";
    let sent = t.call(init(send_code(phone))).await.expect("sentCode");
    let hash = sent["phone_code_hash"].clone();
    let resent = t
        .call(json!({"_": "auth.resendCode", "phone_number": phone, "phone_code_hash": hash}))
        .await
        .expect("resent");
    assert_eq!(resent["phone_code_hash"], hash);
    let code = receiver.code_for(phone).await;
    let r = t.call(sign_in(phone, &hash, &code)).await.expect("signIn");
    assert_eq!(r["_"], "auth.authorizationSignUpRequired");
    let r = t
        .call(
            json!({"_": "auth.signUp", "phone_number": phone, "phone_code_hash": hash,
            "first_name": "Mt", "last_name": "Proto"}),
        )
        .await
        .expect("signUp");
    assert_eq!(r["_"], "auth.authorization");
    assert_eq!(r["user"]["first_name"], "Mt");
    let users = t
        .call(json!({"_": "users.getUsers", "id": [{"_": "inputUserSelf"}]}))
        .await
        .expect("signed in");
    assert_eq!(users[0]["first_name"], "Mt");

    // cancelCode ends a hash.
    let phone = "+15554440004";
    let sent = t.call(send_code(phone)).await.expect("sentCode");
    let hash = sent["phone_code_hash"].clone();
    let cancel = json!({"_": "auth.cancelCode", "phone_number": phone, "phone_code_hash": hash});
    assert_eq!(t.call(cancel).await, Ok(json!(true)));
    let code = receiver.code_for(phone).await;
    assert_eq!(
        t.call(sign_in(phone, &hash, &code)).await,
        Err("PHONE_CODE_EXPIRED".to_string())
    );

    running.shutdown().await;
    ptslog_tests::drop_database(&db).await;
    let _ = std::fs::remove_dir_all(dir);
}
