//! The read side over HTTP: dialogs, history, messages by id, search, peer dialogs, users and phone
//! resolution. Every answer is checked value by value, from each viewer's own ids and access hashes.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use application::queries::get_dialogs::fold_hash;
use ptslog_tests::{self_peer, Device, TestServer};
use serde_json::{json, Value};

/// The ids of the `messages` of an answer, in answer order.
fn ids(answer: &Value) -> Vec<i64> {
    answer["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_i64().expect("id"))
        .collect()
}

/// The texts of the `messages` of an answer, in answer order.
fn texts(answer: &Value) -> Vec<String> {
    answer["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["message"].as_str().unwrap_or("").to_string())
        .collect()
}

/// `hi`, `hi - 1`, …, `lo`.
fn desc(hi: i64, lo: i64) -> Vec<i64> {
    (lo..=hi).rev().collect()
}

/// The `user` with this id among an answer's users.
fn user_in(answer: &Value, id: i64) -> Value {
    answer["users"]
        .as_array()
        .expect("users")
        .iter()
        .find(|u| u["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("user {id} missing from {answer}"))
}

fn user_ids(answer: &Value) -> HashSet<i64> {
    answer["users"]
        .as_array()
        .expect("users")
        .iter()
        .map(|u| u["id"].as_i64().unwrap())
        .collect()
}

/// The `message` with this id among an answer's messages.
fn message_in(answer: &Value, id: i64) -> Value {
    answer["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("message {id} missing from {answer}"))
}

fn dialog_peers(answer: &Value) -> Vec<i64> {
    answer["dialogs"]
        .as_array()
        .expect("dialogs")
        .iter()
        .map(|d| d["peer"]["user_id"].as_i64().unwrap())
        .collect()
}

/// Sends `n` texts `{prefix}{i}` (i from 1) and answers the sender's ids.
async fn send_many(dev: &Device, peer: &Value, prefix: &str, n: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(n);
    for i in 1..=n {
        out.push(
            dev.send(peer, &format!("{prefix}{i}")).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    out
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

async fn pts(dev: &Device) -> i64 {
    dev.state().await["pts"].as_i64().unwrap()
}

/// The dialog-list hash a client computes from the dialogs it holds (every dialog of the folder in
/// list order): peer id, top message id and top message date folded in turn, as the server does.
fn dialogs_hash(answer: &Value) -> i64 {
    let mut acc = 0u64;
    for d in answer["dialogs"].as_array().unwrap() {
        let top = d["top_message"].as_i64().unwrap();
        let date = message_in(answer, top)["date"].as_i64().unwrap();
        acc = fold_hash(acc, d["peer"]["user_id"].as_i64().unwrap() as u64);
        acc = fold_hash(acc, top as u64);
        acc = fold_hash(acc, date as u64);
    }
    acc as i64
}

#[test]
fn fold_hash_is_deterministic_and_order_sensitive() {
    let a = fold_hash(fold_hash(0, 1), 2);
    assert_eq!(a, fold_hash(fold_hash(0, 1), 2));
    assert_ne!(a, fold_hash(fold_hash(0, 2), 1));
    assert_eq!(fold_hash(0, 7), 7);
}

// ---------------------------------------------------------------------------------------------
// messages.getDialogs

#[tokio::test]
async fn get_dialogs_orders_by_top_message_and_pages_by_seek() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let mut friends: Vec<(Device, Value)> = Vec::new();
    for i in 1..=7 {
        let phone = format!("+1555020{i}");
        let dev = s.login(&phone, &format!("Friend{i}")).await;
        let peer = alice.peer_of(&phone).await;
        friends.push((dev, peer));
    }
    for (i, (_, peer)) in friends.iter().enumerate() {
        alice.send(peer, &format!("hello friend {}", i + 1)).await;
    }
    // Friend 3 gets another message, then friend 5 writes: both move to the top.
    alice.send(&friends[2].1, "again 3").await;
    let alice_for_5 = friends[4].0.peer_of("+15550100").await;
    friends[4].0.send(&alice_for_5, "hey alice").await;

    let fid = |i: usize| friends[i - 1].0.user_id;
    let expected = vec![fid(5), fid(3), fid(7), fid(6), fid(4), fid(2), fid(1)];
    // Alice's box ids: 1..=7 to friends 1..=7, 8 the second to friend 3, 9 from friend 5.
    let expected_tops = [9, 8, 7, 6, 4, 2, 1];

    // Everything fits: messages.dialogs, no count.
    let all = alice
        .rpc("messages.getDialogs", json!({"limit": 100}))
        .await;
    assert_eq!(all["_"], "messages.dialogs");
    assert!(all.get("count").is_none(), "{all}");
    assert_eq!(dialog_peers(&all), expected);
    let tops: Vec<i64> = all["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["top_message"].as_i64().unwrap())
        .collect();
    assert_eq!(tops, expected_tops);
    // A limit equal to the count, and the default limit, also fit.
    let seven = alice.rpc("messages.getDialogs", json!({"limit": 7})).await;
    assert_eq!(seven["_"], "messages.dialogs");
    assert_eq!(dialog_peers(&seven), expected);
    let default = alice.rpc("messages.getDialogs", json!({})).await;
    assert_eq!(default["_"], "messages.dialogs");
    assert_eq!(dialog_peers(&default), expected);

    // Top messages and unread counts as Alice sees them.
    let top5 = message_in(&all, 9);
    assert_eq!(top5["message"], "hey alice");
    assert_eq!(top5["out"], false);
    assert_eq!(top5["from_id"]["user_id"], fid(5));
    assert_eq!(top5["peer_id"]["user_id"], fid(5));
    let top3 = message_in(&all, 8);
    assert_eq!(top3["message"], "again 3");
    assert_eq!(top3["out"], true);
    assert_eq!(top3["from_id"]["user_id"], alice.user_id);
    assert_eq!(top3["peer_id"]["user_id"], fid(3));
    assert_eq!(all["messages"].as_array().unwrap().len(), 7);
    for d in all["dialogs"].as_array().unwrap() {
        let unread = if d["peer"]["user_id"] == fid(5) { 1 } else { 0 };
        assert_eq!(d["unread_count"], unread, "{d}");
        assert_eq!(d["_"], "dialog");
    }
    // Every peer with Alice's access hash for it, and Alice herself (the sender of her tops).
    for (dev, peer) in &friends {
        let u = user_in(&all, dev.user_id);
        assert_eq!(u["access_hash"], peer["access_hash"], "{u}");
        assert_eq!(u["self"], false);
        assert!(u.get("phone").is_none(), "another user's phone leaked: {u}");
    }
    let me = user_in(&all, alice.user_id);
    assert_eq!(me["self"], true);
    assert_eq!(me["phone"], "15550100");

    // Seek pagination, 3 at a time: 3 + 3 + 1, then nothing; no duplicates, no gaps.
    let mut seen: Vec<i64> = Vec::new();
    let mut offset =
        json!({"offset_date": 0, "offset_id": 0, "offset_peer": {"_": "inputPeerEmpty"}});
    for want in [3usize, 3, 1, 0] {
        let page = alice
            .rpc(
                "messages.getDialogs",
                with(offset.clone(), json!({"limit": 3})),
            )
            .await;
        assert_eq!(page["_"], "messages.dialogsSlice", "{page}");
        assert_eq!(page["count"], 7);
        let dialogs = page["dialogs"].as_array().unwrap();
        assert_eq!(dialogs.len(), want, "{page}");
        assert_eq!(page["messages"].as_array().unwrap().len(), want);
        for d in dialogs {
            let peer_id = d["peer"]["user_id"].as_i64().unwrap();
            let top = message_in(&page, d["top_message"].as_i64().unwrap());
            assert_eq!(top["peer_id"]["user_id"], peer_id);
            let (_, alice_peer) = friends.iter().find(|(f, _)| f.user_id == peer_id).unwrap();
            assert_eq!(
                user_in(&page, peer_id)["access_hash"],
                alice_peer["access_hash"]
            );
        }
        seen.extend(dialog_peers(&page));
        if let Some(last) = dialogs.last() {
            let peer_id = last["peer"]["user_id"].as_i64().unwrap();
            let top = message_in(&page, last["top_message"].as_i64().unwrap());
            offset = json!({
                "offset_date": top["date"],
                "offset_id": top["id"],
                "offset_peer": {"_": "inputPeerUser", "user_id": peer_id, "access_hash": user_in(&page, peer_id)["access_hash"]},
            });
        }
    }
    assert_eq!(
        seen, expected,
        "pages must cover the list exactly once, in order"
    );

    // offset_date/offset_id alone (no offset_peer) seek the same way.
    let first = alice.rpc("messages.getDialogs", json!({"limit": 3})).await;
    let last_top = message_in(&first, first["dialogs"][2]["top_message"].as_i64().unwrap());
    let second = alice
        .rpc(
            "messages.getDialogs",
            json!({"limit": 3, "offset_date": last_top["date"], "offset_id": last_top["id"]}),
        )
        .await;
    assert_eq!(dialog_peers(&second), expected[3..6].to_vec());

    // A friend sees only the dialog with Alice, with its own ids and its own access hash for her.
    let f5 = friends[4]
        .0
        .rpc("messages.getDialogs", json!({"limit": 10}))
        .await;
    assert_eq!(f5["_"], "messages.dialogs");
    assert_eq!(dialog_peers(&f5), vec![alice.user_id]);
    assert_eq!(f5["dialogs"][0]["top_message"], 2);
    assert_eq!(f5["messages"][0]["message"], "hey alice");
    assert_eq!(f5["messages"][0]["out"], true);
    assert_eq!(
        user_in(&f5, alice.user_id)["access_hash"],
        alice_for_5["access_hash"]
    );
    assert_ne!(
        alice_for_5["access_hash"],
        friends[3].0.peer_of("+15550100").await["access_hash"]
    );
    assert_eq!(user_ids(&f5), HashSet::from([alice.user_id, fid(5)]));
    s.stop().await;
}

#[tokio::test]
async fn get_dialogs_folders_offset_peer_and_hash() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let _bob = s.login("+15550101", "Bob").await;
    let _carol = s.login("+15550102", "Carol").await;
    let to_bob = alice.peer_of("+15550101").await;
    let to_carol = alice.peer_of("+15550102").await;
    alice.send(&to_bob, "b1").await;
    alice.send(&to_carol, "c1").await;
    alice.send(&self_peer(), "note to self").await;

    // Archive (folder 1) is empty; folders beyond 1 do not exist.
    let archive = alice
        .rpc("messages.getDialogs", json!({"folder_id": 1, "limit": 10}))
        .await;
    assert_eq!(
        archive,
        json!({"_": "messages.dialogs", "dialogs": [], "messages": [], "chats": [], "users": []})
    );
    for bad in [2, -1, 100] {
        assert_eq!(
            alice
                .rpc_err(
                    "messages.getDialogs",
                    json!({"folder_id": bad, "limit": 10})
                )
                .await,
            (400, "FOLDER_ID_INVALID".to_string())
        );
    }
    // folder 0 is the main list, the same as none.
    let main = alice
        .rpc("messages.getDialogs", json!({"folder_id": 0, "limit": 10}))
        .await;
    assert_eq!(
        dialog_peers(&main),
        vec![alice.user_id, _carol.user_id, _bob.user_id]
    );
    let saved = message_in(&main, 3);
    assert_eq!(saved["message"], "note to self");
    assert_eq!(saved["peer_id"]["user_id"], alice.user_id);

    // An offset peer named with a wrong access hash.
    let forged = json!({"_": "inputPeerUser", "user_id": _bob.user_id, "access_hash": to_carol["access_hash"]});
    assert_eq!(
        alice
            .rpc_err(
                "messages.getDialogs",
                json!({"limit": 10, "offset_date": 1, "offset_id": 1, "offset_peer": forged})
            )
            .await,
        (400, "OFFSET_PEER_ID_INVALID".to_string())
    );

    // The hash a client computes from the list it holds: unchanged list → dialogsNotModified.
    let hash = dialogs_hash(&main);
    assert_ne!(hash, 0);
    let same = alice
        .rpc("messages.getDialogs", json!({"limit": 10, "hash": hash}))
        .await;
    assert_eq!(
        same,
        json!({"_": "messages.dialogsNotModified", "count": 3})
    );
    let as_string = alice
        .rpc(
            "messages.getDialogs",
            json!({"limit": 10, "hash": hash.to_string()}),
        )
        .await;
    assert_eq!(as_string["_"], "messages.dialogsNotModified");
    // A wrong non-zero hash gives the full list.
    let wrong = alice
        .rpc(
            "messages.getDialogs",
            json!({"limit": 10, "hash": hash.wrapping_add(1)}),
        )
        .await;
    assert_eq!(wrong, main);
    // The hash covers the whole folder whatever the page size.
    let small = alice
        .rpc("messages.getDialogs", json!({"limit": 1, "hash": hash}))
        .await;
    assert_eq!(small["_"], "messages.dialogsNotModified");

    // A new message reorders the list: the old hash no longer matches.
    alice.send(&to_bob, "b2").await;
    let changed = alice
        .rpc("messages.getDialogs", json!({"limit": 10, "hash": hash}))
        .await;
    assert_eq!(changed["_"], "messages.dialogs");
    assert_eq!(
        dialog_peers(&changed),
        vec![_bob.user_id, alice.user_id, _carol.user_id]
    );
    let new_hash = dialogs_hash(&changed);
    assert_ne!(new_hash, hash);
    let again = alice
        .rpc(
            "messages.getDialogs",
            json!({"limit": 10, "hash": new_hash}),
        )
        .await;
    assert_eq!(
        again,
        json!({"_": "messages.dialogsNotModified", "count": 3})
    );
    // Bob's list is his own: the hash of Alice's list means nothing to it.
    let bob_list = _bob
        .rpc(
            "messages.getDialogs",
            json!({"limit": 10, "hash": new_hash}),
        )
        .await;
    assert_eq!(bob_list["_"], "messages.dialogs");
    assert_eq!(dialog_peers(&bob_list), vec![alice.user_id]);
    s.stop().await;
}

// ---------------------------------------------------------------------------------------------
// messages.getHistory

#[tokio::test]
async fn get_history_windows() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let bob = s.login("+15550101", "Bob").await;
    let carol = s.login("+15550102", "Carol").await;
    let _dave = s.login("+15550103", "Dave").await;
    // Bob's ids start past 5, so his view of the chat differs from Alice's.
    let bob_to_dave = bob.peer_of("+15550103").await;
    send_many(&bob, &bob_to_dave, "d", 5).await;
    let to_bob = alice.peer_of("+15550101").await;
    let sent = send_many(&alice, &to_bob, "m", 120).await;
    assert_eq!(sent, (1..=120).collect::<Vec<_>>());
    let h = |extra: Value| with(json!({"peer": to_bob.clone()}), extra);

    // Newest first, default limit 20, a slice counting the whole chat.
    let first = alice.rpc("messages.getHistory", h(json!({}))).await;
    assert_eq!(first["_"], "messages.messagesSlice");
    assert_eq!(first["count"], 120);
    assert_eq!(ids(&first), desc(120, 101));
    assert_eq!(texts(&first)[0], "m120");
    let m = &first["messages"][0];
    assert_eq!(
        (
            m["out"].clone(),
            m["from_id"]["user_id"].clone(),
            m["peer_id"]["user_id"].clone()
        ),
        (json!(true), json!(alice.user_id), json!(bob.user_id))
    );
    assert_eq!(
        user_in(&first, bob.user_id)["access_hash"],
        to_bob["access_hash"]
    );
    assert_eq!(user_in(&first, alice.user_id)["self"], true);
    assert_eq!(
        user_ids(&first),
        HashSet::from([alice.user_id, bob.user_id])
    );

    // limit above 100 is capped at 100.
    let capped = alice
        .rpc("messages.getHistory", h(json!({"limit": 120})))
        .await;
    assert_eq!(ids(&capped), desc(120, 21));
    let huge = alice
        .rpc("messages.getHistory", h(json!({"limit": 1_000_000})))
        .await;
    assert_eq!(ids(&huge), desc(120, 21));
    assert_eq!(huge["count"], 120);

    // offset_id paging covers the chat exactly once.
    let mut all = Vec::new();
    let mut offset_id = 0;
    for want in [25usize, 25, 25, 25, 20, 0] {
        let page = alice
            .rpc(
                "messages.getHistory",
                h(json!({"offset_id": offset_id, "limit": 25})),
            )
            .await;
        let got = ids(&page);
        assert_eq!(got.len(), want, "{page}");
        assert_eq!(page["_"], "messages.messagesSlice");
        assert_eq!(page["count"], 120);
        if let Some(last) = got.last() {
            offset_id = *last;
        }
        all.extend(got);
    }
    assert_eq!(all, desc(120, 1));

    // offset_id is exclusive; add_offset pages around or past the anchor.
    let below = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 50, "limit": 10})),
        )
        .await;
    assert_eq!(ids(&below), desc(49, 40));
    let around = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 50, "add_offset": -5, "limit": 10})),
        )
        .await;
    assert_eq!(ids(&around), desc(54, 45));
    let newer = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 50, "add_offset": -10, "limit": 10})),
        )
        .await;
    assert_eq!(ids(&newer), desc(59, 50));
    let skipped = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 50, "add_offset": 5, "limit": 10})),
        )
        .await;
    assert_eq!(ids(&skipped), desc(44, 35));
    let near_top = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 118, "add_offset": -5, "limit": 10})),
        )
        .await;
    assert_eq!(ids(&near_top), desc(120, 113));

    // add_offset is clamped to [-100, 100].
    let plus_100 = alice
        .rpc(
            "messages.getHistory",
            h(json!({"add_offset": 100, "limit": 10})),
        )
        .await;
    assert_eq!(ids(&plus_100), desc(20, 11));
    for raw in [101, 1000, i32::MAX as i64] {
        let page = alice
            .rpc(
                "messages.getHistory",
                h(json!({"add_offset": raw, "limit": 10})),
            )
            .await;
        assert_eq!(page, plus_100, "add_offset {raw}");
    }
    let minus_100 = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 50, "add_offset": -100, "limit": 10})),
        )
        .await;
    assert_eq!(ids(&minus_100).len(), 10);
    assert!(ids(&minus_100).iter().all(|id| *id >= 50), "{minus_100}");
    for raw in [-101, -1000, i32::MIN as i64] {
        let page = alice
            .rpc(
                "messages.getHistory",
                h(json!({"offset_id": 50, "add_offset": raw, "limit": 10})),
            )
            .await;
        assert_eq!(page, minus_100, "add_offset {raw}");
    }

    // max_id and min_id are exclusive bounds.
    let bounded = alice
        .rpc(
            "messages.getHistory",
            h(json!({"max_id": 60, "min_id": 50, "limit": 100})),
        )
        .await;
    assert_eq!(ids(&bounded), desc(59, 51));
    let top_of_bound = alice
        .rpc("messages.getHistory", h(json!({"max_id": 60, "limit": 5})))
        .await;
    assert_eq!(ids(&top_of_bound), desc(59, 55));
    let above_min = alice
        .rpc(
            "messages.getHistory",
            h(json!({"min_id": 115, "limit": 100})),
        )
        .await;
    assert_eq!(ids(&above_min), desc(120, 116));
    let inside = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 58, "max_id": 60, "min_id": 50, "limit": 100})),
        )
        .await;
    assert_eq!(ids(&inside), desc(57, 51));
    let around_bounded = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 55, "add_offset": -10, "max_id": 60, "min_id": 50, "limit": 20})),
        )
        .await;
    assert_eq!(ids(&around_bounded), desc(59, 51));

    // Bob sees the same chat with his own ids (6..=125) as incoming.
    let to_alice = bob.peer_of("+15550100").await;
    let bobs = bob
        .rpc("messages.getHistory", json!({"peer": to_alice, "limit": 3}))
        .await;
    assert_eq!(ids(&bobs), desc(125, 123));
    assert_eq!(texts(&bobs), vec!["m120", "m119", "m118"]);
    assert_eq!(bobs["messages"][0]["out"], false);
    assert_eq!(bobs["messages"][0]["from_id"]["user_id"], alice.user_id);
    assert_eq!(bobs["messages"][0]["peer_id"]["user_id"], alice.user_id);
    assert_eq!(bobs["count"], 120);
    assert_eq!(
        user_in(&bobs, alice.user_id)["access_hash"],
        to_alice["access_hash"]
    );
    let bob_dave = bob
        .rpc(
            "messages.getHistory",
            json!({"peer": bob_to_dave, "limit": 100}),
        )
        .await;
    assert_eq!(bob_dave["_"], "messages.messages");
    assert_eq!(ids(&bob_dave), desc(5, 1));

    // Carol cannot read the Alice–Bob chat: Alice's access hash for Bob is not hers.
    let stolen =
        json!({"_": "inputPeerUser", "user_id": bob.user_id, "access_hash": to_bob["access_hash"]});
    assert_eq!(
        carol
            .rpc_err("messages.getHistory", json!({"peer": stolen, "limit": 10}))
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );
    // Her own chat with Bob is empty, and none of Alice's ids exist for her.
    let carol_bob = carol.peer_of("+15550101").await;
    let empty = carol
        .rpc(
            "messages.getHistory",
            json!({"peer": carol_bob, "limit": 10}),
        )
        .await;
    assert_eq!(
        empty,
        json!({"_": "messages.messages", "messages": [], "chats": [], "users": []})
    );
    let theirs = carol
        .rpc(
            "messages.getMessages",
            json!({"id": [{"_": "inputMessageID", "id": 1}, {"_": "inputMessageID", "id": 120}]}),
        )
        .await;
    assert_eq!(
        theirs["messages"],
        json!([{"_": "messageEmpty", "id": 1}, {"_": "messageEmpty", "id": 120}])
    );
    // Deleted messages leave the pages and the count, for the deleter only.
    alice
        .rpc(
            "messages.deleteMessages",
            json!({"id": [50, 51, 52, 53, 54]}),
        )
        .await;
    let holed = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 56, "limit": 5})),
        )
        .await;
    assert_eq!(ids(&holed), vec![55, 49, 48, 47, 46]);
    assert_eq!(holed["count"], 115);
    let holed_around = alice
        .rpc(
            "messages.getHistory",
            h(json!({"offset_id": 50, "add_offset": -2, "limit": 4})),
        )
        .await;
    assert_eq!(ids(&holed_around), vec![56, 55, 49, 48]);
    let bob_whole = bob
        .rpc(
            "messages.getHistory",
            json!({"peer": bob.peer_of("+15550100").await, "offset_id": 61, "limit": 5}),
        )
        .await;
    assert_eq!(ids(&bob_whole), desc(60, 56));
    assert_eq!(bob_whole["count"], 120);

    // A made-up user id is refused, whatever the hash.
    let ghost = json!({"_": "inputPeerUser", "user_id": 999_999, "access_hash": 1});
    assert_eq!(
        alice
            .rpc_err("messages.getHistory", json!({"peer": ghost}))
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );
    s.stop().await;
}

