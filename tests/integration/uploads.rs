//! Uploads in parts over the JSON API (`PUT /v1/upload/<file_id>/<part>` and the RPC methods
//! upload.saveFilePart / saveBigFilePart) against a real server, Postgres and both blob
//! backends (a folder, and the s3s-fs server the scripts start): Telegram's part rules at their
//! boundaries, parts in any order, in parallel and re-sent, the per-account quota, expiry,
//! md5, owner scoping, then the file put together (App::take_upload, what media messages call)
//! and read back in download ranges (App::read_file_part).

use application::media::{InputFile, UploadedFile};
use application::{AppError, Caller};
use domain::media::upload_parts::{MAX_FILE_PARTS, MAX_PART_BYTES, SMALL_FILE_MAX_BYTES};
use domain::media::{BlobKey, FileError};
use ptslog_server::file_storage::BlobBackend;
use ptslog_server::Config;
use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

const KIB: usize = 1024;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Store {
    Fs,
    S3,
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn use_store(config: &mut Config, store: Store) {
    if let Store::S3 = store {
        config.file_storage.backend = BlobBackend::S3(infrastructure::blobs::S3Settings {
            endpoint: Some(env("PTSLOG_TEST_S3_ENDPOINT", "http://127.0.0.1:59014")),
            bucket: env("PTSLOG_TEST_S3_BUCKET", "ptslog-test"),
            region: "us-east-1".into(),
            access_key_id: env("PTSLOG_TEST_S3_ACCESS_KEY", "ptslog-test"),
            secret_access_key: env("PTSLOG_TEST_S3_SECRET_KEY", "ptslog-test-secret"),
            prefix: format!("t{:016x}", rand::random::<u64>()),
        });
    }
}

pub(crate) async fn server(store: Store, adjust: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::start_with(|c| {
        use_store(c, store);
        adjust(c);
    })
    .await
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(151).wrapping_add(seed) ^ (i >> 9) as u8)
        .collect()
}

