//! The blob store adapters against real backends: a folder of the local file system, and the
//! S3-protocol server the scripts start (s3s-fs: `PTSLOG_TEST_S3_ENDPOINT`, its bucket and keys),
//! each test under a key prefix of its own. The same contract for both.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use application::media::{BlobChunks, BlobError, BlobStore, PartStaging, StagedPart};
use domain::media::BlobKey;
use domain::UserId;
use futures::StreamExt;
use infrastructure::blobs::{FsBlobStore, S3BlobStore, S3Settings};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// A store and the folder its blobs are files in (for s3s-fs: the bucket's folder), so the
/// tests can count what was really stored.
struct Backend {
    store: Arc<dyn BlobStore>,
    staging: Arc<dyn PartStaging>,
    files: PathBuf,
}

impl Backend {
    fn fs() -> Self {
        let root =
            std::env::temp_dir().join(format!("ptslog-blobs-{:016x}", rand::random::<u64>()));
        let store = Arc::new(FsBlobStore::open(&root).expect("open the folder"));
        Self {
            store: store.clone(),
            staging: store,
            files: root,
        }
    }

    fn s3() -> Self {
        let prefix = format!("t{:016x}", rand::random::<u64>());
        let bucket = env("PTSLOG_TEST_S3_BUCKET", "ptslog-test");
        let store = Arc::new(
            S3BlobStore::new(&S3Settings {
                endpoint: Some(env("PTSLOG_TEST_S3_ENDPOINT", "http://127.0.0.1:59014")),
                bucket: bucket.clone(),
                region: "us-east-1".into(),
                access_key_id: env("PTSLOG_TEST_S3_ACCESS_KEY", "ptslog-test"),
                secret_access_key: env("PTSLOG_TEST_S3_SECRET_KEY", "ptslog-test-secret"),
                prefix: prefix.clone(),
            })
            .expect("an S3 client"),
        );
        let root = std::env::var("PTSLOG_TEST_S3_ROOT")
            .expect("PTSLOG_TEST_S3_ROOT: run through scripts/test, which starts s3s-fs");
        Self {
            store: store.clone(),
            staging: store,
            files: Path::new(&root).join(bucket).join(prefix),
        }
    }

