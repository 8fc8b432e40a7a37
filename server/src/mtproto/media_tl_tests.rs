//! Media messages as every supported layer's clients read them: a message with a photo, a document
//! with every attribute and thumbnail, `upload.file`, profile photos (`userProfilePhoto`,
//! `photos.photo`, `photos.photosSlice`, deletePhotos' `Vector<long>`), encoded with the client's layer and decoded
//! with that layer's own constructors only.

use application::ports::{UserPhoto, UserRecord};
use application::queries::get_file::{FileType, UploadFile};
use application::tl::{
    AnyPhoto, FileRefs, Message, PhotoEmpty, PhotosPage, PhotosPhoto, TlPhoto, User,
};
use domain::access_hash::AccessHashKey;
use domain::media::{
    BlobKey, Document, DocumentAttributes, MediaId, MessageMedia, Photo, PhotoSize, THIS_DC,
};
use domain::message::OwnerMessage;
use domain::{BoxId, MessageId, UserId};
use mtproto::tl::{decode_object, encode_result, Reader, Schema, Writer, LAYERS};
use serde_json::{json, Value};

fn message(media: MessageMedia) -> OwnerMessage {
    let u = |n| UserId::new(n).unwrap();
    OwnerMessage {
        id: BoxId::new(3).unwrap(),
        message_id: MessageId(9),
        peer_id: u(2),
        from_id: u(1),
        out: true,
        date: 1_764_489_600,
        text: "caption".into(),
        entities: Vec::new(),
        silent: false,
        noforwards: false,
        reply_to: None,
        fwd_from: None,
        media_unread: true,
        random_id: Some(5),
        edit_date: None,
        media: Some(Box::new(media)),
        grouped_id: Some(77),
    }
}

fn size(kind: char, w: i32) -> PhotoSize {
    PhotoSize::new(
        kind,
        w,
        w / 2,
        1000 + i64::from(w),
        BlobKey::of(&[kind as u8]),
    )
    .unwrap()
}

fn photo() -> MessageMedia {
    MessageMedia::Photo {
        photo: Photo::new(
            MediaId::new(17).unwrap(),
            -812,
            1,
            vec![size('s', 90), size('x', 800)],
            vec![1, 40, 40],
        )
        .unwrap(),
        spoiler: true,
    }
}

fn document() -> MessageMedia {
    let attributes = DocumentAttributes::parse(
        serde_json::from_value(json!([
            {"_": "documentAttributeFilename", "file_name": "v.mp4"},
            {"_": "documentAttributeVideo", "round_message": true, "duration": 3, "w": 240, "h": 240},
            {"_": "documentAttributeAudio", "voice": true, "duration": 3, "waveform": "0a1f"},
            {"_": "documentAttributeImageSize", "w": 240, "h": 240},
            {"_": "documentAttributeAnimated"},
            {"_": "documentAttributeSticker", "alt": "x"},
        ]))
        .unwrap(),
    )
    .unwrap();
    MessageMedia::Document {
        document: Document::new(
            MediaId::new(18).unwrap(),
            5,
            1,
            "video/mp4",
            300_000,
            BlobKey::of(b"doc"),
            attributes,
            vec![size('m', 320)],
            vec![1, 2],
        )
        .unwrap(),
        spoiler: false,
    }
}

fn round_trip(layer: i32, name: &str, answer: &Value) -> Value {
    let exact = Schema::exact(layer).unwrap();
    let mut w = Writer::new();
    encode_result(Schema::for_layer(Some(layer)), name, answer, &mut w)
        .unwrap_or_else(|e| panic!("{layer} {name}: {e}"));
    decode_object(exact, &mut Reader::new(&w.buf)).unwrap_or_else(|e| panic!("{layer}: {e:?}"))
}

