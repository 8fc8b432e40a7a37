//! `messages.deleteMessages` and `messages.deleteHistory` over HTTP: whose boxes go, each owner's own
//! `updateDeleteMessages`, the id limits, the block gate, batches and what becomes of the dialog.

use std::time::Instant;

use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

async fn pts(d: &Device) -> i64 {
    d.state().await["pts"].as_i64().expect("state.pts")
}

/// The read models are exactly what the log replays to.
async fn assert_projections_clean(s: &TestServer) {
    let report = projections::verify::verify(&s.pool).await.expect("verify");
    assert!(
        report.is_clean(),
        "projections verify: {:?}",
        report.differences
    );
}

/// The ids of a chat's visible messages, newest first (up to 100).
async fn ids(d: &Device, peer: &Value) -> Vec<i64> {
    let h = d
        .rpc("messages.getHistory", json!({"peer": peer, "limit": 100}))
        .await;
    h["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect()
}

async fn history_count(d: &Device, peer: &Value) -> i64 {
    let h = d
        .rpc("messages.getHistory", json!({"peer": peer, "limit": 1}))
        .await;
    match h["_"].as_str() {
        Some("messages.messagesSlice") => h["count"].as_i64().unwrap(),
        _ => h["messages"].as_array().unwrap().len() as i64,
    }
}

/// The dialog with `peer_id` in the main folder, and its top message object if any.
async fn dialog(d: &Device, peer_id: i64) -> Option<(Value, Option<Value>)> {
    let r = d.rpc("messages.getDialogs", json!({"limit": 100})).await;
    let dialog = r["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["peer"]["user_id"] == peer_id)?
        .clone();
    let top = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == dialog["top_message"] && m["peer_id"]["user_id"] == peer_id)
        .cloned();
    Some((dialog, top))
}

async fn difference(d: &Device, from: i64) -> Value {
    d.rpc(
        "updates.getDifference",
        json!({"pts": from, "date": 0, "qts": 0}),
    )
    .await
}

/// The `updateDeleteMessages` of a difference, as (sorted ids, pts, pts_count).
fn deletions(diff: &Value) -> Vec<(Vec<i64>, i64, i64)> {
    diff["other_updates"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|u| u["_"] == "updateDeleteMessages")
        .map(|u| {
            let mut ids: Vec<i64> = u["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_i64().unwrap())
                .collect();
            ids.sort();
            (
                ids,
                u["pts"].as_i64().unwrap(),
                u["pts_count"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn affected(r: &Value) -> (i64, i64) {
    assert_eq!(r["_"], "messages.affectedMessages", "{r}");
    (r["pts"].as_i64().unwrap(), r["pts_count"].as_i64().unwrap())
}

fn affected_history(r: &Value) -> (i64, i64, i64) {
    assert_eq!(r["_"], "messages.affectedHistory", "{r}");
    (
        r["pts"].as_i64().unwrap(),
        r["pts_count"].as_i64().unwrap(),
        r["offset"].as_i64().unwrap(),
    )
}

/// Alice and Bob, with their box ids out of step: Alice has sent one message to Carol and Bob two,
/// so in their chat Alice's ids start at 2 and Bob's at 3.
struct Chat {
    s: TestServer,
    alice: Device,
    bob: Device,
    carol: Device,
    to_bob: Value,
    to_alice: Value,
}

async fn chat() -> Chat {
    let s = TestServer::start().await;
    let alice = s.login("+15552001", "Alice").await;
    let bob = s.login("+15552002", "Bob").await;
    let carol = s.login("+15552003", "Carol").await;
    let a_carol = alice.peer_of("+15552003").await;
    let b_carol = bob.peer_of("+15552003").await;
    alice.send(&a_carol, "hi carol").await;
    bob.send(&b_carol, "hi carol").await;
    bob.send(&b_carol, "again").await;
    let to_bob = alice.peer_of("+15552002").await;
    let to_alice = bob.peer_of("+15552001").await;
    Chat {
        s,
        alice,
        bob,
        carol,
        to_bob,
        to_alice,
    }
}

#[tokio::test]
async fn without_revoke_only_the_callers_box_goes() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    for t in ["one", "two", "three"] {
        alice.send(&to_bob, t).await; // Alice 2, 3, 4; Bob 3, 4, 5
    }
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let (p, n) = affected(
        &alice
            .rpc("messages.deleteMessages", json!({"id": [2, 3]}))
            .await,
    );
    assert_eq!((p, n), (pa + 2, 2));
    assert_eq!(ids(&alice, &to_bob).await, vec![4]);
    assert_eq!(
        ids(&bob, &to_alice).await,
        vec![5, 4, 3],
        "the peer still sees every message"
    );
    assert_eq!(pts(&bob).await, pb);
    assert_eq!(difference(&bob, pb).await["_"], "updates.differenceEmpty");
    assert_eq!(
        deletions(&difference(&alice, pa).await),
        vec![(vec![2, 3], pa + 2, 2)]
    );

    // A repeat finds nothing left: pts_count 0 at the current pts.
    let (p, n) = affected(
        &alice
            .rpc("messages.deleteMessages", json!({"id": [2, 3]}))
            .await,
    );
    assert_eq!((p, n), (pa + 2, 0));
    // Only ids still in the caller's box count: 3 is gone, and Alice never had a 5.
    let (p, n) = affected(
        &alice
            .rpc("messages.deleteMessages", json!({"id": [3, 4, 5]}))
            .await,
    );
    assert_eq!((p, n), (pa + 3, 1));
    assert_eq!(ids(&alice, &to_bob).await, Vec::<i64>::new());
    assert_eq!(ids(&bob, &to_alice).await, vec![5, 4, 3]);
    // A deleted message is gone from getMessages too.
    let got = alice
        .rpc(
            "messages.getMessages",
            json!({"id": [{"_": "inputMessageID", "id": 4}]}),
        )
        .await;
    assert_eq!(got["messages"][0]["_"], "messageEmpty");
    s.stop().await;
}

#[tokio::test]
async fn revoke_deletes_the_peers_copies_with_the_peers_own_ids() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    for t in ["one", "two", "three"] {
        alice.send(&to_bob, t).await; // Alice 2, 3, 4; Bob 3, 4, 5
    }
    bob.send(&to_alice, "reply").await; // Bob 6; Alice 5
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    // An outgoing and an incoming message, plus ids that cannot be box ids (dropped silently).
    let r = alice
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [0, -1, 3, i64::from(i32::MAX) + 1, 5, i64::MAX]}),
        )
        .await;
    assert_eq!(affected(&r), (pa + 2, 2));
    assert_eq!(ids(&alice, &to_bob).await, vec![4, 2]);
    assert_eq!(ids(&bob, &to_alice).await, vec![5, 3]);
    assert_eq!(pts(&bob).await, pb + 2);
    assert_eq!(
        deletions(&difference(&alice, pa).await),
        vec![(vec![3, 5], pa + 2, 2)]
    );
    let db = difference(&bob, pb).await;
    assert_eq!(
        deletions(&db),
        vec![(vec![4, 6], pb + 2, 2)],
        "Bob's update names Bob's ids: {db}"
    );
    assert_eq!(db["state"]["pts"], pb + 2);

    // Mixed with one real id, the impossible ids count for nothing.
    let r = alice
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [-5, 0, 4, 4_294_967_296_i64]}),
        )
        .await;
    assert_eq!(affected(&r), (pa + 3, 1));
    assert_eq!(ids(&bob, &to_alice).await, vec![3]);
    assert_eq!(pts(&bob).await, pb + 3);

    // The peer already deleted its own copy: only the caller's box changes, the peer gets nothing.
    bob.rpc("messages.deleteMessages", json!({"id": [3]})).await;
    let pb = pts(&bob).await;
    let r = alice
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [2]}),
        )
        .await;
    assert_eq!(affected(&r), (pa + 4, 1));
    assert_eq!(pts(&bob).await, pb);
    assert_eq!(ids(&alice, &to_bob).await, Vec::<i64>::new());
    s.stop().await;
}

