//! The JSON API contract of docs/json-api.md: sign-in, error shapes and statuses, parameter parsing,
//! authentication, and that bad input changes nothing.

use std::collections::BTreeSet;

use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

/// POSTs raw bytes; answers (status, JSON body or Null).
async fn post_raw(
    s: &TestServer,
    path: &str,
    token: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let mut req = s
        .http
        .post(format!("{}{}", s.base, path))
        .header("content-type", "application/json")
        .body(body);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn login_raw(s: &TestServer, body: Value) -> (u16, Value) {
    post_raw(s, "/v1/auth/login", None, body.to_string()).await
}

/// Asserts the error body shape `{"_":"rpc_error","error_code":N,"error_message":M[,"detail":…]}`
/// with the status equal to the code.
fn assert_error(status: u16, body: &Value, code: u16, message: &str) {
    assert_eq!(status, code, "{body}");
    assert_eq!(body["_"], "rpc_error", "{body}");
    assert_eq!(body["error_code"], code, "{body}");
    assert_eq!(body["error_message"], message, "{body}");
    let keys: BTreeSet<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        keys.is_subset(&BTreeSet::from([
            "_",
            "error_code",
            "error_message",
            "detail"
        ])),
        "{body}"
    );
}

fn assert_bad_input(status: u16, body: &Value) {
    assert_error(status, body, 400, "INPUT_REQUEST_INVALID");
    assert!(
        body["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "INPUT_REQUEST_INVALID needs a detail: {body}"
    );
}

async fn users_count(s: &TestServer) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&s.pool)
        .await
        .unwrap()
}

async fn events_count(s: &TestServer) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&s.pool)
        .await
        .unwrap()
}