/// PUTs one part; answers (status, error message or "").
async fn put(
    d: &Device,
    file_id: i64,
    part: &str,
    total: Option<&str>,
    body: Vec<u8>,
) -> (u16, String) {
    let mut url = format!("{}/v1/upload/{file_id}/{part}", d.base);
    if let Some(t) = total {
        url.push_str(&format!("?total_parts={t}"));
    }
    let resp = d
        .http
        .put(url)
        .bearer_auth(&d.token)
        .body(body)
        .send()
        .await
        .expect("upload request");
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if status == 200 {
        assert_eq!(body, json!({"_": "boolTrue"}));
        (200, String::new())
    } else {
        (
            status,
            body["error_message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    }
}

async fn put_ok(d: &Device, file_id: i64, part: i32, total: Option<i32>, body: Vec<u8>) {
    let total = total.map(|t| t.to_string());
    let answer = put(d, file_id, &part.to_string(), total.as_deref(), body).await;
    assert_eq!(answer, (200, String::new()), "part {part} of {file_id}");
}

async fn put_err(d: &Device, file_id: i64, part: i32, total: Option<i32>, body: Vec<u8>) -> String {
    let total = total.map(|t| t.to_string());
    let (status, message) = put(d, file_id, &part.to_string(), total.as_deref(), body).await;
    assert_eq!(status, 400, "{message}");
    message
}

/// Uploads `data` as a small file in parts of `part_size`, all at once in reverse order.
async fn upload_small(d: &Device, file_id: i64, data: &[u8], part_size: usize) -> i32 {
    let parts: Vec<(i32, Vec<u8>)> = data
        .chunks(part_size)
        .enumerate()
        .map(|(i, c)| (i as i32, c.to_vec()))
        .rev()
        .collect();
    let n = parts.len() as i32;
    futures::future::join_all(
        parts
            .into_iter()
            .map(|(i, c)| put_ok(d, file_id, i, None, c)),
    )
    .await;
    n
}

async fn caller(s: &TestServer, d: &Device) -> Caller {
    s.app
        .authenticate(&d.token)
        .await
        .unwrap()
        .expect("a signed-in device")
}

fn small(id: i64, parts: i32, md5: &str) -> InputFile {
    InputFile::Small {
        id,
        parts,
        name: "photo.jpg".into(),
        md5_checksum: md5.into(),
    }
}

fn big(id: i64, parts: i32) -> InputFile {
    InputFile::Big {
        id,
        parts,
        name: "film.mp4".into(),
    }
}

fn md5_hex(data: &[u8]) -> String {
    use md5::{Digest, Md5};
    hex::encode(Md5::digest(data))
}

async fn take(s: &TestServer, d: &Device, file: &InputFile) -> Result<UploadedFile, String> {
    s.app
        .take_upload(&caller(s, d).await, file)
        .await
        .map_err(|e| match e {
            AppError::File(f) => f.tl_name(),
            other => panic!("not a refusal: {other}"),
        })
}

/// Reads a whole blob back in 512 KiB download requests, as Telethon does.
async fn download(s: &TestServer, key: &BlobKey) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let chunk = s
            .app
            .read_file_part(key, out.len() as i64, 512 * KIB as i32, false)
            .await
            .unwrap();
        let last = chunk.len() < 512 * KIB;
        out.extend_from_slice(&chunk);
        if last {
            return out;
        }
    }
}

async fn parts_in_any_order_in_parallel_and_resent(store: Store) {
    let s = server(store, |_| {}).await;
    let a = s.login("+15550001", "Ann").await;
    // 300 KB in 128 KiB parts: 128 + 128 + 44 KiB, sent last part first, all at once.
    let data = bytes(300_000, 1);
    let n = upload_small(&a, 77, &data, 128 * KIB).await;
    assert_eq!(n, 3);
    // Re-sent parts: the same bytes, and a part first sent wrong then right (the last wins).
    put_ok(&a, 77, 1, None, data[128 * KIB..256 * KIB].to_vec()).await;
    put_ok(&a, 77, 0, None, bytes(128 * KIB, 9)).await;
    put_ok(&a, 77, 0, None, data[..128 * KIB].to_vec()).await;
    let file = small(77, 3, &md5_hex(&data));
    let up = take(&s, &a, &file).await.unwrap();
    assert_eq!(
        (up.key, up.size, up.name.as_str()),
        (BlobKey::of(&data), 300_000, "photo.jpg")
    );
    assert_eq!(download(&s, &up.key).await, data);
    // A retried send naming the file again gets the same blob.
    assert_eq!(take(&s, &a, &file).await.unwrap(), up);
    // The same bytes uploaded again under another id: the same blob, stored once.
    upload_small(&a, 78, &data, 64 * KIB).await;
    assert_eq!(take(&s, &a, &small(78, 5, "")).await.unwrap().key, up.key);
    // Download ranges by Telegram's rules.
    let app = &s.app;
    assert_eq!(
        app.read_file_part(&up.key, 4096, 4096, false)
            .await
            .unwrap(),
        &data[4096..8192]
    );
    assert_eq!(
        app.read_file_part(&up.key, 1024, 1024, true).await.unwrap(),
        &data[1024..2048]
    );
    assert!(app
        .read_file_part(&up.key, 1 << 20, 4096, false)
        .await
        .unwrap()
        .is_empty());
    for (offset, limit, precise, error) in [
        (1024, 4096, false, FileError::OffsetInvalid),
        (0, 12 * KIB as i32, false, FileError::LimitInvalid),
        ((1 << 20) - 4096, 8192, false, FileError::LimitInvalid),
        (0, (1 << 20) + 1024, true, FileError::LimitInvalid),
    ] {
        match app.read_file_part(&up.key, offset, limit, precise).await {
            Err(AppError::File(e)) => assert_eq!(e, error, "{offset} {limit} {precise}"),
            other => panic!("{offset} {limit}: {other:?}"),
        }
    }
    match app
        .read_file_part(&BlobKey::of(b"nothing"), 0, 4096, false)
        .await
    {
        Err(AppError::File(FileError::FileIdInvalid)) => {}
        other => panic!("{other:?}"),
    }
    s.stop().await;
}

#[tokio::test]
async fn fs_parts_in_any_order_in_parallel_and_resent() {
    parts_in_any_order_in_parallel_and_resent(Store::Fs).await;
}

#[tokio::test]
async fn s3_parts_in_any_order_in_parallel_and_resent() {
    parts_in_any_order_in_parallel_and_resent(Store::S3).await;
}

async fn a_big_file_in_parallel_parts(store: Store) {
    let s = server(store, |_| {}).await;
    let a = s.login("+15550002", "Ann").await;
    // Just over 10 MiB, as a client sends it: 512 KiB parts, 4 workers.
    let data = bytes(SMALL_FILE_MAX_BYTES as usize + 5000, 2);
    let parts: Vec<Vec<u8>> = data.chunks(MAX_PART_BYTES).map(<[u8]>::to_vec).collect();
    let total = parts.len() as i32;
    assert_eq!(total, 21);
    let mut queue: Vec<(i32, Vec<u8>)> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (i as i32, p))
        .collect();
    queue.reverse();
    let queue = std::sync::Mutex::new(queue);
    let worker = || async {
        loop {
            let next = queue.lock().unwrap().pop();
            let Some((i, p)) = next else { return };
            put_ok(&a, -99, i, Some(total), p).await;
        }
    };
    futures::future::join4(worker(), worker(), worker(), worker()).await;
    assert_eq!(
        take(&s, &a, &small(-99, total, "")).await,
        Err("FILE_PARTS_INVALID".into())
    );
    assert_eq!(
        take(&s, &a, &big(-99, total - 1)).await,
        Err("FILE_PARTS_INVALID".into())
    );
    let up = take(&s, &a, &big(-99, total)).await.unwrap();
    assert_eq!((up.key, up.size), (BlobKey::of(&data), data.len() as u64));
    assert_eq!(download(&s, &up.key).await, data);
    s.stop().await;
}

