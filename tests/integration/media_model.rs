//! Media messages in every answer that carries a message (docs/media.md, "What a message
//! carries"), independent of uploads: photos and documents put in the catalogue and delivered
//! through the store port as a send does, then read back over the JSON API: history, dialogs,
//! getMessages, getDifference, search filters, caption edits, forwards, voice notes'
//! `media_unread`.

use std::time::{SystemTime, UNIX_EPOCH};

use application::media::MediaCatalog;
use application::ports::{Origin, Store};
use domain::events::{NewMessage, UserEvent};
use domain::media::{
    BlobKey, Document, DocumentAttributes, MediaId, MessageMedia, Photo, PhotoSize,
};
use domain::message::OwnerMessage;
use domain::UserId;
use infrastructure::postgres::media_catalog::PgMediaCatalog;
use infrastructure::PgStore;
use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

use super::send::{difference, history, rid, three, ALICE, BOB};

fn now() -> i32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i32
}

async fn voice(catalog: &PgMediaCatalog, owner: UserId) -> MessageMedia {
    let attributes = DocumentAttributes::parse(
        serde_json::from_value(json!([{"_": "documentAttributeAudio", "voice": true,
            "duration": 2, "waveform": "0a1f"}]))
        .unwrap(),
    )
    .unwrap();
    let id = catalog.next_media_id().await.unwrap();
    let document = Document::new(
        id,
        rid(),
        now(),
        "audio/ogg",
        4000,
        BlobKey::of(b"voice"),
        attributes,
        vec![],
        vec![],
    )
    .unwrap();
    catalog.put_document(owner, &document).await.unwrap();
    MessageMedia::Document {
        document,
        spoiler: false,
    }
}

async fn photo(catalog: &PgMediaCatalog, owner: UserId) -> MessageMedia {
    let id: MediaId = catalog.next_media_id().await.unwrap();
    let sizes = vec![
        PhotoSize::new('s', 90, 60, 1200, BlobKey::of(b"s")).unwrap(),
        PhotoSize::new('x', 800, 533, 60000, BlobKey::of(b"x")).unwrap(),
    ];
    let photo = Photo::new(id, rid(), now(), sizes, vec![1, 40, 40, 0]).unwrap();
    catalog.put_photo(owner, &photo).await.unwrap();
    MessageMedia::Photo {
        photo,
        spoiler: false,
    }
}

