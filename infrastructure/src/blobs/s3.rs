//! Blobs in any S3-compatible store (AWS S3, MinIO, Ceph, s3s…) through the `object_store`
//! crate, for deployments that outgrow one disk or run several instances.
//!
//! Keys in the bucket: `blobs/<sha256 hex>` (a blob, named by its content), `staging/<user>/
//! <file_id>/<part>.<nonce>` (a pending upload part), `tmp/<random>` (a blob being streamed in).
//! An S3 object appears only once its PUT (or its multipart upload) completes, so nothing is ever
//! visible half-written; a streamed blob is written under `tmp/` and copied to its content key
//! once its hash is known.

use std::sync::Arc;
use std::time::Duration;

use application::media::{BlobChunks, BlobError, BlobStore, PartStaging, StagedPart};
use async_trait::async_trait;
use domain::media::BlobKey;
use domain::UserId;
use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{
    ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig, WriteMultipart,
};
use rand::Rng;
use sha2::{Digest, Sha256};

/// The longest one request to the store may take (a 5 MiB multipart chunk or a 1 MiB read on a
/// slow link), connecting included.
pub const S3_REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
pub const S3_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Retries of a failed request, all within [`S3_RETRY_TIMEOUT`]: a blip is retried, an outage
/// answers the client (`500`) instead of holding its call for minutes.
pub const S3_MAX_RETRIES: usize = 2;
pub const S3_RETRY_TIMEOUT: Duration = Duration::from_secs(10);
/// A streamed blob up to this size is sent in one PUT straight to its key; a larger one as a
/// multipart upload of chunks this size (S3's smallest part is 5 MiB). The most a streamed put
/// holds in memory is one chunk plus the one in flight.
pub const S3_CHUNK_BYTES: usize = 5 * 1024 * 1024;
/// Multipart chunks in flight at once per streamed put.
const S3_CHUNKS_IN_FLIGHT: usize = 2;

/// Where the bucket is and how to sign in to it.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// `http(s)://host:port`; `None`: AWS itself (by region).
    pub endpoint: Option<String>,
    pub bucket: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Every key is under `<prefix>/` when set (several deployments, or tests, in one bucket).
    pub prefix: String,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
pub struct S3BlobStore {
    store: Arc<dyn ObjectStore>,
    /// `""` or `"<prefix>/"`.
    prefix: String,
}

fn backend(context: &str, e: object_store::Error) -> BlobError {
    BlobError::Backend(format!("{context}: {e}"))
}

impl S3BlobStore {
    fn blob_path(&self, key: &BlobKey) -> Path {
        Path::from(format!("{}blobs/{}", self.prefix, key.hex()))
    }

    fn file_prefix(&self, user: UserId, file_id: i64) -> Path {
        Path::from(format!("{}staging/{}/{}", self.prefix, user.get(), file_id))
    }

    fn part_path(&self, name: &StagedPart) -> Path {
        Path::from(format!(
            "{}staging/{}/{}/{}.{:016x}",
            self.prefix,
            name.user.get(),
            name.file_id,
            name.part,
            name.nonce as u64
        ))
    }

