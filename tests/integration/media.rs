//! Media messages end to end over the JSON API (docs/media.md): uploads made into documents and
//! photos, shown in every answer that carries the message, downloaded byte for byte by whoever
//! can see a message carrying them and by no one else; albums, forwards, caption edits, search
//! filters, retries and voice notes' `media_unread`.

use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

use super::send::{difference, history, rid, three, BOB, CAROL};

/// Uploads `bytes` with upload.saveFilePart in 512 KiB parts; answers the `inputFile`.
pub(crate) async fn upload(d: &Device, bytes: &[u8], name: &str) -> Value {
    let file_id = rid();
    let parts: Vec<&[u8]> = bytes.chunks(512 * 1024).collect();
    for (i, part) in parts.iter().enumerate() {
        let ok = d
            .rpc(
                "upload.saveFilePart",
                json!({"file_id": file_id, "file_part": i, "bytes": hex::encode(part)}),
            )
            .await;
        assert_eq!(ok["_"], "boolTrue", "{ok}");
    }
    json!({"_": "inputFile", "id": file_id, "parts": parts.len(), "name": name, "md5_checksum": ""})
}

/// Downloads a whole file with upload.getFile in 512 KiB steps (never across a 1 MiB boundary).
pub(crate) async fn download(d: &Device, location: &Value) -> Result<Vec<u8>, String> {
    const STEP: usize = 512 * 1024;
    let mut out = Vec::new();
    loop {
        let (status, r) = d
            .call(
                "upload.getFile",
                json!({"location": location, "offset": out.len(), "limit": STEP}),
            )
            .await;
        if status != 200 {
            return Err(r["error_message"].as_str().unwrap_or_default().to_string());
        }
        let chunk = hex::decode(r["bytes"].as_str().expect("bytes")).expect("hex");
        let n = chunk.len();
        out.extend(chunk);
        if n < STEP {
            return Ok(out);
        }
    }
}

pub(crate) fn document_location(doc: &Value, thumb: &str) -> Value {
    json!({"_": "inputDocumentFileLocation", "id": doc["id"], "access_hash": doc["access_hash"],
        "file_reference": doc["file_reference"], "thumb_size": thumb})
}

pub(crate) fn photo_location(photo: &Value, size: &str) -> Value {
    json!({"_": "inputPhotoFileLocation", "id": photo["id"], "access_hash": photo["access_hash"],
        "file_reference": photo["file_reference"], "thumb_size": size})
}

/// The message of an `updates` answer's updateNewMessage (the `n`th).
pub(crate) fn sent_message(answer: &Value, n: usize) -> Value {
    answer["updates"]
        .as_array()
        .expect("updates")
        .iter()
        .filter(|u| u["_"] == "updateNewMessage")
        .nth(n)
        .unwrap_or_else(|| panic!("no updateNewMessage #{n} in {answer}"))["message"]
        .clone()
}

pub(crate) fn pseudo_random_bytes(n: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// A real JPEG of `w`×`h` (a gradient), made with the `image` crate.
pub(crate) fn jpeg(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Jpeg)
        .expect("encode jpeg");
    out.into_inner()
}

pub(crate) async fn send_media(d: &Device, peer: &Value, media: Value, caption: &str) -> Value {
    d.rpc(
        "messages.sendMedia",
        json!({"peer": peer, "media": media, "message": caption, "random_id": rid()}),
    )
    .await
}