/// Delivers a media message from `from` to `to` through the store port, as a send does.
async fn deliver(s: &TestServer, from: &Device, to: &Device, caption: &str, media: MessageMedia) {
    let store = PgStore::new(s.pool.clone());
    let (sender, recipient) = (
        UserId::new(from.user_id).unwrap(),
        UserId::new(to.user_id).unwrap(),
    );
    let mut tx = store.begin().await.unwrap();
    tx.lock_users(&[sender, recipient]).await.unwrap();
    let message_id = tx.next_message_id().await.unwrap();
    let senders = OwnerMessage {
        id: tx.next_box_id(sender).unwrap(),
        message_id,
        peer_id: recipient,
        from_id: sender,
        out: true,
        date: now(),
        text: caption.to_string(),
        entities: Vec::new(),
        silent: false,
        noforwards: false,
        reply_to: None,
        fwd_from: None,
        media_unread: false,
        random_id: Some(rid()),
        edit_date: None,
        media: Some(Box::new(media.clone())),
        grouped_id: None,
    };
    let recipients = OwnerMessage {
        id: tx.next_box_id(recipient).unwrap(),
        peer_id: sender,
        out: false,
        media_unread: media.unread_for_recipient(),
        random_id: None,
        ..senders.clone()
    };
    for (owner, m) in [(sender, senders), (recipient, recipients)] {
        tx.append(
            owner,
            UserEvent::NewMessage(NewMessage { message: m }),
            Origin::default(),
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

async fn search(d: &Device, peer: &Value, filter: &str) -> Vec<Value> {
    let r = d
        .rpc(
            "messages.search",
            json!({"peer": peer, "q": "", "filter": {"_": filter}, "limit": 20}),
        )
        .await;
    r["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn media_messages_show_in_every_answer_and_follow_edits_forwards_and_filters() {
    let s = TestServer::start_with(|c| ptslog_tests::with_admin(c, false)).await;
    let (alice, bob, carol, to_bob, _) = three(&s).await;
    let bob_to_alice = bob.peer_of(ALICE).await;
    let bob_to_carol = bob.peer_of(super::send::CAROL).await;
    let catalog = PgMediaCatalog::new(s.pool.clone());
    let a = UserId::new(alice.user_id).unwrap();
    let voice_media = voice(&catalog, a).await;
    let photo_media = photo(&catalog, a).await;
    deliver(&s, &alice, &bob, "", voice_media.clone()).await;
    deliver(&s, &alice, &bob, "look", photo_media.clone()).await;

    // The events export has the media in the payload, at payload version 2.
    let export = s
        .http
        .get(format!(
            "{}/admin/events?user={}&kind=new_message",
            s.admin_base, bob.user_id
        ))
        .bearer_auth(ptslog_tests::TEST_ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let records: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<(&Value, &Value)> = records
        .iter()
        .map(|r| {
            (
                &r["payload_version"],
                &r["payload"]["message"]["media"]["type"],
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (&json!(2), &json!("document")),
            (&json!(2), &json!("photo"))
        ],
        "{export}"
    );

    // History: newest first, each with its media, this server's DC and a fresh reference.
    let h = history(&bob, &bob_to_alice).await;
    let (p, v) = (&h[0], &h[1]);
    assert_eq!(p["media"]["_"], "messageMediaPhoto", "{p}");
    assert_eq!(p["message"], "look");
    let tl_photo = &p["media"]["photo"];
    assert_eq!(tl_photo["id"], photo_media.id().get());
    assert_eq!(tl_photo["dc_id"], 2);
    assert_eq!(tl_photo["file_reference"].as_str().unwrap().len(), 40);
    let kinds: Vec<&str> = tl_photo["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["i", "s", "x"]);
    assert_eq!(tl_photo["sizes"][2]["size"], 60000);
    assert_eq!(v["media"]["_"], "messageMediaDocument");
    assert_eq!(v["media"]["voice"], true);
    assert_eq!(v["media"]["document"]["mime_type"], "audio/ogg");
    assert_eq!(v["media"]["document"]["dc_id"], 2);
    assert_eq!(
        v["media_unread"], true,
        "a voice note is unread for its recipient"
    );
    assert_eq!(
        history(&alice, &to_bob).await[1]["media_unread"],
        false,
        "and read for its sender"
    );

    // The dialog's top message, getMessages and an offline device's difference carry it too.
    let dialogs = bob
        .rpc(
            "messages.getDialogs",
            json!({"offset_peer": {"_": "inputPeerEmpty"}, "limit": 10}),
        )
        .await;
    assert_eq!(
        dialogs["messages"][0]["media"]["photo"]["id"],
        tl_photo["id"]
    );
    let got = bob
        .rpc(
            "messages.getMessages",
            json!({"id": [{"_": "inputMessageID", "id": p["id"]}]}),
        )
        .await;
    assert_eq!(
        got["messages"][0]["media"]["photo"]["id"], tl_photo["id"],
        "{got}"
    );
    let (new_messages, _) = difference(&bob, 0).await;
    let with_media: Vec<&str> = new_messages
        .iter()
        .filter_map(|m| m["media"]["_"].as_str())
        .collect();
    assert_eq!(with_media, ["messageMediaDocument", "messageMediaPhoto"]);

    // Search filters by the kind of media.
    assert_eq!(
        search(&bob, &bob_to_alice, "inputMessagesFilterPhotos")
            .await
            .len(),
        1
    );
    assert_eq!(
        search(&bob, &bob_to_alice, "inputMessagesFilterPhotoVideo")
            .await
            .len(),
        1
    );
    assert_eq!(
        search(&bob, &bob_to_alice, "inputMessagesFilterRoundVoice")
            .await
            .len(),
        1
    );
    assert_eq!(
        search(&bob, &bob_to_alice, "inputMessagesFilterVoice")
            .await
            .len(),
        1
    );
    assert_eq!(
        search(&bob, &bob_to_alice, "inputMessagesFilterDocument")
            .await
            .len(),
        0
    );
    assert_eq!(
        search(&bob, &bob_to_alice, "inputMessagesFilterUrl")
            .await
            .len(),
        0
    );
    assert_eq!(
        search(&bob, &bob_to_alice, "inputMessagesFilterEmpty")
            .await
            .len(),
        2
    );

    // Playing the voice note clears it, once.
    let read = bob
        .rpc("messages.readMessageContents", json!({"id": [v["id"]]}))
        .await;
    assert_eq!(read["pts_count"], 1, "{read}");
    assert_eq!(history(&bob, &bob_to_alice).await[1]["media_unread"], false);

    // A caption edit keeps the photo in both boxes; an empty caption is a caption.
    let mine = history(&alice, &to_bob).await[0].clone();
    for caption in ["new caption", ""] {
        let edited = alice
            .rpc(
                "messages.editMessage",
                json!({"peer": to_bob, "id": mine["id"], "message": caption}),
            )
            .await;
        assert_eq!(
            edited["updates"][0]["message"]["media"]["photo"]["id"],
            tl_photo["id"]
        );
        let theirs = history(&bob, &bob_to_alice).await[0].clone();
        assert_eq!(theirs["message"], caption);
        assert_eq!(theirs["media"]["photo"]["id"], tl_photo["id"]);
    }
    let (_, e) = alice
        .rpc_err(
            "messages.editMessage",
            json!({"peer": to_bob, "id": mine["id"], "message": "я".repeat(1025)}),
        )
        .await;
    assert_eq!(e, "MEDIA_CAPTION_TOO_LONG");

    // Forwarding keeps the same photo.
    let fwd = bob
        .rpc(
            "messages.forwardMessages",
            json!({"from_peer": bob_to_alice, "to_peer": bob_to_carol, "id": [p["id"]],
                "random_id": [rid()]}),
        )
        .await;
    assert_eq!(
        fwd["updates"][1]["message"]["media"]["photo"]["id"], tl_photo["id"],
        "{fwd}"
    );
    let carols = history(&carol, &carol.peer_of(BOB).await).await;
    assert_eq!(carols[0]["media"]["photo"]["id"], tl_photo["id"]);
    assert_eq!(carols[0]["fwd_from"]["from_id"]["user_id"], alice.user_id);
    s.stop().await;
}

fn input_photo(p: &Value) -> Value {
    json!({"_": "inputMediaPhoto", "id": {"_": "inputPhoto", "id": p["id"],
        "access_hash": p["access_hash"], "file_reference": p["file_reference"]}})
}

fn input_document(d: &Value) -> Value {
    json!({"_": "inputMediaDocument", "id": {"_": "inputDocument", "id": d["id"],
        "access_hash": d["access_hash"], "file_reference": d["file_reference"]}})
}

/// The message of the `n`th updateNewMessage of an `updates` answer.
fn sent(answer: &Value, n: usize) -> Value {
    answer["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["_"] == "updateNewMessage")
        .nth(n)
        .unwrap_or_else(|| panic!("no updateNewMessage #{n} in {answer}"))["message"]
        .clone()
}

#[tokio::test]
async fn media_is_sent_again_by_id_only_by_who_may_see_it() {
    let s = TestServer::start().await;
    let (alice, bob, carol, to_bob, to_carol) = three(&s).await;
    let bob_to_alice = bob.peer_of(ALICE).await;
    let catalog = PgMediaCatalog::new(s.pool.clone());
    let a = UserId::new(alice.user_id).unwrap();
    deliver(&s, &alice, &bob, "", voice(&catalog, a).await).await;
    deliver(&s, &alice, &bob, "look", photo(&catalog, a).await).await;
    let h = history(&bob, &bob_to_alice).await;
    let (p, d) = (
        h[0]["media"]["photo"].clone(),
        h[1]["media"]["document"].clone(),
    );

    // An edit with new media replaces it in both boxes (and keeps the caption when none is given).
    let mine = history(&alice, &to_bob).await;
    let edited = alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": mine[0]["id"],
            "media": input_document(&mine[1]["media"]["document"])}),
        )
        .await;
    assert_eq!(
        edited["updates"][0]["message"]["media"]["document"]["id"], d["id"],
        "{edited}"
    );
    let theirs = history(&bob, &bob_to_alice).await[0].clone();
    assert_eq!(
        (
            theirs["message"].as_str(),
            &theirs["media"]["document"]["id"]
        ),
        (Some("look"), &d["id"])
    );
    alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": mine[0]["id"],
            "media": input_photo(&mine[0]["media"]["photo"])}),
        )
        .await;
    assert_eq!(
        history(&bob, &bob_to_alice).await[0]["media"]["photo"]["id"],
        p["id"]
    );

    // Bob sees both: he may send them on, to Carol, as a photo and a voice note again.
    let random_id = rid();
    let params = json!({"peer": bob.peer_of(super::send::CAROL).await, "media": input_photo(&p),
        "message": "from Alice", "random_id": random_id});
    let answer = bob.rpc("messages.sendMedia", params.clone()).await;
    assert_eq!(answer["updates"][0]["_"], "updateMessageID", "{answer}");
    assert_eq!(answer["updates"][0]["random_id"], random_id);
    let m = sent(&answer, 0);
    assert_eq!(
        (m["media"]["photo"]["id"].clone(), m["message"].clone()),
        (p["id"].clone(), json!("from Alice"))
    );
    // A retry answers the same message and sends nothing more.
    let again = bob.rpc("messages.sendMedia", params).await;
    assert_eq!(sent(&again, 0)["id"], m["id"]);
    let carols = history(&carol, &carol.peer_of(BOB).await).await;
    assert_eq!(carols.len(), 1);
    assert_eq!(carols[0]["media"]["photo"]["id"], p["id"]);
    let v = bob
        .rpc(
            "messages.sendMedia",
            json!({"peer": {"_": "inputPeerSelf"}, "media": input_document(&d),
            "message": "", "random_id": rid()}),
        )
        .await;
    assert_eq!(sent(&v, 0)["media"]["voice"], true);
    assert_eq!(
        sent(&v, 0)["media_unread"],
        false,
        "Saved Messages are read"
    );

    // Dave never saw them: whatever he learned, the answer is as for no such media.
    let dave = s.login("+15550004", "Dave").await;
    let dave_to_alice = dave.peer_of(ALICE).await;
    for (media, error) in [
        (input_photo(&p), "PHOTO_INVALID"),
        (input_document(&d), "DOCUMENT_INVALID"),
    ] {
        let (_, e) = dave
            .rpc_err(
                "messages.sendMedia",
                json!({"peer": dave_to_alice, "media": media,
                "message": "", "random_id": rid()}),
            )
            .await;
        assert_eq!(e, error);
    }
    // A wrong access hash, an unknown id, a forged or missing reference.
    let mut wrong = p.clone();
    wrong["access_hash"] = json!(p["access_hash"].as_i64().unwrap() ^ 1);
    let mut unknown = p.clone();
    unknown["id"] = json!(p["id"].as_i64().unwrap() + 1000);
    let mut forged = p.clone();
    forged["file_reference"] = json!("01".repeat(20));
    let mut missing = p.clone();
    missing["file_reference"] = json!("");
    for (photo, error) in [
        (&wrong, "PHOTO_INVALID"),
        (&unknown, "PHOTO_INVALID"),
        (&forged, "FILE_REFERENCE_EXPIRED"),
        (&missing, "FILE_REFERENCE_EXPIRED"),
    ] {
        let (_, e) = bob
            .rpc_err(
                "messages.sendMedia",
                json!({"peer": bob_to_alice, "media": input_photo(photo),
                "message": "", "random_id": rid()}),
            )
            .await;
        assert_eq!(e, error, "{photo}");
    }
    // A photo named as a document and other InputMedia are refused.
    let (_, e) = bob
        .rpc_err(
            "messages.sendMedia",
            json!({"peer": bob_to_alice, "media": input_document(&p),
            "message": "", "random_id": rid()}),
        )
        .await;
    assert_eq!(e, "DOCUMENT_INVALID");
    let (_, e) = bob
        .rpc_err(
            "messages.sendMedia",
            json!({"peer": bob_to_alice, "message": "", "random_id": rid(),
            "media": {"_": "inputMediaGeoPoint", "geo_point": {"_": "inputGeoPointEmpty"}}}),
        )
        .await;
    assert_eq!(e, "MEDIA_INVALID");
    let (_, e) = bob
        .rpc_err(
            "messages.sendMedia",
            json!({"peer": bob_to_alice, "message": "я".repeat(1025),
            "random_id": rid(), "media": input_photo(&p)}),
        )
        .await;
    assert_eq!(e, "MEDIA_CAPTION_TOO_LONG");
    bob.rpc(
        "messages.sendMedia",
        json!({"peer": bob_to_alice, "message": "я".repeat(1024),
        "random_id": rid(), "media": input_photo(&p)}),
    )
    .await;

    // An album of up to ten items shares one grouped_id in both boxes.
    let item =
        |n: usize| json!({"media": input_photo(&p), "random_id": rid(), "message": format!("{n}")});
    let album = bob
        .rpc(
            "messages.sendMultiMedia",
            json!({"peer": bob_to_alice,
            "multi_media": (0..10).map(item).collect::<Vec<_>>()}),
        )
        .await;
    let group = sent(&album, 0)["grouped_id"].clone();
    assert!(group.as_i64().is_some_and(|g| g > 0), "{album}");
    let alices = history(&alice, &to_bob).await;
    assert!(alices[..10]
        .iter()
        .all(|m| m["grouped_id"] == group && m["media"]["photo"]["id"] == p["id"]));
    assert!(alices[10].get("grouped_id").is_none());
    let (_, e) = bob
        .rpc_err(
            "messages.sendMultiMedia",
            json!({"peer": bob_to_alice,
            "multi_media": (0..11).map(item).collect::<Vec<_>>()}),
        )
        .await;
    assert_eq!(e, "MULTI_MEDIA_TOO_LONG");
    let (_, e) = bob
        .rpc_err(
            "messages.sendMultiMedia",
            json!({"peer": bob_to_alice, "multi_media": []}),
        )
        .await;
    assert_eq!(e, "MEDIA_EMPTY");
    // Once Carol deletes her only message carrying the photo, she can no longer name it.
    let carols = history(&carol, &carol.peer_of(BOB).await).await[0].clone();
    carol
        .rpc(
            "messages.deleteMessages",
            json!({"id": [carols["id"]], "revoke": false}),
        )
        .await;
    let (_, e) = carol
        .rpc_err(
            "messages.sendMedia",
            json!({"peer": {"_": "inputPeerSelf"}, "message": "",
            "random_id": rid(), "media": input_photo(&carols["media"]["photo"])}),
        )
        .await;
    assert_eq!(e, "PHOTO_INVALID");
    let _ = to_carol;
    s.stop().await;
}
