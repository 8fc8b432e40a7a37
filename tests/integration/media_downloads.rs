//! The JSON API's file downloads (`GET /v1/files/photo|document/<id>`, docs/json-api.md) over
//! real HTTP against a real server, Postgres and blob store: whole files byte for byte, `Range`
//! at the boundaries (one byte, the last byte, across the 1 MiB read pieces, suffixes), `416`,
//! and the access checks upload.getFile makes (a third account, a forged reference, one past its
//! lifetime), on the file system and the S3 store.

use domain::media::file_reference;
use domain::media::limits::FILE_REFERENCE_LIFETIME_SECS;
use domain::media::MediaId;
use ptslog_tests::{Device, TestServer};
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::media::{
    document_location, download, jpeg, photo_location, pseudo_random_bytes, send_media,
    sent_message, upload,
};
use super::send::three;
use super::uploads::{server, Store};

/// A download's answer: status, the headers that matter here, body.
struct Got {
    status: StatusCode,
    content_type: String,
    content_range: String,
    accept_ranges: String,
    content_length: Option<u64>,
    body: Vec<u8>,
}

impl Got {
    fn error(&self) -> String {
        let v: Value = serde_json::from_slice(&self.body).unwrap_or(Value::Null);
        v["error_message"].as_str().unwrap_or_default().to_string()
    }
}

