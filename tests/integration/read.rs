//! `messages.readHistory`, `messages.getOutboxReadDate` and `messages.readMessageContents` over HTTP:
//! both watermarks, each owner's own update, and the content-read marks of media messages.

use std::time::{SystemTime, UNIX_EPOCH};

use application::ports::{Origin, Store};
use domain::events::{NewMessage, UserEvent};
use domain::message::OwnerMessage;
use domain::UserId;
use infrastructure::PgStore;
use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

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

async fn dialog(d: &Device, peer_id: i64) -> Value {
    let r = d.rpc("messages.getDialogs", json!({"limit": 100})).await;
    r["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["peer"]["user_id"] == peer_id)
        .cloned()
        .unwrap_or_else(|| panic!("a dialog with {peer_id} in {r}"))
}

async fn message(d: &Device, peer: &Value, id: i64) -> Value {
    let h = d
        .rpc("messages.getHistory", json!({"peer": peer, "limit": 100}))
        .await;
    h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("message {id}"))
}

async fn difference(d: &Device, from: i64) -> Value {
    d.rpc(
        "updates.getDifference",
        json!({"pts": from, "date": 0, "qts": 0}),
    )
    .await
}

fn other_updates(diff: &Value) -> Vec<Value> {
    diff["other_updates"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn affected(r: &Value) -> (i64, i64) {
    assert_eq!(r["_"], "messages.affectedMessages", "{r}");
    (r["pts"].as_i64().unwrap(), r["pts_count"].as_i64().unwrap())
}

/// Alice and Bob, with their box ids out of step: Alice has sent one message to Carol and Bob two,
/// so in their chat Alice's ids start at 2 and Bob's at 3.
struct Chat {
    s: TestServer,
    alice: Device,
    bob: Device,
    to_bob: Value,
    to_alice: Value,
}

async fn chat() -> Chat {
    let s = TestServer::start().await;
    let alice = s.login("+15553001", "Alice").await;
    let bob = s.login("+15553002", "Bob").await;
    let _carol = s.login("+15553003", "Carol").await;
    let a_carol = alice.peer_of("+15553003").await;
    let b_carol = bob.peer_of("+15553003").await;
    alice.send(&a_carol, "hi carol").await;
    bob.send(&b_carol, "hi carol").await;
    bob.send(&b_carol, "again").await;
    let to_bob = alice.peer_of("+15553002").await;
    let to_alice = bob.peer_of("+15553001").await;
    Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    }
}

#[tokio::test]
async fn read_history_moves_the_readers_inbox_and_the_senders_outbox() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    for t in ["one", "two", "three"] {
        alice.send(&to_bob, t).await; // Alice 2, 3, 4; Bob 3, 4, 5
    }
    let d = dialog(&alice, bob.user_id).await;
    assert_eq!(
        d["read_outbox_max_id"], 0,
        "sending does not mark anything read"
    );
    let d = dialog(&bob, alice.user_id).await;
    assert_eq!(
        (d["unread_count"].clone(), d["read_inbox_max_id"].clone()),
        (json!(3), json!(0))
    );
    assert_eq!(bob.state().await["unread_count"], 3);
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 0}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 1, 1));
    let d = dialog(&bob, alice.user_id).await;
    assert_eq!(d["unread_count"], 0);
    assert_eq!(d["read_inbox_max_id"], 5);
    assert_eq!(bob.state().await["unread_count"], 0);
    let db = difference(&bob, pb).await;
    assert_eq!(
        other_updates(&db),
        vec![
            json!({"_": "updateReadHistoryInbox", "folder_id": 0, "peer": {"_": "peerUser", "user_id": alice.user_id},
                    "max_id": 5, "still_unread_count": 0, "pts": pb + 1, "pts_count": 1})
        ]
    );
    assert_eq!(db["state"]["pts"], pb + 1);

    // Alice learns it in her own ids.
    assert_eq!(pts(&alice).await, pa + 1);
    let da = difference(&alice, pa).await;
    assert_eq!(
        other_updates(&da),
        vec![
            json!({"_": "updateReadHistoryOutbox", "peer": {"_": "peerUser", "user_id": bob.user_id},
                    "max_id": 4, "pts": pa + 1, "pts_count": 1})
        ]
    );
    let d = dialog(&alice, bob.user_id).await;
    assert_eq!(d["read_outbox_max_id"], 4);
    assert_eq!(d["unread_count"], 0);

    // Reading again changes nothing, for either side.
    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 0}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 1, 0));
    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 5}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 1, 0));
    assert_eq!(pts(&alice).await, pa + 1);
    assert_eq!(
        difference(&alice, pa + 1).await["_"],
        "updates.differenceEmpty"
    );

    // A new message from Alice does not move her outbox watermark, and is unread for Bob.
    alice.send(&to_bob, "four").await; // Alice 5; Bob 6
    let d = dialog(&alice, bob.user_id).await;
    assert_eq!(d["top_message"], 5);
    assert_eq!(d["read_outbox_max_id"], 4);
    assert_eq!(pts(&alice).await, pa + 2, "just the new message");
    let d = dialog(&bob, alice.user_id).await;
    assert_eq!(
        (d["unread_count"].clone(), d["read_inbox_max_id"].clone()),
        (json!(1), json!(5))
    );

    // Reading Saved Messages changes nothing.
    let r = alice
        .rpc(
            "messages.readHistory",
            json!({"peer": ptslog_tests::self_peer(), "max_id": 0}),
        )
        .await;
    assert_eq!(affected(&r).1, 0);
    s.stop().await;
}