/// Waits until the wall clock is past `date` (unix seconds).
async fn wait_past(date: i64) {
    loop {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        if now.as_secs() as i64 > date {
            return;
        }
        tokio::time::sleep(Duration::from_millis(
            1000 - u64::from(now.subsec_millis()) + 20,
        ))
        .await;
    }
}

#[tokio::test]
async fn get_history_offset_date() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let _bob = s.login("+15550101", "Bob").await;
    let to_bob = alice.peer_of("+15550101").await;
    let mut dates = Vec::new();
    for i in 1..=3 {
        dates.push(
            alice.send(&to_bob, &format!("early {i}")).await["date"]
                .as_i64()
                .unwrap(),
        );
    }
    wait_past(dates[2]).await;
    for i in 1..=3 {
        dates.push(
            alice.send(&to_bob, &format!("late {i}")).await["date"]
                .as_i64()
                .unwrap(),
        );
    }
    assert!(dates[3] > dates[2], "{dates:?}");
    let full = alice
        .rpc("messages.getHistory", json!({"peer": to_bob, "limit": 100}))
        .await;
    assert_eq!(ids(&full), desc(6, 1));
    let history_dates: Vec<i64> = full["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["date"].as_i64().unwrap())
        .collect();
    assert_eq!(
        history_dates,
        dates.iter().rev().copied().collect::<Vec<_>>()
    );

    // Only messages strictly older than offset_date, newest first.
    let older = |offset_date: i64| -> Vec<i64> {
        (1..=6)
            .rev()
            .filter(|id| dates[*id as usize - 1] < offset_date)
            .collect()
    };
    for offset_date in [dates[3], dates[5], dates[5] + 1, dates[0], dates[0] + 1] {
        let page = alice
            .rpc(
                "messages.getHistory",
                json!({"peer": to_bob, "offset_date": offset_date, "limit": 100}),
            )
            .await;
        let want = older(offset_date);
        assert_eq!(ids(&page), want, "offset_date {offset_date}");
        if want.len() == 6 {
            assert_eq!(page["_"], "messages.messages");
        } else {
            assert_eq!(page["_"], "messages.messagesSlice");
            assert_eq!(page["count"], 6);
        }
    }
    let early = alice
        .rpc(
            "messages.getHistory",
            json!({"peer": to_bob, "offset_date": dates[3], "limit": 2}),
        )
        .await;
    assert_eq!(ids(&early), vec![3, 2]);
    assert_eq!(early["_"], "messages.messagesSlice");
    // An anchor date with a window around it: the newer part starts at the first message at or
    // after the date.
    let around = alice
        .rpc(
            "messages.getHistory",
            json!({"peer": to_bob, "offset_date": dates[3], "add_offset": -2, "limit": 4}),
        )
        .await;
    assert_eq!(ids(&around), vec![5, 4, 3, 2]);
    s.stop().await;
}

