//! Property tests over the JSON API (issue 11, items 1 and 4):
//!
//! - any request the API accepts (random texts with random entities within the limits, replies with
//!   quotes, dialog filters with title entities) produces events that round-trip through the log (its json payload), the
//!   relay's decoder (pushes), getDifference and verify, with exactly the entities sent;
//! - random and mutated JSON bodies sent to every method get a TL answer with a 2xx or 4xx status,
//!   never a 500, and the server keeps serving.
//!
//! Cases are drawn with proptest strategies (no shrinking: each failure prints its request).
//! `PTSLOG_FUZZ_CASES=N` sets the number of cases (default 64; scripts/fuzz runs more).

use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use ptslog_tests::{Device, TestServer};
use serde_json::{json, Map, Value};

use crate::hostile_payloads::{client::Socket, System};

fn cases() -> usize {
    std::env::var("PTSLOG_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// The suite draws the same cases every run (a failure reproduces); a fuzz run
/// (`PTSLOG_FUZZ_CASES` set) draws new ones each time.
fn runner() -> TestRunner {
    if std::env::var_os("PTSLOG_FUZZ_CASES").is_some() {
        TestRunner::default()
    } else {
        TestRunner::deterministic()
    }
}

fn draw<S: Strategy>(runner: &mut TestRunner, s: &S) -> S::Value {
    s.new_tree(runner).expect("a value").current()
}

/// Text a person might send: letters, spaces, newlines, emoji (two UTF-16 units), CJK, combining
/// marks, quotes. Never only whitespace, never NUL (which the API drops).
fn text(max: usize) -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => proptest::char::range('a', 'z'),
        1 => Just(' '),
        1 => Just('\n'),
        1 => Just('"'),
        1 => proptest::char::range('\u{1F600}', '\u{1F64F}'),
        1 => proptest::char::range('\u{4E00}', '\u{4FFF}'),
        1 => Just('\u{0301}'),
    ];
    proptest::collection::vec(ch, 0..max)
        .prop_map(|c| format!("x{}", c.into_iter().collect::<String>()))
}

fn utf16_len(s: &str) -> i64 {
    s.encode_utf16().count() as i64
}

/// A random valid entity over a text of `len` UTF-16 units, as sent and as stored.
fn entity(len: i64, mention: Value, mention_id: i64) -> impl Strategy<Value = (Value, Value)> {
    (0..len).prop_flat_map(move |offset| {
        let mention = mention.clone();
        (Just(offset), 1..=(len - offset), 0..10u8, "[a-z0-9:/._-]{0,60}", any::<i64>(), any::<bool>())
            .prop_map(move |(offset, length, ctor, s, n, flag)| {
                let plain = |name: &str| {
                    let v = json!({"_": name, "offset": offset, "length": length});
                    (v.clone(), v)
                };
                match ctor {
                    0 => plain("messageEntityBold"),
                    1 => plain("messageEntityItalic"),
                    2 => plain("messageEntityUnderline"),
                    3 => plain("messageEntityHashtag"),
                    4 => {
                        let v = json!({"_": "messageEntityPre", "offset": offset, "length": length, "language": s});
                        (v.clone(), v)
                    }
                    5 => {
                        let url = if flag { "u".repeat(domain::limits::MAX_ENTITY_URL_BYTES) } else { s };
                        let v = json!({"_": "messageEntityTextUrl", "offset": offset, "length": length, "url": url});
                        (v.clone(), v)
                    }
                    6 => {
                        // A JavaScript client sends the long as a string; it is stored as a number.
                        let sent = if flag { json!(n.to_string()) } else { json!(n) };
                        (
                            json!({"_": "messageEntityCustomEmoji", "offset": offset, "length": length, "document_id": sent}),
                            json!({"_": "messageEntityCustomEmoji", "offset": offset, "length": length, "document_id": n}),
                        )
                    }
                    7 => {
                        let stored = if flag {
                            json!({"_": "messageEntityBlockquote", "offset": offset, "length": length, "collapsed": true})
                        } else {
                            json!({"_": "messageEntityBlockquote", "offset": offset, "length": length})
                        };
                        (
                            json!({"_": "messageEntityBlockquote", "offset": offset, "length": length, "collapsed": flag}),
                            stored,
                        )
                    }
                    8 => (
                        json!({"_": "inputMessageEntityMentionName", "offset": offset, "length": length, "user_id": mention}),
                        json!({"_": "messageEntityMentionName", "offset": offset, "length": length, "user_id": mention_id}),
                    ),
                    _ => plain("messageEntitySpoiler"),
                }
            })
    })
}