#[tokio::test]
async fn partial_reads_count_what_is_still_unread() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "one").await; // Alice 2; Bob 3
    alice.send(&to_bob, "two").await; // Alice 3; Bob 4
    bob.send(&to_alice, "bob").await; // Bob 5; Alice 4
    alice.send(&to_bob, "three").await; // Alice 5; Bob 6
    alice.send(&to_bob, "four").await; // Alice 6; Bob 7
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);
    assert_eq!(dialog(&bob, alice.user_id).await["unread_count"], 4);

    // Up to Bob's own message 5: "one" and "two" are read, "three" and "four" are not.
    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 5}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 1, 1));
    let u = &other_updates(&difference(&bob, pb).await)[0];
    assert_eq!(u["_"], "updateReadHistoryInbox");
    assert_eq!(u["max_id"], 5);
    assert_eq!(u["still_unread_count"], 2);
    let d = dialog(&bob, alice.user_id).await;
    assert_eq!(
        (d["unread_count"].clone(), d["read_inbox_max_id"].clone()),
        (json!(2), json!(5))
    );
    // The newest message Bob read is "two": Alice's id 3.
    let u = &other_updates(&difference(&alice, pa).await)[0];
    assert_eq!(u["_"], "updateReadHistoryOutbox");
    assert_eq!(u["max_id"], 3);
    assert_eq!(u["pts"], pa + 1);
    assert_eq!(dialog(&alice, bob.user_id).await["read_outbox_max_id"], 3);

    // An older max_id does not move the watermark back.
    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 3}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 1, 0));
    assert_eq!(dialog(&bob, alice.user_id).await["read_inbox_max_id"], 5);

    // One more.
    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 6}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 2, 1));
    let u = &other_updates(&difference(&bob, pb + 1).await)[0];
    assert_eq!(
        (u["max_id"].clone(), u["still_unread_count"].clone()),
        (json!(6), json!(1))
    );
    assert_eq!(dialog(&bob, alice.user_id).await["unread_count"], 1);
    assert_eq!(dialog(&alice, bob.user_id).await["read_outbox_max_id"], 5);

    // A max_id past the end reads everything there is.
    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 1_000_000}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 3, 1));
    let u = &other_updates(&difference(&bob, pb + 2).await)[0];
    assert_eq!(
        (u["max_id"].clone(), u["still_unread_count"].clone()),
        (json!(7), json!(0))
    );
    let d = dialog(&bob, alice.user_id).await;
    assert_eq!(
        (d["unread_count"].clone(), d["read_inbox_max_id"].clone()),
        (json!(0), json!(7))
    );
    assert_eq!(dialog(&alice, bob.user_id).await["read_outbox_max_id"], 6);
    assert_eq!(pts(&alice).await, pa + 3);
    s.stop().await;
}

