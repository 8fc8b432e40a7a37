//! Blobs on the local file system, under the data folder (the default: nothing to install).
//!
//! Layout under the root (`<data dir>/files`):
//! - `blobs/ab/cd/<sha256 hex>`: a blob, named by its content;
//! - `staging/<user>/<file_id>/<part>.<nonce>`: a pending upload part;
//! - `tmp/`: files being written. Everything is written there, flushed to disk and only then
//!   renamed into place, so a blob or a part is never visible half-written, even after a crash.

use std::io::{ErrorKind, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use application::media::{BlobChunks, BlobError, BlobStore, PartStaging, StagedPart};
use async_trait::async_trait;
use domain::media::BlobKey;
use domain::UserId;
use futures::StreamExt;
use rand::Rng;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Files in `tmp/` older than this when the store opens were left by a process that died
/// mid-write; younger ones may be another live process's (two instances on one folder).
pub const STALE_TMP_AGE: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone)]
pub struct FsBlobStore {
    root: PathBuf,
}

fn backend(context: &str, e: std::io::Error) -> BlobError {
    BlobError::Backend(format!("{context}: {e}"))
}

impl FsBlobStore {
    /// Opens (creating) the store under `root` and drops stale temporary files.
    pub fn open(root: impl Into<PathBuf>) -> std::io::Result<Self> {
        let root = root.into();
        for dir in ["blobs", "staging", "tmp"] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        let store = Self { root };
        store.drop_stale_tmp();
        Ok(store)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn drop_stale_tmp(&self) {
        let Ok(entries) = std::fs::read_dir(self.root.join("tmp")) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > STALE_TMP_AGE);
            if stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn blob_path(&self, key: &BlobKey) -> PathBuf {
        let hex = key.hex();
        self.root
            .join("blobs")
            .join(&hex[0..2])
            .join(&hex[2..4])
            .join(hex)
    }

    fn file_dir(&self, user: UserId, file_id: i64) -> PathBuf {
        self.root
            .join("staging")
            .join(user.get().to_string())
            .join(file_id.to_string())
    }

    fn part_path(&self, name: &StagedPart) -> PathBuf {
        self.file_dir(name.user, name.file_id)
            .join(format!("{}.{:016x}", name.part, name.nonce as u64))
    }

    fn tmp_path(&self) -> PathBuf {
        self.root
            .join("tmp")
            .join(format!("{:032x}", rand::thread_rng().gen::<u128>()))
    }

    /// Writes `bytes` to a new temporary file, flushed to disk.
    async fn write_tmp(&self, bytes: &[u8]) -> Result<PathBuf, BlobError> {
        let tmp = self.tmp_path();
        let result = async {
            let mut f = tokio::fs::File::create_new(&tmp).await?;
            f.write_all(bytes).await?;
            f.sync_all().await
        }
        .await;
        match result {
            Ok(()) => Ok(tmp),
            Err(e) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                Err(backend("writing a temporary file", e))
            }
        }
    }

    /// Moves a finished temporary file to `to` (creating its folder), durably.
    async fn publish(&self, tmp: &Path, to: &Path) -> Result<(), BlobError> {
        let dir = to.parent().expect("a blob path has a folder");
        let result = async {
            tokio::fs::create_dir_all(dir).await?;
            tokio::fs::rename(tmp, to).await?;
            sync_dir(dir).await
        }
        .await;
        if let Err(e) = result {
            let _ = tokio::fs::remove_file(tmp).await;
            return Err(backend("publishing a file", e));
        }
        Ok(())
    }

    /// Publishes `tmp` as blob `key` unless it is already stored (same bytes: nothing new).
    async fn publish_blob(&self, tmp: &Path, key: &BlobKey) -> Result<(), BlobError> {
        let path = self.blob_path(key);
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            let _ = tokio::fs::remove_file(tmp).await;
            return Ok(());
        }
        self.publish(tmp, &path).await
    }
}

/// Makes a rename in `dir` durable.
async fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || std::fs::File::open(dir)?.sync_all())
        .await
        .map_err(std::io::Error::other)?
}

/// Bytes `[offset, offset + len)` of the file at `path`, cut at its end; `None` when absent.
async fn read_range_of(path: &Path, offset: u64, len: u32) -> std::io::Result<Option<Vec<u8>>> {
    let mut f = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = f.metadata().await?.len();
    if offset >= size {
        return Ok(Some(Vec::new()));
    }
    let want = (size - offset).min(u64::from(len));
    f.seek(SeekFrom::Start(offset)).await?;
    let mut out = Vec::with_capacity(want as usize);
    f.take(want).read_to_end(&mut out).await?;
    Ok(Some(out))
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn put(&self, bytes: Vec<u8>) -> Result<BlobKey, BlobError> {
        let key = BlobKey::of(&bytes);
        if tokio::fs::try_exists(self.blob_path(&key))
            .await
            .unwrap_or(false)
        {
            return Ok(key);
        }
        let tmp = self.write_tmp(&bytes).await?;
        self.publish_blob(&tmp, &key).await?;
        Ok(key)
    }

    async fn put_stream(&self, mut chunks: BlobChunks<'_>) -> Result<(BlobKey, u64), BlobError> {
        let tmp = self.tmp_path();
        let mut f = tokio::fs::File::create_new(&tmp)
            .await
            .map_err(|e| backend("creating a temporary file", e))?;
        let mut hash = Sha256::new();
        let mut len = 0u64;
        let written: Result<(), BlobError> = async {
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk?;
                hash.update(&chunk);
                len += chunk.len() as u64;
                f.write_all(&chunk)
                    .await
                    .map_err(|e| backend("writing a blob", e))?;
            }
            f.sync_all()
                .await
                .map_err(|e| backend("flushing a blob", e))
        }
        .await;
        drop(f);
        if let Err(e) = written {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(e);
        }
        let key = BlobKey::from_digest(hash.finalize().into());
        self.publish_blob(&tmp, &key).await?;
        Ok((key, len))
    }

    async fn read_range(&self, key: &BlobKey, offset: u64, len: u32) -> Result<Vec<u8>, BlobError> {
        read_range_of(&self.blob_path(key), offset, len)
            .await
            .map_err(|e| backend("reading a blob", e))?
            .ok_or(BlobError::Missing(*key))
    }

    async fn size(&self, key: &BlobKey) -> Result<Option<u64>, BlobError> {
        match tokio::fs::metadata(self.blob_path(key)).await {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(backend("reading a blob's size", e)),
        }
    }
}

#[async_trait]
impl PartStaging for FsBlobStore {
    async fn put_part(&self, name: &StagedPart, bytes: Vec<u8>) -> Result<(), BlobError> {
        let tmp = self.write_tmp(&bytes).await?;
        self.publish(&tmp, &self.part_path(name)).await
    }

    async fn read_part(&self, name: &StagedPart) -> Result<Option<Vec<u8>>, BlobError> {
        match tokio::fs::read(self.part_path(name)).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(backend("reading an upload part", e)),
        }
    }

    async fn delete_part(&self, name: &StagedPart) -> Result<(), BlobError> {
        match tokio::fs::remove_file(self.part_path(name)).await {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(backend("deleting an upload part", e)),
            _ => Ok(()),
        }
    }

    async fn delete_file(&self, user: UserId, file_id: i64) -> Result<(), BlobError> {
        match tokio::fs::remove_dir_all(self.file_dir(user, file_id)).await {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(backend("deleting an upload", e)),
            _ => Ok(()),
        }
    }
}