// ---------------------------------------------------------------------------------------------
// messages.getMessages

#[tokio::test]
async fn get_messages_by_id_and_reply() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let bob = s.login("+15550101", "Bob").await;
    let carol = s.login("+15550102", "Carol").await;
    let _dave = s.login("+15550103", "Dave").await;
    let to_bob = alice.peer_of("+15550101").await;
    let to_alice = bob.peer_of("+15550100").await;
    send_many(&alice, &to_bob, "a", 3).await; // Alice 1..=3, Bob 1..=3
                                              // Carol has ids 1..=5 of her own, with other texts.
    let carol_to_dave = carol.peer_of("+15550103").await;
    send_many(&carol, &carol_to_dave, "carol secret ", 5).await;
    // Bob replies to Alice's second message (his id 2): Alice's copy is her id 4 replying to her 2.
    let reply = bob
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_alice, "message": "re a2", "random_id": 77, "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": 2}}),
        )
        .await;
    assert_eq!(reply["id"], 4);

    let id = |n: i64| json!({"_": "inputMessageID", "id": n});
    let got = alice
        .rpc(
            "messages.getMessages",
            json!({"id": [id(3), id(1), id(5), id(4), id(0), id(-1)]}),
        )
        .await;
    assert_eq!(got["_"], "messages.messages");
    let items = got["messages"].as_array().unwrap();
    assert_eq!(items.len(), 6);
    assert_eq!(
        (
            items[0]["_"].clone(),
            items[0]["id"].clone(),
            items[0]["message"].clone()
        ),
        (json!("message"), json!(3), json!("a3"))
    );
    assert_eq!(
        (items[1]["id"].clone(), items[1]["message"].clone()),
        (json!(1), json!("a1"))
    );
    assert_eq!(
        items[2],
        json!({"_": "messageEmpty", "id": 5}),
        "Carol's id 5 is not Alice's"
    );
    assert_eq!(items[3]["message"], "re a2");
    assert_eq!(items[3]["out"], false);
    assert_eq!(items[3]["reply_to"]["reply_to_msg_id"], 2);
    assert_eq!(items[4], json!({"_": "messageEmpty", "id": 0}));
    assert_eq!(items[5], json!({"_": "messageEmpty", "id": 0}));
    assert!(texts(&got).iter().all(|t| !t.contains("carol")));
    assert_eq!(user_ids(&got), HashSet::from([alice.user_id, bob.user_id]));
    assert_eq!(
        user_in(&got, bob.user_id)["access_hash"],
        to_bob["access_hash"]
    );

    // inputMessageReplyTo: the message the given one replies to, in the caller's ids.
    let replied = alice
        .rpc(
            "messages.getMessages",
            json!({"id": [{"_": "inputMessageReplyTo", "id": 4}]}),
        )
        .await;
    assert_eq!(replied["messages"].as_array().unwrap().len(), 1);
    assert_eq!(replied["messages"][0]["id"], 2);
    assert_eq!(replied["messages"][0]["message"], "a2");
    let bob_replied = bob
        .rpc(
            "messages.getMessages",
            json!({"id": [{"_": "inputMessageReplyTo", "id": 4}]}),
        )
        .await;
    assert_eq!(bob_replied["messages"][0]["id"], 2);
    assert_eq!(bob_replied["messages"][0]["out"], false);
    // Not a reply, or not the caller's message: messageEmpty.
    let none = alice
        .rpc("messages.getMessages", json!({"id": [{"_": "inputMessageReplyTo", "id": 1}, {"_": "inputMessageReplyTo", "id": 99}]}))
        .await;
    assert_eq!(
        none["messages"],
        json!([{"_": "messageEmpty", "id": 0}, {"_": "messageEmpty", "id": 0}])
    );

    // Deleted messages are gone for the deleter only.
    alice
        .rpc("messages.deleteMessages", json!({"id": [1]}))
        .await;
    let after = alice
        .rpc("messages.getMessages", json!({"id": [id(1), id(2)]}))
        .await;
    assert_eq!(after["messages"][0], json!({"_": "messageEmpty", "id": 1}));
    assert_eq!(after["messages"][1]["message"], "a2");
    let bobs = bob
        .rpc("messages.getMessages", json!({"id": [id(1)]}))
        .await;
    assert_eq!(bobs["messages"][0]["message"], "a1");

    // At most 200 ids.
    let ids200: Vec<Value> = (1..=200).map(id).collect();
    let ok = alice
        .rpc("messages.getMessages", json!({"id": ids200}))
        .await;
    assert_eq!(ok["messages"].as_array().unwrap().len(), 200);
    let ids201: Vec<Value> = (1..=201).map(id).collect();
    assert_eq!(
        alice
            .rpc_err("messages.getMessages", json!({"id": ids201}))
            .await,
        (400, "LIMIT_INVALID".to_string())
    );
    s.stop().await;
}

