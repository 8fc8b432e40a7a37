//! `messages.sendMessage` end to end: each owner's ids and pts, Saved Messages, the text, entity and
//! reply limits at their boundaries, idempotent retries, the explicit errors of everything out of
//! scope, blocks and the send rate limit. Every refused call is checked to change nothing.

use domain::access_hash::AccessHashKey;
use domain::UserId;
use ptslog_tests::{self_peer, Device, TestServer};
use rand::Rng;
use serde_json::{json, Value};

pub(crate) const ALICE: &str = "+15550001";
pub(crate) const BOB: &str = "+15550002";
pub(crate) const CAROL: &str = "+15550003";

pub(crate) fn rid() -> i64 {
    rand::thread_rng().gen_range(1..i64::MAX)
}

pub(crate) fn peer_user(id: i64) -> Value {
    json!({"_": "peerUser", "user_id": id})
}

/// What a refused call must leave as it was: every account's pts and the rows of the log and boxes.
#[derive(Debug, PartialEq)]
pub(crate) struct Snapshot {
    pub pts: Vec<i64>,
    pub events: i64,
    pub boxes: i64,
}

pub(crate) async fn snapshot(s: &TestServer, devices: &[&Device]) -> Snapshot {
    let mut pts = Vec::new();
    for d in devices {
        pts.push(d.state().await["pts"].as_i64().expect("pts"));
    }
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    let boxes: i64 = sqlx::query_scalar("SELECT count(*) FROM message_boxes")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    Snapshot { pts, events, boxes }
}

pub(crate) async fn pts(d: &Device) -> i64 {
    d.state().await["pts"].as_i64().expect("pts")
}

/// The chat with `peer`, newest first (at most 100).
pub(crate) async fn history(d: &Device, peer: &Value) -> Vec<Value> {
    let r = d
        .rpc("messages.getHistory", json!({"peer": peer, "limit": 100}))
        .await;
    r["messages"].as_array().expect("messages").clone()
}

pub(crate) fn ids(messages: &[Value]) -> Vec<i64> {
    messages
        .iter()
        .map(|m| m["id"].as_i64().expect("id"))
        .collect()
}

pub(crate) fn texts(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["message"].as_str().expect("text"))
        .collect()
}

