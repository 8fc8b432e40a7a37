//! Two-step verification over the JSON API against real Postgres: account.getPassword's
//! parameters, setting, changing and removing a password with SRP proofs computed here as a
//! client would (domain::srp::client_proof), single-use and stale exchanges, and the wrong-password
//! limit at its boundary; the JSON API's sign-in of a protected account (signIn's password_token,
//! /v1/auth/getPassword and checkPassword). MTProto's sign-in side (SESSION_PASSWORD_NEEDED,
//! auth.checkPassword) runs with Telethon in mtproto.rs.

use application::commands::two_step::{
    MAX_OPEN_SRP_EXCHANGES, MAX_PASSWORD_FAILURES, PASSWORD_FAILURE_WINDOW_SECS,
    SECURE_RANDOM_BYTES, SERVER_SALT1_BYTES,
};
use domain::srp::{self, Verifier};
use ptslog_tests::code_receiver::{Answer, CodeReceiver};
use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

fn unhex(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().expect("hex field")).expect("hex")
}

/// account.passwordInputSettings for the password whose x is `x`, on getPassword's new_algo
/// (the client appends 32 bytes to salt1, as Telethon does).
async fn new_settings(d: &Device, x: &[u8], hint: &str) -> Value {
    let pwd = d.rpc("account.getPassword", json!({})).await;
    let mut algo = pwd["new_algo"].clone();
    let mut salt1 = unhex(&algo["salt1"]);
    salt1.extend_from_slice(&rand::random::<[u8; 32]>());
    algo["salt1"] = json!(hex::encode(salt1));
    json!({
        "_": "account.passwordInputSettings",
        "new_algo": algo,
        "new_password_hash": hex::encode(Verifier::from_x(x).as_bytes()),
        "hint": hint,
    })
}

/// An inputCheckPasswordSRP for password x over a fresh exchange.
async fn proof(d: &Device, x: &[u8]) -> Value {
    proof_for(&d.rpc("account.getPassword", json!({})).await, x)
}

/// An inputCheckPasswordSRP for password x over the exchange in account.password `pwd`.
fn proof_for(pwd: &Value, x: &[u8]) -> Value {
    assert_eq!(pwd["has_password"], true, "{pwd}");
    let algo = &pwd["current_algo"];
    let b: [u8; srp::SIZE] = unhex(&pwd["srp_B"]).try_into().expect("256-byte srp_B");
    let (a, m1) = loop {
        let mut secret = [0u8; srp::SIZE];
        rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut secret);
        if let Some(p) = srp::client_proof(
            x,
            &secret,
            &unhex(&algo["salt1"]),
            &unhex(&algo["salt2"]),
            &b,
        ) {
            break p;
        }
    };
    json!({"_": "inputCheckPasswordSRP", "srp_id": pwd["srp_id"], "A": hex::encode(a), "M1": hex::encode(m1)})
}