    /// A client of the bucket (no request is made until the first call).
    pub fn new(settings: &S3Settings) -> Result<Self, BlobError> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&settings.bucket)
            .with_region(&settings.region)
            .with_access_key_id(&settings.access_key_id)
            .with_secret_access_key(&settings.secret_access_key)
            .with_client_options(
                ClientOptions::new()
                    .with_timeout(S3_REQUEST_TIMEOUT)
                    .with_connect_timeout(S3_CONNECT_TIMEOUT)
                    .with_allow_http(
                        settings
                            .endpoint
                            .as_deref()
                            .is_some_and(|e| e.starts_with("http://")),
                    ),
            )
            .with_retry(RetryConfig {
                max_retries: S3_MAX_RETRIES,
                retry_timeout: S3_RETRY_TIMEOUT,
                ..RetryConfig::default()
            });
        if let Some(endpoint) = &settings.endpoint {
            // Path-style requests: a self-hosted server has no wildcard DNS for buckets.
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false);
        }
        let store = builder
            .build()
            .map_err(|e| backend("configuring the S3 store", e))?;
        let prefix = settings.prefix.trim_matches('/');
        Ok(Self {
            store: Arc::new(store),
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
        })
    }

    async fn exists(&self, path: &Path) -> Result<bool, BlobError> {
        match self.store.head(path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(backend("looking up an object", e)),
        }
    }

    /// Streams the rest of a blob whose first chunk filled `buffer` through a multipart
    /// upload under `tmp/`, then copies it to its content key.
    async fn put_multipart(
        &self,
        first: Vec<u8>,
        mut hash: Sha256,
        mut len: u64,
        chunks: &mut BlobChunks<'_>,
    ) -> Result<(BlobKey, u64), BlobError> {
        let tmp = Path::from(format!(
            "{}tmp/{:032x}",
            self.prefix,
            rand::thread_rng().gen::<u128>()
        ));
        let upload = self
            .store
            .put_multipart(&tmp)
            .await
            .map_err(|e| backend("starting a multipart upload", e))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, S3_CHUNK_BYTES);
        writer.write(&first);
        drop(first);
        let streamed: Result<(), BlobError> = async {
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk?;
                hash.update(&chunk);
                len += chunk.len() as u64;
                writer
                    .wait_for_capacity(S3_CHUNKS_IN_FLIGHT)
                    .await
                    .map_err(|e| backend("uploading a chunk", e))?;
                writer.write(&chunk);
            }
            Ok(())
        }
        .await;
        if let Err(e) = streamed {
            let _ = writer.abort().await;
            return Err(e);
        }
        writer
            .finish()
            .await
            .map_err(|e| backend("finishing a multipart upload", e))?;
        let key = BlobKey::from_digest(hash.finalize().into());
        let to = self.blob_path(&key);
        let copied = if self.exists(&to).await? {
            Ok(())
        } else {
            self.store
                .copy(&tmp, &to)
                .await
                .map_err(|e| backend("copying a blob to its key", e))
        };
        if let Err(e) = self.store.delete(&tmp).await {
            tracing::warn!(error = %e, "deleting a streamed blob's temporary object failed");
        }
        copied.map(|()| (key, len))
    }
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn put(&self, bytes: Vec<u8>) -> Result<BlobKey, BlobError> {
        let key = BlobKey::of(&bytes);
        let path = self.blob_path(&key);
        if !self.exists(&path).await? {
            self.store
                .put(&path, bytes.into())
                .await
                .map_err(|e| backend("putting a blob", e))?;
        }
        Ok(key)
    }

    async fn put_stream(&self, mut chunks: BlobChunks<'_>) -> Result<(BlobKey, u64), BlobError> {
        let mut hash = Sha256::new();
        let mut buffer = Vec::new();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            hash.update(&chunk);
            buffer.extend_from_slice(&chunk);
            if buffer.len() >= S3_CHUNK_BYTES {
                let len = buffer.len() as u64;
                return self.put_multipart(buffer, hash, len, &mut chunks).await;
            }
        }
        // Small enough for one PUT straight to its key.
        let len = buffer.len() as u64;
        let key = BlobKey::from_digest(hash.finalize().into());
        let path = self.blob_path(&key);
        if !self.exists(&path).await? {
            self.store
                .put(&path, buffer.into())
                .await
                .map_err(|e| backend("putting a blob", e))?;
        }
        Ok((key, len))
    }

    async fn read_range(&self, key: &BlobKey, offset: u64, len: u32) -> Result<Vec<u8>, BlobError> {
        let path = self.blob_path(key);
        let options = GetOptions {
            range: Some(GetRange::Bounded(offset..offset + u64::from(len.max(1)))),
            ..GetOptions::default()
        };
        let got = match self.store.get_opts(&path, options).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Err(BlobError::Missing(*key)),
            Err(e) => {
                // A range starting at or past the end is refused by S3 (416): nothing to read.
                return match self.store.head(&path).await {
                    Ok(meta) if meta.size <= offset => Ok(Vec::new()),
                    Err(object_store::Error::NotFound { .. }) => Err(BlobError::Missing(*key)),
                    _ => Err(backend("reading a blob", e)),
                };
            }
        };
        let bytes = got
            .bytes()
            .await
            .map_err(|e| backend("reading a blob", e))?;
        Ok(bytes[..bytes.len().min(len as usize)].to_vec())
    }

    async fn size(&self, key: &BlobKey) -> Result<Option<u64>, BlobError> {
        match self.store.head(&self.blob_path(key)).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(backend("reading a blob's size", e)),
        }
    }
}

#[async_trait]
impl PartStaging for S3BlobStore {
    async fn put_part(&self, name: &StagedPart, bytes: Vec<u8>) -> Result<(), BlobError> {
        self.store
            .put(&self.part_path(name), bytes.into())
            .await
            .map(|_| ())
            .map_err(|e| backend("putting an upload part", e))
    }

    async fn read_part(&self, name: &StagedPart) -> Result<Option<Vec<u8>>, BlobError> {
        match self.store.get(&self.part_path(name)).await {
            Ok(got) => Ok(Some(
                got.bytes()
                    .await
                    .map_err(|e| backend("reading an upload part", e))?
                    .to_vec(),
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(backend("reading an upload part", e)),
        }
    }

    async fn delete_part(&self, name: &StagedPart) -> Result<(), BlobError> {
        match self.store.delete(&self.part_path(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(backend("deleting an upload part", e)),
        }
    }

    async fn delete_file(&self, user: UserId, file_id: i64) -> Result<(), BlobError> {
        let prefix = self.file_prefix(user, file_id);
        let mut listed = self.store.list(Some(&prefix));
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(|e| backend("listing an upload's parts", e))?;
            match self.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(backend("deleting an upload part", e)),
            }
        }
        Ok(())
    }
}
