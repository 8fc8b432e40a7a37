//! `messages.editMessage` over HTTP: both owners' boxes, each owner's own update, and every refusal.

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

async fn history(d: &Device, peer: &Value) -> Vec<Value> {
    let h = d
        .rpc("messages.getHistory", json!({"peer": peer, "limit": 100}))
        .await;
    h["messages"].as_array().expect("messages").clone()
}

async fn message(d: &Device, peer: &Value, id: i64) -> Value {
    history(d, peer)
        .await
        .into_iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("message {id} in history"))
}

async fn difference(d: &Device, from: i64) -> Value {
    d.rpc(
        "updates.getDifference",
        json!({"pts": from, "date": 0, "qts": 0}),
    )
    .await
}

/// Alice, Bob and Carol, with Alice's and Bob's box ids deliberately out of step: Alice has sent one
/// message to Carol and Bob two, so Alice's next box id is 2 and Bob's is 3.
struct Chat {
    s: TestServer,
    alice: Device,
    bob: Device,
    to_bob: Value,
    to_alice: Value,
}

async fn chat() -> Chat {
    let s = TestServer::start().await;
    let alice = s.login("+15551001", "Alice").await;
    let bob = s.login("+15551002", "Bob").await;
    let _carol = s.login("+15551003", "Carol").await;
    let a_carol = alice.peer_of("+15551003").await;
    let b_carol = bob.peer_of("+15551003").await;
    alice.send(&a_carol, "hi carol").await;
    bob.send(&b_carol, "hi carol").await;
    bob.send(&b_carol, "again").await;
    let to_bob = alice.peer_of("+15551002").await;
    let to_alice = bob.peer_of("+15551001").await;
    Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    }
}