#[tokio::test]
async fn revoke_across_two_chats_gives_each_peer_its_own_update() {
    let Chat {
        s,
        alice,
        bob,
        carol,
        to_bob,
        to_alice,
    } = chat().await;
    // Carol's box: 1 is Alice's "hi carol", 2 and 3 are Bob's.
    alice.send(&to_bob, "to bob").await; // Alice 2; Bob 3
    let to_alice_from_carol = carol.peer_of("+15552001").await;
    let (pa, pb, pc) = (pts(&alice).await, pts(&bob).await, pts(&carol).await);

    let r = alice
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [2, 1]}),
        )
        .await;
    assert_eq!(affected(&r), (pa + 2, 2));
    assert_eq!(
        deletions(&difference(&alice, pa).await),
        vec![(vec![1, 2], pa + 2, 2)]
    );
    assert_eq!(
        deletions(&difference(&bob, pb).await),
        vec![(vec![3], pb + 1, 1)]
    );
    assert_eq!(
        deletions(&difference(&carol, pc).await),
        vec![(vec![1], pc + 1, 1)]
    );
    assert_eq!(ids(&carol, &to_alice_from_carol).await, Vec::<i64>::new());
    assert_eq!(ids(&bob, &to_alice).await, Vec::<i64>::new());

    // If one of the peers blocked the caller, the whole revoke is refused.
    alice.send(&to_bob, "again to bob").await; // Alice 3; Bob 4
    let a_carol = alice.peer_of("+15552003").await;
    alice.send(&a_carol, "again to carol").await; // Alice 4; Carol 4
    carol
        .rpc("contacts.block", json!({"id": to_alice_from_carol}))
        .await;
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);
    let (_, err) = alice
        .rpc_err(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [3, 4]}),
        )
        .await;
    assert_eq!(err, "DELETE_MESSAGES_FORBIDDEN");
    assert_eq!((pts(&alice).await, pts(&bob).await), (pa, pb));
    assert_eq!(ids(&bob, &to_alice).await, vec![4]);
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn id_count_limits() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    alice.send(&to_bob, "keep me").await; // Alice 2; Bob 3
    alice.send(&to_bob, "delete me").await; // Alice 3; Bob 4
    let pa = pts(&alice).await;

    let nonexistent: Vec<i64> = (100_000..101_000).collect();
    assert_eq!(nonexistent.len(), 1000);
    let r = alice
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": nonexistent}),
        )
        .await;
    assert_eq!(affected(&r), (pa, 0));

    let mut with_real: Vec<i64> = (100_000..100_999).collect();
    with_real.push(3);
    assert_eq!(with_real.len(), 1000);
    let r = alice
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": with_real}),
        )
        .await;
    assert_eq!(affected(&r), (pa + 1, 1));
    assert_eq!(ids(&bob, &to_alice).await, vec![3]);

    let too_many: Vec<i64> = (1..=1001).collect();
    let (_, err) = alice
        .rpc_err("messages.deleteMessages", json!({"id": too_many}))
        .await;
    assert_eq!(err, "MESSAGE_IDS_TOO_MUCH");
    assert_eq!(pts(&alice).await, pa + 1);
    assert_eq!(
        ids(&alice, &to_bob).await,
        vec![2],
        "a refused call deletes nothing"
    );

    let r = alice
        .rpc("messages.deleteMessages", json!({"id": []}))
        .await;
    assert_eq!(affected(&r), (pa + 1, 0));
    s.stop().await;
}

