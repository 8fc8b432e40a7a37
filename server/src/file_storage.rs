//! Where file bytes are stored and the upload quotas (docs/media.md, "Storage"), read from the
//! environment:
//!
//! - `PTSLOG_BLOB_STORE`: `fs` (default) or `s3`;
//! - `fs`: `PTSLOG_BLOB_DIR` (default `<data dir>/files`);
//! - `s3`: `PTSLOG_S3_BUCKET`, `PTSLOG_S3_ACCESS_KEY_ID` and `PTSLOG_S3_SECRET_ACCESS_KEY`
//!   (required), `PTSLOG_S3_ENDPOINT` (`http(s)://host:port` of a self-hosted server; unset:
//!   AWS), `PTSLOG_S3_REGION` (default `us-east-1`), `PTSLOG_S3_PREFIX` (a key prefix);
//! - `PTSLOG_UPLOAD_MAX_PENDING_BYTES`, `PTSLOG_UPLOAD_MAX_PENDING_FILES`: each account's quota
//!   of pending upload parts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use application::media::{BlobStore, PartStaging, UploadLimits};
use infrastructure::blobs::{FsBlobStore, S3BlobStore, S3Settings};

/// The S3 region when `PTSLOG_S3_REGION` is unset (self-hosted servers ignore it).
pub const DEFAULT_S3_REGION: &str = "us-east-1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobBackend {
    Fs { root: PathBuf },
    S3(S3Settings),
}

#[derive(Debug, Clone)]
pub struct FileStorage {
    pub backend: BlobBackend,
    pub upload_limits: UploadLimits,
}

impl FileStorage {
    pub fn from_vars(vars: &HashMap<String, String>, data_dir: &Path) -> anyhow::Result<Self> {
        let get = |k: &str| vars.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let required = |k: &str| {
            get(k)
                .map(str::to_string)
                .ok_or_else(|| anyhow!("{k} is required with PTSLOG_BLOB_STORE=s3"))
        };
        let backend = match get("PTSLOG_BLOB_STORE").unwrap_or("fs") {
            "fs" => BlobBackend::Fs {
                root: get("PTSLOG_BLOB_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| data_dir.join("files")),
            },
            "s3" => {
                let endpoint = get("PTSLOG_S3_ENDPOINT").map(str::to_string);
                if let Some(e) = &endpoint {
                    let url = url::Url::parse(e).context("PTSLOG_S3_ENDPOINT")?;
                    if !matches!(url.scheme(), "http" | "https") {
                        return Err(anyhow!("PTSLOG_S3_ENDPOINT must be an http(s) URL"));
                    }
                }
                BlobBackend::S3(S3Settings {
                    endpoint,
                    bucket: required("PTSLOG_S3_BUCKET")?,
                    region: get("PTSLOG_S3_REGION")
                        .unwrap_or(DEFAULT_S3_REGION)
                        .to_string(),
                    access_key_id: required("PTSLOG_S3_ACCESS_KEY_ID")?,
                    secret_access_key: required("PTSLOG_S3_SECRET_ACCESS_KEY")?,
                    prefix: get("PTSLOG_S3_PREFIX").unwrap_or("").to_string(),
                })
            }
            other => {
                return Err(anyhow!(
                    "PTSLOG_BLOB_STORE: expected fs or s3, got {other:?}"
                ))
            }
        };
        let mut upload_limits = UploadLimits::default();
        if let Some(v) = get("PTSLOG_UPLOAD_MAX_PENDING_BYTES") {
            upload_limits.quota.max_pending_bytes =
                v.parse().context("PTSLOG_UPLOAD_MAX_PENDING_BYTES")?;
        }
        if let Some(v) = get("PTSLOG_UPLOAD_MAX_PENDING_FILES") {
            upload_limits.quota.max_pending_files =
                v.parse().context("PTSLOG_UPLOAD_MAX_PENDING_FILES")?;
        }
        Ok(Self {
            backend,
            upload_limits,
        })
    }

    /// The configured store, as the blob store and as the staging area of upload parts.
    pub fn open(&self) -> anyhow::Result<(Arc<dyn BlobStore>, Arc<dyn PartStaging>)> {
        Ok(match &self.backend {
            BlobBackend::Fs { root } => {
                let store = Arc::new(
                    FsBlobStore::open(root)
                        .with_context(|| format!("opening the blob folder {}", root.display()))?,
                );
                (store.clone(), store)
            }
            BlobBackend::S3(settings) => {
                let store = Arc::new(S3BlobStore::new(settings).context("the S3 blob store")?);
                (store.clone(), store)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_file_system_under_the_data_folder_is_the_default() {
        let s = FileStorage::from_vars(&HashMap::new(), Path::new("/d")).unwrap();
        assert_eq!(
            s.backend,
            BlobBackend::Fs {
                root: "/d/files".into()
            }
        );
        assert_eq!(s.upload_limits, UploadLimits::default());
    }

    #[test]
    fn s3_needs_a_bucket_and_keys() {
        let full = [
            ("PTSLOG_BLOB_STORE", "s3"),
            ("PTSLOG_S3_ENDPOINT", "http://127.0.0.1:9000"),
            ("PTSLOG_S3_BUCKET", "b"),
            ("PTSLOG_S3_ACCESS_KEY_ID", "ak"),
            ("PTSLOG_S3_SECRET_ACCESS_KEY", "sk"),
        ];
        let s = FileStorage::from_vars(&vars(&full), Path::new("/d")).unwrap();
        let BlobBackend::S3(settings) = s.backend else {
            panic!("s3 expected")
        };
        assert_eq!(settings.region, DEFAULT_S3_REGION);
        assert_eq!(settings.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert!(
            !format!("{settings:?}").contains("sk"),
            "the secret is not printed"
        );
        for missing in 2..5 {
            let mut partial = full.to_vec();
            partial.remove(missing);
            assert!(FileStorage::from_vars(&vars(&partial), Path::new("/d")).is_err());
        }
        let mut bad = full.to_vec();
        bad[1] = ("PTSLOG_S3_ENDPOINT", "ftp://x");
        assert!(FileStorage::from_vars(&vars(&bad), Path::new("/d")).is_err());
        assert!(
            FileStorage::from_vars(&vars(&[("PTSLOG_BLOB_STORE", "tape")]), Path::new("/d"))
                .is_err()
        );
    }

    #[test]
    fn quotas_can_be_set() {
        let s = FileStorage::from_vars(
            &vars(&[
                ("PTSLOG_UPLOAD_MAX_PENDING_BYTES", "1000"),
                ("PTSLOG_UPLOAD_MAX_PENDING_FILES", "3"),
            ]),
            Path::new("/d"),
        )
        .unwrap();
        assert_eq!(s.upload_limits.quota.max_pending_bytes, 1000);
        assert_eq!(s.upload_limits.quota.max_pending_files, 3);
    }
}