/// `updates.getDifference` from `from`: (new_messages, state.pts).
pub(crate) async fn difference(d: &Device, from: i64) -> (Vec<Value>, i64) {
    let r = d
        .rpc(
            "updates.getDifference",
            json!({"pts": from, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(r["_"], "updates.difference", "{r}");
    (
        r["new_messages"].as_array().unwrap().clone(),
        r["state"]["pts"].as_i64().unwrap(),
    )
}

async fn send_err(d: &Device, params: Value) -> (u16, String) {
    d.rpc_err("messages.sendMessage", params).await
}

/// Three accounts: Alice (1), Bob (2), Carol (3); answers the devices and Alice's peers of Bob and Carol.
pub(crate) async fn three(s: &TestServer) -> (Device, Device, Device, Value, Value) {
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let carol = s.login(CAROL, "Carol").await;
    assert_eq!((alice.user_id, bob.user_id, carol.user_id), (1, 2, 3));
    let to_bob = alice.peer_of(BOB).await;
    let to_carol = alice.peer_of(CAROL).await;
    (alice, bob, carol, to_bob, to_carol)
}

#[tokio::test]
async fn each_owner_gets_its_own_ids_and_pts() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;
    assert_eq!((pts(&alice).await, pts(&bob).await), (0, 0));

    // Bob's box and pts run ahead of Alice's by one.
    let saved = bob.send(&self_peer(), "note to self").await;
    assert_eq!(
        (saved["id"].as_i64(), saved["pts"].as_i64()),
        (Some(1), Some(1))
    );

    let one = alice.send(&to_bob, "one").await;
    assert_eq!(one["_"], "updateShortSentMessage");
    assert_eq!(one["out"], true);
    assert_eq!(
        (
            one["id"].as_i64(),
            one["pts"].as_i64(),
            one["pts_count"].as_i64()
        ),
        (Some(1), Some(1), Some(1))
    );
    let two = alice.send(&to_bob, "two").await;
    assert_eq!(
        (two["id"].as_i64(), two["pts"].as_i64()),
        (Some(2), Some(2))
    );
    let three = bob.send(&to_alice, "three").await;
    assert_eq!(
        (three["id"].as_i64(), three["pts"].as_i64()),
        (Some(4), Some(4))
    );

    assert_eq!(pts(&alice).await, 3);
    assert_eq!(pts(&bob).await, 4);

    let a = history(&alice, &to_bob).await;
    assert_eq!(ids(&a), vec![3, 2, 1]);
    assert_eq!(texts(&a), vec!["three", "two", "one"]);
    assert_eq!(
        a.iter()
            .map(|m| m["out"].as_bool().unwrap())
            .collect::<Vec<_>>(),
        vec![false, true, true]
    );
    assert_eq!(a[0]["from_id"], peer_user(2));
    assert_eq!(a[0]["peer_id"], peer_user(2));
    assert_eq!(a[1]["from_id"], peer_user(1));
    assert_eq!(a[1]["peer_id"], peer_user(2));
    assert_eq!(a[2]["date"], one["date"]);
    assert_eq!(a[1]["date"], two["date"]);

    let b = history(&bob, &to_alice).await;
    assert_eq!(ids(&b), vec![4, 3, 2]);
    assert_eq!(texts(&b), vec!["three", "two", "one"]);
    assert_eq!(
        b.iter()
            .map(|m| m["out"].as_bool().unwrap())
            .collect::<Vec<_>>(),
        vec![true, false, false]
    );
    assert_eq!(b[2]["from_id"], peer_user(1));
    assert_eq!(b[2]["peer_id"], peer_user(1));
    assert_eq!(b[0]["date"], three["date"]);
    // Saved Messages is its own chat.
    let bs = history(&bob, &self_peer()).await;
    assert_eq!(ids(&bs), vec![1]);
    assert_eq!(texts(&bs), vec!["note to self"]);

    // The log says the same, in each owner's ids.
    let (news, state) = difference(&alice, 0).await;
    assert_eq!(state, 3);
    assert_eq!(ids(&news), vec![1, 2, 3]);
    assert_eq!(texts(&news), vec!["one", "two", "three"]);
    let (news, state) = difference(&bob, 0).await;
    assert_eq!(state, 4);
    assert_eq!(ids(&news), vec![1, 2, 3, 4]);
    assert_eq!(texts(&news), vec!["note to self", "one", "two", "three"]);
    assert_eq!(news[1]["out"], false);
    assert_eq!(news[3]["out"], true);
    let (news, state) = difference(&bob, 2).await;
    assert_eq!((ids(&news), state), (vec![3, 4], 4));
    let empty = bob
        .rpc(
            "updates.getDifference",
            json!({"pts": 4, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(empty["_"], "updates.differenceEmpty");

    let alice_state = alice.state().await;
    assert_eq!(alice_state["unread_count"], 1);

    // Each event row is the owner's, dense from 1.
    let rows: Vec<(i64, i32, i32)> = sqlx::query_as(
        "SELECT user_id, pts, pts_count FROM user_update_events ORDER BY user_id, pts",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(
        rows,
        vec![
            (1, 1, 1),
            (1, 2, 1),
            (1, 3, 1),
            (2, 1, 1),
            (2, 2, 1),
            (2, 3, 1),
            (2, 4, 1)
        ]
    );
    s.stop().await;
}

#[tokio::test]
async fn saved_messages_make_one_box() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let sent = alice.send(&self_peer(), "remember the milk").await;
    assert_eq!(
        (
            sent["id"].as_i64(),
            sent["pts"].as_i64(),
            sent["out"].as_bool()
        ),
        (Some(1), Some(1), Some(true))
    );
    // Naming oneself by user id is Saved Messages too (whatever the access hash).
    let again = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": {"_": "inputPeerUser", "user_id": alice.user_id, "access_hash": 0}, "message": "and eggs", "random_id": rid()}),
        )
        .await;
    assert_eq!(
        (again["id"].as_i64(), again["pts"].as_i64()),
        (Some(2), Some(2))
    );

    let h = history(&alice, &self_peer()).await;
    assert_eq!(ids(&h), vec![2, 1]);
    assert_eq!(texts(&h), vec!["and eggs", "remember the milk"]);
    for m in &h {
        assert_eq!(m["out"], true);
        assert_eq!(m["from_id"], peer_user(1));
        assert_eq!(m["peer_id"], peer_user(1));
    }
    // One owner, one box, one event per message; nobody else moved.
    let owners: Vec<i64> =
        sqlx::query_scalar("SELECT owner_user_id FROM message_boxes ORDER BY box_id")
            .fetch_all(&s.pool)
            .await
            .unwrap();
    assert_eq!(owners, vec![1, 1]);
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert_eq!(events, 2);
    assert_eq!(pts(&bob).await, 0);
    let (news, state) = difference(&alice, 0).await;
    assert_eq!((ids(&news), state), (vec![1, 2], 2));
    assert_eq!(alice.state().await["unread_count"], 0);
    s.stop().await;
}

#[tokio::test]
async fn text_limit_is_4096_code_points() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;

    // 4096 two-byte and four-byte (two UTF-16 units) characters: far over 4096 bytes, still fine.
    let cyrillic = "я".repeat(4096);
    assert_eq!(cyrillic.len(), 8192);
    let emoji = "😀".repeat(4096);
    assert_eq!(emoji.encode_utf16().count(), 8192);
    let first = alice.send(&to_bob, &cyrillic).await;
    let second = alice.send(&to_bob, &emoji).await;
    assert_eq!(
        (first["id"].as_i64(), second["id"].as_i64()),
        (Some(1), Some(2))
    );
    let b = history(&bob, &to_alice).await;
    assert_eq!(texts(&b), vec![emoji.as_str(), cyrillic.as_str()]);

    let before = snapshot(&s, &[&alice, &bob]).await;
    for over in [
        "я".repeat(4097),
        "😀".repeat(4097),
        format!("{}a", "😀".repeat(4096)),
    ] {
        let (status, error) = send_err(
            &alice,
            json!({"peer": to_bob, "message": over, "random_id": rid()}),
        )
        .await;
        assert_eq!((status, error.as_str()), (400, "MESSAGE_TOO_LONG"));
    }
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn empty_text_and_empty_random_id_are_refused() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    alice.send(&to_bob, "before").await;
    let before = snapshot(&s, &[&alice, &bob]).await;
    for blank in ["", " ", "  \n\t "] {
        let (status, error) = send_err(
            &alice,
            json!({"peer": to_bob, "message": blank, "random_id": rid()}),
        )
        .await;
        assert_eq!(
            (status, error.as_str()),
            (400, "MESSAGE_EMPTY"),
            "{blank:?}"
        );
    }
    let (status, error) = send_err(
        &alice,
        json!({"peer": to_bob, "message": "hi", "random_id": 0}),
    )
    .await;
    assert_eq!((status, error.as_str()), (400, "RANDOM_ID_EMPTY"));
    let (status, error) = send_err(
        &alice,
        json!({"peer": to_bob, "message": "hi", "random_id": "0"}),
    )
    .await;
    assert_eq!((status, error.as_str()), (400, "RANDOM_ID_EMPTY"));
    let (status, error) = send_err(&alice, json!({"peer": to_bob, "message": "hi"})).await;
    assert_eq!((status, error.as_str()), (400, "INPUT_REQUEST_INVALID"));
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn retried_send_answers_the_first_result_and_appends_nothing() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;
    alice.send(&to_bob, "warm-up").await;

    let r = rid();
    let params = json!({"peer": to_bob, "message": "exactly once", "random_id": r});
    let first = alice.rpc("messages.sendMessage", params.clone()).await;
    assert_eq!(
        (first["id"].as_i64(), first["pts"].as_i64()),
        (Some(2), Some(2))
    );
    let before = snapshot(&s, &[&alice, &bob]).await;
    assert_eq!(before.pts, vec![2, 2]);

    // Let the clock move, so a fresh send would carry another date.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let retry = alice.rpc("messages.sendMessage", params.clone()).await;
    assert_eq!(retry, first);
    // The same long as a decimal string is the same random_id.
    let as_text = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "exactly once", "random_id": r.to_string()}),
        )
        .await;
    assert_eq!(as_text, first);
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);
    assert_eq!(
        texts(&history(&alice, &to_bob).await),
        vec!["exactly once", "warm-up"]
    );
    assert_eq!(
        texts(&history(&bob, &to_alice).await),
        vec!["exactly once", "warm-up"]
    );

    // The same random_id for another message is a client bug, not a retry.
    let (status, error) = send_err(
        &alice,
        json!({"peer": to_bob, "message": "something else", "random_id": r}),
    )
    .await;
    assert_eq!((status, error.as_str()), (400, "RANDOM_ID_DUPLICATE"));
    let (status, error) = send_err(
        &alice,
        json!({"peer": self_peer(), "message": "exactly once", "random_id": r}),
    )
    .await;
    assert_eq!((status, error.as_str()), (400, "RANDOM_ID_DUPLICATE"));
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);

    // random_ids are the sender's: Bob may use the same number.
    let bobs = bob
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_alice, "message": "mine", "random_id": r}),
        )
        .await;
    assert_eq!(
        (bobs["id"].as_i64(), bobs["pts"].as_i64()),
        (Some(3), Some(3))
    );
    s.stop().await;
}