#[tokio::test]
async fn a_document_is_shown_everywhere_and_downloaded_only_by_who_sees_it() {
    let s = TestServer::start().await;
    let (alice, bob, carol, to_bob, _) = three(&s).await;
    let bob_to_alice = bob.peer_of(super::send::ALICE).await;
    let bob_to_carol = bob.peer_of(CAROL).await;
    let bytes = pseudo_random_bytes(300 * 1024 + 17);
    let file = upload(&alice, &bytes, "report.bin").await;
    let random_id = rid();
    let params = json!({"peer": to_bob, "message": "the report", "random_id": random_id,
        "media": {"_": "inputMediaUploadedDocument", "file": file, "mime_type": "application/x-test",
            "attributes": [{"_": "documentAttributeFilename", "file_name": "report.bin"}]}});
    let sent = alice.rpc("messages.sendMedia", params.clone()).await;
    assert_eq!(sent["updates"][0]["_"], "updateMessageID", "{sent}");
    let mine = sent_message(&sent, 0);
    let doc = &mine["media"]["document"];
    assert_eq!(mine["media"]["_"], "messageMediaDocument");
    assert_eq!(doc["size"], bytes.len());
    assert_eq!(doc["dc_id"], 2);
    assert_eq!(doc["mime_type"], "application/x-test");
    assert_eq!(mine["message"], "the report");

    // A retry answers the first send and sends nothing more.
    let again = alice.rpc("messages.sendMedia", params).await;
    assert_eq!(sent_message(&again, 0)["id"], mine["id"]);
    assert_eq!(history(&alice, &to_bob).await.len(), 1);

    // The recipient sees it in its history, its dialogs and its difference, and downloads it.
    let theirs = history(&bob, &bob_to_alice).await[0].clone();
    let their_doc = theirs["media"]["document"].clone();
    assert_eq!(their_doc["id"], doc["id"]);
    assert_eq!(
        theirs["media_unread"], false,
        "only voice and round notes start unread"
    );
    let dialogs = bob
        .rpc(
            "messages.getDialogs",
            json!({"offset_peer": {"_": "inputPeerEmpty"}, "limit": 10}),
        )
        .await;
    assert_eq!(dialogs["messages"][0]["media"]["document"]["id"], doc["id"]);
    let (new_messages, _) = difference(&bob, 0).await;
    assert_eq!(new_messages[0]["media"]["document"]["id"], doc["id"]);
    assert_eq!(
        download(&bob, &document_location(&their_doc, ""))
            .await
            .unwrap(),
        bytes
    );

    // A third account that learned every id, hash and reference gets the same as for no file.
    assert_eq!(
        download(&carol, &document_location(&their_doc, "")).await,
        Err("FILE_ID_INVALID".into())
    );
    let mut forged = their_doc.clone();
    forged["file_reference"] = json!("01".repeat(20));
    assert_eq!(
        download(&bob, &document_location(&forged, "")).await,
        Err("FILE_REFERENCE_EXPIRED".into())
    );
    let mut wrong_hash = their_doc.clone();
    wrong_hash["access_hash"] = json!(their_doc["access_hash"].as_i64().unwrap() ^ 1);
    assert_eq!(
        download(&bob, &document_location(&wrong_hash, "")).await,
        Err("FILE_ID_INVALID".into())
    );
    let input_doc = json!({"_": "inputMediaDocument", "id": {"_": "inputDocument",
        "id": their_doc["id"], "access_hash": their_doc["access_hash"],
        "file_reference": their_doc["file_reference"]}});
    let (_, e) = carol
        .rpc_err(
            "messages.sendMedia",
            json!({"peer": {"_": "inputPeerSelf"}, "media": input_doc, "message": "", "random_id": rid()}),
        )
        .await;
    assert_eq!(e, "DOCUMENT_INVALID");

    // Search with media filters.
    let search = |filter: &'static str| {
        let bob = bob.clone();
        let peer = bob_to_alice.clone();
        async move {
            let r = bob
                .rpc(
                    "messages.search",
                    json!({"peer": peer, "q": "", "filter": {"_": filter},
                    "limit": 10}),
                )
                .await;
            r["messages"].as_array().unwrap().len()
        }
    };
    assert_eq!(search("inputMessagesFilterDocument").await, 1);
    assert_eq!(search("inputMessagesFilterPhotos").await, 0);
    assert_eq!(search("inputMessagesFilterEmpty").await, 1);

    // A caption edit keeps the document, in both boxes.
    alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": mine["id"], "message": "v2"}),
        )
        .await;
    let theirs = history(&bob, &bob_to_alice).await[0].clone();
    assert_eq!(
        (
            theirs["message"].as_str(),
            &theirs["media"]["document"]["id"]
        ),
        (Some("v2"), &doc["id"])
    );

    // Re-sending by id (Bob may see it) and forwarding keep the same document.
    let resent = bob
        .rpc(
            "messages.sendMedia",
            json!({"peer": {"_": "inputPeerSelf"}, "media": input_doc,
            "message": "mine too", "random_id": rid()}),
        )
        .await;
    assert_eq!(
        sent_message(&resent, 0)["media"]["document"]["id"],
        doc["id"]
    );
    bob.rpc(
        "messages.forwardMessages",
        json!({"from_peer": bob_to_alice, "to_peer": bob_to_carol, "id": [theirs["id"]],
            "random_id": [rid()]}),
    )
    .await;
    let carols = history(&carol, &carol.peer_of(BOB).await).await[0].clone();
    let carols_doc = &carols["media"]["document"];
    assert_eq!(carols_doc["id"], doc["id"]);
    assert_eq!(
        download(&carol, &document_location(carols_doc, ""))
            .await
            .unwrap(),
        bytes
    );
    // Once Carol deletes her only copy, she cannot download it any more.
    carol
        .rpc(
            "messages.deleteMessages",
            json!({"id": [carols["id"]], "revoke": false}),
        )
        .await;
    assert_eq!(
        download(&carol, &document_location(carols_doc, "")).await,
        Err("FILE_ID_INVALID".into())
    );

    // noforwards still refuses.
    let protected = alice
        .rpc(
            "messages.sendMedia",
            json!({"peer": to_bob, "noforwards": true, "media": input_doc_of(doc),
            "message": "", "random_id": rid()}),
        )
        .await;
    let protected_theirs = history(&bob, &bob_to_alice).await[0].clone();
    assert_eq!(protected_theirs["noforwards"], true, "{protected}");
    let (_, e) = bob
        .rpc_err(
            "messages.forwardMessages",
            json!({"from_peer": bob_to_alice, "to_peer": bob_to_carol, "id": [protected_theirs["id"]],
                "random_id": [rid()]}),
        )
        .await;
    assert_eq!(e, "CHAT_FORWARDS_RESTRICTED");
    s.stop().await;
}