#[tokio::test]
async fn fs_a_big_file_in_parallel_parts() {
    a_big_file_in_parallel_parts(Store::Fs).await;
}

#[tokio::test]
async fn s3_a_big_file_in_parallel_parts() {
    a_big_file_in_parallel_parts(Store::S3).await;
}

#[tokio::test]
async fn every_part_error_at_its_boundary() {
    let s = server(Store::Fs, |_| {}).await;
    let a = s.login("+15550003", "Ann").await;
    let kib = |n: usize| bytes(n * KIB, 3);
    // Part numbers.
    assert_eq!(put_err(&a, 1, -1, None, kib(1)).await, "FILE_PART_INVALID");
    assert_eq!(
        put_err(&a, 1, MAX_FILE_PARTS, None, kib(1)).await,
        "FILE_PART_INVALID"
    );
    put_ok(&a, 1, MAX_FILE_PARTS - 1, None, kib(1)).await;
    assert_eq!(
        put(&a, 1, "x", None, kib(1)).await,
        (400, "FILE_PART_INVALID".into())
    );
    // Sizes.
    assert_eq!(put_err(&a, 2, 0, None, Vec::new()).await, "FILE_PART_EMPTY");
    assert_eq!(
        put_err(&a, 2, 0, None, bytes(MAX_PART_BYTES + 1, 0)).await,
        "FILE_PART_TOO_BIG"
    );
    put_ok(&a, 2, 0, None, bytes(MAX_PART_BYTES, 0)).await;
    // Big files: the total, parts before the last of a full size, the total kept.
    assert_eq!(
        put_err(&a, 3, 0, Some(0), kib(1)).await,
        "FILE_PARTS_INVALID"
    );
    assert_eq!(
        put_err(&a, 3, 0, Some(MAX_FILE_PARTS + 1), kib(1)).await,
        "FILE_PARTS_INVALID"
    );
    assert_eq!(
        put_err(&a, 3, 3, Some(3), kib(1)).await,
        "FILE_PART_INVALID"
    );
    assert_eq!(
        put_err(&a, 3, 1, Some(3), bytes(1000, 0)).await,
        "FILE_PART_SIZE_INVALID"
    );
    assert_eq!(
        put_err(&a, 3, 1, Some(3), kib(3)).await,
        "FILE_PART_SIZE_INVALID"
    );
    put_ok(&a, 3, 1, Some(3), kib(4)).await;
    put_ok(&a, 3, 2, Some(3), bytes(1000, 0)).await;
    assert_eq!(
        put_err(&a, 3, 0, Some(4), kib(4)).await,
        "FILE_PARTS_INVALID"
    );
    assert_eq!(put_err(&a, 3, 0, None, kib(4)).await, "FILE_PARTS_INVALID");
    assert_eq!(
        put(&a, 3, "0", Some("many"), kib(4)).await,
        (400, "FILE_PARTS_INVALID".into())
    );
    assert_eq!(
        take(&s, &a, &big(3, 3)).await,
        Err("FILE_PART_0_MISSING".into())
    );
    put_ok(&a, 3, 0, Some(3), kib(4)).await;
    assert_eq!(take(&s, &a, &big(3, 3)).await.unwrap().size, 9192);

    // At assembly: missing parts, sizes, counts, md5, names.
    put_ok(&a, 4, 0, None, kib(4)).await;
    put_ok(&a, 4, 2, None, kib(1)).await;
    assert_eq!(
        take(&s, &a, &small(4, 3, "")).await,
        Err("FILE_PART_1_MISSING".into())
    );
    assert_eq!(
        take(&s, &a, &small(4, 4, "")).await,
        Err("FILE_PART_1_MISSING".into())
    );
    put_ok(&a, 4, 1, None, kib(8)).await;
    assert_eq!(
        take(&s, &a, &small(4, 3, "")).await,
        Err("FILE_PART_SIZE_INVALID".into())
    );
    assert_eq!(
        take(&s, &a, &small(4, 4, "")).await,
        Err("FILE_PART_3_MISSING".into())
    );
    assert_eq!(
        take(&s, &a, &small(4, 2, "")).await,
        Err("FILE_PARTS_INVALID".into())
    );
    put_ok(&a, 4, 1, None, kib(4)).await;
    let data: Vec<u8> = [kib(4), kib(4), kib(1)].concat();
    for bad in [md5_hex(b"other"), "abc".to_string(), "z".repeat(32)] {
        assert_eq!(
            take(&s, &a, &small(4, 3, &bad)).await,
            Err("MD5_CHECKSUM_INVALID".into())
        );
    }
    for parts in [0, MAX_FILE_PARTS + 1] {
        assert_eq!(
            take(&s, &a, &small(4, parts, "")).await,
            Err("FILE_PARTS_INVALID".into())
        );
    }
    let mut named = small(4, 3, "");
    if let InputFile::Small { name, .. } = &mut named {
        *name = "a\nb".into();
    }
    assert_eq!(take(&s, &a, &named).await, Err("FILE_NAME_INVALID".into()));
    // The md5 in upper case is the same md5.
    let up = take(&s, &a, &small(4, 3, &md5_hex(&data).to_uppercase()))
        .await
        .unwrap();
    assert_eq!(up.key, BlobKey::of(&data));

    // A small file is at most 10 MiB: 20 parts of 512 KiB, not one byte more.
    for i in 0..20 {
        put_ok(&a, 5, i, None, bytes(MAX_PART_BYTES, i as u8)).await;
    }
    assert_eq!(
        put_err(&a, 5, 20, None, bytes(1, 0)).await,
        "FILE_PARTS_INVALID"
    );
    assert_eq!(
        take(&s, &a, &small(5, 20, "")).await.unwrap().size,
        SMALL_FILE_MAX_BYTES
    );
    s.stop().await;
}