#[tokio::test]
async fn unknown_or_unproven_peers_are_refused() {
    let s = TestServer::start().await;
    let (alice, bob, carol, to_bob, _) = three(&s).await;
    alice.send(&to_bob, "hello").await;
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;

    let hash = to_bob["access_hash"].as_i64().unwrap();
    // Carol's access hash of Bob is not Alice's.
    let carols_hash = carol.peer_of(BOB).await["access_hash"].as_i64().unwrap();
    assert_ne!(carols_hash, hash);
    // A correct access hash for an account that does not exist (computed with the server key).
    let key: String =
        sqlx::query_scalar("SELECT value FROM server_secrets WHERE name = 'access_hash_key'")
            .fetch_one(&s.pool)
            .await
            .unwrap();
    let key = AccessHashKey::new(key.into_bytes());
    assert_eq!(
        key.for_pair(UserId::new(1).unwrap(), UserId::new(2).unwrap()),
        hash,
        "the harness computes hashes as the server does"
    );
    let ghost_hash = key.for_pair(UserId::new(1).unwrap(), UserId::new(999).unwrap());

    let peers = [
        json!({"_": "inputPeerUser", "user_id": 2, "access_hash": hash.wrapping_add(1)}),
        json!({"_": "inputPeerUser", "user_id": 2, "access_hash": 0}),
        json!({"_": "inputPeerUser", "user_id": 2, "access_hash": carols_hash}),
        json!({"_": "inputPeerUser", "user_id": 999, "access_hash": ghost_hash}),
        json!({"_": "inputPeerUser", "user_id": 999, "access_hash": hash}),
        json!({"_": "inputPeerUser", "user_id": 0, "access_hash": 0}),
        json!({"_": "inputPeerUser", "user_id": -2, "access_hash": hash}),
        json!({"_": "inputPeerChat", "chat_id": 1}),
        json!({"_": "inputPeerChannel", "channel_id": 1, "access_hash": hash}),
        json!({"_": "inputPeerEmpty"}),
    ];
    for peer in peers {
        let (status, error) = send_err(
            &alice,
            json!({"peer": peer, "message": "hi", "random_id": rid()}),
        )
        .await;
        assert_eq!((status, error.as_str()), (400, "PEER_ID_INVALID"), "{peer}");
    }
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn entities_are_checked_in_utf16_and_kept() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;

    // "😀 hi": 4 code points, 5 UTF-16 units; "hi" is at UTF-16 offset 3.
    let text = "😀 hi";
    let bold = json!({"_": "messageEntityBold", "offset": 3, "length": 2});
    let sent = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": text, "random_id": rid(), "entities": [bold]}),
        )
        .await;
    assert_eq!(sent["id"], 1);
    let a = history(&alice, &to_bob).await;
    assert_eq!(a[0]["entities"], json!([bold]));
    let b = history(&bob, &to_alice).await;
    assert_eq!(b[0]["entities"], json!([bold]));
    let (news, _) = difference(&bob, 0).await;
    assert_eq!(news[0]["entities"], json!([bold]));

    let one = json!({"_": "messageEntityItalic", "offset": 0, "length": 1});
    let hundred = vec![one.clone(); 100];
    let ok = alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "x", "random_id": rid(), "entities": hundred}),
        )
        .await;
    assert_eq!((ok["id"].as_i64(), ok["pts"].as_i64()), (Some(2), Some(2)));
    assert_eq!(
        history(&bob, &to_alice).await[0]["entities"]
            .as_array()
            .unwrap()
            .len(),
        100
    );

    let before = snapshot(&s, &[&alice, &bob]).await;
    let cases = [
        (
            text,
            json!([{"_": "messageEntityBold", "offset": 4, "length": 2}]),
            "ENTITY_BOUNDS_INVALID",
        ),
        (
            text,
            json!([{"_": "messageEntityBold", "offset": 0, "length": 6}]),
            "ENTITY_BOUNDS_INVALID",
        ),
        (
            text,
            json!([{"_": "messageEntityBold", "offset": -1, "length": 2}]),
            "ENTITY_BOUNDS_INVALID",
        ),
        (
            text,
            json!([{"_": "messageEntityBold", "offset": 0, "length": 0}]),
            "ENTITY_BOUNDS_INVALID",
        ),
        (
            text,
            json!([bold, {"_": "messageEntityCode", "offset": 5, "length": 1}]),
            "ENTITY_BOUNDS_INVALID",
        ),
        (
            text,
            json!([{"_": "messageEntityNope", "offset": 0, "length": 1}]),
            "ENTITY_INVALID",
        ),
        (
            "x",
            Value::Array(vec![one.clone(); 101]),
            "ENTITIES_TOO_LONG",
        ),
    ];
    for (text, entities, expected) in cases {
        let (status, error) = send_err(
            &alice,
            json!({"peer": to_bob, "message": text, "random_id": rid(), "entities": entities}),
        )
        .await;
        assert_eq!((status, error.as_str()), (400, expected), "{entities}");
    }
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn out_of_scope_flags_get_their_explicit_errors() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    alice.send(&to_bob, "hi").await;
    let before = snapshot(&s, &[&alice, &bob]).await;
    let cases = [
        (
            "schedule_date",
            json!(1_900_000_000),
            "SCHEDULE_DATE_INVALID",
        ),
        (
            "send_as",
            json!({"_": "inputPeerSelf"}),
            "SEND_AS_PEER_INVALID",
        ),
        (
            "reply_markup",
            json!({"_": "replyKeyboardHide"}),
            "REPLY_MARKUP_INVALID",
        ),
        (
            "quick_reply_shortcut",
            json!({"_": "inputQuickReplyShortcut", "shortcut": "hi"}),
            "SHORTCUT_INVALID",
        ),
        (
            "effect",
            json!(5_104_841_245_755_180_586_i64),
            "EFFECT_ID_INVALID",
        ),
        ("allow_paid_stars", json!(10), "PAYMENT_UNSUPPORTED"),
        (
            "suggested_post",
            json!({"_": "suggestedPost"}),
            "SUGGESTED_POST_PEER_INVALID",
        ),
    ];
    for (field, value, expected) in cases {
        let mut params = json!({"peer": to_bob, "message": "hi", "random_id": rid()});
        params[field] = value;
        let (status, error) = send_err(&alice, params).await;
        assert_eq!((status, error.as_str()), (400, expected), "{field}");
    }
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn silent_and_noforwards_reach_both_copies() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;
    let flags = [(true, false), (false, true), (true, true), (false, false)];
    for (i, (silent, noforwards)) in flags.iter().enumerate() {
        alice
            .rpc(
                "messages.sendMessage",
                json!({"peer": to_bob, "message": format!("m{i}"), "random_id": rid(), "silent": silent, "noforwards": noforwards}),
            )
            .await;
    }
    let (bob_news, _) = difference(&bob, 0).await;
    for list in [
        history(&alice, &to_bob).await,
        history(&bob, &to_alice).await,
        bob_news,
    ] {
        let mut got: Vec<(String, bool, bool)> = list
            .iter()
            .map(|m| {
                (
                    m["message"].as_str().unwrap().to_string(),
                    m["silent"].as_bool().unwrap(),
                    m["noforwards"].as_bool().unwrap(),
                )
            })
            .collect();
        got.sort();
        let want: Vec<(String, bool, bool)> = flags
            .iter()
            .enumerate()
            .map(|(i, (a, b))| (format!("m{i}"), *a, *b))
            .collect();
        assert_eq!(got, want);
    }
    s.stop().await;
}