async fn pts(dev: &Device) -> i64 {
    dev.state().await["pts"].as_i64().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Sign-in

#[tokio::test]
async fn login_same_phone_same_account_new_device() {
    let s = TestServer::start().await;
    let first = s.login("+15550001", "Alice").await;
    assert!(first.user_id > 0);
    // Another login of the same phone (formatted differently, other names): the same account, a
    // new token; the names of the account stay.
    let (status, body) = login_raw(
        &s,
        json!({"phone": "+1 555-0001", "first_name": "Mallory", "last_name": "X"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["user_id"], first.user_id);
    let second_token = body["token"].as_str().unwrap().to_string();
    assert_ne!(second_token, first.token);
    assert!(!second_token.is_empty());
    // A known phone needs no names.
    let (status, third) = login_raw(&s, json!({"phone": "+15550001"})).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(third["user_id"], first.user_id);
    assert_ne!(third["token"], first.token);
    assert_ne!(third["token"].as_str().unwrap(), second_token);
    assert_eq!(users_count(&s).await, 1);
    let auths: i64 = sqlx::query_scalar("SELECT count(*) FROM authorizations")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert_eq!(auths, 3, "every login is its own device");

    // Both devices work, as the same account.
    let second = Device {
        token: second_token,
        ..first.clone()
    };
    let me = second
        .rpc("users.getUsers", json!({"id": [{"_": "inputUserSelf"}]}))
        .await;
    assert_eq!(me[0]["id"], first.user_id);
    assert_eq!(me[0]["first_name"], "Alice");
    assert_eq!(me[0]["last_name"], "");
    assert_eq!(me[0]["phone"], "15550001");
    second
        .send(&ptslog_tests::self_peer(), "from device 2")
        .await;
    assert_eq!(pts(&first).await, 1);
    let seen = first
        .rpc(
            "messages.getHistory",
            json!({"peer": {"_": "inputPeerSelf"}}),
        )
        .await;
    assert_eq!(seen["messages"][0]["message"], "from device 2");

    // A second account gets another id.
    let bob = s.login("+15550002", "Bob").await;
    assert_ne!(bob.user_id, first.user_id);
    s.stop().await;
}

#[tokio::test]
async fn login_validates_phone_and_names() {
    let s = TestServer::start().await;
    for phone in [
        "12",
        "+1234",
        "abc",
        "",
        "+1555+0001",
        "+1555abc0001",
        "1234567890123456",
    ] {
        let (status, body) = login_raw(&s, json!({"phone": phone, "first_name": "A"})).await;
        assert_eq!(
            body["error_message"], "PHONE_NUMBER_INVALID",
            "phone {phone:?}"
        );
        assert_error(status, &body, 400, "PHONE_NUMBER_INVALID");
    }
    // 5 and 15 digits are the bounds.
    let (status, _) = login_raw(&s, json!({"phone": "+12345", "first_name": "Five"})).await;
    assert_eq!(status, 200);
    let (status, _) = login_raw(
        &s,
        json!({"phone": "+123456789012345", "first_name": "Fifteen"}),
    )
    .await;
    assert_eq!(status, 200);

    // A new phone needs a first name.
    for body in [
        json!({"phone": "+15550010"}),
        json!({"phone": "+15550010", "first_name": ""}),
        json!({"phone": "+15550010", "first_name": "   "}),
        json!({"phone": "+15550010", "first_name": "a\u{0}b"}),
    ] {
        let (status, answer) = login_raw(&s, body).await;
        assert_error(status, &answer, 400, "FIRSTNAME_INVALID");
    }
    // 64 code points (two bytes each) fit; 65 do not. The same for the last name.
    let at = "ж".repeat(64);
    let over = "ж".repeat(65);
    let (status, body) = login_raw(&s, json!({"phone": "+15550011", "first_name": over})).await;
    assert_error(status, &body, 400, "FIRSTNAME_INVALID");
    let (status, body) = login_raw(
        &s,
        json!({"phone": "+15550011", "first_name": "Ok", "last_name": over}),
    )
    .await;
    assert_error(status, &body, 400, "LASTNAME_INVALID");
    let (status, body) = login_raw(
        &s,
        json!({"phone": "+15550011", "first_name": at, "last_name": at}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let dev = Device {
        base: s.base.clone(),
        http: s.http.clone(),
        token: body["token"].as_str().unwrap().to_string(),
        user_id: body["user_id"].as_i64().unwrap(),
    };
    let me = dev
        .rpc("users.getUsers", json!({"id": [{"_": "inputUserSelf"}]}))
        .await;
    assert_eq!(me[0]["first_name"], at);
    assert_eq!(me[0]["last_name"], at);

    // Unparseable sign-ins.
    let (status, body) = post_raw(&s, "/v1/auth/login", None, "{\"phone\": ").await;
    assert_bad_input(status, &body);
    let (status, body) = login_raw(&s, json!({"first_name": "NoPhone"})).await;
    assert_bad_input(status, &body);
    let (status, body) = login_raw(&s, json!({"phone": 15550012, "first_name": "Number"})).await;
    assert_bad_input(status, &body);

    // Only the three good sign-ins made accounts.
    assert_eq!(users_count(&s).await, 3);
    s.stop().await;
}

#[tokio::test]
async fn dev_login_can_be_turned_off() {
    let s = TestServer::start_with(|c| c.dev_login = false).await;
    let (status, body) = login_raw(&s, json!({"phone": "+15550001", "first_name": "Alice"})).await;
    assert_error(status, &body, 403, "SIGN_IN_DISABLED");
    assert_eq!(users_count(&s).await, 0);
    let auths: i64 = sqlx::query_scalar("SELECT count(*) FROM authorizations")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert_eq!(auths, 0);
    s.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Calls

#[tokio::test]
async fn rpc_errors_have_the_documented_shape_and_change_nothing() {
    let s = TestServer::start().await;
    let alice = s.login("+15550001", "Alice").await;
    let bob = s.login("+15550002", "Bob").await;
    let to_bob = alice.peer_of("+15550002").await;
    alice.send(&to_bob, "before").await;
    let (alice_pts, bob_pts, events) = (pts(&alice).await, pts(&bob).await, events_count(&s).await);
    let t = Some(alice.token.as_str());

    // Unknown method: 400 METHOD_INVALID, with or without a token.
    for method in ["messages.nope", "auth.logOut", "updates.getstate", "x"] {
        let (status, body) = post_raw(&s, &format!("/v1/rpc/{method}"), t, "{}").await;
        assert_error(status, &body, 400, "METHOD_INVALID");
    }
    let (status, body) = post_raw(&s, "/v1/rpc/messages.nope", None, "{}").await;
    assert_error(status, &body, 400, "METHOD_INVALID");

    // Malformed JSON, missing and mistyped parameters: 400 INPUT_REQUEST_INVALID with a detail.
    let send = "/v1/rpc/messages.sendMessage";
    let peer = to_bob.to_string();
    let cases = [
        (send, "{\"peer\": ".to_string()),
        (send, "not json".to_string()),
        (send, "[]".to_string()),
        (send, "null".to_string()),
        (send, format!("{{\"peer\": {peer}, \"message\": \"no random id\"}}")),
        (send, format!("{{\"peer\": {peer}, \"random_id\": 5}}")),
        (send, "{\"message\": \"no peer\", \"random_id\": 5}".to_string()),
        (send, format!("{{\"peer\": {peer}, \"message\": 5, \"random_id\": 6}}")),
        (send, format!("{{\"peer\": {peer}, \"message\": \"x\", \"random_id\": \"abc\"}}")),
        (send, format!("{{\"peer\": {peer}, \"message\": \"x\", \"random_id\": 1.5}}")),
        (send, format!("{{\"peer\": {peer}, \"message\": \"x\", \"random_id\": \"99999999999999999999\"}}")),
        (send, "{\"peer\": {\"_\": \"inputPeerBogus\"}, \"message\": \"x\", \"random_id\": 7}".to_string()),
        (send, "{\"peer\": {\"_\": \"inputPeerUser\", \"user_id\": 2}, \"message\": \"x\", \"random_id\": 8}".to_string()),
        ("/v1/rpc/messages.getHistory", "{\"peer\": {\"_\": \"inputPeerSelf\"}, \"limit\": \"ten\"}".to_string()),
        ("/v1/rpc/messages.getDialogs", "{\"limit\": -1.5}".to_string()),
        ("/v1/rpc/messages.deleteMessages", "{\"id\": 1}".to_string()),
        ("/v1/rpc/messages.deleteMessages", "{}".to_string()),
        ("/v1/rpc/messages.readHistory", format!("{{\"peer\": {peer}, \"max_id\": \"all\"}}")),
        ("/v1/rpc/updates.getDifference", "{}".to_string()),
        ("/v1/rpc/contacts.block", "{\"id\": 5}".to_string()),
        ("/v1/rpc/updates.getState", "{\"broken".to_string()),
        ("/v1/rpc/updates.getState", "[]".to_string()),
        ("/v1/rpc/updates.getState", "5".to_string()),
        // Positional parameters are not TL's named ones, even where every field has a default.
        ("/v1/rpc/messages.getDialogs", "[]".to_string()),
        ("/v1/rpc/messages.getDialogs", " [false, 1]".to_string()),
    ];
    for (path, body) in &cases {
        let (status, answer) = post_raw(&s, path, t, body.clone()).await;
        assert_eq!(
            (status, answer["error_message"].as_str()),
            (400, Some("INPUT_REQUEST_INVALID")),
            "{path} {body}: {answer}"
        );
        assert_bad_input(status, &answer);
    }
    // The detail says what was wrong.
    let (_, answer) = post_raw(
        &s,
        send,
        t,
        format!("{{\"peer\": {peer}, \"message\": \"no random id\"}}"),
    )
    .await;
    assert!(
        answer["detail"].as_str().unwrap().contains("random_id"),
        "{answer}"
    );

    // No token, an unknown token, another scheme: 401 AUTH_KEY_UNREGISTERED.
    let (status, body) = post_raw(&s, "/v1/rpc/updates.getState", None, "{}").await;
    assert_error(status, &body, 401, "AUTH_KEY_UNREGISTERED");
    let (status, body) = post_raw(&s, "/v1/rpc/updates.getState", Some("not-a-token"), "{}").await;
    assert_error(status, &body, 401, "AUTH_KEY_UNREGISTERED");
    let (status, body) = post_raw(&s, "/v1/rpc/updates.getState", Some(""), "{}").await;
    assert_error(status, &body, 401, "AUTH_KEY_UNREGISTERED");
    let mut tampered = alice.token.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'a' { 'b' } else { 'a' });
    let (status, body) = post_raw(&s, "/v1/rpc/updates.getState", Some(&tampered), "{}").await;
    assert_error(status, &body, 401, "AUTH_KEY_UNREGISTERED");
    let basic = s
        .http
        .post(format!("{}/v1/rpc/updates.getState", s.base))
        .basic_auth("alice", Some(&alice.token))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);
    // A mutation without a token is refused before anything happens.
    let (status, body) = post_raw(
        &s,
        send,
        None,
        format!("{{\"peer\": {peer}, \"message\": \"x\", \"random_id\": 9}}"),
    )
    .await;
    assert_error(status, &body, 401, "AUTH_KEY_UNREGISTERED");

    // Domain refusals keep the shape too.
    let (status, body) = post_raw(
        &s,
        send,
        t,
        format!("{{\"peer\": {peer}, \"message\": \"\", \"random_id\": 10}}"),
    )
    .await;
    assert_error(status, &body, 400, "MESSAGE_EMPTY");

    // None of it changed anything.
    assert_eq!(pts(&alice).await, alice_pts);
    assert_eq!(pts(&bob).await, bob_pts);
    assert_eq!(events_count(&s).await, events);
    let history = alice
        .rpc("messages.getHistory", json!({"peer": to_bob}))
        .await;
    assert_eq!(history["messages"].as_array().unwrap().len(), 1);

    // An empty body is `{}` for a method without parameters.
    for body in ["", "  \n", "{}"] {
        let (status, state) = post_raw(&s, "/v1/rpc/updates.getState", t, body).await;
        assert_eq!(status, 200, "body {body:?}: {state}");
        assert_eq!(state["_"], "updates.state");
        assert_eq!(state["pts"], alice_pts);
    }
    // Unknown parameters are ignored, as TL clients send flags the server does not know.
    let (status, state) =
        post_raw(&s, "/v1/rpc/updates.getState", t, "{\"future_flag\": true}").await;
    assert_eq!(status, 200, "{state}");
    s.stop().await;
}

#[tokio::test]
async fn longs_may_be_decimal_strings() {
    let s = TestServer::start().await;
    let alice = s.login("+15550001", "Alice").await;
    let bob = s.login("+15550002", "Bob").await;
    let to_bob = alice.peer_of("+15550002").await;
    let hash = to_bob["access_hash"].as_i64().unwrap();
    let as_strings = json!({"_": "inputPeerUser", "user_id": bob.user_id.to_string(), "access_hash": hash.to_string()});

    let first = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": as_strings, "message": "hi", "random_id": "123"}),
        )
        .await;
    assert_eq!(first["_"], "updateShortSentMessage");
    assert_eq!(first["id"], 1);
    // The same random_id as a number is the same long: a retry, answered with the first result.
    let retry = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "hi", "random_id": 123}),
        )
        .await;
    assert_eq!(retry["id"], 1);
    assert_eq!(retry["pts"], first["pts"]);
    assert_eq!(alice.state().await["pts"], 1);
    // Extreme values survive the string form exactly.
    let big = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "max", "random_id": i64::MAX.to_string()}),
        )
        .await;
    assert_eq!(big["id"], 2);
    let neg = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "min", "random_id": i64::MIN.to_string()}),
        )
        .await;
    assert_eq!(neg["id"], 3);
    let big_again = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "max", "random_id": i64::MAX}),
        )
        .await;
    assert_eq!(big_again["id"], 2);
    // A string hash that is off by one is still a wrong hash.
    let off = json!({"_": "inputPeerUser", "user_id": bob.user_id, "access_hash": (hash ^ 1).to_string()});
    assert_eq!(
        alice
            .rpc_err("messages.getHistory", json!({"peer": off}))
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );
    let history = alice
        .rpc("messages.getHistory", json!({"peer": as_strings}))
        .await;
    assert_eq!(history["messages"].as_array().unwrap().len(), 3);
    let users = alice
        .rpc("users.getUsers", json!({"id": [{"_": "inputUser", "user_id": bob.user_id.to_string(), "access_hash": hash.to_string()}]}))
        .await;
    assert_eq!(users[0]["id"], bob.user_id);
    let dialogs = alice
        .rpc("messages.getDialogs", json!({"limit": 10, "hash": "0"}))
        .await;
    assert_eq!(dialogs["_"], "messages.dialogs");
    s.stop().await;
}