#[tokio::test]
async fn a_peer_who_blocked_the_caller_forbids_revoke_only() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    for t in ["one", "two", "three"] {
        alice.send(&to_bob, t).await; // Alice 2, 3, 4; Bob 3, 4, 5
    }
    bob.rpc("contacts.block", json!({"id": to_alice})).await;
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let (_, err) = alice
        .rpc_err(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [2]}),
        )
        .await;
    assert_eq!(err, "DELETE_MESSAGES_FORBIDDEN");
    let (_, err) = alice
        .rpc_err(
            "messages.deleteHistory",
            json!({"revoke": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(err, "DELETE_MESSAGES_FORBIDDEN");
    assert_eq!(pts(&alice).await, pa);
    assert_eq!(pts(&bob).await, pb);
    assert_eq!(ids(&alice, &to_bob).await, vec![4, 3, 2]);
    assert_eq!(ids(&bob, &to_alice).await, vec![5, 4, 3]);

    // The gate protects the one who blocked: Bob may still revoke, and Alice's copy goes.
    let r = bob
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [5]}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 1, 1));
    assert_eq!(pts(&alice).await, pa + 1);
    assert_eq!(
        deletions(&difference(&alice, pa).await),
        vec![(vec![4], pa + 1, 1)]
    );
    let pa = pa + 1;
    let pb = pb + 1;

    // Without revoke only Alice's own box changes, which the block does not protect.
    let r = alice
        .rpc("messages.deleteMessages", json!({"id": [2]}))
        .await;
    assert_eq!(affected(&r), (pa + 1, 1));
    assert_eq!(ids(&alice, &to_bob).await, vec![3]);
    assert_eq!(ids(&bob, &to_alice).await, vec![4, 3]);
    let r = alice
        .rpc("messages.deleteHistory", json!({"peer": to_bob}))
        .await;
    assert_eq!(affected_history(&r), (pa + 2, 1, 0));
    assert_eq!(ids(&alice, &to_bob).await, Vec::<i64>::new());
    assert_eq!(ids(&bob, &to_alice).await, vec![4, 3]);
    assert_eq!(pts(&bob).await, pb);
    s.stop().await;
}