#[tokio::test]
async fn replies_are_translated_into_each_owners_ids() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;
    // Bob's ids run two ahead of Alice's.
    bob.send(&self_peer(), "n1").await;
    bob.send(&self_peer(), "n2").await;

    let question = alice.send(&to_bob, "what is the question?").await;
    assert_eq!(question["id"], 1);
    assert_eq!(ids(&history(&bob, &to_alice).await), vec![3]);

    // Bob replies by his id 3, quoting.
    let answer = bob
        .rpc(
            "messages.sendMessage",
            json!({
                "peer": to_alice, "message": "42", "random_id": rid(),
                "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": 3, "quote_text": "question",
                             "quote_entities": [{"_": "messageEntityItalic", "offset": 0, "length": 8}],
                             "quote_offset": 12}
            }),
        )
        .await;
    assert_eq!(
        (answer["id"].as_i64(), answer["pts"].as_i64()),
        (Some(4), Some(4))
    );
    let header = |id: i64| {
        json!({"_": "messageReplyHeader", "quote": true, "reply_to_msg_id": id, "quote_text": "question",
               "quote_entities": [{"_": "messageEntityItalic", "offset": 0, "length": 8}], "quote_offset": 12})
    };
    let b = history(&bob, &to_alice).await;
    assert_eq!(b[0]["id"], 4);
    assert_eq!(b[0]["reply_to"], header(3));
    let a = history(&alice, &to_bob).await;
    assert_eq!(a[0]["id"], 2);
    assert_eq!(a[0]["message"], "42");
    assert_eq!(a[0]["reply_to"], header(1));
    let (news, _) = difference(&alice, 1).await;
    assert_eq!(news[0]["reply_to"], header(1));

    // Alice replies to that answer by her id 2, naming the chat explicitly; Bob sees his id 4.
    alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_bob, "message": "thanks", "random_id": rid(),
                   "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": 2, "reply_to_peer_id": to_bob}}),
        )
        .await;
    let plain = |id: i64| json!({"_": "messageReplyHeader", "quote": false, "reply_to_msg_id": id});
    assert_eq!(history(&alice, &to_bob).await[0]["reply_to"], plain(2));
    assert_eq!(history(&bob, &to_alice).await[0]["reply_to"], plain(4));

    // A reply in Saved Messages stays in the one box.
    bob.rpc(
        "messages.sendMessage",
        json!({"peer": self_peer(), "message": "n3", "random_id": rid(), "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": 1}}),
    )
    .await;
    let saved = history(&bob, &self_peer()).await;
    assert_eq!(ids(&saved), vec![6, 2, 1]);
    assert_eq!(saved[0]["reply_to"], plain(1));
    assert_eq!(pts(&alice).await, 3);
    assert_eq!(pts(&bob).await, 6);
    s.stop().await;
}