    /// Files under `sub` of the backend's folder, recursively.
    fn count(&self, sub: &str) -> usize {
        fn walk(dir: &Path) -> usize {
            std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| {
                            let p = e.path();
                            if p.is_dir() {
                                walk(&p)
                            } else {
                                1
                            }
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        walk(&self.files.join(sub))
    }

    fn clean(self) {
        let _ = std::fs::remove_dir_all(&self.files);
    }
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn chunks_of(data: &[u8], size: usize) -> BlobChunks<'static> {
    let pieces: Vec<Result<Vec<u8>, BlobError>> =
        data.chunks(size).map(|c| Ok(c.to_vec())).collect();
    futures::stream::iter(pieces).boxed()
}

async fn puts_are_content_addressed_and_read_in_ranges(b: &Backend) {
    let data = bytes(10_000, 1);
    let key = b.store.put(data.clone()).await.unwrap();
    assert_eq!(key, BlobKey::of(&data));
    assert_eq!(b.store.size(&key).await.unwrap(), Some(10_000));
    assert_eq!(b.store.read_range(&key, 0, 10_000).await.unwrap(), data);
    assert_eq!(
        b.store.read_range(&key, 4096, 4096).await.unwrap(),
        &data[4096..8192]
    );
    // Cut at the end, empty past it.
    assert_eq!(
        b.store.read_range(&key, 8192, 4096).await.unwrap(),
        &data[8192..]
    );
    assert!(b
        .store
        .read_range(&key, 10_000, 4096)
        .await
        .unwrap()
        .is_empty());
    assert!(b
        .store
        .read_range(&key, 1 << 30, 4096)
        .await
        .unwrap()
        .is_empty());
    // The same bytes again: the same key, nothing new stored.
    let stored = b.count("blobs");
    assert_eq!(stored, 1);
    assert_eq!(b.store.put(data.clone()).await.unwrap(), key);
    assert_eq!(b.count("blobs"), stored);
    // Unknown keys.
    let other = BlobKey::of(b"never stored");
    assert!(
        matches!(b.store.read_range(&other, 0, 10).await, Err(BlobError::Missing(k)) if k == other)
    );
    assert_eq!(b.store.size(&other).await.unwrap(), None);
}

async fn streamed_puts_hold_one_chunk_and_appear_complete(b: &Backend) {
    // Over S3's 5 MiB multipart threshold, in upload-sized chunks.
    let data = bytes(12 * 1024 * 1024 + 123, 2);
    let (key, len) = b
        .store
        .put_stream(chunks_of(&data, 512 * 1024))
        .await
        .unwrap();
    assert_eq!((key, len), (BlobKey::of(&data), data.len() as u64));
    let at = 5 * 1024 * 1024 - 100;
    assert_eq!(
        b.store.read_range(&key, at as u64, 1 << 20).await.unwrap(),
        &data[at..at + (1 << 20)]
    );
    let tail = data.len() - 123;
    assert_eq!(
        b.store.read_range(&key, tail as u64, 4096).await.unwrap(),
        &data[tail..]
    );
    // Streamed again: nothing new, no temporary left.
    let stored = b.count("blobs");
    assert_eq!(
        b.store
            .put_stream(chunks_of(&data, 300_000))
            .await
            .unwrap()
            .0,
        key
    );
    assert_eq!(b.count("blobs"), stored);
    assert_eq!(b.count("tmp"), 0);
    // A small one goes in one request.
    let small = bytes(1000, 3);
    assert_eq!(
        b.store.put_stream(chunks_of(&small, 100)).await.unwrap(),
        (BlobKey::of(&small), 1000)
    );
}

async fn a_blob_is_invisible_until_complete_and_a_failed_stream_leaves_nothing(b: &Backend) {
    let data = bytes(7 * 1024 * 1024, 4);
    let key = BlobKey::of(&data);
    let store = b.store.clone();
    let seen_midway = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = seen_midway.clone();
    let pieces: Vec<Vec<u8>> = data.chunks(1 << 20).map(<[u8]>::to_vec).collect();
    let stream = futures::stream::iter(pieces.into_iter().enumerate())
        .then(move |(i, chunk)| {
            let store = store.clone();
            let seen = seen.clone();
            async move {
                if i == 6 {
                    // Everything but the last chunk is written: the key must not answer yet.
                    let size = store.size(&key).await.unwrap();
                    seen.lock().unwrap().push(size);
                }
                Ok(chunk)
            }
        })
        .boxed();
    b.store.put_stream(stream).await.unwrap();
    assert_eq!(*seen_midway.lock().unwrap(), vec![None]);
    assert_eq!(b.store.size(&key).await.unwrap(), Some(data.len() as u64));

    let before = b.count("blobs");
    let failing = futures::stream::iter(vec![
        Ok(bytes(6 * 1024 * 1024, 5)),
        Err(BlobError::Backend("the source broke".into())),
    ])
    .boxed();
    assert!(b.store.put_stream(failing).await.is_err());
    assert_eq!(b.count("blobs"), before);
    assert_eq!(b.count("tmp"), 0);
}

async fn staged_parts_are_per_file_and_deleted_with_it(b: &Backend) {
    let user = UserId::new(7).unwrap();
    let part = |file_id: i64, part: i32, nonce: i64| StagedPart {
        user,
        file_id,
        part,
        nonce,
    };
    b.staging
        .put_part(&part(-5, 0, 1), bytes(100, 6))
        .await
        .unwrap();
    b.staging
        .put_part(&part(-5, 1, 2), bytes(50, 7))
        .await
        .unwrap();
    b.staging
        .put_part(&part(9, 0, 3), bytes(10, 8))
        .await
        .unwrap();
    assert_eq!(
        b.staging.read_part(&part(-5, 0, 1)).await.unwrap(),
        Some(bytes(100, 6))
    );
    // Another write of the same part is another name.
    assert_eq!(b.staging.read_part(&part(-5, 0, 99)).await.unwrap(), None);
    b.staging.delete_part(&part(-5, 1, 2)).await.unwrap();
    b.staging.delete_part(&part(-5, 1, 2)).await.unwrap();
    assert_eq!(b.staging.read_part(&part(-5, 1, 2)).await.unwrap(), None);
    b.staging.delete_file(user, -5).await.unwrap();
    b.staging.delete_file(user, -5).await.unwrap();
    assert_eq!(b.staging.read_part(&part(-5, 0, 1)).await.unwrap(), None);
    assert_eq!(
        b.staging.read_part(&part(9, 0, 3)).await.unwrap(),
        Some(bytes(10, 8))
    );
    // Staged parts are not blobs.
    assert_eq!(b.count("blobs"), 0);
}

#[tokio::test]
async fn fs_puts_are_content_addressed_and_read_in_ranges() {
    let b = Backend::fs();
    puts_are_content_addressed_and_read_in_ranges(&b).await;
    b.clean();
}

#[tokio::test]
async fn s3_puts_are_content_addressed_and_read_in_ranges() {
    let b = Backend::s3();
    puts_are_content_addressed_and_read_in_ranges(&b).await;
    b.clean();
}

#[tokio::test]
async fn fs_streamed_puts() {
    let b = Backend::fs();
    streamed_puts_hold_one_chunk_and_appear_complete(&b).await;
    b.clean();
}

#[tokio::test]
async fn s3_streamed_puts() {
    let b = Backend::s3();
    streamed_puts_hold_one_chunk_and_appear_complete(&b).await;
    b.clean();
}

#[tokio::test]
async fn fs_blobs_are_never_half_visible() {
    let b = Backend::fs();
    a_blob_is_invisible_until_complete_and_a_failed_stream_leaves_nothing(&b).await;
    b.clean();
}

#[tokio::test]
async fn s3_blobs_are_never_half_visible() {
    let b = Backend::s3();
    a_blob_is_invisible_until_complete_and_a_failed_stream_leaves_nothing(&b).await;
    b.clean();
}

#[tokio::test]
async fn fs_staging() {
    let b = Backend::fs();
    staged_parts_are_per_file_and_deleted_with_it(&b).await;
    b.clean();
}

#[tokio::test]
async fn s3_staging() {
    let b = Backend::s3();
    staged_parts_are_per_file_and_deleted_with_it(&b).await;
    b.clean();
}

#[tokio::test]
async fn fs_stale_temporary_files_are_dropped_on_open() {
    let b = Backend::fs();
    let stale = b.files.join("tmp").join("left-by-a-crash");
    std::fs::write(&stale, b"half").unwrap();
    let old = std::time::SystemTime::now() - infrastructure::blobs::fs::STALE_TMP_AGE * 2;
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let fresh = b.files.join("tmp").join("being-written");
    std::fs::write(&fresh, b"live").unwrap();
    FsBlobStore::open(&b.files).unwrap();
    assert!(!stale.exists());
    assert!(fresh.exists());
    b.clean();
}
