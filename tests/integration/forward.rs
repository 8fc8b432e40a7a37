//! `messages.forwardMessages` end to end: order and fresh ids, forward headers, restrictions, the
//! request limits, idempotent retries and blocks. Every refused call is checked to change nothing.

use std::time::Duration;

use ptslog_tests::{self_peer, Device, TestServer};
use serde_json::{json, Value};

use super::send::{
    difference, history, ids, peer_user, pts, rid, snapshot, texts, three, ALICE, BOB, CAROL,
};

fn forward(from: &Value, to: &Value, ids: &[i64], random_ids: &[i64]) -> Value {
    json!({"from_peer": from, "to_peer": to, "id": ids, "random_id": random_ids})
}

async fn forward_err(d: &Device, params: Value) -> (u16, String) {
    d.rpc_err("messages.forwardMessages", params).await
}

fn fwd_header(from: i64, date: &Value) -> Value {
    json!({"_": "messageFwdHeader", "from_id": peer_user(from), "date": date})
}

/// The user ids an `updates` answer carries, sorted.
fn user_ids(answer: &Value) -> Vec<i64> {
    let mut v: Vec<i64> = answer["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_i64().unwrap())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn forward_keeps_order_and_answers_each_message() {
    let s = TestServer::start().await;
    let (alice, bob, carol, _, to_carol) = three(&s).await;
    let to_alice = bob.peer_of(ALICE).await;
    let from_bob = alice.peer_of(BOB).await;
    // Carol's ids run one ahead of Alice's.
    carol.send(&self_peer(), "c0").await;
    let mut dates = Vec::new();
    for t in ["m1", "m2", "m3"] {
        dates.push(bob.send(&to_alice, t).await["date"].clone());
    }
    assert_eq!(pts(&alice).await, 3);

    let r = [rid(), rid(), rid()];
    let answer = alice
        .rpc(
            "messages.forwardMessages",
            forward(&from_bob, &to_carol, &[1, 2, 3], &r),
        )
        .await;
    assert_eq!(answer["_"], "updates");
    let updates = answer["updates"].as_array().unwrap();
    assert_eq!(updates.len(), 6, "{answer}");
    for k in 0..3 {
        let id = 4 + k as i64;
        assert_eq!(
            updates[2 * k],
            json!({"_": "updateMessageID", "id": id, "random_id": r[k]})
        );
        let u = &updates[2 * k + 1];
        assert_eq!(u["_"], "updateNewMessage");
        assert_eq!(
            (u["pts"].as_i64(), u["pts_count"].as_i64()),
            (Some(id), Some(1))
        );
        let m = &u["message"];
        assert_eq!(m["id"], id);
        assert_eq!(m["message"], format!("m{}", k + 1));
        assert_eq!(m["out"], true);
        assert_eq!(m["from_id"], peer_user(1));
        assert_eq!(m["peer_id"], peer_user(3));
        assert_eq!(m["fwd_from"], fwd_header(2, &dates[k]));
    }
    // The author of the originals is among the users, with Alice's access hash of him.
    assert_eq!(user_ids(&answer), vec![1, 2, 3]);
    let bob_user = answer["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == 2)
        .unwrap();
    assert_eq!(bob_user["access_hash"], from_bob["access_hash"]);

    // Carol: fresh ids in her own sequence, in order.
    let c = history(&carol, &carol.peer_of(ALICE).await).await;
    assert_eq!(ids(&c), vec![4, 3, 2]);
    assert_eq!(texts(&c), vec!["m3", "m2", "m1"]);
    for (m, date) in c.iter().zip(dates.iter().rev()) {
        assert_eq!(m["out"], false);
        assert_eq!(m["from_id"], peer_user(1));
        assert_eq!(m["fwd_from"], fwd_header(2, date));
    }
    let (news, state) = difference(&carol, 1).await;
    assert_eq!((ids(&news), state), (vec![2, 3, 4], 4));
    assert_eq!(texts(&news), vec!["m1", "m2", "m3"]);

    let a = history(&alice, &to_carol).await;
    assert_eq!(ids(&a), vec![6, 5, 4]);
    assert_eq!(pts(&alice).await, 6);
    // The source chat is not touched.
    assert_eq!(pts(&bob).await, 3);
    assert_eq!(ids(&history(&alice, &from_bob).await), vec![3, 2, 1]);
    s.stop().await;
}

#[tokio::test]
async fn forward_header_is_kept_or_dropped() {
    let s = TestServer::start().await;
    let (alice, bob, carol, from_bob, to_carol) = three(&s).await;
    let to_alice = bob.peer_of(ALICE).await;
    let carol_to_bob = carol.peer_of(BOB).await;
    let carol_from_alice = carol.peer_of(ALICE).await;
    let orig = bob.send(&to_alice, "original").await;
    let orig_date = orig["date"].clone();
    // Let the clock move, so the header's date is visibly the original's, not the forward's.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let first = alice
        .rpc(
            "messages.forwardMessages",
            forward(&from_bob, &to_carol, &[1], &[rid()]),
        )
        .await;
    let m = &first["updates"][1]["message"];
    assert_eq!(m["fwd_from"], fwd_header(2, &orig_date));
    assert!(m["date"].as_i64().unwrap() > orig_date.as_i64().unwrap());
    let c = history(&carol, &carol_from_alice).await;
    assert_eq!(
        (c[0]["id"].as_i64(), c[0]["fwd_from"].clone()),
        (Some(1), fwd_header(2, &orig_date))
    );
    assert_eq!(c[0]["from_id"], peer_user(1));

    // Carol forwards her copy on, to Bob: the header still names Bob's original.
    let again = carol
        .rpc(
            "messages.forwardMessages",
            forward(&carol_from_alice, &carol_to_bob, &[1], &[rid()]),
        )
        .await;
    assert_eq!(
        again["updates"][1]["message"]["fwd_from"],
        fwd_header(2, &orig_date)
    );
    let b = history(&bob, &bob.peer_of(CAROL).await).await;
    assert_eq!(b.len(), 1);
    assert_eq!(b[0]["message"], "original");
    assert_eq!(b[0]["from_id"], peer_user(3));
    assert_eq!(b[0]["fwd_from"], fwd_header(2, &orig_date));

    // drop_author: a plain copy from Alice on both sides.
    let mut params = forward(&from_bob, &to_carol, &[1], &[rid()]);
    params["drop_author"] = json!(true);
    let dropped = alice.rpc("messages.forwardMessages", params).await;
    let m = &dropped["updates"][1]["message"];
    assert_eq!(
        (m["id"].as_i64(), m["message"].as_str()),
        (Some(3), Some("original"))
    );
    assert!(m.get("fwd_from").is_none(), "{m}");
    let c = history(&carol, &carol_from_alice).await;
    assert_eq!(c[0]["id"], 3);
    assert!(c[0].get("fwd_from").is_none(), "{}", c[0]);
    assert_eq!(c[0]["from_id"], peer_user(1));
    let a = history(&alice, &to_carol).await;
    assert!(a[0].get("fwd_from").is_none(), "{}", a[0]);
    // Forwarding that plain copy makes a header from its own author and date.
    let from_dropped = carol
        .rpc(
            "messages.forwardMessages",
            forward(&carol_from_alice, &carol_to_bob, &[3], &[rid()]),
        )
        .await;
    assert_eq!(
        from_dropped["updates"][1]["message"]["fwd_from"],
        fwd_header(1, &c[0]["date"])
    );

    // Into Saved Messages: one box, nobody else moves.
    let (bob_pts, carol_pts) = (pts(&bob).await, pts(&carol).await);
    let saved = alice
        .rpc(
            "messages.forwardMessages",
            forward(&from_bob, &self_peer(), &[1], &[rid()]),
        )
        .await;
    let m = &saved["updates"][1]["message"];
    assert_eq!(
        (m["out"].as_bool(), m["peer_id"].clone()),
        (Some(true), peer_user(1))
    );
    assert_eq!(m["fwd_from"], fwd_header(2, &orig_date));
    let mine = history(&alice, &self_peer()).await;
    assert_eq!(ids(&mine), vec![m["id"].as_i64().unwrap()]);
    assert_eq!((pts(&bob).await, pts(&carol).await), (bob_pts, carol_pts));
    s.stop().await;
}

#[tokio::test]
async fn noforwards_messages_cannot_be_forwarded() {
    let s = TestServer::start().await;
    let (alice, bob, carol, from_bob, to_carol) = three(&s).await;
    let to_alice = bob.peer_of(ALICE).await;
    bob.rpc(
        "messages.sendMessage",
        json!({"peer": to_alice, "message": "secret", "random_id": rid(), "noforwards": true}),
    )
    .await;
    bob.send(&to_alice, "open").await;
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;
    for list in [vec![1], vec![2, 1]] {
        let r: Vec<i64> = list.iter().map(|_| rid()).collect();
        let (status, error) = forward_err(&alice, forward(&from_bob, &to_carol, &list, &r)).await;
        assert_eq!(
            (status, error.as_str()),
            (400, "CHAT_FORWARDS_RESTRICTED"),
            "{list:?}"
        );
    }
    // Not into Saved Messages either, and not by its sender.
    let (_, error) = forward_err(&alice, forward(&from_bob, &self_peer(), &[1], &[rid()])).await;
    assert_eq!(error, "CHAT_FORWARDS_RESTRICTED");
    let (_, error) = forward_err(
        &bob,
        forward(&to_alice, &bob.peer_of(CAROL).await, &[1], &[rid()]),
    )
    .await;
    assert_eq!(error, "CHAT_FORWARDS_RESTRICTED");
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);

    // A forward can itself be made noforwards, and then it stops there.
    let mut params = forward(&from_bob, &to_carol, &[2], &[rid()]);
    params["noforwards"] = json!(true);
    let sent = alice.rpc("messages.forwardMessages", params).await;
    assert_eq!(sent["updates"][1]["message"]["noforwards"], true);
    let c = history(&carol, &carol.peer_of(ALICE).await).await;
    assert_eq!(
        (c[0]["message"].as_str(), c[0]["noforwards"].as_bool()),
        (Some("open"), Some(true))
    );
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;
    let (_, error) = forward_err(
        &carol,
        forward(
            &carol.peer_of(ALICE).await,
            &carol.peer_of(BOB).await,
            &[1],
            &[rid()],
        ),
    )
    .await;
    assert_eq!(error, "CHAT_FORWARDS_RESTRICTED");
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn forward_of_100_messages_and_not_101() {
    let s = TestServer::start().await;
    let alice = s.login(ALICE, "Alice").await;
    let bob = s.login(BOB, "Bob").await;
    let to_bob = alice.peer_of(BOB).await;
    let to_alice = bob.peer_of(ALICE).await;
    for i in 1..=101 {
        alice.send(&self_peer(), &format!("n{i}")).await;
    }
    let before = snapshot(&s, &[&alice, &bob]).await;
    let all: Vec<i64> = (1..=101).collect();
    let r: Vec<i64> = all.iter().map(|_| rid()).collect();
    let (status, error) = forward_err(&alice, forward(&self_peer(), &to_bob, &all, &r)).await;
    assert_eq!((status, error.as_str()), (400, "MESSAGE_IDS_TOO_MUCH"));
    assert_eq!(snapshot(&s, &[&alice, &bob]).await, before);

    let answer = alice
        .rpc(
            "messages.forwardMessages",
            forward(&self_peer(), &to_bob, &all[..100], &r[..100]),
        )
        .await;
    let updates = answer["updates"].as_array().unwrap();
    assert_eq!(updates.len(), 200);
    for k in 0..100 {
        assert_eq!(
            updates[2 * k],
            json!({"_": "updateMessageID", "id": 102 + k as i64, "random_id": r[k]})
        );
        assert_eq!(updates[2 * k + 1]["pts"], 102 + k as i64);
        assert_eq!(
            updates[2 * k + 1]["message"]["message"],
            format!("n{}", k + 1)
        );
    }
    assert_eq!(pts(&alice).await, 201);
    assert_eq!(pts(&bob).await, 100);
    let b = history(&bob, &to_alice).await;
    assert_eq!(ids(&b), (1..=100).rev().collect::<Vec<i64>>());
    assert_eq!(b[0]["message"], "n100");
    assert_eq!(b[99]["message"], "n1");
    assert!(b
        .iter()
        .all(|m| m["fwd_from"]["from_id"] == peer_user(1) && m["out"] == false));
    s.stop().await;
}

#[tokio::test]
async fn malformed_forwards_are_refused() {
    let s = TestServer::start().await;
    let (alice, bob, carol, from_bob, to_carol) = three(&s).await;
    let to_alice = bob.peer_of(ALICE).await;
    bob.send(&to_alice, "from bob").await; // Alice's 1
    alice.send(&to_carol, "to carol").await; // Alice's 2
    alice.send(&self_peer(), "to me").await; // Alice's 3
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;
    let (r1, r2) = (rid(), rid());
    let bad_hash = json!({"_": "inputPeerUser", "user_id": 2, "access_hash": from_bob["access_hash"].as_i64().unwrap().wrapping_add(1)});
    let with = |field: &str, value: Value| {
        let mut p = forward(&from_bob, &to_carol, &[1], &[rid()]);
        p[field] = value;
        p
    };
    let cases = [
        (forward(&from_bob, &to_carol, &[], &[]), "MESSAGE_IDS_EMPTY"),
        (
            forward(&from_bob, &to_carol, &[1], &[]),
            "RANDOM_ID_INVALID",
        ),
        (
            forward(&from_bob, &to_carol, &[1], &[r1, r2]),
            "RANDOM_ID_INVALID",
        ),
        (
            forward(&from_bob, &to_carol, &[1, 1], &[r1]),
            "RANDOM_ID_INVALID",
        ),
        (forward(&from_bob, &to_carol, &[1], &[0]), "RANDOM_ID_EMPTY"),
        (
            forward(&from_bob, &to_carol, &[1, 1], &[r1, r1]),
            "RANDOM_ID_DUPLICATE",
        ),
        // 2 is in Alice's chat with Carol, 3 in her Saved Messages, 99 does not exist.
        (
            forward(&from_bob, &to_carol, &[2], &[r1]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&from_bob, &to_carol, &[3], &[r1]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&from_bob, &to_carol, &[1, 2], &[r1, r2]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&from_bob, &to_carol, &[99], &[r1]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&from_bob, &to_carol, &[0], &[r1]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&from_bob, &to_carol, &[-1], &[r1]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&to_carol, &from_bob, &[1], &[r1]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&self_peer(), &to_carol, &[1], &[r1]),
            "MESSAGE_ID_INVALID",
        ),
        (
            forward(&bad_hash, &to_carol, &[1], &[r1]),
            "PEER_ID_INVALID",
        ),
        (
            forward(
                &from_bob,
                &json!({"_": "inputPeerChat", "chat_id": 1}),
                &[1],
                &[r1],
            ),
            "PEER_ID_INVALID",
        ),
        (
            forward(
                &from_bob,
                &json!({"_": "inputPeerChannel", "channel_id": 1, "access_hash": 1}),
                &[1],
                &[r1],
            ),
            "PEER_ID_INVALID",
        ),
        (
            with("schedule_date", json!(1_900_000_000)),
            "SCHEDULE_DATE_INVALID",
        ),
        (
            with("send_as", json!({"_": "inputPeerSelf"})),
            "SEND_AS_PEER_INVALID",
        ),
        (
            with(
                "quick_reply_shortcut",
                json!({"_": "inputQuickReplyShortcutId", "shortcut_id": 1}),
            ),
            "SHORTCUT_INVALID",
        ),
        (with("effect", json!(1)), "EFFECT_ID_INVALID"),
        (with("allow_paid_stars", json!(1)), "PAYMENT_UNSUPPORTED"),
        (
            with("suggested_post", json!({"_": "suggestedPost"})),
            "SUGGESTED_POST_PEER_INVALID",
        ),
    ];
    for (params, expected) in cases {
        let (status, error) = forward_err(&alice, params.clone()).await;
        assert_eq!((status, error.as_str()), (400, expected), "{params}");
    }
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn retried_forward_appends_nothing() {
    let s = TestServer::start().await;
    let (alice, bob, carol, from_bob, to_carol) = three(&s).await;
    let to_alice = bob.peer_of(ALICE).await;
    bob.send(&to_alice, "m1").await;
    bob.send(&to_alice, "m2").await;
    let r = [rid(), rid()];
    let params = forward(&from_bob, &to_carol, &[1, 2], &r);
    let first = alice.rpc("messages.forwardMessages", params.clone()).await;
    assert_eq!(
        first["updates"][0],
        json!({"_": "updateMessageID", "id": 3, "random_id": r[0]})
    );
    assert_eq!(
        first["updates"][2],
        json!({"_": "updateMessageID", "id": 4, "random_id": r[1]})
    );
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;
    assert_eq!(before.pts, vec![4, 2, 2]);

    tokio::time::sleep(Duration::from_millis(1100)).await;
    let retry = alice.rpc("messages.forwardMessages", params.clone()).await;
    assert_eq!(retry["updates"], first["updates"]);
    assert_eq!(user_ids(&retry), user_ids(&first));
    // Retrying only the second message answers its first result too.
    let part = alice
        .rpc(
            "messages.forwardMessages",
            forward(&from_bob, &to_carol, &[2], &[r[1]]),
        )
        .await;
    assert_eq!(
        part["updates"].as_array().unwrap()[..],
        first["updates"].as_array().unwrap()[2..4]
    );
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    assert_eq!(
        texts(&history(&carol, &carol.peer_of(ALICE).await).await),
        vec!["m2", "m1"]
    );

    // A random_id already used for another message is not a retry.
    let plain = rid();
    alice
        .rpc(
            "messages.sendMessage",
            json!({"peer": to_carol, "message": "hello", "random_id": plain}),
        )
        .await;
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;
    let cases = [
        // m1 under the random_id of the forward of m2.
        forward(&from_bob, &to_carol, &[1], &[r[1]]),
        // m1 under the random_id of a plain message to the same chat.
        forward(&from_bob, &to_carol, &[1], &[plain]),
        // The same forward into another chat.
        forward(&from_bob, &self_peer(), &[1], &[r[0]]),
    ];
    for params in cases {
        let (status, error) = forward_err(&alice, params.clone()).await;
        assert_eq!(
            (status, error.as_str()),
            (400, "RANDOM_ID_DUPLICATE"),
            "{params}"
        );
    }
    // Nor is a plain send under a forward's random_id, even with the same text.
    let (status, error) = alice
        .rpc_err(
            "messages.sendMessage",
            json!({"peer": to_carol, "message": "m1", "random_id": r[0]}),
        )
        .await;
    assert_eq!((status, error.as_str()), (400, "RANDOM_ID_DUPLICATE"));
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    s.stop().await;
}

#[tokio::test]
async fn blocks_apply_to_forwards() {
    let s = TestServer::start().await;
    let (alice, bob, carol, to_bob, to_carol) = three(&s).await;
    let to_alice = bob.peer_of(ALICE).await;
    alice.send(&self_peer(), "n1").await;
    alice.send(&self_peer(), "n2").await;

    // Bob blocked Alice: her forward lands in her box only.
    bob.rpc("contacts.block", json!({"id": to_alice})).await;
    let bob_pts = pts(&bob).await;
    assert_eq!(bob_pts, 1);
    let r = [rid(), rid()];
    let answer = alice
        .rpc(
            "messages.forwardMessages",
            forward(&self_peer(), &to_bob, &[1, 2], &r),
        )
        .await;
    assert_eq!(
        answer["updates"][0],
        json!({"_": "updateMessageID", "id": 3, "random_id": r[0]})
    );
    assert_eq!(answer["updates"][3]["message"]["id"], 4);
    assert_eq!(answer["updates"][3]["pts"], 4);
    let a = history(&alice, &to_bob).await;
    assert_eq!((ids(&a), texts(&a)), (vec![4, 3], vec!["n2", "n1"]));
    assert_eq!(pts(&bob).await, bob_pts);
    assert!(history(&bob, &to_alice).await.is_empty());
    let bob_boxes: i64 =
        sqlx::query_scalar("SELECT count(*) FROM message_boxes WHERE owner_user_id = 2")
            .fetch_one(&s.pool)
            .await
            .unwrap();
    assert_eq!(bob_boxes, 0);

    // Alice blocked Carol: she cannot forward (or send) to her.
    alice.rpc("contacts.block", json!({"id": to_carol})).await;
    let before = snapshot(&s, &[&alice, &bob, &carol]).await;
    let (status, error) =
        forward_err(&alice, forward(&self_peer(), &to_carol, &[1], &[rid()])).await;
    assert_eq!((status, error.as_str()), (400, "YOU_BLOCKED_USER"));
    let (status, error) = alice
        .rpc_err(
            "messages.sendMessage",
            json!({"peer": to_carol, "message": "hi", "random_id": rid()}),
        )
        .await;
    assert_eq!((status, error.as_str()), (400, "YOU_BLOCKED_USER"));
    assert_eq!(snapshot(&s, &[&alice, &bob, &carol]).await, before);
    s.stop().await;
}