async fn update(d: &Device, password: Value, settings: Value) -> (u16, String) {
    let (status, body) = d
        .call(
            "account.updatePasswordSettings",
            json!({"password": password, "new_settings": settings}),
        )
        .await;
    if status == 200 {
        assert_eq!(body["_"], "boolTrue", "{body}");
        return (200, String::new());
    }
    (
        status,
        body["error_message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn empty() -> Value {
    json!({"_": "inputCheckPasswordEmpty"})
}

#[tokio::test]
async fn password_set_change_remove_and_attempt_limit() {
    let server = TestServer::start().await;
    let d = server.login("+17770001001", "Pat").await;
    let (x1, x2, wrong) = ([1u8; 32], [2u8; 32], [3u8; 32]);

    let pwd = d.rpc("account.getPassword", json!({})).await;
    assert!(pwd.get("has_password").is_none_or(|v| v == false), "{pwd}");
    assert_eq!(pwd["_"], "account.password");
    let algo = &pwd["new_algo"];
    assert_eq!(
        algo["_"],
        "passwordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow"
    );
    assert_eq!(unhex(&algo["p"]), srp::PRIME);
    assert_eq!(algo["g"], 3);
    assert_eq!(unhex(&algo["salt1"]).len(), SERVER_SALT1_BYTES);
    assert_eq!(unhex(&pwd["secure_random"]).len(), SECURE_RANDOM_BYTES);
    assert_eq!(pwd["new_secure_algo"]["_"], "securePasswordKdfAlgoSHA512");

    // Set (no current password), then the hint changes with a proof of the current one.
    assert_eq!(
        update(&d, empty(), new_settings(&d, &x1, "h").await)
            .await
            .0,
        200
    );
    let pwd = d.rpc("account.getPassword", json!({})).await;
    assert_eq!(
        (&pwd["has_password"], &pwd["hint"]),
        (&json!(true), &json!("h"))
    );
    assert_eq!(unhex(&pwd["srp_B"]).len(), srp::SIZE);
    assert_eq!(
        update(&d, empty(), new_settings(&d, &x2, "").await).await,
        (400, "PASSWORD_HASH_INVALID".into()),
        "a password is needed to change one"
    );
    let used = proof(&d, &x1).await;
    assert_eq!(
        update(&d, used.clone(), new_settings(&d, &x1, "h2").await)
            .await
            .0,
        200
    );
    // Each exchange is used once; an unknown srp_id is no better.
    assert_eq!(
        update(&d, used.clone(), new_settings(&d, &x1, "h3").await).await,
        (400, "SRP_ID_INVALID".into())
    );
    let mut forged = proof(&d, &x1).await;
    forged["srp_id"] = json!(forged["srp_id"].as_i64().unwrap().wrapping_add(1));
    assert_eq!(
        update(&d, forged, new_settings(&d, &x1, "h3").await).await,
        (400, "SRP_ID_INVALID".into())
    );
    // An exchange made before a change is stale after it.
    let stale = proof(&d, &x1).await;
    let change = proof(&d, &x1).await;
    assert_eq!(
        update(&d, change, new_settings(&d, &x2, "two").await)
            .await
            .0,
        200
    );
    assert_eq!(
        update(&d, stale, new_settings(&d, &x1, "").await).await,
        (400, "SRP_PASSWORD_CHANGED".into())
    );
    // At most MAX_OPEN_SRP_EXCHANGES per account: the oldest past it is gone, the next kept.
    // (Settings first: each getPassword opens an exchange.)
    let (settings_a, settings_b) = (
        new_settings(&d, &x2, "").await,
        new_settings(&d, &x2, "").await,
    );
    let oldest = proof(&d, &x2).await;
    let second = proof(&d, &x2).await;
    for _ in 0..MAX_OPEN_SRP_EXCHANGES - 1 {
        d.rpc("account.getPassword", json!({})).await;
    }
    assert_eq!(
        update(&d, oldest, settings_a).await,
        (400, "SRP_ID_INVALID".into())
    );
    assert_eq!(update(&d, second, settings_b).await.0, 200);
    // Bad new settings change nothing.
    let mut bad = new_settings(&d, &x1, "").await;
    bad["new_password_hash"] = json!("01");
    let current = proof(&d, &x2).await;
    assert_eq!(
        update(&d, current, bad).await,
        (400, "NEW_SETTINGS_INVALID".into())
    );

    // Removal (Telethon's shape: new_algo with an empty hash), then set again.
    let mut remove = new_settings(&d, &x1, "").await;
    remove["new_password_hash"] = json!("");
    assert_eq!(update(&d, proof(&d, &x2).await, remove).await.0, 200);
    let pwd = d.rpc("account.getPassword", json!({})).await;
    assert!(pwd.get("has_password").is_none_or(|v| v == false), "{pwd}");
    assert_eq!(
        update(&d, empty(), new_settings(&d, &x1, "").await).await.0,
        200
    );

    // The limit: with MAX - 1 wrong passwords in the window a check is still served…
    for _ in 0..MAX_PASSWORD_FAILURES - 1 {
        let p = proof(&d, &wrong).await;
        assert_eq!(
            update(&d, p, new_settings(&d, &x1, "").await).await,
            (400, "PASSWORD_HASH_INVALID".into())
        );
    }
    assert_eq!(
        update(&d, proof(&d, &x1).await, new_settings(&d, &x1, "").await)
            .await
            .0,
        200
    );
    // … the MAX-th wrong one is still checked, and after it even the right one waits.
    let p = proof(&d, &wrong).await;
    assert_eq!(
        update(&d, p, new_settings(&d, &x1, "").await).await,
        (400, "PASSWORD_HASH_INVALID".into())
    );
    let (status, error) = update(&d, proof(&d, &x1).await, new_settings(&d, &x1, "").await).await;
    assert_eq!(status, 420, "{error}");
    let wait: i64 = error
        .strip_prefix("FLOOD_WAIT_")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{error}"));
    assert!(
        (PASSWORD_FAILURE_WINDOW_SECS - 60..=PASSWORD_FAILURE_WINDOW_SECS).contains(&wait),
        "{wait}"
    );
    // Another account is not affected.
    let other = server.login("+17770001002", "Sam").await;
    assert_eq!(
        update(&other, empty(), new_settings(&other, &x1, "").await)
            .await
            .0,
        200
    );
    assert_eq!(
        update(
            &other,
            proof(&other, &x1).await,
            new_settings(&other, &x2, "").await
        )
        .await
        .0,
        200
    );
    server.stop().await;
}

/// The Postgres adapter's lifetimes at their boundaries: an exchange is live until
/// SRP_EXCHANGE_LIFETIME_SECS and used once; a waiting sign-in is live until
/// PENDING_SIGN_IN_LIFETIME_SECS and belongs to its auth key only; failures count inside the
/// window only.
#[tokio::test]
async fn exchanges_and_waiting_sign_ins_expire() {
    use application::commands::two_step::{
        PENDING_SIGN_IN_LIFETIME_SECS, SRP_EXCHANGE_LIFETIME_SECS,
    };
    use application::password_port::{Passwords, SrpExchangeRecord};
    use domain::UserId;
    use infrastructure::postgres::passwords::PgPasswords;

    let server = TestServer::start().await;
    let d = server.login("+17770001003", "Kim").await;
    let user = UserId::new(d.user_id).unwrap();
    let store = PgPasswords::new(server.pool.clone());
    let now = i64::from(application::clock::unix_now());
    let exchange = |srp_id| SrpExchangeRecord {
        srp_id,
        user_id: user,
        secret_b: vec![1; srp::SIZE],
        version: 7,
    };
    let expires = now + SRP_EXCHANGE_LIFETIME_SECS;
    store
        .save_exchange(&exchange(42), expires, 8)
        .await
        .unwrap();
    store
        .save_exchange(&exchange(43), expires, 8)
        .await
        .unwrap();
    assert!(store
        .take_exchange(user, 42, expires)
        .await
        .unwrap()
        .is_none());
    let live = store.take_exchange(user, 43, expires - 1).await.unwrap();
    assert_eq!(live.map(|e| (e.srp_id, e.version)), Some((43, 7)));
    assert!(
        store.take_exchange(user, 43, now).await.unwrap().is_none(),
        "used once"
    );

    let until = now + PENDING_SIGN_IN_LIFETIME_SECS;
    store.set_pending_sign_in(99, user, until).await.unwrap();
    assert_eq!(
        store.pending_sign_in(99, until - 1).await.unwrap(),
        Some(user)
    );
    assert_eq!(store.pending_sign_in(99, until).await.unwrap(), None);
    assert_eq!(store.pending_sign_in(98, now).await.unwrap(), None);
    store.clear_pending_sign_in(99).await.unwrap();
    assert_eq!(store.pending_sign_in(99, now).await.unwrap(), None);
    // The JSON API's token sign-ins: the same lifetime, ended once.
    let token = [7u8; 32];
    store.set_token_sign_in(&token, user, until).await.unwrap();
    assert_eq!(
        store.token_sign_in(&token, until - 1).await.unwrap(),
        Some(user)
    );
    assert_eq!(store.token_sign_in(&token, until).await.unwrap(), None);
    assert_eq!(store.token_sign_in(&[8; 32], now).await.unwrap(), None);
    assert!(store.clear_token_sign_in(&token).await.unwrap());
    assert!(!store.clear_token_sign_in(&token).await.unwrap());

    let window = application::commands::two_step::PASSWORD_FAILURE_WINDOW_SECS;
    store.record_failure(user, now - window).await.unwrap();
    store.record_failure(user, now).await.unwrap();
    let (count, oldest) = store.failures_since(user, now - window + 1).await.unwrap();
    assert_eq!((count, oldest), (1, Some(now)));
    server.stop().await;
}

async fn post(s: &TestServer, path: &str, body: Value) -> (u16, Value) {
    let resp = s
        .http
        .post(format!("{}/v1/auth/{path}", s.base))
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("JSON body"))
}

fn error_of(answer: &(u16, Value)) -> (u16, &str) {
    (
        answer.0,
        answer.1["error_message"].as_str().unwrap_or_default(),
    )
}

/// A web client of an account with a password: signIn answers 401 SESSION_PASSWORD_NEEDED with a
/// password_token, getPassword gives the SRP parameters for it, a wrong proof is refused (and the
/// token still works), the right one signs a working device in, and the token is then spent.
#[tokio::test]
async fn json_sign_in_with_password() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let url = receiver.url.clone();
    let server = TestServer::start_with(move |c| {
        c.dev_login = false;
        c.dev_login_code = None;
        c.login_webhook_url = Some(url);
    })
    .await;
    let phone = "+17770001004";
    let code_sign_in = || async {
        let sent = post(&server, "sendCode", json!({"phone_number": phone})).await;
        assert_eq!(sent.0, 200, "{}", sent.1);
        let code = receiver.code_for(phone).await;
        post(
            &server,
            "signIn",
            json!({"phone_number": phone, "phone_code_hash": sent.1["phone_code_hash"], "phone_code": code}),
        )
        .await
    };
    // The account and its first device, which sets the password.
    let sent = post(&server, "sendCode", json!({"phone_number": phone})).await;
    let code = receiver.code_for(phone).await;
    let hash = &sent.1["phone_code_hash"];
    let new_phone = post(
        &server,
        "signIn",
        json!({"phone_number": phone, "phone_code_hash": hash, "phone_code": code}),
    )
    .await;
    assert_eq!(new_phone.1["_"], "auth.authorizationSignUpRequired");
    let up = post(
        &server,
        "signUp",
        json!({"phone_number": phone, "phone_code_hash": sent.1["phone_code_hash"], "phone_code": code, "first_name": "Lee"}),
    )
    .await;
    assert_eq!(up.0, 200, "{}", up.1);
    let first = Device {
        base: server.base.clone(),
        http: server.http.clone(),
        token: up.1["token"].as_str().unwrap().to_string(),
        user_id: up.1["user_id"].as_i64().unwrap(),
    };
    let (x, wrong) = ([4u8; 32], [5u8; 32]);
    assert_eq!(
        update(&first, empty(), new_settings(&first, &x, "hint").await)
            .await
            .0,
        200
    );

    let needed = code_sign_in().await;
    assert_eq!(error_of(&needed), (401, "SESSION_PASSWORD_NEEDED"));
    let token = needed.1["password_token"].as_str().unwrap().to_string();
    assert_eq!(hex::decode(&token).unwrap().len(), 32);
    assert_ne!(
        code_sign_in().await.1["password_token"].as_str(),
        Some(token.as_str()),
        "each sign-in gets its own token"
    );

    let pwd = post(&server, "getPassword", json!({"password_token": token})).await;
    assert_eq!(pwd.0, 200, "{}", pwd.1);
    assert_eq!(
        (&pwd.1["_"], &pwd.1["has_password"]),
        (&json!("account.password"), &json!(true))
    );
    assert_eq!(pwd.1["hint"], "hint");
    let bad = post(
        &server,
        "checkPassword",
        json!({"password_token": token, "password": proof_for(&pwd.1, &wrong)}),
    )
    .await;
    assert_eq!(error_of(&bad), (400, "PASSWORD_HASH_INVALID"));
    // The exchange was used up by the wrong try; a fresh one with the right password signs in.
    let used = proof_for(&pwd.1, &x);
    let stale = post(
        &server,
        "checkPassword",
        json!({"password_token": token, "password": used}),
    )
    .await;
    assert_eq!(error_of(&stale), (400, "SRP_ID_INVALID"));
    let pwd = post(&server, "getPassword", json!({"password_token": token})).await;
    let right = proof_for(&pwd.1, &x);
    let signed = post(
        &server,
        "checkPassword",
        json!({"password_token": token, "password": right}),
    )
    .await;
    assert_eq!(signed.0, 200, "{}", signed.1);
    assert_eq!(signed.1["_"], "auth.authorization");
    assert_eq!(signed.1["user_id"], first.user_id);
    let second = Device {
        token: signed.1["token"].as_str().unwrap().to_string(),
        ..first.clone()
    };
    let me = second
        .rpc("users.getUsers", json!({"id": [{"_": "inputUserSelf"}]}))
        .await;
    assert_eq!(me[0]["id"], first.user_id);

    // Single-use: the spent token gives neither parameters nor another device.
    let pwd = post(&server, "getPassword", json!({"password_token": token})).await;
    assert_eq!(error_of(&pwd), (400, "PASSWORD_TOKEN_INVALID"));
    let again = post(
        &server,
        "checkPassword",
        json!({"password_token": token, "password": proof(&first, &x).await}),
    )
    .await;
    assert_eq!(error_of(&again), (400, "PASSWORD_TOKEN_INVALID"));
    let garbled = post(&server, "getPassword", json!({"password_token": "zz"})).await;
    assert_eq!(error_of(&garbled), (400, "INPUT_REQUEST_INVALID"));
    server.stop().await;
}
