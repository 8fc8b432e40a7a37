//! Sign-in by code over the JSON API (`POST /v1/auth/sendCode`, `signIn`, `signUp`, `resendCode`,
//! `cancelCode`) with development sign-in off and the webhook provider posting codes to a local
//! receiver; the attempt, expiry and flood limits at their boundaries; the development provider
//! refused unless enabled; the access-hash key from the CSPRNG.

use application::commands::sign_in::MAX_CODE_CHARS;
use application::login_codes::{MAX_CODE_ATTEMPTS, MAX_SENDS_PER_PHONE, MAX_SENDS_PER_REQUESTER};
use infrastructure::login_webhook::WEBHOOK_TIMEOUT;
use infrastructure::postgres::login_codes::CLEANUP_BATCH;
use ptslog_tests::code_receiver::{Answer, CodeReceiver};
use ptslog_tests::TestServer;
use serde_json::{json, Value};

/// A server as production runs it: no development sign-in, codes through the webhook.
async fn production(receiver: &CodeReceiver) -> TestServer {
    let url = receiver.url.clone();
    TestServer::start_with(move |c| {
        c.dev_login = false;
        c.dev_login_code = None;
        c.login_webhook_url = Some(url);
    })
    .await
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

async fn send_code(s: &TestServer, phone: &str) -> (u16, Value) {
    post(s, "sendCode", json!({"phone_number": phone})).await
}

async fn hash_for(s: &TestServer, phone: &str) -> String {
    let sent = send_code(s, phone).await;
    assert_eq!(sent.0, 200, "sendCode {phone}: {:?}", sent.1);
    sent.1["phone_code_hash"].as_str().unwrap().to_string()
}

async fn sign_in(s: &TestServer, phone: &str, hash: &str, code: &str) -> (u16, Value) {
    post(
        s,
        "signIn",
        json!({"phone_number": phone, "phone_code_hash": hash, "phone_code": code}),
    )
    .await
}

fn wrong(code: &str) -> String {
    // Any other 5-digit code.
    let n: u32 = code.parse().unwrap();
    format!("{:05}", (n + 1) % 100000)
}

fn flood_secs(answer: &(u16, Value)) -> u32 {
    assert_eq!(answer.0, 420, "{:?}", answer.1);
    let e = answer.1["error_message"].as_str().unwrap();
    e.strip_prefix("FLOOD_WAIT_")
        .unwrap_or_else(|| panic!("{e}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn webhook_sign_up_and_sign_in_with_dev_login_off() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let s = production(&receiver).await;
    let phone = "+15551110001";
    // The phone-only development login is gone.
    let dev = post(&s, "login", json!({"phone": phone, "first_name": "A"})).await;
    assert_eq!(error_of(&dev), (403, "SIGN_IN_DISABLED"));

    let sent = send_code(&s, phone).await;
    assert_eq!(sent.0, 200);
    assert_eq!(sent.1["channel"], "sms");
    assert_eq!(sent.1["length"], 5);
    assert_eq!(sent.1["timeout"], 300);
    let hash = sent.1["phone_code_hash"].as_str().unwrap().to_string();
    assert_eq!(hash.len(), 32);
    let code = receiver.code_for(phone).await;
    assert_eq!(code.len(), 5);
    let message = receiver.received().pop().unwrap();
    assert_eq!(message["phone_code_hash"], hash.as_str());
    assert_eq!(message["expires_in"], 300);

    assert_eq!(
        error_of(&sign_in(&s, phone, &hash, &wrong(&code)).await),
        (400, "PHONE_CODE_INVALID")
    );
    let r = sign_in(&s, phone, &hash, &code).await;
    assert_eq!(r.1["_"], "auth.authorizationSignUpRequired", "{:?}", r.1);
    let up = post(
        &s,
        "signUp",
        json!({"phone_number": phone, "phone_code_hash": hash, "first_name": "Web", "last_name": "Hook"}),
    )
    .await;
    assert_eq!(up.0, 200, "{:?}", up.1);
    assert_eq!(up.1["_"], "auth.authorization");
    let token = up.1["token"].as_str().unwrap();
    // The token works.
    let me: Value = s
        .http
        .post(format!("{}/v1/rpc/users.getUsers", s.base))
        .bearer_auth(token)
        .json(&json!({"id": [{"_": "inputUserSelf"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me[0]["first_name"], "Web", "{me:?}");
    // One code signs in one device: the hash is consumed.
    let again = post(
        &s,
        "signUp",
        json!({"phone_number": phone, "phone_code_hash": hash, "first_name": "Web"}),
    )
    .await;
    assert_eq!(error_of(&again), (400, "PHONE_CODE_EXPIRED"));
    assert_eq!(
        error_of(&sign_in(&s, phone, &hash, &code).await),
        (400, "PHONE_CODE_EXPIRED")
    );

    // The account now exists: a new code signs a second device straight in.
    let hash = hash_for(&s, phone).await;
    let code = receiver.code_for(phone).await;
    let r = sign_in(&s, phone, &hash, &code).await;
    assert_eq!(r.1["_"], "auth.authorization", "{:?}", r.1);
    assert_eq!(r.1["user_id"], up.1["user_id"]);
    assert_ne!(r.1["token"], up.1["token"]);
    s.stop().await;
}

#[tokio::test]
async fn wrong_codes_kill_the_hash_and_lock_the_phone_and_ip_out() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let s = production(&receiver).await;
    let phone = "+15551110002";
    let hash = hash_for(&s, phone).await;
    let code = receiver.code_for(phone).await;
    // Up to the limit, each wrong code is PHONE_CODE_INVALID…
    for _ in 0..MAX_CODE_ATTEMPTS {
        assert_eq!(
            error_of(&sign_in(&s, phone, &hash, &wrong(&code)).await),
            (400, "PHONE_CODE_INVALID")
        );
    }
    // …then the hash is dead, even for the right code.
    assert_eq!(
        error_of(&sign_in(&s, phone, &hash, &code).await),
        (400, "PHONE_CODE_EXPIRED")
    );
    // New codes for that phone, and for anyone from that address, wait.
    let secs = flood_secs(&send_code(&s, phone).await);
    assert!(secs > 3500 && secs <= 3600, "{secs}");
    flood_secs(&send_code(&s, "+15551110003").await);
    // Once the lockout is over (moved into the past here), codes are sent again.
    sqlx::query("UPDATE login_codes SET dead_at = now() - interval '1 hour 1 second'")
        .execute(&s.pool)
        .await
        .unwrap();
    hash_for(&s, phone).await;
    s.stop().await;
}

#[tokio::test]
async fn concurrent_guesses_get_no_more_than_the_attempt_limit() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let s = production(&receiver).await;
    let phone = "+15551110004";
    let hash = hash_for(&s, phone).await;
    let code = receiver.code_for(phone).await;
    let tries = 40;
    let answers = futures::future::join_all((0..tries).map(|i| {
        let guess = format!("{:05}", (code.parse::<u32>().unwrap() + 1 + i) % 100000);
        let (s, hash) = (&s, hash.clone());
        async move { sign_in(s, phone, &hash, &guess).await }
    }))
    .await;
    let invalid = answers
        .iter()
        .filter(|a| error_of(a) == (400, "PHONE_CODE_INVALID"))
        .count();
    let expired = answers
        .iter()
        .filter(|a| error_of(a) == (400, "PHONE_CODE_EXPIRED"))
        .count();
    assert_eq!(invalid, MAX_CODE_ATTEMPTS as usize);
    assert_eq!(invalid + expired, tries as usize);
    let attempts: i32 =
        sqlx::query_scalar("SELECT attempts FROM login_codes WHERE phone_code_hash = $1")
            .bind(&hash)
            .fetch_one(&s.pool)
            .await
            .unwrap();
    assert_eq!(attempts, MAX_CODE_ATTEMPTS as i32);
    s.stop().await;
}

#[tokio::test]
async fn expired_forged_foreign_and_empty_hashes_are_refused() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let s = production(&receiver).await;
    let (a, b) = ("+15551110005", "+15551110006");
    let hash = hash_for(&s, a).await;
    let code = receiver.code_for(a).await;
    let hash_b = hash_for(&s, b).await;
    let code_b = receiver.code_for(b).await;
    // A made-up hash, one of the right shape, and a's hash for b (with a's code or b's).
    for (phone, h, c) in [
        (a, "forged".to_string(), code.clone()),
        (a, "0".repeat(32), code.clone()),
        (b, hash.clone(), code.clone()),
        (b, hash.clone(), code_b.clone()),
        (a, "f".repeat(10_000), code.clone()),
    ] {
        assert_eq!(
            error_of(&sign_in(&s, phone, &h, &c).await),
            (400, "PHONE_CODE_EXPIRED"),
            "{phone} {}",
            &h[..h.len().min(40)]
        );
    }
    assert_eq!(
        error_of(&sign_in(&s, a, "", &code).await),
        (400, "PHONE_CODE_HASH_EMPTY")
    );
    assert_eq!(
        error_of(&sign_in(&s, a, &hash, "").await),
        (400, "PHONE_CODE_EMPTY")
    );
    assert_eq!(
        error_of(&sign_in(&s, "+1", &hash, &code).await),
        (400, "PHONE_NUMBER_INVALID")
    );
    // A code longer than MAX_CODE_CHARS cannot be right: refused without a try counted.
    let over = "1".repeat(MAX_CODE_CHARS + 1);
    assert_eq!(
        error_of(&sign_in(&s, a, &hash, &over).await),
        (400, "PHONE_CODE_INVALID")
    );
    // None of that counted against a's hash.
    let attempts = |pool: sqlx::PgPool, hash: String| async move {
        let n: i32 =
            sqlx::query_scalar("SELECT attempts FROM login_codes WHERE phone_code_hash = $1")
                .bind(&hash)
                .fetch_one(&pool)
                .await
                .unwrap();
        n
    };
    assert_eq!(attempts(s.pool.clone(), hash.clone()).await, 0);
    // At MAX_CODE_CHARS the code is compared (and the try counted).
    let at = "1".repeat(MAX_CODE_CHARS);
    assert_eq!(
        error_of(&sign_in(&s, a, &hash, &at).await),
        (400, "PHONE_CODE_INVALID")
    );
    assert_eq!(attempts(s.pool.clone(), hash.clone()).await, 1);
    // Past its lifetime (moved into the past here) a hash is expired, right code or not.
    sqlx::query("UPDATE login_codes SET expires_at = now() - interval '1 second' WHERE phone_code_hash = $1")
        .bind(&hash_b)
        .execute(&s.pool)
        .await
        .unwrap();
    assert_eq!(
        error_of(&sign_in(&s, b, &hash_b, &code_b).await),
        (400, "PHONE_CODE_EXPIRED")
    );
    // a's is still good.
    let r = sign_in(&s, a, &hash, &code).await;
    assert_eq!(r.1["_"], "auth.authorizationSignUpRequired", "{:?}", r.1);
    s.stop().await;
}

#[tokio::test]
async fn sends_are_limited_per_phone_and_per_ip() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let s = production(&receiver).await;
    let phone = "+15551110007";
    // A send and resends all count against the phone: at the limit accepted, one past refused.
    let hash = hash_for(&s, phone).await;
    for _ in 1..MAX_SENDS_PER_PHONE {
        let r = post(
            &s,
            "resendCode",
            json!({"phone_number": phone, "phone_code_hash": hash}),
        )
        .await;
        assert_eq!(r.0, 200, "{:?}", r.1);
    }
    flood_secs(&send_code(&s, phone).await);
    flood_secs(
        &post(
            &s,
            "resendCode",
            json!({"phone_number": phone, "phone_code_hash": hash}),
        )
        .await,
    );
    // Per address: every send from 127.0.0.1 counts, whatever the phone.
    for i in MAX_SENDS_PER_PHONE..MAX_SENDS_PER_REQUESTER {
        hash_for(&s, &format!("+1555222{i:04}")).await;
    }
    let secs = flood_secs(&send_code(&s, "+15553330000").await);
    assert!(secs > 3500 && secs <= 3600, "{secs}");
    // The requester was the client's address, and each hash lives CODE_LIFETIME.
    let rows: Vec<(String, f64)> = sqlx::query_as(
        "SELECT DISTINCT requester, EXTRACT(EPOCH FROM expires_at - created_at)::float8 FROM login_codes",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(rows, vec![("ip:127.0.0.1".to_string(), 300.0)]);
    s.stop().await;
}

#[tokio::test]
async fn resend_keeps_the_hash_and_cancel_ends_it() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let s = production(&receiver).await;
    let phone = "+15551110008";
    let hash = hash_for(&s, phone).await;
    let code = receiver.code_for(phone).await;
    let resent = post(
        &s,
        "resendCode",
        json!({"phone_number": phone, "phone_code_hash": hash}),
    )
    .await;
    assert_eq!(resent.0, 200);
    assert_eq!(resent.1["phone_code_hash"], hash.as_str());
    assert_eq!(receiver.received().len(), 2);
    assert_eq!(receiver.code_for(phone).await, code);
    let cancel = |h: &str| json!({"phone_number": phone, "phone_code_hash": h});
    assert_eq!(
        post(&s, "cancelCode", cancel(&hash)).await,
        (200, json!(true))
    );
    assert_eq!(
        post(&s, "cancelCode", cancel(&hash)).await,
        (200, json!(false))
    );
    assert_eq!(
        error_of(&sign_in(&s, phone, &hash, &code).await),
        (400, "PHONE_CODE_EXPIRED")
    );
    assert_eq!(
        error_of(&post(&s, "resendCode", cancel(&hash)).await),
        (400, "PHONE_CODE_EXPIRED")
    );
    // A new code replaces an older live one.
    let first = hash_for(&s, phone).await;
    let first_code = receiver.code_for(phone).await;
    let second = hash_for(&s, phone).await;
    assert_ne!(first, second);
    assert_eq!(
        error_of(&sign_in(&s, phone, &first, &first_code).await),
        (400, "PHONE_CODE_EXPIRED")
    );
    s.stop().await;
}

#[tokio::test]
async fn a_failing_webhook_fails_the_send_and_leaves_no_code() {
    let receiver = CodeReceiver::start(Answer::Fail).await;
    let s = production(&receiver).await;
    let phone = "+15551110009";
    assert_eq!(
        error_of(&send_code(&s, phone).await),
        (400, "SMS_CODE_CREATE_FAILED")
    );
    let code = receiver.code_for(phone).await;
    let hash: String = sqlx::query_scalar("SELECT phone_code_hash FROM login_codes")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert_eq!(
        error_of(&sign_in(&s, phone, &hash, &code).await),
        (400, "PHONE_CODE_EXPIRED")
    );
    s.stop().await;
}

#[tokio::test]
async fn a_stuck_webhook_fails_the_send_after_its_timeout() {
    let receiver = CodeReceiver::start(Answer::Hang).await;
    let s = production(&receiver).await;
    let started = std::time::Instant::now();
    assert_eq!(
        error_of(&send_code(&s, "+15551110012").await),
        (400, "SMS_CODE_CREATE_FAILED")
    );
    let took = started.elapsed();
    assert!(
        took >= WEBHOOK_TIMEOUT && took < WEBHOOK_TIMEOUT + std::time::Duration::from_secs(2),
        "{took:?}"
    );
    s.stop().await;
}

#[tokio::test]
async fn each_send_deletes_a_batch_of_stale_codes() {
    let receiver = CodeReceiver::start(Answer::Ok).await;
    let s = production(&receiver).await;
    // Codes past every window (sent two hours ago, none dead), one more than a batch.
    sqlx::query(
        "INSERT INTO login_codes (phone_code_hash, phone, requester, code, created_at, expires_at, last_sent_at) \
         SELECT 'stale' || i, '+1555000' || i, 'ip:192.0.2.1', '11111', now() - interval '2 hours', \
                now() - interval '2 hours', now() - interval '2 hours' \
         FROM generate_series(1, $1) AS i",
    )
    .bind(CLEANUP_BATCH as i32 + 1)
    .execute(&s.pool)
    .await
    .unwrap();
    let stale = || async {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM login_codes WHERE phone_code_hash LIKE 'stale%'",
        )
        .fetch_one(&s.pool)
        .await
        .unwrap();
        n
    };
    hash_for(&s, "+15551110013").await;
    assert_eq!(stale().await, 1);
    hash_for(&s, "+15551110014").await;
    assert_eq!(stale().await, 0);
    s.stop().await;
}

#[tokio::test]
async fn the_dev_provider_only_when_enabled() {
    // Off (the production default) and no webhook: no codes at all, no phone-only login.
    let off = TestServer::start_with(|c| {
        c.dev_login = false;
        c.dev_login_code = None;
    })
    .await;
    assert_eq!(
        error_of(&send_code(&off, "+15551110010").await),
        (400, "PHONE_CODE_PROVIDER_MISSING")
    );
    let dev = post(
        &off,
        "login",
        json!({"phone": "+15551110010", "first_name": "A"}),
    )
    .await;
    assert_eq!(error_of(&dev), (403, "SIGN_IN_DISABLED"));
    off.stop().await;
    // The development code is refused by configuration unless development sign-in is on.
    let vars = std::collections::HashMap::from([(
        "PTSLOG_DEV_LOGIN_CODE".to_string(),
        "12345".to_string(),
    )]);
    assert!(ptslog_server::Config::from_vars(&vars).is_err());

    // On (the harness's default): the fixed code, shown "in the app".
    let on = TestServer::start().await;
    let phone = "+15551110011";
    let sent = send_code(&on, phone).await;
    assert_eq!(sent.1["channel"], "app");
    let hash = sent.1["phone_code_hash"].as_str().unwrap();
    let r = sign_in(&on, phone, hash, "12345").await;
    assert_eq!(r.1["_"], "auth.authorizationSignUpRequired", "{:?}", r.1);
    on.stop().await;
}

#[tokio::test]
async fn the_access_hash_key_is_32_random_bytes_kept_across_restarts() {
    let read = |pool: sqlx::PgPool| async move {
        let v: String =
            sqlx::query_scalar("SELECT value FROM server_secrets WHERE name = 'access_hash_key'")
                .fetch_one(&pool)
                .await
                .unwrap();
        v
    };
    let a = TestServer::start().await;
    let b = TestServer::start().await;
    let key_a = read(a.pool.clone()).await;
    let bytes = hex::decode(&key_a).expect("hex");
    assert_eq!(bytes.len(), 32);
    // Not md5 text, not constant: two databases get different keys.
    assert_ne!(key_a, read(b.pool.clone()).await);
    assert!(bytes.iter().any(|&x| x != bytes[0]));
    // A restart (a second server on the same database) keeps it.
    let config = ptslog_tests::test_config(&a.db);
    let again = ptslog_server::start(&config).await.expect("restart");
    assert_eq!(read(a.pool.clone()).await, key_a);
    again.task.abort();
    b.stop().await;
    a.stop().await;
}