#[tokio::test]
async fn the_rpc_methods_take_hex_parts() {
    let s = server(Store::Fs, |_| {}).await;
    let a = s.login("+15550004", "Ann").await;
    let part = bytes(2 * KIB, 4);
    let r = a
        .rpc(
            "upload.saveFilePart",
            json!({"file_id": "123", "file_part": 0, "bytes": hex::encode(&part[..KIB])}),
        )
        .await;
    assert_eq!(r, json!({"_": "boolTrue"}));
    a.rpc(
        "upload.saveBigFilePart",
        json!({"file_id": 124, "file_part": 0, "file_total_parts": 1, "bytes": hex::encode(&part)}),
    )
    .await;
    let (status, message) = a
        .rpc_err(
            "upload.saveFilePart",
            json!({"file_id": 123, "file_part": 0, "bytes": ""}),
        )
        .await;
    assert_eq!((status, message.as_str()), (400, "FILE_PART_EMPTY"));
    let (_, message) = a
        .rpc_err(
            "upload.saveFilePart",
            json!({"file_id": 123, "file_part": 0, "bytes": "not hex"}),
        )
        .await;
    assert_eq!(message, "INPUT_REQUEST_INVALID");
    assert_eq!(
        take(&s, &a, &small(123, 1, "")).await.unwrap().key,
        BlobKey::of(&part[..KIB])
    );
    assert_eq!(
        take(&s, &a, &big(124, 1)).await.unwrap().key,
        BlobKey::of(&part)
    );
    // Without a device: refused, nothing staged.
    let resp = s
        .http
        .put(format!("{}/v1/upload/1/0", s.base))
        .body(part.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    s.stop().await;
}

async fn pending_bytes_and_files_are_capped_per_account(store: Store) {
    let s = server(store, |c| {
        c.file_storage.upload_limits.quota.max_pending_bytes = 3 * 64 * KIB as u64;
        c.file_storage.upload_limits.quota.max_pending_files = 2;
    })
    .await;
    let a = s.login("+15550005", "Ann").await;
    let b = s.login("+15550006", "Bob").await;
    let part = |seed| bytes(64 * KIB, seed);
    put_ok(&a, 1, 0, None, part(1)).await;
    put_ok(&a, 1, 1, None, part(2)).await;
    put_ok(&a, 2, 0, None, bytes(64 * KIB - 1, 3)).await;
    // One byte below the quota: one more byte fits, two do not.
    assert_eq!(
        put_err(&a, 2, 1, None, bytes(2, 4)).await,
        "UPLOAD_QUOTA_EXCEEDED"
    );
    put_ok(&a, 2, 1, None, bytes(1, 4)).await;
    // At the quota, a re-sent part of the same size still fits; a third file does not.
    put_ok(&a, 1, 1, None, part(2)).await;
    assert_eq!(
        put_err(&a, 3, 0, None, bytes(1, 5)).await,
        "UPLOAD_QUOTA_EXCEEDED"
    );
    // Another account has its own quota.
    put_ok(&b, 3, 0, None, part(6)).await;
    // Taking a file frees its bytes and its place.
    let data = [part(1), part(2)].concat();
    assert_eq!(
        take(&s, &a, &small(1, 2, "")).await.unwrap().key,
        BlobKey::of(&data)
    );
    put_ok(&a, 3, 0, None, part(7)).await;
    s.stop().await;
}

#[tokio::test]
async fn fs_pending_bytes_and_files_are_capped_per_account() {
    pending_bytes_and_files_are_capped_per_account(Store::Fs).await;
}

#[tokio::test]
async fn s3_pending_bytes_and_files_are_capped_per_account() {
    pending_bytes_and_files_are_capped_per_account(Store::S3).await;
}

async fn pending_parts_expire(store: Store) {
    let s = server(store, |_| {}).await;
    let a = s.login("+15550007", "Ann").await;
    put_ok(&a, 10, 0, None, bytes(KIB, 1)).await;
    put_ok(&a, 11, 0, None, bytes(KIB, 2)).await;
    let lifetime = application::media::file_ports::PENDING_UPLOAD_LIFETIME_SECS;
    let now = i64::from(application::clock::unix_now());
    // Just inside the lifetime nothing goes (the clock may tick once meanwhile).
    assert_eq!(s.app.sweep_uploads(now + lifetime - 5).await.unwrap(), 0);
    assert!(take(&s, &a, &small(11, 1, "")).await.is_ok());
    assert_eq!(
        s.app.sweep_uploads(now + lifetime + 5).await.unwrap(),
        2,
        "the pending file and the taken one"
    );
    assert_eq!(
        take(&s, &a, &small(10, 1, "")).await,
        Err("FILE_PART_0_MISSING".into())
    );
    if let Store::Fs = store {
        let staged = ptslog_tests::blob_dir(&s.db).join("staging");
        let left: Vec<_> = walk(&staged);
        assert!(left.is_empty(), "staged parts left: {left:?}");
    }
    // The id can be used again from scratch.
    put_ok(&a, 10, 0, None, bytes(KIB, 3)).await;
    assert_eq!(
        take(&s, &a, &small(10, 1, "")).await.unwrap().key,
        BlobKey::of(&bytes(KIB, 3))
    );
    s.stop().await;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.path().is_dir() {
                out.extend(walk(&e.path()));
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[tokio::test]
async fn fs_pending_parts_expire() {
    pending_parts_expire(Store::Fs).await;
}

#[tokio::test]
async fn s3_pending_parts_expire() {
    pending_parts_expire(Store::S3).await;
}

async fn file_ids_belong_to_their_account(store: Store) {
    let s = server(store, |_| {}).await;
    let a = s.login("+15550008", "Ann").await;
    let b = s.login("+15550009", "Bob").await;
    let mine = bytes(5000, 1);
    put_ok(&a, 555, 0, None, mine.clone()).await;
    // Bob learned the id: it names nothing of his.
    assert_eq!(
        take(&s, &b, &small(555, 1, "")).await,
        Err("FILE_PART_0_MISSING".into())
    );
    // His own upload under the same id does not touch Ann's.
    let his = bytes(3000, 2);
    put_ok(&b, 555, 0, None, his.clone()).await;
    assert_eq!(
        take(&s, &b, &small(555, 1, "")).await.unwrap().key,
        BlobKey::of(&his)
    );
    assert_eq!(
        take(&s, &a, &small(555, 1, "")).await.unwrap().key,
        BlobKey::of(&mine)
    );
    s.stop().await;
}

#[tokio::test]
async fn fs_file_ids_belong_to_their_account() {
    file_ids_belong_to_their_account(Store::Fs).await;
}

#[tokio::test]
async fn s3_file_ids_belong_to_their_account() {
    file_ids_belong_to_their_account(Store::S3).await;
}