/// The peer ids of a dialog list, in list order.
async fn dialog_order(d: &Device) -> Vec<i64> {
    let r = d.rpc("messages.getDialogs", json!({"limit": 100})).await;
    r["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["peer"]["user_id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn dialog_top_message_and_unread_count_follow_deletions() {
    let Chat {
        s,
        alice,
        bob,
        carol,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "first").await; // Alice 2; Bob 3
    alice.send(&to_bob, "second").await; // Alice 3; Bob 4
    carol
        .send(&carol.peer_of("+15552002").await, "from carol")
        .await; // Bob 5
    alice.send(&to_bob, "third").await; // Alice 4; Bob 6
    let (d, top) = dialog(&bob, alice.user_id).await.expect("Bob's dialog");
    assert_eq!(
        (d["top_message"].clone(), d["unread_count"].clone()),
        (json!(6), json!(3))
    );
    assert_eq!(top.unwrap()["message"], "third");
    assert_eq!(dialog_order(&bob).await, vec![alice.user_id, carol.user_id]);

    // Alice revokes the newest: both dialogs fall back to "second", and in Bob's list the chat
    // with Alice drops below Carol's.
    alice
        .rpc(
            "messages.deleteMessages",
            json!({"revoke": true, "id": [4]}),
        )
        .await;
    let (d, top) = dialog(&bob, alice.user_id).await.expect("Bob's dialog");
    assert_eq!(d["top_message"], 4);
    assert_eq!(d["unread_count"], 2);
    assert_eq!(top.expect("top message in the answer")["message"], "second");
    assert_eq!(dialog_order(&bob).await, vec![carol.user_id, alice.user_id]);
    let (d, top) = dialog(&alice, bob.user_id).await.expect("Alice's dialog");
    assert_eq!(d["top_message"], 3);
    assert_eq!(d["unread_count"], 0);
    assert_eq!(top.expect("top message in the answer")["message"], "second");

    // Bob reads "first" only, then deletes his copy of "second": one unread fewer, top is "first".
    bob.rpc(
        "messages.readHistory",
        json!({"peer": to_alice, "max_id": 3}),
    )
    .await;
    let (d, _) = dialog(&bob, alice.user_id).await.unwrap();
    assert_eq!(d["unread_count"], 1);
    bob.rpc("messages.deleteMessages", json!({"id": [4]})).await;
    let (d, top) = dialog(&bob, alice.user_id).await.expect("Bob's dialog");
    assert_eq!(d["top_message"], 3);
    assert_eq!(d["unread_count"], 0);
    assert_eq!(d["read_inbox_max_id"], 3);
    assert_eq!(top.expect("top message in the answer")["message"], "first");
    assert_eq!(
        bob.state().await["unread_count"],
        1,
        "only Carol's message is unread"
    );
    // Alice's side is untouched by Bob's own deletion.
    let (d, _) = dialog(&alice, bob.user_id).await.unwrap();
    assert_eq!(d["top_message"], 3);
    assert_eq!(ids(&alice, &to_bob).await, vec![3, 2]);

    // A new message moves the top up again and counts as unread.
    alice.send(&to_bob, "fourth").await; // Alice 5; Bob 7
    let (d, top) = dialog(&bob, alice.user_id).await.unwrap();
    assert_eq!(
        (d["top_message"].clone(), d["unread_count"].clone()),
        (json!(7), json!(1))
    );
    assert_eq!(top.unwrap()["message"], "fourth");
    assert_eq!(dialog_order(&bob).await, vec![alice.user_id, carol.user_id]);
    assert_projections_clean(&s).await;
    s.stop().await;
}

/// Sends `n` messages in the chat, from both sides at once (one task each: every send locks the
/// same pair of accounts, so more tasks only queue up on that lock).
async fn flood(alice: &Device, to_bob: &Value, bob: &Device, to_alice: &Value, n: usize) {
    const TASKS: usize = 2;
    let mut tasks = Vec::new();
    for k in 0..TASKS {
        let (dev, peer) = if k % 2 == 0 {
            (alice.clone(), to_bob.clone())
        } else {
            (bob.clone(), to_alice.clone())
        };
        tasks.push(tokio::spawn(async move {
            for i in (k..n).step_by(TASKS) {
                dev.send(&peer, &format!("m{i}")).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("sender task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_history_goes_in_batches_of_1000_newest_first() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    let started = Instant::now();
    flood(&alice, &to_bob, &bob, &to_alice, 1003).await;
    eprintln!("1003 sends took {:?}", started.elapsed());
    // Alice's ids in the chat are 2..=1004, Bob's 3..=1005.
    assert_eq!(history_count(&alice, &to_bob).await, 1003);
    assert_eq!(ids(&alice, &to_bob).await[0], 1004);
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"peer": to_bob, "max_id": 0}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 1000, 1000, 1));
    assert_eq!(
        ids(&alice, &to_bob).await,
        vec![4, 3, 2],
        "the 1000 newest went first"
    );
    assert!(
        dialog(&alice, bob.user_id).await.is_some(),
        "messages remain, so the dialog stays"
    );

    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"peer": to_bob, "max_id": 0}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 1003, 3, 0));
    assert_eq!(ids(&alice, &to_bob).await, Vec::<i64>::new());
    let r = alice
        .rpc("messages.deleteHistory", json!({"peer": to_bob}))
        .await;
    assert_eq!(affected_history(&r), (pa + 1003, 0, 0));

    // Each batch is one bounded update, with exactly the ids it deleted.
    let d = difference(&alice, pa).await;
    let dels = deletions(&d);
    assert_eq!(dels.len(), 2, "{}", d["other_updates"]);
    assert_eq!(dels[0], ((5..=1004).collect::<Vec<i64>>(), pa + 1000, 1000));
    assert_eq!(dels[1], (vec![2, 3, 4], pa + 1003, 3));

    // Without just_clear the empty dialog is gone; Bob's side is untouched.
    assert!(dialog(&alice, bob.user_id).await.is_none());
    assert_eq!(history_count(&bob, &to_alice).await, 1003);
    assert_eq!(pts(&bob).await, pb);
    assert!(dialog(&bob, alice.user_id).await.is_some());

    // The next message brings the dialog back.
    let sent = bob.send(&to_alice, "still there?").await;
    assert_eq!(sent["id"], 1006);
    let (d, top) = dialog(&alice, bob.user_id)
        .await
        .expect("the dialog is back");
    assert_eq!(d["top_message"], 1005);
    assert_eq!(d["unread_count"], 1);
    assert_eq!(top.unwrap()["message"], "still there?");
    assert_eq!(ids(&alice, &to_bob).await, vec![1005]);
    s.stop().await;
}

#[tokio::test]
async fn just_clear_keeps_an_empty_dialog() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    alice.send(&to_bob, "one").await; // Alice 2; Bob 3
    bob.send(&to_alice, "two").await; // Bob 4; Alice 3
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"just_clear": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 2, 2, 0));
    assert_eq!(ids(&alice, &to_bob).await, Vec::<i64>::new());
    let (d, top) = dialog(&alice, bob.user_id)
        .await
        .expect("just_clear keeps the dialog");
    assert_eq!(d["top_message"], 0);
    assert_eq!(d["unread_count"], 0);
    assert!(top.is_none());
    assert_eq!(
        deletions(&difference(&alice, pa).await),
        vec![(vec![2, 3], pa + 2, 2)]
    );
    // Bob keeps everything.
    assert_eq!(ids(&bob, &to_alice).await, vec![4, 3]);
    assert_eq!(pts(&bob).await, pb);

    // The next message lands in the kept dialog.
    bob.send(&to_alice, "three").await; // Alice 4
    let (d, _) = dialog(&alice, bob.user_id).await.unwrap();
    assert_eq!(d["top_message"], 4);
    assert_eq!(d["unread_count"], 1);
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn revoke_clears_the_peers_copies_too() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    alice.send(&to_bob, "one").await; // Alice 2; Bob 3
    alice.send(&to_bob, "two").await; // Alice 3; Bob 4
    bob.send(&to_alice, "three").await; // Bob 5; Alice 4
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"revoke": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 3, 3, 0));
    assert_eq!(ids(&alice, &to_bob).await, Vec::<i64>::new());
    assert_eq!(ids(&bob, &to_alice).await, Vec::<i64>::new());
    assert_eq!(pts(&bob).await, pb + 3);
    let db = difference(&bob, pb).await;
    assert_eq!(
        deletions(&db),
        vec![(vec![3, 4, 5], pb + 3, 3)],
        "Bob's own ids: {db}"
    );
    assert!(dialog(&alice, bob.user_id).await.is_none());
    assert!(
        dialog(&bob, alice.user_id).await.is_none(),
        "the peer's emptied dialog goes too"
    );
    // Carol's dialogs are not affected.
    assert_eq!(ids(&bob, &bob.peer_of("+15552003").await).await, vec![2, 1]);
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn max_id_bounds_the_deletion() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    for t in ["one", "two", "three", "four", "five"] {
        alice.send(&to_bob, t).await; // Alice 2..=6; Bob 3..=7
    }
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    // max_id is the newest message to delete (TL: "Maximum ID of message to delete").
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"revoke": true, "peer": to_bob, "max_id": 4}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 3, 3, 0));
    assert_eq!(ids(&alice, &to_bob).await, vec![6, 5]);
    assert_eq!(ids(&bob, &to_alice).await, vec![7, 6]);
    assert_eq!(
        deletions(&difference(&alice, pa).await),
        vec![(vec![2, 3, 4], pa + 3, 3)]
    );
    assert_eq!(
        deletions(&difference(&bob, pb).await),
        vec![(vec![3, 4, 5], pb + 3, 3)]
    );
    // Messages remain, so both dialogs stay, their tops unchanged.
    let (d, _) = dialog(&alice, bob.user_id)
        .await
        .expect("Alice's dialog stays");
    assert_eq!(d["top_message"], 6);
    let (d, _) = dialog(&bob, alice.user_id)
        .await
        .expect("Bob's dialog stays");
    assert_eq!(d["top_message"], 7);
    assert_eq!(d["unread_count"], 2);

    // Nothing left at or below the bound: nothing happens.
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"peer": to_bob, "max_id": 4}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 3, 0, 0));
    s.stop().await;
}