// ---------------------------------------------------------------------------------------------
// messages.search

#[tokio::test]
async fn search_is_per_owner_and_literal() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let bob = s.login("+15550101", "Bob").await;
    let carol = s.login("+15550102", "Carol").await;
    let to_bob = alice.peer_of("+15550101").await;
    let to_carol = alice.peer_of("+15550102").await;
    let bob_to_carol = bob.peer_of("+15550102").await;
    for t in [
        "Hello World",
        "hello there",
        "nothing here",
        "HELLO again",
        "100% sure",
        "50_50 chance",
        "a%b",
        "x_y",
        "Привет Мир",
    ] {
        alice.send(&to_bob, t).await; // Alice ids 1..=9
    }
    alice.send(&to_carol, "hello carol").await; // Alice 10
    bob.send(&bob_to_carol, "hello from bob to carol").await;
    bob.send(&bob_to_carol, "100% bob").await;

    let search = |peer: Value, q: &str| json!({"peer": peer, "q": q, "limit": 100});
    let everywhere = || json!({"_": "inputPeerEmpty"});

    // Case-insensitive substring, newest first, across all of Alice's chats.
    let hello = alice
        .rpc("messages.search", search(everywhere(), "hello"))
        .await;
    assert_eq!(hello["_"], "messages.messages");
    assert_eq!(ids(&hello), vec![10, 4, 2, 1]);
    assert_eq!(
        texts(&hello),
        vec!["hello carol", "HELLO again", "hello there", "Hello World"]
    );
    assert_eq!(
        user_in(&hello, carol.user_id)["access_hash"],
        to_carol["access_hash"]
    );
    let mixed = alice
        .rpc("messages.search", search(everywhere(), "hElLo"))
        .await;
    assert_eq!(ids(&mixed), ids(&hello));
    let inner = alice
        .rpc("messages.search", search(everywhere(), "LL"))
        .await;
    assert_eq!(ids(&inner), vec![10, 4, 2, 1]);
    let cyrillic = alice
        .rpc("messages.search", search(everywhere(), "мир"))
        .await;
    assert_eq!(ids(&cyrillic), vec![9]);
    // A peer filter.
    let with_bob = alice
        .rpc("messages.search", search(to_bob.clone(), "hello"))
        .await;
    assert_eq!(ids(&with_bob), vec![4, 2, 1]);
    let with_carol = alice
        .rpc("messages.search", search(to_carol.clone(), "hello"))
        .await;
    assert_eq!(ids(&with_carol), vec![10]);
    // A slice when the page is smaller than the matches; count is of every match.
    let page = alice
        .rpc(
            "messages.search",
            json!({"peer": everywhere(), "q": "hello", "limit": 2}),
        )
        .await;
    assert_eq!(page["_"], "messages.messagesSlice");
    assert_eq!(page["count"], 4);
    assert_eq!(ids(&page), vec![10, 4]);
    let next = alice
        .rpc(
            "messages.search",
            json!({"peer": everywhere(), "q": "hello", "limit": 2, "offset_id": 4}),
        )
        .await;
    assert_eq!(ids(&next), vec![2, 1]);

    // LIKE metacharacters are literal.
    let percent = alice
        .rpc("messages.search", search(everywhere(), "%"))
        .await;
    assert_eq!(ids(&percent), vec![7, 5]);
    let underscore = alice
        .rpc("messages.search", search(everywhere(), "_"))
        .await;
    assert_eq!(ids(&underscore), vec![8, 6]);
    let pct_sure = alice
        .rpc("messages.search", search(everywhere(), "0% s"))
        .await;
    assert_eq!(texts(&pct_sure), vec!["100% sure"]);
    let a_b = alice
        .rpc("messages.search", search(everywhere(), "a_b"))
        .await;
    assert_eq!(ids(&a_b), Vec::<i64>::new(), "'_' must not match '%'");
    let backslash = alice
        .rpc("messages.search", search(everywhere(), "\\"))
        .await;
    assert_eq!(ids(&backslash), Vec::<i64>::new());

    // Never another owner's messages: Carol sees her two incoming hellos, with her own ids.
    let carols = carol
        .rpc("messages.search", search(everywhere(), "hello"))
        .await;
    assert_eq!(
        texts(&carols),
        vec!["hello from bob to carol", "hello carol"]
    );
    assert!(carols["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["out"] == false));
    assert_eq!(ids(&carols), vec![2, 1]);
    let carol_pct = carol
        .rpc("messages.search", search(everywhere(), "100%"))
        .await;
    assert_eq!(texts(&carol_pct), vec!["100% bob"]);
    let bobs = bob
        .rpc("messages.search", search(everywhere(), "hello"))
        .await;
    assert_eq!(
        texts(&bobs),
        vec![
            "hello from bob to carol",
            "HELLO again",
            "hello there",
            "Hello World"
        ]
    );
    // Naming a chat with someone else's access hash is refused.
    let stolen =
        json!({"_": "inputPeerUser", "user_id": bob.user_id, "access_hash": to_bob["access_hash"]});
    assert_eq!(
        carol
            .rpc_err("messages.search", search(stolen, "hello"))
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );

    // Deleted messages are not found.
    alice
        .rpc("messages.deleteMessages", json!({"id": [2]}))
        .await;
    let after = alice
        .rpc("messages.search", search(to_bob.clone(), "hello"))
        .await;
    assert_eq!(ids(&after), vec![4, 1]);
    // Bob still has his copy.
    let bob_after = bob
        .rpc(
            "messages.search",
            search(bob.peer_of("+15550100").await, "hello there"),
        )
        .await;
    assert_eq!(texts(&bob_after), vec!["hello there"]);

    // The query is at most 256 code points.
    let at_limit = "ж".repeat(256);
    let ok = alice
        .rpc("messages.search", search(everywhere(), &at_limit))
        .await;
    assert_eq!(ids(&ok), Vec::<i64>::new());
    let over = "ж".repeat(257);
    assert_eq!(
        alice
            .rpc_err("messages.search", search(everywhere(), &over))
            .await,
        (400, "SEARCH_QUERY_EMPTY".to_string())
    );
    s.stop().await;
}

// ---------------------------------------------------------------------------------------------
// messages.getPeerDialogs, users.getUsers, contacts.resolvePhone

#[tokio::test]
async fn get_peer_dialogs_with_state() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let bob = s.login("+15550101", "Bob").await;
    let carol = s.login("+15550102", "Carol").await;
    let _dave = s.login("+15550103", "Dave").await;
    let to_bob = alice.peer_of("+15550101").await;
    let to_carol = alice.peer_of("+15550102").await;
    let to_dave = alice.peer_of("+15550103").await;
    alice.send(&to_bob, "b1").await; // 1
    alice.send(&to_carol, "c1").await; // 2
    let carol_to_alice = carol.peer_of("+15550100").await;
    carol.send(&carol_to_alice, "from carol").await; // Alice 3
    carol.send(&carol_to_alice, "from carol again").await; // Alice 4

    let dp = |p: &Value| json!({"_": "inputDialogPeer", "peer": p});
    let answer = alice
        .rpc(
            "messages.getPeerDialogs",
            json!({"peers": [dp(&to_carol), dp(&to_dave), dp(&to_bob)]}),
        )
        .await;
    assert_eq!(answer["_"], "messages.peerDialogs");
    // In the order asked; Dave has no dialog.
    assert_eq!(dialog_peers(&answer), vec![carol.user_id, bob.user_id]);
    assert_eq!(answer["dialogs"][0]["top_message"], 4);
    assert_eq!(answer["dialogs"][0]["unread_count"], 2);
    assert_eq!(answer["dialogs"][1]["top_message"], 1);
    assert_eq!(answer["dialogs"][1]["unread_count"], 0);
    assert_eq!(message_in(&answer, 4)["message"], "from carol again");
    assert_eq!(message_in(&answer, 1)["message"], "b1");
    assert_eq!(
        user_in(&answer, carol.user_id)["access_hash"],
        to_carol["access_hash"]
    );
    assert_eq!(
        user_in(&answer, bob.user_id)["access_hash"],
        to_bob["access_hash"]
    );
    let state = alice.state().await;
    assert_eq!(answer["state"]["_"], "updates.state");
    assert_eq!(answer["state"]["pts"], state["pts"]);
    assert_eq!(answer["state"]["pts"], 4);
    assert_eq!(answer["state"]["unread_count"], 2);

    // Saved Messages, before and after it exists.
    let none = alice
        .rpc(
            "messages.getPeerDialogs",
            json!({"peers": [dp(&self_peer())]}),
        )
        .await;
    assert_eq!(none["dialogs"], json!([]));
    alice.send(&self_peer(), "memo").await;
    let saved = alice
        .rpc(
            "messages.getPeerDialogs",
            json!({"peers": [dp(&self_peer())]}),
        )
        .await;
    assert_eq!(dialog_peers(&saved), vec![alice.user_id]);
    assert_eq!(saved["state"]["pts"], 5);

    // Refusals.
    let stolen = json!({"_": "inputPeerUser", "user_id": bob.user_id, "access_hash": to_carol["access_hash"]});
    assert_eq!(
        alice
            .rpc_err("messages.getPeerDialogs", json!({"peers": [dp(&stolen)]}))
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );
    let many: Vec<Value> = (0..101).map(|_| dp(&to_bob)).collect();
    assert_eq!(
        alice
            .rpc_err("messages.getPeerDialogs", json!({"peers": many}))
            .await,
        (400, "LIMIT_INVALID".to_string())
    );
    let hundred: Vec<Value> = (0..100).map(|_| dp(&to_bob)).collect();
    alice
        .rpc("messages.getPeerDialogs", json!({"peers": hundred}))
        .await;
    s.stop().await;
}