fn input_doc_of(doc: &Value) -> Value {
    json!({"_": "inputMediaDocument", "id": {"_": "inputDocument", "id": doc["id"],
        "access_hash": doc["access_hash"], "file_reference": doc["file_reference"]}})
}

#[tokio::test]
async fn photos_are_cut_into_sizes_and_albums_share_one_group() {
    let s = TestServer::start().await;
    let (alice, bob, _carol, to_bob, _) = three(&s).await;
    let bob_to_alice = bob.peer_of(super::send::ALICE).await;
    let source = jpeg(1600, 1000);
    let file = upload(&alice, &source, "p.jpg").await;
    let sent = send_media(
        &alice,
        &to_bob,
        json!({"_": "inputMediaUploadedPhoto", "file": file}),
        "",
    )
    .await;
    let photo = sent_message(&sent, 0)["media"]["photo"].clone();
    let sizes = photo["sizes"].as_array().unwrap();
    assert_eq!(sizes[0]["_"], "photoStrippedSize", "{photo}");
    let largest = sizes.last().unwrap();
    assert!(
        largest["w"].as_i64().unwrap() <= 1600 && largest["w"].as_i64().unwrap() >= 800,
        "{photo}"
    );
    // The recipient downloads every size: a JPEG of exactly the announced bytes.
    let theirs = history(&bob, &bob_to_alice).await[0]["media"]["photo"].clone();
    for size in theirs["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["_"] == "photoSize")
    {
        let kind = size["type"].as_str().unwrap();
        let got = download(&bob, &photo_location(&theirs, kind))
            .await
            .unwrap();
        assert_eq!(got.len() as i64, size["size"].as_i64().unwrap(), "{kind}");
        assert_eq!(&got[..2], &[0xff, 0xd8], "{kind} is a JPEG");
        let decoded = image::load_from_memory(&got).expect("decodes");
        assert_eq!(
            (decoded.width() as i64, decoded.height() as i64),
            (size["w"].as_i64().unwrap(), size["h"].as_i64().unwrap())
        );
    }
    // Not an image.
    let junk = upload(&alice, b"not an image at all", "x.jpg").await;
    let (_, e) = alice
        .rpc_err(
            "messages.sendMedia",
            json!({"peer": to_bob, "random_id": rid(), "message": "",
            "media": {"_": "inputMediaUploadedPhoto", "file": junk}}),
        )
        .await;
    assert_eq!(e, "IMAGE_PROCESS_FAILED");

    // Captions: 1024 code points, not one more.
    let by_id = json!({"_": "inputMediaPhoto", "id": {"_": "inputPhoto", "id": photo["id"],
        "access_hash": photo["access_hash"], "file_reference": photo["file_reference"]}});
    send_media(&alice, &to_bob, by_id.clone(), &"я".repeat(1024)).await;
    let (_, e) = alice
        .rpc_err(
            "messages.sendMedia",
            json!({"peer": to_bob, "random_id": rid(),
            "message": "я".repeat(1025), "media": by_id}),
        )
        .await;
    assert_eq!(e, "MEDIA_CAPTION_TOO_LONG");

    // An album: three photos made with uploadMedia, sent together.
    let mut items = Vec::new();
    for i in 0..3 {
        let f = upload(&alice, &jpeg(300 + i * 10, 200), "a.jpg").await;
        let media = alice
            .rpc(
                "messages.uploadMedia",
                json!({"peer": to_bob,
                "media": {"_": "inputMediaUploadedPhoto", "file": f}}),
            )
            .await;
        assert_eq!(media["_"], "messageMediaPhoto", "{media}");
        let p = &media["photo"];
        items.push(
            json!({"media": {"_": "inputMediaPhoto", "id": {"_": "inputPhoto", "id": p["id"],
            "access_hash": p["access_hash"], "file_reference": p["file_reference"]}},
            "random_id": rid(), "message": format!("item {i}")}),
        );
    }
    let album = alice
        .rpc(
            "messages.sendMultiMedia",
            json!({"peer": to_bob, "multi_media": items.clone()}),
        )
        .await;
    let group = sent_message(&album, 0)["grouped_id"].clone();
    assert!(group.as_i64().is_some_and(|g| g > 0), "{album}");
    let theirs = history(&bob, &bob_to_alice).await;
    assert!(
        theirs[..3].iter().all(|m| m["grouped_id"] == group),
        "{theirs:?}"
    );
    let eleven: Vec<Value> = (0..11).map(|_| items[0].clone()).collect();
    let (_, e) = alice
        .rpc_err(
            "messages.sendMultiMedia",
            json!({"peer": to_bob, "multi_media": eleven}),
        )
        .await;
    assert_eq!(e, "MULTI_MEDIA_TOO_LONG");
    s.stop().await;
}

#[tokio::test]
async fn a_voice_note_stays_unread_for_the_recipient_until_played() {
    let s = TestServer::start().await;
    let (alice, bob, _carol, to_bob, _) = three(&s).await;
    let bob_to_alice = bob.peer_of(super::send::ALICE).await;
    let file = upload(&alice, &pseudo_random_bytes(4000), "voice.ogg").await;
    send_media(
        &alice,
        &to_bob,
        json!({"_": "inputMediaUploadedDocument", "file": file,
        "mime_type": "audio/ogg", "attributes": [{"_": "documentAttributeAudio", "voice": true,
        "duration": 2, "waveform": "0a1f"}]}),
        "",
    )
    .await;
    let theirs = history(&bob, &bob_to_alice).await[0].clone();
    assert_eq!(theirs["media_unread"], true);
    assert_eq!(theirs["media"]["voice"], true);
    assert_eq!(history(&alice, &to_bob).await[0]["media_unread"], false);
    let read = bob
        .rpc(
            "messages.readMessageContents",
            json!({"id": [theirs["id"]]}),
        )
        .await;
    assert_eq!(read["pts_count"], 1, "{read}");
    assert_eq!(history(&bob, &bob_to_alice).await[0]["media_unread"], false);
    let search = bob
        .rpc(
            "messages.search",
            json!({"peer": bob_to_alice, "q": "",
            "filter": {"_": "inputMessagesFilterRoundVoice"}, "limit": 10}),
        )
        .await;
    assert_eq!(search["messages"].as_array().unwrap().len(), 1);
    s.stop().await;
}
