//! Whole-file downloads for the JSON API (`GET /v1/files/...`, docs/json-api.md): the location is
//! resolved and the caller's right to it checked exactly as for upload.getFile ([`App::locate`]),
//! then the front reads the range it serves in pieces of at most [`DOWNLOAD_CHUNK_BYTES`], so
//! memory per download is one piece whatever the file's size.

use domain::media::{BlobKey, FileError};

use super::get_file::InputFileLocation;
use crate::error::AppError;
use crate::media::BlobError;
use crate::{App, Caller};

/// The most one read of a download takes from the store (and holds in memory).
pub const DOWNLOAD_CHUNK_BYTES: u32 = 1024 * 1024;

/// A file the caller may download: where it is and what to say about it.
#[derive(Debug, Clone)]
pub struct Download {
    pub key: BlobKey,
    pub size: u64,
    pub mime_type: String,
    pub mtime: i32,
}

fn missing(key: &BlobKey) -> AppError {
    // A location named it, so the store lost it: worth an operator's look.
    tracing::error!(%key, "a referenced blob is missing from the store");
    FileError::FileIdInvalid.into()
}

impl App {
    /// The file `location` names, if `caller` may see it (`FILE_ID_INVALID`,
    /// `FILE_REFERENCE_EXPIRED` as upload.getFile answers).
    pub async fn open_download(
        &self,
        caller: &Caller,
        location: InputFileLocation,
    ) -> Result<Download, AppError> {
        let located = self.locate(caller, location).await?;
        let size = self
            .file_ports()?
            .blobs
            .size(&located.key)
            .await?
            .ok_or_else(|| missing(&located.key))?;
        Ok(Download {
            key: located.key,
            size,
            mime_type: located.mime_type,
            mtime: located.mtime,
        })
    }

    /// Bytes `[offset, offset + len)` of an opened download, `len` capped at
    /// [`DOWNLOAD_CHUNK_BYTES`]; fewer at the blob's end.
    pub async fn read_download_chunk(
        &self,
        key: &BlobKey,
        offset: u64,
        len: u32,
    ) -> Result<Vec<u8>, AppError> {
        let len = len.min(DOWNLOAD_CHUNK_BYTES);
        match self.file_ports()?.blobs.read_range(key, offset, len).await {
            Ok(bytes) => Ok(bytes),
            Err(BlobError::Missing(key)) => Err(missing(&key)),
            Err(e) => Err(e.into()),
        }
    }
}