#[tokio::test]
async fn author_edit_reaches_both_boxes_each_with_its_own_update() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    let sent = alice.send(&to_bob, "original").await;
    assert_eq!(sent["id"], 2, "Alice's box id");
    let bobs = message(&bob, &to_alice, 3).await;
    assert_eq!(bobs["message"], "original", "Bob's copy has his own id 3");
    assert!(bobs.get("edit_date").is_none());

    let (pa, pb) = (pts(&alice).await, pts(&bob).await);
    let bold = json!([{"_": "messageEntityBold", "offset": 0, "length": 6}]);
    let answer = alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "edited text", "entities": bold}),
        )
        .await;
    assert_eq!(answer["_"], "updates");
    let updates = answer["updates"].as_array().unwrap();
    assert_eq!(updates.len(), 1, "{answer}");
    let u = &updates[0];
    assert_eq!(u["_"], "updateEditMessage");
    assert_eq!(u["pts"], pa + 1);
    assert_eq!(u["pts_count"], 1);
    assert_eq!(u["message"]["id"], 2);
    assert_eq!(u["message"]["out"], true);
    assert_eq!(u["message"]["message"], "edited text");
    assert_eq!(u["message"]["entities"], bold);
    let edit_date = u["message"]["edit_date"]
        .as_i64()
        .expect("edit_date in the answer");
    assert!(edit_date >= u["message"]["date"].as_i64().unwrap());
    let user_ids: Vec<i64> = answer["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_i64().unwrap())
        .collect();
    assert!(
        user_ids.contains(&alice.user_id) && user_ids.contains(&bob.user_id),
        "{answer}"
    );

    // Both boxes hold the new text and edit date.
    let mine = message(&alice, &to_bob, 2).await;
    assert_eq!(mine["message"], "edited text");
    assert_eq!(mine["entities"], bold);
    assert_eq!(mine["edit_date"], edit_date);
    let theirs = message(&bob, &to_alice, 3).await;
    assert_eq!(theirs["message"], "edited text");
    assert_eq!(theirs["entities"], bold);
    assert_eq!(theirs["edit_date"], edit_date);
    assert_eq!(theirs["out"], false);

    // Each owner's log has exactly one edit event, with its own id.
    assert_eq!(pts(&alice).await, pa + 1);
    assert_eq!(pts(&bob).await, pb + 1);
    let da = difference(&alice, pa).await;
    assert_eq!(da["_"], "updates.difference");
    assert_eq!(da["new_messages"], json!([]));
    let ua = da["other_updates"].as_array().unwrap();
    assert_eq!(ua.len(), 1, "{da}");
    assert_eq!(ua[0]["_"], "updateEditMessage");
    assert_eq!(ua[0]["message"]["id"], 2);
    assert_eq!(ua[0]["message"]["message"], "edited text");
    assert_eq!(ua[0]["pts"], pa + 1);
    assert_eq!(ua[0]["pts_count"], 1);
    assert_eq!(da["state"]["pts"], pa + 1);

    let db = difference(&bob, pb).await;
    let ub = db["other_updates"].as_array().unwrap();
    assert_eq!(ub.len(), 1, "{db}");
    assert_eq!(ub[0]["_"], "updateEditMessage");
    assert_eq!(ub[0]["message"]["id"], 3, "Bob's update names Bob's box id");
    assert_eq!(ub[0]["message"]["out"], false);
    assert_eq!(ub[0]["message"]["message"], "edited text");
    assert_eq!(ub[0]["message"]["edit_date"], edit_date);
    assert_eq!(ub[0]["pts"], pb + 1);
    assert_eq!(ub[0]["pts_count"], 1);
    assert_eq!(db["state"]["pts"], pb + 1);

    // Same text with other entities is a change; the very same text and entities is not.
    let italic = json!([{"_": "messageEntityItalic", "offset": 0, "length": 6}]);
    let again = alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "edited text", "entities": italic}),
        )
        .await;
    assert_eq!(again["updates"][0]["pts"], pa + 2);
    assert_eq!(message(&bob, &to_alice, 3).await["entities"], italic);
    let (_, err) = alice
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "edited text", "entities": italic}),
        )
        .await;
    assert_eq!(err, "MESSAGE_NOT_MODIFIED");
    assert_eq!(
        pts(&alice).await,
        pa + 2,
        "a refused edit appends nothing for Alice"
    );
    assert_eq!(
        pts(&bob).await,
        pb + 2,
        "a refused edit appends nothing for Bob"
    );
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn only_the_author_edits_existing_messages_of_this_chat() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "alice wrote this").await; // Alice 2, Bob 3
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    // Bob names Alice's message by his own id: he is not its author.
    let (_, err) = bob
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_alice, "id": 3, "message": "bob's"}),
        )
        .await;
    assert_eq!(err, "MESSAGE_AUTHOR_REQUIRED");
    // Unknown ids, ids of another chat, and ids that cannot be box ids.
    for id in [999_i64, 1, 0, -3, i64::from(i32::MAX) + 1] {
        let (_, err) = alice
            .rpc_err(
                "messages.editMessage",
                json!({"peer": to_bob, "id": id, "message": "x"}),
            )
            .await;
        assert_eq!(err, "MESSAGE_ID_INVALID", "id {id}");
    }
    // Alice's box 2 exists, but Bob's box 2 is his message to Carol, not in the chat with Alice.
    let (_, err) = bob
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_alice, "id": 2, "message": "x"}),
        )
        .await;
    assert_eq!(err, "MESSAGE_ID_INVALID");
    // The unchanged text.
    let (_, err) = alice
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "alice wrote this"}),
        )
        .await;
    assert_eq!(err, "MESSAGE_NOT_MODIFIED");

    assert_eq!(pts(&alice).await, pa);
    assert_eq!(pts(&bob).await, pb);
    assert_eq!(difference(&bob, pb).await["_"], "updates.differenceEmpty");
    assert_eq!(
        message(&bob, &to_alice, 3).await["message"],
        "alice wrote this"
    );
    assert!(message(&alice, &to_bob, 2).await.get("edit_date").is_none());
    s.stop().await;
}

