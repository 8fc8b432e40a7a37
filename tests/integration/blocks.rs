//! `contacts.block`, `contacts.unblock`, `contacts.getBlocked` over HTTP, and what a block does to
//! the blocked user's messages.

use std::time::Duration;

use ptslog_tests::{self_peer, Device, TestServer};
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

async fn difference(d: &Device, from: i64) -> Value {
    d.rpc(
        "updates.getDifference",
        json!({"pts": from, "date": 0, "qts": 0}),
    )
    .await
}

async fn texts(d: &Device, peer: &Value) -> Vec<String> {
    let h = d
        .rpc("messages.getHistory", json!({"peer": peer, "limit": 100}))
        .await;
    h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message"].as_str().unwrap().to_string())
        .collect()
}

fn peer_user(id: i64) -> Value {
    json!({"_": "peerUser", "user_id": id})
}

/// (blocked user ids, their dates) of a getBlocked answer, in order.
fn blocked(r: &Value) -> Vec<(i64, i64)> {
    r["blocked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert_eq!(b["_"], "peerBlocked");
            assert_eq!(b["peer_id"]["_"], "peerUser");
            (
                b["peer_id"]["user_id"].as_i64().unwrap(),
                b["date"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_block_list() {
    let s = TestServer::start().await;
    let alice = s.login("+15554001", "Alice").await;
    let bob = s.login("+15554002", "Bob").await;
    let carol = s.login("+15554003", "Carol").await;
    let to_bob = alice.peer_of("+15554002").await;
    let to_carol = alice.peer_of("+15554003").await;
    assert!(carol.user_id > bob.user_id);

    let r = alice.rpc("contacts.getBlocked", json!({})).await;
    assert_eq!(
        r,
        json!({"_": "contacts.blocked", "blocked": [], "chats": [], "users": []})
    );
    let pa = pts(&alice).await;
    let pb = pts(&bob).await;

    // Carol first, Bob more than a second later: newest first puts Bob ahead of Carol, although
    // his id is lower.
    assert_eq!(
        alice.rpc("contacts.block", json!({"id": to_carol})).await,
        json!({"_": "boolTrue"})
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        alice.rpc("contacts.block", json!({"id": to_bob})).await,
        json!({"_": "boolTrue"})
    );
    assert_eq!(pts(&alice).await, pa + 2);
    assert_eq!(pts(&bob).await, pb, "the blocked user's log is untouched");

    let r = alice
        .rpc("contacts.getBlocked", json!({"offset": 0, "limit": 0}))
        .await;
    assert_eq!(r["_"], "contacts.blocked");
    let list = blocked(&r);
    assert_eq!(
        list.iter().map(|b| b.0).collect::<Vec<_>>(),
        vec![bob.user_id, carol.user_id]
    );
    assert!(list[0].1 > list[1].1, "{list:?}");
    let users = r["users"].as_array().unwrap();
    assert_eq!(users.len(), 2);
    for (user, peer) in [(bob.user_id, &to_bob), (carol.user_id, &to_carol)] {
        let u = users
            .iter()
            .find(|u| u["id"] == user)
            .expect("blocked user's object");
        assert_eq!(
            u["access_hash"], peer["access_hash"],
            "the access hash is Alice's"
        );
    }

    // Limited pages are slices with the total count.
    let r = alice.rpc("contacts.getBlocked", json!({"limit": 1})).await;
    assert_eq!(r["_"], "contacts.blockedSlice");
    assert_eq!(r["count"], 2);
    assert_eq!(blocked(&r), vec![list[0]]);
    assert_eq!(r["users"].as_array().unwrap().len(), 1);
    assert_eq!(r["users"][0]["id"], bob.user_id);
    let r = alice
        .rpc("contacts.getBlocked", json!({"offset": 1, "limit": 1}))
        .await;
    assert_eq!(r["_"], "contacts.blockedSlice");
    assert_eq!(r["count"], 2);
    assert_eq!(blocked(&r), vec![list[1]]);
    let r = alice
        .rpc("contacts.getBlocked", json!({"offset": 2, "limit": 10}))
        .await;
    assert_eq!(
        (r["_"].clone(), r["count"].clone()),
        (json!("contacts.blockedSlice"), json!(2))
    );
    assert_eq!(blocked(&r), vec![]);

    // Blocking again appends nothing and keeps the first date.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        alice.rpc("contacts.block", json!({"id": to_bob})).await,
        json!({"_": "boolTrue"})
    );
    assert_eq!(pts(&alice).await, pa + 2);
    assert_eq!(
        blocked(&alice.rpc("contacts.getBlocked", json!({})).await),
        list
    );

    // Oneself cannot be blocked, by inputPeerSelf or by one's own id.
    let (_, err) = alice
        .rpc_err("contacts.block", json!({"id": self_peer()}))
        .await;
    assert_eq!(err, "CONTACT_ID_INVALID");
    let me = alice
        .rpc("contacts.resolvePhone", json!({"phone": "+15554001"}))
        .await;
    let own = json!({"_": "inputPeerUser", "user_id": alice.user_id, "access_hash": me["users"][0]["access_hash"]});
    let (_, err) = alice.rpc_err("contacts.block", json!({"id": own})).await;
    assert_eq!(err, "CONTACT_ID_INVALID");
    // Someone named with a wrong access hash.
    let forged = json!({"_": "inputPeerUser", "user_id": bob.user_id, "access_hash": to_bob["access_hash"].as_i64().unwrap() ^ 1});
    let (_, err) = alice.rpc_err("contacts.block", json!({"id": forged})).await;
    assert_eq!(err, "PEER_ID_INVALID");
    assert_eq!(pts(&alice).await, pa + 2);

    // Unblocking; unblocking again appends nothing.
    assert_eq!(
        alice.rpc("contacts.unblock", json!({"id": to_carol})).await,
        json!({"_": "boolTrue"})
    );
    assert_eq!(
        alice.rpc("contacts.unblock", json!({"id": to_carol})).await,
        json!({"_": "boolTrue"})
    );
    assert_eq!(pts(&alice).await, pa + 3);
    assert_eq!(
        blocked(&alice.rpc("contacts.getBlocked", json!({})).await),
        vec![list[0]]
    );

    // The log has each change once, as updatePeerBlocked.
    let d = difference(&alice, pa).await;
    let updates = d["other_updates"].as_array().unwrap();
    assert_eq!(
        updates,
        &vec![
            json!({"_": "updatePeerBlocked", "peer_id": peer_user(carol.user_id), "blocked": true}),
            json!({"_": "updatePeerBlocked", "peer_id": peer_user(bob.user_id), "blocked": true}),
            json!({"_": "updatePeerBlocked", "peer_id": peer_user(carol.user_id), "blocked": false}),
        ]
    );
    assert_eq!(d["state"]["pts"], pa + 3);
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn a_blocked_senders_messages_stay_in_its_own_box() {
    let s = TestServer::start().await;
    let alice = s.login("+15554011", "Alice").await;
    let bob = s.login("+15554012", "Bob").await;
    let bob_phone = s.login("+15554012", "Bob").await; // Bob's second device
    let to_bob = alice.peer_of("+15554012").await;
    let to_alice = bob.peer_of("+15554011").await;
    alice.send(&to_bob, "before").await;
    let pa = pts(&alice).await;
    let pb = pts(&bob).await;

    bob.rpc("contacts.block", json!({"id": to_alice})).await;
    assert_eq!(pts(&bob).await, pb + 1);
    assert_eq!(pts(&alice).await, pa, "Alice is not told");
    // Bob's other device learns of the block from the log.
    let d = difference(&bob_phone, pb).await;
    assert_eq!(d["_"], "updates.difference");
    assert_eq!(
        d["other_updates"],
        json!([{"_": "updatePeerBlocked", "peer_id": peer_user(alice.user_id), "blocked": true}])
    );
    assert_eq!(d["new_messages"], json!([]));
    assert_eq!(d["state"]["pts"], pb + 1);
    assert!(
        d["users"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["id"] == alice.user_id),
        "{d}"
    );
    let pb = pb + 1;

    // Alice's send looks normal to her and lands in her box only.
    let sent = alice.send(&to_bob, "while blocked").await;
    assert_eq!(sent["_"], "updateShortSentMessage");
    assert_eq!(sent["id"], 2);
    assert_eq!(sent["pts"], pa + 1);
    assert_eq!(
        texts(&alice, &to_bob).await,
        vec!["while blocked", "before"]
    );
    assert_eq!(pts(&bob).await, pb);
    assert_eq!(difference(&bob, pb).await["_"], "updates.differenceEmpty");
    assert_eq!(texts(&bob, &to_alice).await, vec!["before"]);
    let dialogs = bob.rpc("messages.getDialogs", json!({"limit": 10})).await;
    assert_eq!(dialogs["dialogs"][0]["top_message"], 1);
    assert_eq!(dialogs["dialogs"][0]["unread_count"], 1);
    // Bob cannot write to someone he blocked.
    let (_, err) = bob
        .rpc_err(
            "messages.sendMessage",
            json!({"peer": to_alice, "message": "hi", "random_id": 77}),
        )
        .await;
    assert_eq!(err, "YOU_BLOCKED_USER");
    assert_eq!(pts(&bob).await, pb);

    // After the unblock, messages flow again; the one sent during the block stays undelivered.
    assert_eq!(
        bob.rpc("contacts.unblock", json!({"id": to_alice})).await,
        json!({"_": "boolTrue"})
    );
    let d = difference(&bob_phone, pb).await;
    assert_eq!(
        d["other_updates"],
        json!([{"_": "updatePeerBlocked", "peer_id": peer_user(alice.user_id), "blocked": false}])
    );
    let pb = pb + 1;
    alice.send(&to_bob, "after").await;
    assert_eq!(pts(&bob).await, pb + 1);
    let d = difference(&bob_phone, pb).await;
    let news = d["new_messages"].as_array().unwrap();
    assert_eq!(news.len(), 1, "{d}");
    assert_eq!(news[0]["message"], "after");
    assert_eq!(
        news[0]["id"], 2,
        "Bob's next box id: the blocked message never took one"
    );
    assert_eq!(texts(&bob, &to_alice).await, vec!["after", "before"]);
    bob.send(&to_alice, "welcome back").await;
    assert_eq!(
        texts(&alice, &to_bob).await,
        vec!["welcome back", "after", "while blocked", "before"]
    );
    s.stop().await;
}