#[test]
fn media_messages_encode_in_every_layer() {
    let key = AccessHashKey::new(b"k".to_vec());
    let refs = FileRefs {
        key: &key,
        now: 1_764_489_600,
    };
    for (layer, _) in LAYERS {
        for media in [photo(), document()] {
            let m = serde_json::to_value(Message::render(&message(media), refs)).unwrap();
            let answer =
                json!({"_": "messages.messages", "messages": [m], "chats": [], "users": []});
            let back = round_trip(*layer, "messages.getHistory", &answer);
            let got = &back["messages"][0];
            assert_eq!(got["grouped_id"], 77, "{layer} {got}");
            assert_eq!(got["media_unread"], true);
            let media = &got["media"];
            let file = if media["_"] == "messageMediaPhoto" {
                assert_eq!(media["photo"]["sizes"][0]["_"], "photoStrippedSize");
                assert_eq!(media["photo"]["sizes"][2]["w"], 800);
                &media["photo"]
            } else {
                assert_eq!(media["_"], "messageMediaDocument", "{layer} {media}");
                let attrs = media["document"]["attributes"].as_array().unwrap();
                assert_eq!(attrs.len(), 6, "{layer} {attrs:?}");
                assert_eq!(media["document"]["thumbs"][1]["type"], "m");
                assert_eq!(media["document"]["size"], 300_000);
                &media["document"]
            };
            assert_eq!(file["dc_id"], THIS_DC);
            // A reference of 20 bytes, hex in JSON.
            assert_eq!(
                file["file_reference"].as_str().unwrap().len(),
                40,
                "{layer}"
            );
        }
        let file = UploadFile {
            file_type: FileType::Jpeg,
            mtime: 1,
            bytes: application::tl::Bytes(vec![0xff, 0xd8, 0xff]),
        };
        let back = round_trip(
            *layer,
            "upload.getFile",
            &serde_json::to_value(&file).unwrap(),
        );
        assert_eq!(back["type"]["_"], "storage.fileJpeg");
        assert_eq!(back["bytes"], "ffd8ff");
        // The typed encoder writes the bytes themselves, as the JSON one writes their hex.
        let mut typed = Writer::new();
        mtproto::tl::encode_result_typed(
            Schema::for_layer(Some(*layer)),
            "upload.getFile",
            &file,
            &mut typed,
        )
        .unwrap();
        let mut w = Writer::new();
        encode_result(
            Schema::for_layer(Some(*layer)),
            "upload.getFile",
            &serde_json::to_value(&file).unwrap(),
            &mut w,
        )
        .unwrap();
        assert_eq!(typed.buf, w.buf);
    }
}

#[test]
fn profile_photos_encode_in_every_layer() {
    let key = AccessHashKey::new(b"k".to_vec());
    let refs = FileRefs {
        key: &key,
        now: 1_764_489_600,
    };
    let MessageMedia::Photo { photo, .. } = photo() else {
        unreachable!()
    };
    let record = UserRecord {
        id: UserId::new(1).unwrap(),
        phone: "+1555".into(),
        first_name: "Alice".into(),
        last_name: String::new(),
        photo: Some(UserPhoto::of(&photo)),
    };
    let user = User::for_viewer(UserId::new(2).unwrap(), &record, &key);
    let without = User::for_viewer(
        UserId::new(2).unwrap(),
        &UserRecord {
            photo: None,
            ..record.clone()
        },
        &key,
    );
    for (layer, _) in LAYERS {
        let answer = serde_json::to_value(PhotosPhoto {
            photo: AnyPhoto::Photo(TlPhoto::of(&photo, refs)),
            users: vec![user.clone(), without.clone()],
        })
        .unwrap();
        let back = round_trip(*layer, "photos.uploadProfilePhoto", &answer);
        assert_eq!(back["photo"]["id"], 17, "{layer} {back}");
        let shown = &back["users"][0]["photo"];
        assert_eq!(shown["_"], "userProfilePhoto", "{layer} {back}");
        assert_eq!(shown["photo_id"], 17);
        assert_eq!(shown["dc_id"], THIS_DC);
        assert_eq!(shown["stripped_thumb"], "012828");
        assert!(back["users"][1].get("photo").is_none(), "{layer} {back}");

        let empty = serde_json::to_value(PhotosPhoto {
            photo: AnyPhoto::Empty(PhotoEmpty { id: 0 }),
            users: vec![without.clone()],
        })
        .unwrap();
        let back = round_trip(*layer, "photos.updateProfilePhoto", &empty);
        assert_eq!(back["photo"]["_"], "photoEmpty", "{layer}");

        let page = serde_json::to_value(PhotosPage::Slice {
            count: 3,
            photos: vec![TlPhoto::of(&photo, refs)],
            users: vec![user.clone()],
        })
        .unwrap();
        let back = round_trip(*layer, "photos.getUserPhotos", &page);
        assert_eq!(
            (&back["_"], &back["count"]),
            (&json!("photos.photosSlice"), &json!(3))
        );
        let mut w = Writer::new();
        encode_result(
            Schema::for_layer(Some(*layer)),
            "photos.deletePhotos",
            &json!([17, 18]),
            &mut w,
        )
        .unwrap();
        assert_eq!(
            Reader::new(&w.buf).vec_i64().unwrap(),
            vec![17, 18],
            "{layer}"
        );
    }
}