#[tokio::test]
async fn the_sender_learns_of_the_read_even_if_it_deleted_the_newest_message_for_itself() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "one").await; // Alice 2; Bob 3
    alice.send(&to_bob, "oops").await; // Alice 3; Bob 4
    alice
        .rpc("messages.deleteMessages", json!({"id": [3]}))
        .await; // for Alice only
    let pa = pts(&alice).await;

    let r = bob
        .rpc(
            "messages.readHistory",
            json!({"peer": to_alice, "max_id": 0}),
        )
        .await;
    assert_eq!(affected(&r).1, 1);
    // Bob read everything up to Alice's (deleted) 3, so Alice's 2 is read: her watermark is the
    // position of the newest message Bob read, in her ids.
    let da = difference(&alice, pa).await;
    assert_eq!(
        other_updates(&da),
        vec![
            json!({"_": "updateReadHistoryOutbox", "peer": {"_": "peerUser", "user_id": bob.user_id},
                    "max_id": 3, "pts": pa + 1, "pts_count": 1})
        ]
    );
    assert_eq!(dialog(&alice, bob.user_id).await["read_outbox_max_id"], 3);
    let r = alice
        .rpc(
            "messages.getOutboxReadDate",
            json!({"peer": to_bob, "msg_id": 2}),
        )
        .await;
    assert!(r["date"].as_i64().is_some(), "{r}");
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn outbox_read_date() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "one").await; // Alice 2; Bob 3
    alice.send(&to_bob, "two").await; // Alice 3; Bob 4
    bob.send(&to_alice, "bob").await; // Bob 5; Alice 4

    let read_date = |id: i64| {
        let (alice, to_bob) = (alice.clone(), to_bob.clone());
        async move {
            alice
                .call(
                    "messages.getOutboxReadDate",
                    json!({"peer": to_bob, "msg_id": id}),
                )
                .await
        }
    };
    let (_, err) = alice
        .rpc_err(
            "messages.getOutboxReadDate",
            json!({"peer": to_bob, "msg_id": 2}),
        )
        .await;
    assert_eq!(err, "MESSAGE_NOT_READ_YET");
    // Incoming, unknown, another chat's, impossible ids.
    for id in [4_i64, 999, 1, 0, -2] {
        let (_, err) = alice
            .rpc_err(
                "messages.getOutboxReadDate",
                json!({"peer": to_bob, "msg_id": id}),
            )
            .await;
        assert_eq!(err, "MESSAGE_ID_INVALID", "msg_id {id}");
    }
    // Bob's copy of Alice's message is incoming for him.
    let (_, err) = bob
        .rpc_err(
            "messages.getOutboxReadDate",
            json!({"peer": to_alice, "msg_id": 3}),
        )
        .await;
    assert_eq!(err, "MESSAGE_ID_INVALID");

    let before = now();
    bob.rpc(
        "messages.readHistory",
        json!({"peer": to_alice, "max_id": 3}),
    )
    .await; // reads "one" only
    let after = now();
    let (status, r) = read_date(2).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["_"], "outboxReadDate");
    let first = r["date"].as_i64().unwrap();
    assert!(
        (before..=after).contains(&first),
        "{first} within {before}..={after}"
    );
    let (_, err) = alice
        .rpc_err(
            "messages.getOutboxReadDate",
            json!({"peer": to_bob, "msg_id": 3}),
        )
        .await;
    assert_eq!(err, "MESSAGE_NOT_READ_YET");

    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    bob.rpc(
        "messages.readHistory",
        json!({"peer": to_alice, "max_id": 0}),
    )
    .await;
    let (_, r) = read_date(3).await;
    let second = r["date"].as_i64().expect("read now");
    assert!(second > first, "read later: {second} > {first}");
    let (_, r) = read_date(2).await;
    assert_eq!(
        r["date"], first,
        "a message keeps the date it was first read"
    );
    s.stop().await;
}

/// Delivers a message whose recipient copy has unread contents (as a voice message would), straight
/// through the store port. Answers (sender's id, recipient's id).
async fn deliver_media(s: &TestServer, from: &Device, to: &Device, caption: &str) -> (i64, i64) {
    let store = PgStore::new(s.pool.clone());
    let (sender, recipient) = (
        UserId::new(from.user_id).unwrap(),
        UserId::new(to.user_id).unwrap(),
    );
    let mut tx = store.begin().await.expect("begin");
    tx.lock_users(&[sender, recipient]).await.expect("lock");
    let message_id = tx.next_message_id().await.expect("message id");
    let senders = OwnerMessage {
        id: tx.next_box_id(sender).expect("box id"),
        message_id,
        peer_id: recipient,
        from_id: sender,
        out: true,
        date: now() as i32,
        text: caption.to_string(),
        entities: Vec::new(),
        silent: false,
        noforwards: false,
        reply_to: None,
        fwd_from: None,
        media_unread: false,
        random_id: Some(i64::from(rand::random::<u32>()) + 1),
        edit_date: None,
        media: None,
        grouped_id: None,
    };
    let recipients = OwnerMessage {
        id: tx.next_box_id(recipient).expect("box id"),
        peer_id: sender,
        out: false,
        media_unread: true,
        random_id: None,
        ..senders.clone()
    };
    tx.append(
        sender,
        UserEvent::NewMessage(NewMessage {
            message: senders.clone(),
        }),
        Origin::default(),
    )
    .await
    .unwrap();
    tx.append(
        recipient,
        UserEvent::NewMessage(NewMessage {
            message: recipients.clone(),
        }),
        Origin::default(),
    )
    .await
    .unwrap();
    tx.commit().await.expect("commit");
    (i64::from(senders.id.get()), i64::from(recipients.id.get()))
}