/// The peers of `user`'s dialogs as `events state` folds its log (at `at`, or at the head).
async fn folded_peers(s: &TestServer, user: i64, at: Option<i32>) -> Vec<i64> {
    let user = domain::UserId::new(user).unwrap();
    let fold = ptslog_server::events::state::fold(&s.pool, user, at)
        .await
        .expect("fold");
    let state = ptslog_server::events::state::to_json(user, &fold);
    state["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["peer_id"].as_i64().unwrap())
        .collect()
}

/// The dialog is gone from getDialogs, from `events state` and after a rebuild of the read models.
async fn assert_dialog_gone(s: &TestServer, d: &Device, peer_id: i64) {
    assert!(
        dialog(d, peer_id).await.is_none(),
        "getDialogs still lists it"
    );
    assert!(!folded_peers(s, d.user_id, None).await.contains(&peer_id));
}

#[tokio::test]
async fn delete_chat_on_a_cleared_chat_removes_both_dialogs_for_every_device() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    alice.send(&to_bob, "one").await; // Alice 2; Bob 3
    bob.send(&to_alice, "two").await; // Bob 4; Alice 3
                                      // Alice's second device and Bob's are offline: they learn it from getDifference.
    let alice_phone = s.login("+15552001", "Alice").await;
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"just_clear": true, "revoke": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(affected_history(&r).1, 2);
    let (d, _) = dialog(&bob, alice.user_id)
        .await
        .expect("just_clear keeps the peer's empty dialog too");
    assert_eq!(d["top_message"], 0);
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    // "Delete chat" on the cleared chat: one pts each, an empty batch, and both dialogs go.
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"revoke": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 1, 1, 0));
    assert_dialog_gone(&s, &alice, bob.user_id).await;
    assert_dialog_gone(&s, &bob, alice.user_id).await;
    for (device, from, own) in [(&alice_phone, pa, pa + 1), (&bob, pb, pb + 1)] {
        let diff = difference(device, from).await;
        assert_eq!(deletions(&diff), vec![(vec![], own, 1)], "{diff}");
        assert_eq!(diff["state"]["pts"], own);
    }
    // `events state` just before it still had the empty dialog.
    assert!(folded_peers(&s, alice.user_id, Some(pa as i32))
        .await
        .contains(&bob.user_id));

    // Again: nothing left to remove, nothing appended.
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"revoke": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 1, 0, 0));
    assert_eq!(pts(&bob).await, pb + 1);

    // The read models are what the log replays to, before and after a rebuild.
    assert_projections_clean(&s).await;
    projections::rebuild::rebuild_all(&s.pool)
        .await
        .expect("rebuild");
    assert_projections_clean(&s).await;
    assert_dialog_gone(&s, &alice, bob.user_id).await;
    assert_dialog_gone(&s, &bob, alice.user_id).await;

    // The next message brings the dialog back.
    bob.send(&to_alice, "three").await;
    let (d, _) = dialog(&alice, bob.user_id).await.expect("back");
    assert_eq!(d["unread_count"], 1);
    s.stop().await;
}