#[tokio::test]
async fn healthz_answers() {
    let s = TestServer::start().await;
    let resp = s
        .http
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "ok");
    s.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Methods: served and documented

/// The method names in the first column of the "Methods" table of docs/json-api.md.
fn documented_methods(markdown: &str) -> BTreeSet<String> {
    let section = markdown
        .split("\n## Methods")
        .nth(1)
        .expect("a Methods section");
    let section = section.split("\n## ").next().unwrap();
    let mut names = BTreeSet::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let first_cell = line.trim_start_matches('|').split('|').next().unwrap_or("");
        for (i, part) in first_cell.split('`').enumerate() {
            if i % 2 == 1 && part.contains('.') {
                names.insert(part.to_string());
            }
        }
    }
    names
}

#[test]
fn every_method_is_documented() {
    let markdown = include_str!("../../docs/json-api.md");
    let documented = documented_methods(markdown);
    let served: BTreeSet<String> = ptslog_server::http::METHODS
        .iter()
        .map(|m| m.to_string())
        .collect();
    assert_eq!(
        ptslog_server::http::METHODS.len(),
        served.len(),
        "METHODS has duplicates"
    );
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(
        undocumented.is_empty(),
        "served but not in docs/json-api.md: {undocumented:?}"
    );
    assert!(
        unserved.is_empty(),
        "documented but not served: {unserved:?}"
    );
}

#[tokio::test]
async fn every_method_is_routed() {
    let s = TestServer::start().await;
    let alice = s.login("+15550001", "Alice").await;
    for method in ptslog_server::http::METHODS {
        let path = format!("/v1/rpc/{method}");
        // Without a token: authentication, not an unknown method.
        let (status, body) = post_raw(&s, &path, None, "{}").await;
        assert_error(status, &body, 401, "AUTH_KEY_UNREGISTERED");
        // With one: dispatched to a handler (it may want parameters, but knows the method).
        let (status, body) = post_raw(&s, &path, Some(&alice.token), "{}").await;
        assert_ne!(body["error_message"], "METHOD_INVALID", "{method}: {body}");
        assert!(status == 200 || status == 400, "{method}: {status} {body}");
    }
    assert_eq!(pts(&alice).await, 0, "empty calls change nothing");
    s.stop().await;
}