#[tokio::test]
async fn text_limits_and_media() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "short").await; // Alice 2, Bob 3
    let pa = pts(&alice).await;

    // 4097 code points (each one UTF-16 pair, 4 UTF-8 bytes) is too long; 4096 is fine.
    let too_long = "😀".repeat(4097);
    let (_, err) = alice
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": too_long}),
        )
        .await;
    assert_eq!(err, "MESSAGE_TOO_LONG");
    assert_eq!(pts(&alice).await, pa);
    let longest = "😀".repeat(4096);
    alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": longest}),
        )
        .await;
    assert_eq!(message(&bob, &to_alice, 3).await["message"], longest);

    // A text message cannot gain media (docs/media.md), media ptslog does not serve is
    // MEDIA_INVALID; inputMediaEmpty is a plain text edit.
    for (media, error) in [
        (
            json!({"_": "inputMediaUploadedPhoto", "file": {"_": "inputFile", "id": 1, "parts": 1, "name": "a.jpg", "md5_checksum": ""}}),
            "MEDIA_PREV_INVALID",
        ),
        (
            json!({"_": "inputMediaPhoto", "id": {"_": "inputPhoto", "id": 1, "access_hash": 1, "file_reference": ""}}),
            "MEDIA_PREV_INVALID",
        ),
        (
            json!({"_": "inputMediaGeoPoint", "geo_point": {"_": "inputGeoPoint", "lat": 1.0, "long": 2.0}}),
            "MEDIA_INVALID",
        ),
    ] {
        let (_, err) = alice
            .rpc_err(
                "messages.editMessage",
                json!({"peer": to_bob, "id": 2, "message": "with media", "media": media}),
            )
            .await;
        assert_eq!(err, error, "{media}");
    }
    assert_eq!(
        pts(&alice).await,
        pa + 1,
        "only the 4096 edit changed anything"
    );
    let pa = pts(&alice).await;
    let answer = alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "no media", "media": {"_": "inputMediaEmpty"}}),
        )
        .await;
    assert_eq!(answer["updates"][0]["_"], "updateEditMessage");
    assert_eq!(answer["updates"][0]["pts"], pa + 1);
    assert_eq!(message(&alice, &to_bob, 2).await["message"], "no media");
    assert_eq!(message(&bob, &to_alice, 3).await["message"], "no media");
    s.stop().await;
}

#[tokio::test]
async fn a_peer_who_blocked_the_author_forbids_edits() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "before the block").await; // Alice 2, Bob 3
    bob.rpc("contacts.block", json!({"id": to_alice})).await;
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let (_, err) = alice
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "sneaky"}),
        )
        .await;
    assert_eq!(err, "EDIT_MESSAGES_FORBIDDEN");
    assert_eq!(pts(&alice).await, pa);
    assert_eq!(pts(&bob).await, pb);
    assert_eq!(
        message(&bob, &to_alice, 3).await["message"],
        "before the block"
    );
    assert_eq!(
        message(&alice, &to_bob, 2).await["message"],
        "before the block"
    );

    // Once Bob unblocks Alice, her edits reach his box again.
    bob.rpc("contacts.unblock", json!({"id": to_alice})).await;
    let pb = pts(&bob).await;
    alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "after the block"}),
        )
        .await;
    assert_eq!(
        message(&bob, &to_alice, 3).await["message"],
        "after the block"
    );
    assert_eq!(pts(&bob).await, pb + 1);
    s.stop().await;
}

#[tokio::test]
async fn editing_in_saved_messages_touches_one_box() {
    let s = TestServer::start().await;
    let alice = s.login("+15551011", "Alice").await;
    let me = ptslog_tests::self_peer();
    let sent = alice.send(&me, "note").await;
    let id = sent["id"].as_i64().unwrap();
    let pa = pts(&alice).await;
    let answer = alice
        .rpc(
            "messages.editMessage",
            json!({"peer": me, "id": id, "message": "note, edited"}),
        )
        .await;
    assert_eq!(answer["updates"][0]["pts"], pa + 1);
    assert_eq!(answer["updates"][0]["pts_count"], 1);
    assert_eq!(
        pts(&alice).await,
        pa + 1,
        "one event: Saved Messages has one owner"
    );
    assert_eq!(message(&alice, &me, id).await["message"], "note, edited");
    s.stop().await;
}

#[tokio::test]
async fn an_edit_skips_a_copy_the_peer_deleted() {
    let Chat {
        s,
        alice,
        bob,
        to_bob,
        to_alice,
    } = chat().await;
    alice.send(&to_bob, "soon gone for bob").await; // Alice 2, Bob 3
    bob.rpc("messages.deleteMessages", json!({"id": [3]})).await;
    let (pa, pb) = (pts(&alice).await, pts(&bob).await);

    let answer = alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "edited"}),
        )
        .await;
    assert_eq!(answer["updates"][0]["pts"], pa + 1);
    assert_eq!(message(&alice, &to_bob, 2).await["message"], "edited");
    assert_eq!(pts(&bob).await, pb, "nothing to edit in Bob's box");
    assert_eq!(difference(&bob, pb).await["_"], "updates.differenceEmpty");
    assert!(history(&bob, &to_alice).await.is_empty());

    // And the author cannot edit a message it deleted for itself.
    alice
        .rpc("messages.deleteMessages", json!({"id": [2]}))
        .await;
    let (_, err) = alice
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "again"}),
        )
        .await;
    assert_eq!(err, "MESSAGE_ID_INVALID");
    s.stop().await;
}
