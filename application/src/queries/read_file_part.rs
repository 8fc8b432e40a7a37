//! The bytes of one upload.getFile request, once the location was resolved to a blob (and the
//! caller's right to it checked) by the media handlers: Telegram's offset/limit rules, then only
//! that range read from the store, so memory per download is one request's limit.

use domain::media::{BlobKey, DownloadRange, FileError};

use crate::error::AppError;
use crate::media::BlobError;
use crate::App;

impl App {
    /// Bytes `[offset, offset + limit)` of the blob, fewer at its end, none past it.
    /// `OFFSET_INVALID`/`LIMIT_INVALID` by Telegram's rules; `FILE_ID_INVALID` when the blob is
    /// not in the store.
    pub async fn read_file_part(
        &self,
        key: &BlobKey,
        offset: i64,
        limit: i32,
        precise: bool,
    ) -> Result<Vec<u8>, AppError> {
        let files = self.file_ports()?;
        let range = DownloadRange::new(offset, limit, precise)?;
        match files.blobs.read_range(key, range.offset, range.limit).await {
            Ok(bytes) => Ok(bytes),
            Err(BlobError::Missing(key)) => {
                // A location named it, so the store lost it: worth an operator's look.
                tracing::error!(%key, "a referenced blob is missing from the store");
                Err(FileError::FileIdInvalid.into())
            }
            Err(e) => Err(e.into()),
        }
    }
}