#[tokio::test]
async fn quote_limits() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;
    alice.send(&to_bob, "original").await;
    let reply = |quote_text: Option<String>, quote_offset: Option<i64>| {
        let mut r = json!({"_": "inputReplyToMessage", "reply_to_msg_id": 1});
        if let Some(q) = quote_text {
            r["quote_text"] = json!(q);
        }
        if let Some(o) = quote_offset {
            r["quote_offset"] = json!(o);
        }
        json!({"peer": to_bob, "message": "re", "random_id": rid(), "reply_to": r})
    };

    // 1024 emoji: 1024 code points, 2048 UTF-16 units, 4096 bytes.
    let quote = "😀".repeat(1024);
    let ok = alice
        .rpc("messages.sendMessage", reply(Some(quote.clone()), None))
        .await;
    assert_eq!(ok["id"], 2);
    let ok = alice
        .rpc("messages.sendMessage", reply(None, Some(4096)))
        .await;
    assert_eq!(ok["id"], 3);
    let ok = alice
        .rpc("messages.sendMessage", reply(None, Some(0)))
        .await;
    assert_eq!(ok["id"], 4);
    let b = history(&bob, &to_alice).await;
    assert_eq!(
        b[2]["reply_to"]["quote_text"].as_str(),
        Some(quote.as_str())
    );
    assert_eq!(b[2]["reply_to"]["quote"], true);
    assert_eq!(b[1]["reply_to"]["quote_offset"], 4096);
    assert_eq!(b[0]["reply_to"]["quote_offset"], 0);

    let before = snapshot(&s, &[&alice, &bob]).await;
    let cases = [
        (reply(Some("😀".repeat(1025)), None), "QUOTE_TEXT_INVALID"),
        (reply(Some("q".repeat(1025)), None), "QUOTE_TEXT_INVALID"),
        (reply(None, Some(4097)), "QUOTE_OFFSET_INVALID"),
        (reply(None, Some(-1)), "QUOTE_OFFSET_INVALID"),
    ];
    for (params, expected) in cases {
        let (status, error) = send_err(&alice, params).await;
        assert_eq!((status, error.as_str()), (400, expected));
    }
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn replies_outside_the_chat_or_scope_are_refused() {
    let s = TestServer::start().await;
    let (alice, bob, carol, to_bob, to_carol) = three(&s).await;
    alice.send(&to_bob, "to bob").await; // Alice's 1
    alice.send(&to_carol, "to carol").await; // Alice's 2
    alice.send(&self_peer(), "to me").await; // Alice's 3
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;

    let with = |reply_to: Value| json!({"peer": to_bob, "message": "re", "random_id": rid(), "reply_to": reply_to});
    let cases = [
        // Alice's message 2 is in her chat with Carol, 3 in Saved Messages; 99 and 0 do not exist.
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 2}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 3}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 99}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 0}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": -1}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        // Cross-chat replies.
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 2, "reply_to_peer_id": to_carol}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 1, "reply_to_peer_id": to_carol}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 3, "reply_to_peer_id": self_peer()}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        // Topics exist only in forums.
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 1, "top_msg_id": 1}),
            "REPLY_MESSAGE_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToStory", "peer": to_bob, "story_id": 1}),
            "STORY_ID_INVALID",
        ),
        (
            json!({"_": "inputReplyToMonoForum", "monoforum_peer_id": to_bob}),
            "REPLY_TO_MONOFORUM_PEER_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 1, "monoforum_peer_id": to_bob}),
            "REPLY_TO_MONOFORUM_PEER_INVALID",
        ),
        (
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 1, "todo_item_id": 1}),
            "POLL_OPTION_INVALID",
        ),
    ];
    for (reply_to, expected) in cases {
        let (status, error) = send_err(&alice, with(reply_to.clone())).await;
        assert_eq!((status, error.as_str()), (400, expected), "{reply_to}");
    }
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    // The same reply to a message of this chat goes through.
    let ok = alice
        .rpc(
            "messages.sendMessage",
            with(json!({"_": "inputReplyToMessage", "reply_to_msg_id": 1})),
        )
        .await;
    assert_eq!((ok["id"].as_i64(), ok["pts"].as_i64()), (Some(4), Some(4)));
    s.stop().await;
}

