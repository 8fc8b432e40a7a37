//! The port file bytes are kept behind: the local file system under the data folder by
//! default, any S3-compatible store for deployments that outgrow one disk. Content-addressed,
//! so storing the same bytes twice stores them once.

use async_trait::async_trait;
use domain::media::BlobKey;
use futures::stream::BoxStream;
use futures::StreamExt;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum BlobError {
    #[error("no blob {0}")]
    Missing(BlobKey),
    /// The backend failed (disk, network, S3 error): never the client's fault.
    #[error("blob store: {0}")]
    Backend(String),
}

/// The bytes of a blob in pieces, for [`BlobStore::put_stream`]: a source that fails ends the
/// put with its error and stores nothing.
pub type BlobChunks<'a> = BoxStream<'a, Result<Vec<u8>, BlobError>>;

#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Stores `bytes` under their SHA-256 and returns the key. A blob is visible under its key
    /// only once it is complete (written elsewhere, then renamed or put in one request), so an
    /// event can name it only after this returns.
    async fn put(&self, bytes: Vec<u8>) -> Result<BlobKey, BlobError>;

    /// Stores the concatenation of `chunks` like [`BlobStore::put`] and answers its key and
    /// length, holding one chunk at a time (plus the backend's own buffer) however long the
    /// blob. The adapters stream; this default collects, for stores that live in memory.
    async fn put_stream(&self, mut chunks: BlobChunks<'_>) -> Result<(BlobKey, u64), BlobError> {
        let mut all = Vec::new();
        while let Some(chunk) = chunks.next().await {
            all.extend_from_slice(&chunk?);
        }
        let len = all.len() as u64;
        Ok((self.put(all).await?, len))
    }

    /// Bytes `[offset, offset + len)` of the blob, cut at its end (empty past it). Callers bound
    /// `len`, so memory per read is bounded.
    async fn read_range(&self, key: &BlobKey, offset: u64, len: u32) -> Result<Vec<u8>, BlobError>;

    /// The blob's size, or `None` when there is no such blob.
    async fn size(&self, key: &BlobKey) -> Result<Option<u64>, BlobError>;
}