#[tokio::test]
async fn read_message_contents_clears_unread_contents_once() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "text").await; // Alice 2; Bob 3
    let (a_voice, b_voice) = deliver_media(&s, &alice, &bob, "voice 1").await;
    assert_eq!((a_voice, b_voice), (3, 4));
    assert_eq!(message(&bob, &to_alice, 4).await["media_unread"], true);
    assert_eq!(message(&alice, &to_bob, 3).await["media_unread"], false);
    let pb = pts(&bob).await;

    let r = bob
        .rpc("messages.readMessageContents", json!({"id": [4]}))
        .await;
    assert_eq!(affected(&r), (pb + 1, 1));
    assert_eq!(message(&bob, &to_alice, 4).await["media_unread"], false);
    let d = difference(&bob, pb).await;
    let u = other_updates(&d);
    assert_eq!(u.len(), 1, "{d}");
    assert_eq!(u[0]["_"], "updateReadMessagesContents");
    assert_eq!(u[0]["messages"], json!([4]));
    assert_eq!(u[0]["pts"], pb + 1);
    assert_eq!(u[0]["pts_count"], 1);
    assert!((now() - u[0]["date"].as_i64().unwrap()).abs() < 60);

    // A repeat, a text message, an unknown id: nothing to clear.
    for ids in [
        json!([4]),
        json!([3]),
        json!([999]),
        json!([0, -1, 4_294_967_296_i64]),
        json!([]),
    ] {
        let r = bob
            .rpc("messages.readMessageContents", json!({"id": ids}))
            .await;
        assert_eq!(affected(&r), (pb + 1, 0), "ids {ids}");
    }

    // Several at once, with repeats and junk: each unread box counts once.
    let (_, b2) = deliver_media(&s, &alice, &bob, "voice 2").await;
    let (_, b3) = deliver_media(&s, &alice, &bob, "voice 3").await;
    let (_, b4) = deliver_media(&s, &alice, &bob, "voice 4").await;
    assert_eq!((b2, b3, b4), (5, 6, 7));
    // A deleted box is not visible any more.
    bob.rpc("messages.deleteMessages", json!({"id": [b4]}))
        .await;
    let pb = pts(&bob).await;
    let r = bob
        .rpc(
            "messages.readMessageContents",
            json!({"id": [b3, 3, b2, b3, 4, 999, b4]}),
        )
        .await;
    assert_eq!(affected(&r), (pb + 2, 2));
    let u = other_updates(&difference(&bob, pb).await);
    assert_eq!(u.len(), 1);
    let mut got: Vec<i64> = u[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_i64().unwrap())
        .collect();
    got.sort();
    assert_eq!(got, vec![b2, b3]);
    assert_eq!(u[0]["pts_count"], 2);
    assert_eq!(message(&bob, &to_alice, b2).await["media_unread"], false);
    assert_eq!(message(&bob, &to_alice, b3).await["media_unread"], false);

    // Limits: 1000 ids is fine, 1001 is too many.
    let (_, b5) = deliver_media(&s, &alice, &bob, "voice 5").await;
    let pb = pts(&bob).await;
    let too_many: Vec<i64> = (1..=1001).collect();
    let (_, err) = bob
        .rpc_err("messages.readMessageContents", json!({"id": too_many}))
        .await;
    assert_eq!(err, "MESSAGE_IDS_TOO_MUCH");
    assert_eq!(
        message(&bob, &to_alice, b5).await["media_unread"],
        true,
        "a refused call clears nothing"
    );
    let thousand: Vec<i64> = (1..=1000).collect();
    let r = bob
        .rpc("messages.readMessageContents", json!({"id": thousand}))
        .await;
    assert_eq!(affected(&r), (pb + 1, 1));
    assert_eq!(message(&bob, &to_alice, b5).await["media_unread"], false);
    assert_projections_clean(&s).await;
    s.stop().await;
}