#[tokio::test]
async fn blocks_decide_who_gets_the_message() {
    let s = TestServer::start().await;
    let (alice, bob, carol, to_bob, to_carol) = three(&s).await;
    let to_alice = bob.peer_of(ALICE).await;
    alice.send(&to_bob, "before the block").await;

    // Bob blocks Alice: her messages reach her own box only.
    assert_eq!(
        bob.rpc("contacts.block", json!({"id": to_alice})).await["_"],
        "boolTrue"
    );
    let bob_pts = pts(&bob).await;
    assert_eq!(bob_pts, 2);
    let sent = alice.send(&to_bob, "into the void").await;
    assert_eq!(
        (sent["id"].as_i64(), sent["pts"].as_i64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        texts(&history(&alice, &to_bob).await),
        vec!["into the void", "before the block"]
    );
    assert_eq!(pts(&bob).await, bob_pts);
    assert_eq!(
        texts(&history(&bob, &to_alice).await),
        vec!["before the block"]
    );
    let bob_boxes: i64 =
        sqlx::query_scalar("SELECT count(*) FROM message_boxes WHERE owner_user_id = 2")
            .fetch_one(&s.pool)
            .await
            .unwrap();
    assert_eq!(bob_boxes, 1);
    // And Bob, who blocked Alice, cannot write to her.
    let (status, error) = send_err(
        &bob,
        json!({"peer": to_alice, "message": "hi", "random_id": rid()}),
    )
    .await;
    assert_eq!((status, error.as_str()), (400, "YOU_BLOCKED_USER"));
    assert_eq!((pts(&alice).await, pts(&bob).await), (2, bob_pts));

    // Alice blocks Carol: sending to Carol is refused and changes nothing.
    let carol_for_alice = to_carol.clone();
    alice
        .rpc("contacts.block", json!({"id": carol_for_alice}))
        .await;
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;
    let (status, error) = send_err(
        &alice,
        json!({"peer": to_carol, "message": "hi", "random_id": rid()}),
    )
    .await;
    assert_eq!((status, error.as_str()), (400, "YOU_BLOCKED_USER"));
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    // Unblocked, it goes through.
    alice.rpc("contacts.unblock", json!({"id": to_carol})).await;
    let ok = alice.send(&to_carol, "sorry").await;
    assert_eq!((ok["id"].as_i64(), ok["pts"].as_i64()), (Some(3), Some(5)));
    assert_eq!(
        texts(&history(&carol, &carol.peer_of(ALICE).await).await),
        vec!["sorry"]
    );
    s.stop().await;
}

/// Seconds left in the current fixed one-minute window of the limiter.
fn window_left() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    60 - now % 60
}