#[tokio::test]
async fn delete_chat_without_revoke_or_on_a_peer_with_messages_leaves_the_peer_alone() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
        ..
    } = chat().await;
    alice.send(&to_bob, "one").await;
    bob.send(&to_alice, "two").await;
    // A bounded delete that finds nothing at or below max_id leaves the newer messages' dialog.
    let pa = pts(&alice).await;
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"peer": to_bob, "max_id": 1}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa, 0, 0));
    assert_eq!(ids(&alice, &to_bob).await, vec![3, 2]);
    // Alice clears only her side; Bob keeps his messages.
    alice
        .rpc(
            "messages.deleteHistory",
            json!({"just_clear": true, "peer": to_bob}),
        )
        .await;
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);
    // just_clear again on the empty chat: kept.
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"just_clear": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa, 0, 0));
    assert!(dialog(&alice, bob.user_id).await.is_some());

    // revoke reaches only copies of messages still in Alice's box: Bob's chat has messages, so
    // only Alice's dialog goes.
    let r = alice
        .rpc(
            "messages.deleteHistory",
            json!({"revoke": true, "peer": to_bob}),
        )
        .await;
    assert_eq!(affected_history(&r), (pa + 1, 1, 0));
    assert_dialog_gone(&s, &alice, bob.user_id).await;
    assert_eq!(pts(&bob).await, pb);
    assert_eq!(ids(&bob, &to_alice).await, vec![4, 3]);
    assert_projections_clean(&s).await;
    s.stop().await;
}