async fn get(d: &Device, kind: &str, media: &Value, thumb: &str, range: Option<&str>) -> Got {
    let url = format!("{}/v1/files/{kind}/{}", d.base, media["id"]);
    let mut req = d.http.get(url).bearer_auth(&d.token).query(&[
        ("access_hash", media["access_hash"].to_string()),
        (
            "file_reference",
            media["file_reference"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ),
        ("thumb_size", thumb.to_string()),
    ]);
    if let Some(r) = range {
        req = req.header("Range", r);
    }
    let resp = req.send().await.expect("download request");
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (content_type, content_range, accept_ranges) = (
        header("content-type"),
        header("content-range"),
        header("accept-ranges"),
    );
    let content_length = resp.content_length();
    let status = resp.status();
    let body = resp.bytes().await.expect("download body").to_vec();
    Got {
        status,
        content_type,
        content_range,
        accept_ranges,
        content_length,
        body,
    }
}

/// Uploads `bytes` as raw 512 KiB parts (`PUT /v1/upload/...`: hex of such a part would not fit
/// the RPC body cap); answers the `inputFile`.
async fn put_upload(d: &Device, bytes: &[u8], name: &str) -> Value {
    let file_id = super::send::rid();
    let parts: Vec<&[u8]> = bytes.chunks(512 * 1024).collect();
    for (i, part) in parts.iter().enumerate() {
        let resp = d
            .http
            .put(format!("{}/v1/upload/{file_id}/{i}", d.base))
            .bearer_auth(&d.token)
            .body(part.to_vec())
            .send()
            .await
            .expect("upload part");
        assert_eq!(resp.status(), StatusCode::OK);
    }
    json!({"_": "inputFile", "id": file_id, "parts": parts.len(), "name": name, "md5_checksum": ""})
}

#[tokio::test]
async fn fs_a_document_downloads_whole_and_in_ranges_only_for_who_sees_it() {
    a_document_downloads_whole_and_in_ranges_only_for_who_sees_it(Store::Fs).await;
}

/// The same through the S3 store: every piece a ranged `GET`.
#[tokio::test]
async fn s3_a_document_downloads_whole_and_in_ranges_only_for_who_sees_it() {
    a_document_downloads_whole_and_in_ranges_only_for_who_sees_it(Store::S3).await;
}

async fn a_document_downloads_whole_and_in_ranges_only_for_who_sees_it(store: Store) {
    let s = server(store, |_| {}).await;
    let (alice, bob, carol, to_bob, _) = three(&s).await;
    // Over two 1 MiB read pieces and not a multiple of anything.
    const MIB: usize = 1024 * 1024;
    let bytes = pseudo_random_bytes(2 * MIB + 4097);
    let n = bytes.len();
    let file = put_upload(&alice, &bytes, "data.bin").await;
    let sent = send_media(
        &alice,
        &to_bob,
        json!({"_": "inputMediaUploadedDocument", "file": file, "mime_type": "application/x-test",
            "attributes": [{"_": "documentAttributeFilename", "file_name": "data.bin"}]}),
        "",
    )
    .await;
    let doc = sent_message(&sent, 0)["media"]["document"].clone();
    let bob_to_alice = bob.peer_of(super::send::ALICE).await;
    let theirs = super::send::history(&bob, &bob_to_alice).await[0]["media"]["document"].clone();

    // Whole, for the sender and the recipient.
    for (d, doc) in [(&alice, &doc), (&bob, &theirs)] {
        let got = get(d, "document", doc, "", None).await;
        assert_eq!(got.status, StatusCode::OK);
        assert_eq!(got.content_type, "application/x-test");
        assert_eq!(got.accept_ranges, "bytes");
        assert_eq!(got.content_length, Some(n as u64));
        assert_eq!(got.content_range, "");
        assert!(got.body == bytes, "the download differs from the upload");
    }

    // Ranges at the boundaries: (header, first byte, last byte).
    let cases = [
        ("bytes=0-0", 0, 0),
        (&*format!("bytes={}-{}", n - 1, n - 1), n - 1, n - 1),
        (&*format!("bytes={}-{}", MIB - 1, MIB), MIB - 1, MIB),
        (&*format!("bytes=1-{}", 2 * MIB), 1, 2 * MIB),
        (&*format!("bytes={}-", n - 10), n - 10, n - 1),
        ("bytes=-1", n - 1, n - 1),
        (&*format!("bytes=0-{}", n + 1000), 0, n - 1),
    ];
    for (range, first, last) in cases {
        let got = get(&bob, "document", &theirs, "", Some(range)).await;
        assert_eq!(got.status, StatusCode::PARTIAL_CONTENT, "{range}");
        assert_eq!(
            got.content_range,
            format!("bytes {first}-{last}/{n}"),
            "{range}"
        );
        assert_eq!(
            got.content_length,
            Some((last - first + 1) as u64),
            "{range}"
        );
        assert_eq!(got.accept_ranges, "bytes");
        assert!(got.body == bytes[first..=last], "{range}: wrong bytes");
    }
    for range in [
        format!("bytes={n}-"),
        format!("bytes={n}-{}", n + 5),
        "bytes=5-2".to_string(),
        "bytes=0-1,4-5".to_string(),
        "pages=0-1".to_string(),
    ] {
        let got = get(&bob, "document", &theirs, "", Some(&range)).await;
        assert_eq!(got.status, StatusCode::RANGE_NOT_SATISFIABLE, "{range}");
        assert_eq!(got.content_range, format!("bytes */{n}"), "{range}");
        assert!(got.body.is_empty());
    }

    // A third account that learned every field gets what no file gets; a forged (expired)
    // reference is told so; a wrong hash, an unknown id and a bad kind as upload.getFile answers.
    let got = get(&carol, "document", &theirs, "", None).await;
    assert_eq!(
        (got.status, got.error()),
        (StatusCode::BAD_REQUEST, "FILE_ID_INVALID".into())
    );
    let mut forged = theirs.clone();
    forged["file_reference"] = json!("01".repeat(20));
    let got = get(&bob, "document", &forged, "", Some("bytes=0-0")).await;
    assert_eq!(
        (got.status, got.error()),
        (StatusCode::BAD_REQUEST, "FILE_REFERENCE_EXPIRED".into())
    );
    assert_eq!(
        download(&bob, &document_location(&forged, "")).await,
        Err("FILE_REFERENCE_EXPIRED".into()),
        "the same answer as upload.getFile"
    );
    // A reference this server issued, at the end of its lifetime and past it.
    let id = MediaId::new(theirs["id"].as_i64().unwrap()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i32;
    let issued = |at: i32| hex::encode(file_reference::issue(s.app.access_hash_key(), id, at));
    let mut old = theirs.clone();
    old["file_reference"] = json!(issued(now - FILE_REFERENCE_LIFETIME_SECS + 60));
    let got = get(&bob, "document", &old, "", Some("bytes=0-0")).await;
    assert_eq!(got.status, StatusCode::PARTIAL_CONTENT, "{}", got.error());
    old["file_reference"] = json!(issued(now - FILE_REFERENCE_LIFETIME_SECS - 60));
    let got = get(&bob, "document", &old, "", Some("bytes=0-0")).await;
    assert_eq!(
        (got.status, got.error()),
        (StatusCode::BAD_REQUEST, "FILE_REFERENCE_EXPIRED".into())
    );
    let mut wrong_hash = theirs.clone();
    wrong_hash["access_hash"] = json!(theirs["access_hash"].as_i64().unwrap() ^ 1);
    assert_eq!(
        get(&bob, "document", &wrong_hash, "", None).await.error(),
        "FILE_ID_INVALID"
    );
    let mut unknown = theirs.clone();
    unknown["id"] = json!(theirs["id"].as_i64().unwrap() + 1000);
    assert_eq!(
        get(&bob, "document", &unknown, "", None).await.error(),
        "FILE_ID_INVALID"
    );
    assert_eq!(
        get(&bob, "photo", &theirs, "", None).await.error(),
        "FILE_ID_INVALID"
    );
    assert_eq!(
        get(&bob, "document", &theirs, "m", None).await.error(),
        "FILE_ID_INVALID"
    );
    let got = get(&bob, "sticker", &theirs, "", None).await;
    assert_eq!(got.status, StatusCode::BAD_REQUEST);

    // No token, no file.
    let resp = bob
        .http
        .get(format!("{}/v1/files/document/{}", bob.base, theirs["id"]))
        .query(&[("access_hash", theirs["access_hash"].to_string())])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_photo_downloads_each_size_as_jpeg() {
    let s = TestServer::start().await;
    let (alice, bob, _carol, to_bob, _) = three(&s).await;
    let file = upload(&alice, &jpeg(1600, 1000), "p.jpg").await;
    let sent = send_media(
        &alice,
        &to_bob,
        json!({"_": "inputMediaUploadedPhoto", "file": file}),
        "",
    )
    .await;
    let photo = sent_message(&sent, 0)["media"]["photo"].clone();
    let sizes: Vec<String> = photo["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["_"] == "photoSize")
        .map(|s| s["type"].as_str().unwrap().to_string())
        .collect();
    assert!(!sizes.is_empty(), "{photo}");
    for size in sizes.iter().map(String::as_str).chain([""]) {
        let got = get(&alice, "photo", &photo, size, None).await;
        assert_eq!(got.status, StatusCode::OK, "{size}");
        assert_eq!(got.content_type, "image/jpeg");
        let by_rpc = download(&alice, &photo_location(&photo, size))
            .await
            .unwrap();
        assert!(
            got.body == by_rpc,
            "size {size:?}: differs from upload.getFile"
        );
        assert!(got.body.starts_with(&[0xFF, 0xD8]), "a JPEG");
    }
    // The largest when no size is named: the last photoSize.
    let largest = get(&alice, "photo", &photo, sizes.last().unwrap(), None).await;
    assert!(get(&alice, "photo", &photo, "", None).await.body == largest.body);
    let _ = bob;
}