#[tokio::test]
async fn send_rate_is_limited_per_user() {
    let s = TestServer::start_with(|c| c.send_rate_per_minute = 3).await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;
    // Four sends must fall in one window; if it is about to turn, wait for the next one.
    if window_left() < 5 {
        tokio::time::sleep(std::time::Duration::from_secs(window_left() + 1)).await;
    }
    for i in 1..=3 {
        let sent = alice.send(&to_bob, &format!("m{i}")).await;
        assert_eq!(sent["pts"], i);
    }
    let before = snapshot(&s, &[&alice, &bob]).await;
    let (status, error) = send_err(
        &alice,
        json!({"peer": to_bob, "message": "m4", "random_id": rid()}),
    )
    .await;
    assert_eq!(status, 420);
    let secs: u64 = error
        .strip_prefix("FLOOD_WAIT_")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{error}"));
    assert!((1..=60).contains(&secs), "{error}");
    // Saved Messages count too.
    let (status, _) = send_err(
        &alice,
        json!({"peer": self_peer(), "message": "m5", "random_id": rid()}),
    )
    .await;
    assert_eq!(status, 420);
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);
    assert_eq!(
        texts(&history(&bob, &to_alice).await),
        vec!["m3", "m2", "m1"]
    );

    // Bob has his own budget.
    for i in 1..=3 {
        let sent = bob.send(&to_alice, &format!("b{i}")).await;
        assert_eq!(sent["pts"], 3 + i);
    }
    s.stop().await;
}

#[tokio::test]
async fn sends_go_through_when_redis_is_down() {
    let s = TestServer::start_with(|c| {
        c.send_rate_per_minute = 3;
        c.redis_url = "redis://127.0.0.1:1".into();
    })
    .await;
    let alice = s.login(ALICE, "Alice").await;
    let _bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let started = std::time::Instant::now();
    for i in 1..=5 {
        let sent = alice.send(&to_bob, &format!("m{i}")).await;
        assert_eq!(
            (sent["id"].as_i64(), sent["pts"].as_i64()),
            (Some(i), Some(i))
        );
    }
    // Fail open without hanging: each check is bounded by 200 ms.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    s.stop().await;
}