/// Up to `max` entities over `text`: (as sent, as stored).
fn entities(
    runner: &mut TestRunner,
    text: &str,
    max: usize,
    mention: &Value,
    mention_id: i64,
) -> (Vec<Value>, Vec<Value>) {
    let len = utf16_len(text);
    let n = draw(runner, &(0..=max));
    (0..n)
        .map(|_| draw(runner, &entity(len, mention.clone(), mention_id)))
        .unzip()
}

fn rand_id(runner: &mut TestRunner) -> i64 {
    draw(runner, &(1..i64::MAX))
}

/// Every message of the account, oldest first, through getDifference slices from pts 0.
async fn all_messages(d: &Device) -> (Vec<Value>, Vec<Value>) {
    let (mut messages, mut others) = (Vec::new(), Vec::new());
    let mut pts = 0;
    loop {
        let diff = d
            .rpc(
                "updates.getDifference",
                json!({"pts": pts, "date": 0, "qts": 0}),
            )
            .await;
        messages.extend(diff["new_messages"].as_array().cloned().unwrap_or_default());
        others.extend(
            diff["other_updates"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        match diff["_"].as_str() {
            Some("updates.differenceSlice") => {
                pts = diff["intermediate_state"]["pts"].as_i64().expect("pts")
            }
            Some("updates.difference") => return (messages, others),
            _ => panic!("unexpected difference {diff}"),
        }
    }
}

/// Entities as a message shows them: absent when empty.
fn shown(entities: &[Value]) -> Value {
    if entities.is_empty() {
        Value::Null
    } else {
        Value::Array(entities.to_vec())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_requests_round_trip_through_the_log_pushes_and_verify() {
    let system = System::start().await;
    let alice = system.login("+15557130001", "Alice").await;
    let bob = system.login("+15557130002", "Bob").await;
    let to_bob = alice.peer_of("+15557130002").await;
    let bob_user =
        json!({"_": "inputUser", "user_id": bob.user_id, "access_hash": to_bob["access_hash"]});
    let bob_socket = Socket::connect(&system.base, &bob.token, true).await;
    ptslog_tests::wait_relay_streaming(&system.running.relay_status, Duration::from_secs(240))
        .await;

    let mut runner = runner();
    // What Bob must see, in order: (text, entities, quote entities).
    let mut expected: Vec<(String, Vec<Value>, Option<Vec<Value>>)> = Vec::new();
    let mut sent_ids: Vec<i64> = Vec::new();
    let mut filters: Vec<(i64, String, Vec<Value>)> = Vec::new();
    for case in 0..cases() {
        let action = draw(&mut runner, &(0..20u8));
        let long = draw(&mut runner, &(0..16u8)) == 0;
        let body = draw(&mut runner, &text(if long { 4095 } else { 120 }));
        let max_entities = if long {
            domain::limits::MAX_MESSAGE_ENTITIES
        } else {
            8
        };
        let (mention, mention_id) = if draw(&mut runner, &any::<bool>()) {
            (json!({"_": "inputUserSelf"}), alice.user_id)
        } else {
            (bob_user.clone(), bob.user_id)
        };
        if action < 3 && filters.len() < domain::limits::MAX_DIALOG_FILTERS {
            let id = filters.len() as i64 + 2;
            let title: String = draw(&mut runner, &"[A-Za-z][A-Za-z ]{0,10}[A-Za-z]");
            let (sent, stored) = entities(&mut runner, &title, 3, &mention, mention_id);
            let req = json!({"id": id, "filter": {"_": "dialogFilter", "contacts": true,
                "title": {"_": "textWithEntities", "text": title, "entities": sent},
                "emoticon": "💼", "pinned_peers": [], "include_peers": [], "exclude_peers": []}});
            let (status, answer) = alice.call("messages.updateDialogFilter", req.clone()).await;
            assert_eq!(status, 200, "case {case}: {req} answered {answer}");
            filters.push((id, title, stored));
            continue;
        }
        let (sent, stored) = entities(&mut runner, &body, max_entities, &mention, mention_id);
        let mut req = json!({"peer": to_bob, "message": body, "random_id": rand_id(&mut runner), "entities": sent});
        let mut quote = None;
        if action < 8 && !sent_ids.is_empty() {
            let target = sent_ids[draw(&mut runner, &(0..sent_ids.len()))];
            let quote_text = draw(&mut runner, &text(60));
            let (q_sent, q_stored) = entities(&mut runner, &quote_text, 4, &mention, mention_id);
            req["reply_to"] = json!({"_": "inputReplyToMessage", "reply_to_msg_id": target,
                "quote_text": quote_text, "quote_entities": q_sent, "quote_offset": draw(&mut runner, &(0..100i32))});
            quote = Some(q_stored);
        }
        let (status, answer) = alice.call("messages.sendMessage", req.clone()).await;
        assert_eq!(status, 200, "case {case}: {req} answered {answer}");
        sent_ids.push(answer["id"].as_i64().expect("id"));
        expected.push((body, stored, quote));
    }

    // getDifference (the stored text, the decoder, the TL rendering) shows exactly what was sent.
    let (messages, _) = all_messages(&bob).await;
    assert_eq!(messages.len(), expected.len());
    for (m, (body, entities, quote)) in messages.iter().zip(&expected) {
        assert_eq!(m["message"].as_str(), Some(body.as_str()), "{m}");
        assert_eq!(m["entities"], shown(entities), "{m}");
        match quote {
            Some(q) => assert_eq!(m["reply_to"]["quote_entities"], shown(q), "{m}"),
            None => assert_eq!(m["reply_to"], Value::Null, "{m}"),
        }
    }
    let (mine, _) = all_messages(&alice).await;
    assert_eq!(mine.len(), expected.len());
    for (m, theirs) in mine.iter().zip(&messages) {
        assert_eq!(m["entities"], theirs["entities"]);
    }
    let shown_filters = alice.rpc("messages.getDialogFilters", json!({})).await;
    for (id, title, stored) in &filters {
        let f = shown_filters["filters"]
            .as_array()
            .expect("filters")
            .iter()
            .find(|f| f["id"] == *id)
            .unwrap_or_else(|| panic!("filter {id} missing from {shown_filters}"));
        assert_eq!(f["title"]["text"].as_str(), Some(title.as_str()));
        assert_eq!(f["title"]["entities"], Value::Array(stored.clone()), "{f}");
    }

    // The relay's decoder: every message was pushed to Bob with the same entities.
    let last = bob.state().await["pts"].as_i64().expect("pts");
    let arrived = bob_socket
        .wait_until(Duration::from_secs(30), |p| p.iter().any(|p| p.pts == last))
        .await;
    assert!(arrived, "pushes stopped before pts {last}");
    let pushed: Vec<Value> = bob_socket
        .pushed()
        .into_iter()
        .filter(|p| p.update["_"] == "updateNewMessage")
        .map(|p| p.update["message"].clone())
        .collect();
    assert_eq!(pushed.len(), messages.len());
    for (p, m) in pushed.iter().zip(&messages) {
        assert_eq!(p["entities"], m["entities"], "{p}");
        assert_eq!(p["reply_to"], m["reply_to"], "{p}");
    }

    let report = projections::verify::verify(&system.pool)
        .await
        .expect("verify");
    assert_eq!(report.total_differences, 0, "{:?}", report.differences);
    assert_eq!(
        system.relay_health().await["relay"]["undecodable_records"],
        0
    );
    system.stop().await;
}

/// Any JSON, up to `depth` deep, with the API's field names so parsers meet known fields holding
/// the wrong things.
fn any_json(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-3i64..5).prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "[ -~]{0,12}".prop_map(Value::from),
        Just(json!("a\u{0}b")),
        Just(json!("9223372036854775808")),
        Just(json!({"_": "inputPeerSelf"})),
        Just(json!({"_": "inputUserSelf"})),
        Just(json!({"_": "messageEntityBold", "offset": 0, "length": 1})),
    ];
    leaf.prop_recursive(depth, 64, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((field(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn field() -> impl Strategy<Value = String> {
    proptest::sample::select(vec![
        "_",
        "peer",
        "message",
        "random_id",
        "entities",
        "reply_to",
        "reply_to_msg_id",
        "quote_text",
        "quote_entities",
        "quote_offset",
        "id",
        "ids",
        "max_id",
        "min_id",
        "limit",
        "offset_id",
        "offset_date",
        "offset_peer",
        "add_offset",
        "hash",
        "pts",
        "date",
        "qts",
        "phone",
        "first_name",
        "last_name",
        "contacts",
        "filter",
        "title",
        "text",
        "order",
        "enabled",
        "folder_peers",
        "folder_id",
        "pinned",
        "unread",
        "settings",
        "mute_until",
        "q",
        "from_peer",
        "to_peer",
        "revoke",
        "just_clear",
        "user_id",
        "access_hash",
        "offset",
        "length",
        "url",
    ])
    .prop_map(String::from)
}

/// Replaces one value somewhere in `v` (chosen by `path`), or adds or drops a field.
fn mutate(v: &mut Value, path: &[usize], with: Value, op: u8) {
    match v {
        Value::Object(map) if !map.is_empty() && !path.is_empty() => {
            let key = map.keys().nth(path[0] % map.len()).cloned().unwrap();
            if path.len() == 1 {
                match op % 3 {
                    0 => {
                        map.insert(key, with);
                    }
                    1 => {
                        map.remove(&key);
                    }
                    _ => {
                        map.insert(format!("{key}_extra"), with);
                    }
                }
            } else {
                mutate(map.get_mut(&key).unwrap(), &path[1..], with, op);
            }
        }
        Value::Array(items) if !items.is_empty() && !path.is_empty() => {
            let i = path[0] % items.len();
            if path.len() == 1 {
                items[i] = with;
            } else {
                mutate(&mut items[i], &path[1..], with, op);
            }
        }
        other => *other = with,
    }
}

/// Valid requests to start mutating from.
fn seeds(to_bob: &Value, bob_user: &Value) -> Vec<(&'static str, Value)> {
    vec![
        (
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "hi", "random_id": 5,
            "entities": [{"_": "messageEntityBold", "offset": 0, "length": 2}],
            "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": 1, "quote_text": "h"}}),
        ),
        (
            "messages.editMessage",
            json!({"peer": to_bob, "id": 1, "message": "ho",
            "entities": [{"_": "messageEntityTextUrl", "offset": 0, "length": 1, "url": "u"}]}),
        ),
        (
            "messages.forwardMessages",
            json!({"from_peer": to_bob, "to_peer": {"_": "inputPeerSelf"}, "id": [1], "random_id": [9]}),
        ),
        (
            "messages.deleteMessages",
            json!({"id": [1, 2], "revoke": true}),
        ),
        (
            "messages.getHistory",
            json!({"peer": to_bob, "offset_id": 0, "limit": 20}),
        ),
        (
            "messages.search",
            json!({"peer": to_bob, "q": "h", "filter": {"_": "inputMessagesFilterEmpty"}, "limit": 5}),
        ),
        (
            "updates.getDifference",
            json!({"pts": 1, "date": 0, "qts": 0}),
        ),
        (
            "messages.updateDialogFilter",
            json!({"id": 2, "filter": {"_": "dialogFilter", "contacts": true,
            "title": {"_": "textWithEntities", "text": "W", "entities": []}, "emoticon": "x",
            "pinned_peers": [], "include_peers": [to_bob], "exclude_peers": []}}),
        ),
        (
            "contacts.importContacts",
            json!({"contacts": [{"_": "inputPhoneContact", "client_id": 1,
            "phone": "+15557140002", "first_name": "B", "last_name": ""}]}),
        ),
        (
            "contacts.addContact",
            json!({"id": bob_user, "first_name": "B", "last_name": "", "phone": ""}),
        ),
        (
            "account.updateNotifySettings",
            json!({"peer": {"_": "inputNotifyPeer", "peer": to_bob},
            "settings": {"_": "inputPeerNotifySettings", "mute_until": 5}}),
        ),
        (
            "folders.editPeerFolders",
            json!({"folder_peers": [{"_": "inputFolderPeer", "peer": to_bob, "folder_id": 1}]}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_body_gets_a_500() {
    let s = TestServer::start().await;
    let alice = s.login("+15557140001", "Alice").await;
    let _bob = s.login("+15557140002", "Bob").await;
    let to_bob = alice.peer_of("+15557140002").await;
    let bob_user = json!({"_": "inputUser", "user_id": to_bob["user_id"], "access_hash": to_bob["access_hash"]});
    let seeds = seeds(&to_bob, &bob_user);
    let methods = ptslog_server::http::METHODS;
    let mut runner = runner();
    // Each case: one method, one body (at least one case per method).
    for case in 0..cases().max(methods.len()) {
        let kind = draw(&mut runner, &(0..10u8));
        let (method, body): (&str, Vec<u8>) = match kind {
            // A seed request with one part replaced, dropped or doubled.
            0..=4 => {
                let (method, mut v) = seeds[draw(&mut runner, &(0..seeds.len()))].clone();
                let path = draw(
                    &mut runner,
                    &proptest::collection::vec(any::<usize>(), 1..5),
                );
                let with = draw(&mut runner, &any_json(3));
                mutate(&mut v, &path, with, draw(&mut runner, &any::<u8>()));
                (method, serde_json::to_vec(&v).unwrap())
            }
            // Any JSON to any method.
            5..=7 => (
                methods[case % methods.len()],
                serde_json::to_vec(&draw(&mut runner, &any_json(4))).unwrap(),
            ),
            // Deep nesting, past the body parser's depth limit, under a known field.
            8 => {
                let depth = draw(&mut runner, &(100..400usize));
                let field = draw(&mut runner, &field());
                let text = format!(
                    "{{\"{field}\": {}1{}}}",
                    "[".repeat(depth),
                    "]".repeat(depth)
                );
                (methods[case % methods.len()], text.into_bytes())
            }
            // Not JSON, or not a JSON object.
            _ => {
                let bytes = draw(&mut runner, &proptest::collection::vec(any::<u8>(), 0..64));
                (methods[case % methods.len()], bytes)
            }
        };
        let resp = alice
            .http
            .post(format!("{}/v1/rpc/{method}", alice.base))
            .bearer_auth(&alice.token)
            .body(body.clone())
            .send()
            .await
            .expect("the server answers");
        let status = resp.status().as_u16();
        let answer: Value = resp.json().await.unwrap_or(Value::Null);
        let shown = String::from_utf8_lossy(&body);
        assert!(
            status == 200 || (400..500).contains(&status),
            "case {case}: {method} {shown} answered {status} {answer}"
        );
        if status == 200 {
            // A TL object, or a TL vector (messages.getDialogUnreadMarks).
            assert!(
                answer["_"].is_string() || answer.is_array(),
                "case {case}: {method} {shown} answered {answer}"
            );
        } else {
            assert_eq!(
                answer["_"], "rpc_error",
                "case {case}: {method} {shown} answered {answer}"
            );
        }
    }
    // Still serving, and the log still reads.
    alice
        .rpc(
            "updates.getDifference",
            json!({"pts": 0, "date": 0, "qts": 0}),
        )
        .await;
    let report = projections::verify::verify(&s.pool).await.expect("verify");
    assert_eq!(report.total_differences, 0, "{:?}", report.differences);
    s.stop().await;
}

/// Every entity constructor survives the MTProto front both ways: what the server stores renders
/// to TL binary and back to the same entity, and what a Telegram client sends (flags decoded into
/// booleans) parses as the typed entity. Both schema layers the front speaks are checked.
#[test]
fn entities_survive_the_tl_binary_round_trip() {
    use domain::message_entity::MessageEntity;
    use mtproto::tl::{decode_object, encode_object, Reader, Schema, Writer};
    let samples = [
        json!({"_": "messageEntityBold", "offset": 0, "length": 1}),
        json!({"_": "messageEntityPre", "offset": 1, "length": 2, "language": "rust"}),
        json!({"_": "messageEntityTextUrl", "offset": 0, "length": 3, "url": "https://e.example/"}),
        json!({"_": "messageEntityMentionName", "offset": 0, "length": 1, "user_id": 7}),
        json!({"_": "messageEntityCustomEmoji", "offset": 0, "length": 2, "document_id": 5368324170671202286i64}),
        json!({"_": "messageEntityBlockquote", "offset": 0, "length": 4}),
        json!({"_": "messageEntityBlockquote", "offset": 0, "length": 4, "collapsed": true}),
        json!({"_": "messageEntitySpoiler", "offset": 2, "length": 1}),
    ];
    for schema in [Schema::api(), Schema::layer_198()] {
        for sample in &samples {
            let entity: MessageEntity = serde_json::from_value(sample.clone()).expect("typed");
            let mut w = Writer::new();
            encode_object(schema, &serde_json::to_value(&entity).unwrap(), &mut w)
                .expect("encodes");
            let bytes = w.into_inner();
            let decoded = decode_object(schema, &mut Reader::new(&bytes)).expect("decodes");
            let back: MessageEntity = serde_json::from_value(decoded.clone())
                .unwrap_or_else(|e| panic!("{decoded} does not parse: {e}"));
            assert_eq!(back, entity, "{decoded}");
        }
    }
}