#[tokio::test]
async fn get_users_checks_access_hashes_and_keeps_order() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let bob = s.login("+15550101", "Bob").await;
    let carol = s.login("+15550102", "Carol").await;
    let to_bob = alice.peer_of("+15550101").await;
    let to_carol = alice.peer_of("+15550102").await;
    let iu = |p: &Value| json!({"_": "inputUser", "user_id": p["user_id"], "access_hash": p["access_hash"]});

    let users = alice
        .rpc("users.getUsers", json!({"id": [iu(&to_carol), {"_": "inputUserSelf"}, iu(&to_bob), {"_": "inputUserEmpty"}]}))
        .await;
    let list = users.as_array().expect("a vector of users");
    assert_eq!(list.len(), 3);
    assert_eq!(
        list.iter()
            .map(|u| u["id"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        vec![carol.user_id, alice.user_id, bob.user_id]
    );
    assert_eq!(list[0]["_"], "user");
    assert_eq!(list[0]["first_name"], "Carol");
    assert_eq!(list[0]["access_hash"], to_carol["access_hash"]);
    assert_eq!(list[0]["self"], false);
    assert!(list[0].get("phone").is_none(), "{}", list[0]);
    assert_eq!(list[1]["self"], true);
    assert_eq!(list[1]["first_name"], "Alice");
    assert_eq!(list[1]["phone"], "15550100");
    assert_eq!(list[2]["access_hash"], to_bob["access_hash"]);
    assert!(list[2].get("phone").is_none());
    // Naming oneself by id works too.
    let me = alice
        .rpc(
            "users.getUsers",
            json!({"id": [{"_": "inputUser", "user_id": alice.user_id, "access_hash": 0}]}),
        )
        .await;
    assert_eq!(me[0]["self"], true);

    // The right id with another viewer's hash, or a made-up hash.
    let bob_for_carol = carol.peer_of("+15550101").await;
    assert_ne!(bob_for_carol["access_hash"], to_bob["access_hash"]);
    for hash in [bob_for_carol["access_hash"].clone(), json!(0), json!(12345)] {
        let forged = json!({"_": "inputUser", "user_id": bob.user_id, "access_hash": hash});
        assert_eq!(
            alice
                .rpc_err("users.getUsers", json!({"id": [forged]}))
                .await,
            (400, "PEER_ID_INVALID".to_string())
        );
    }
    // One bad entry spoils the call.
    let forged =
        json!({"_": "inputUser", "user_id": carol.user_id, "access_hash": to_bob["access_hash"]});
    assert_eq!(
        alice
            .rpc_err("users.getUsers", json!({"id": [iu(&to_bob), forged]}))
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );

    // Ids that cannot name a user at all.
    for bad in [
        json!({"_": "inputUser", "user_id": 0, "access_hash": 0}),
        json!({"_": "inputUserFromMessage"}),
    ] {
        assert_eq!(
            alice.rpc_err("users.getUsers", json!({"id": [bad]})).await,
            (400, "USER_ID_INVALID".to_string())
        );
    }

    let many: Vec<Value> = (0..201).map(|_| json!({"_": "inputUserSelf"})).collect();
    assert_eq!(
        alice.rpc_err("users.getUsers", json!({"id": many})).await,
        (400, "LIMIT_INVALID".to_string())
    );
    let two_hundred: Vec<Value> = (0..200).map(|_| json!({"_": "inputUserSelf"})).collect();
    assert_eq!(
        alice
            .rpc("users.getUsers", json!({"id": two_hundred}))
            .await
            .as_array()
            .unwrap()
            .len(),
        200
    );
    s.stop().await;
}

#[tokio::test]
async fn resolve_phone_gives_a_per_viewer_access_hash() {
    let s = TestServer::start().await;
    let alice = s.login("+15550100", "Alice").await;
    let bob = s.login("+15550101", "Bob").await;
    let carol = s.login("+15550102", "Carol").await;

    let by_alice = alice
        .rpc("contacts.resolvePhone", json!({"phone": "+15550101"}))
        .await;
    assert_eq!(by_alice["_"], "contacts.resolvedPeer");
    assert_eq!(
        by_alice["peer"],
        json!({"_": "peerUser", "user_id": bob.user_id})
    );
    assert_eq!(by_alice["chats"], json!([]));
    let u = &by_alice["users"][0];
    assert_eq!(by_alice["users"].as_array().unwrap().len(), 1);
    assert_eq!(
        (
            u["id"].as_i64(),
            u["first_name"].as_str(),
            u["self"].as_bool()
        ),
        (Some(bob.user_id), Some("Bob"), Some(false))
    );
    // Formatting does not matter.
    let formatted = alice
        .rpc("contacts.resolvePhone", json!({"phone": "+1 (555) 010-1"}))
        .await;
    assert_eq!(formatted["users"][0]["access_hash"], u["access_hash"]);
    let bare = alice
        .rpc("contacts.resolvePhone", json!({"phone": "15550101"}))
        .await;
    assert_eq!(bare["users"][0]["access_hash"], u["access_hash"]);

    // Each viewer has its own access hash, good only for that viewer.
    let by_carol = carol
        .rpc("contacts.resolvePhone", json!({"phone": "+15550101"}))
        .await;
    assert_ne!(by_carol["users"][0]["access_hash"], u["access_hash"]);
    let alice_peer =
        json!({"_": "inputPeerUser", "user_id": bob.user_id, "access_hash": u["access_hash"]});
    let carol_peer = json!({"_": "inputPeerUser", "user_id": bob.user_id, "access_hash": by_carol["users"][0]["access_hash"]});
    alice.send(&alice_peer, "works").await;
    assert_eq!(
        carol
            .rpc_err(
                "messages.sendMessage",
                json!({"peer": alice_peer, "message": "x", "random_id": 1})
            )
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );
    assert_eq!(
        alice
            .rpc_err(
                "messages.sendMessage",
                json!({"peer": carol_peer, "message": "x", "random_id": 2})
            )
            .await,
        (400, "PEER_ID_INVALID".to_string())
    );
    // Resolving oneself.
    let me = alice
        .rpc("contacts.resolvePhone", json!({"phone": "+15550100"}))
        .await;
    assert_eq!(me["users"][0]["self"], true);
    assert_eq!(me["users"][0]["id"], alice.user_id);

    // Unknown and malformed numbers.
    assert_eq!(
        alice
            .rpc_err("contacts.resolvePhone", json!({"phone": "+15559999"}))
            .await,
        (400, "PHONE_NOT_OCCUPIED".to_string())
    );
    for bad in ["abc", "+12", "", "+1555+0101", "+1234567890123456"] {
        assert_eq!(
            alice
                .rpc_err("contacts.resolvePhone", json!({"phone": bad}))
                .await,
            (400, "PHONE_NUMBER_INVALID".to_string()),
            "phone {bad:?}"
        );
    }
    // Reads append nothing.
    assert_eq!(pts(&carol).await, 0);
    assert_eq!(pts(&alice).await, 1);
    s.stop().await;
}
