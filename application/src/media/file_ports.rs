//! The ports and limits of file bytes (uploads in parts, blobs, downloads), given to the
//! [`App`] with [`App::with_files`].

use std::sync::Arc;

use domain::media::upload_parts::MAX_FILE_BYTES;

use super::blob_port::BlobStore;
use super::pending_uploads_port::{PendingUploads, UploadQuota};
use super::staging_port::PartStaging;
use crate::error::AppError;
use crate::App;

/// Pending upload bytes one account may hold at once (`PTSLOG_UPLOAD_MAX_PENDING_BYTES`): two
/// files of the largest size, so a client may upload the largest file while it sends others,
/// and one account cannot fill the disk with parts it never uses.
pub const DEFAULT_MAX_PENDING_UPLOAD_BYTES: u64 = 2 * MAX_FILE_BYTES;
/// Files one account may be uploading at once (`PTSLOG_UPLOAD_MAX_PENDING_FILES`): an album of
/// 10 with their thumbnails from each of a few devices, with room.
pub const DEFAULT_MAX_PENDING_UPLOAD_FILES: u32 = 100;
/// How long a pending file lives after its last part was saved (or after it was put together,
/// for a retried send naming it again). Telegram keeps parts "between several minutes and
/// several hours"; an hour of silence means the client gave up.
pub const PENDING_UPLOAD_LIFETIME_SECS: i64 = 3600;
/// Expired files the sweep drops per statement (it repeats until none are left).
pub const UPLOAD_SWEEP_BATCH: u32 = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadLimits {
    pub quota: UploadQuota,
    pub pending_lifetime_secs: i64,
}

impl Default for UploadLimits {
    fn default() -> Self {
        Self {
            quota: UploadQuota {
                max_pending_bytes: DEFAULT_MAX_PENDING_UPLOAD_BYTES,
                max_pending_files: DEFAULT_MAX_PENDING_UPLOAD_FILES,
            },
            pending_lifetime_secs: PENDING_UPLOAD_LIFETIME_SECS,
        }
    }
}

/// Where file bytes live: the blobs, the staging area of pending parts and their bookkeeping.
#[derive(Clone)]
pub struct FilePorts {
    pub blobs: Arc<dyn BlobStore>,
    pub staging: Arc<dyn PartStaging>,
    pub pending: Arc<dyn PendingUploads>,
    pub limits: UploadLimits,
}

impl App {
    /// Uploads, blobs and downloads through these ports (without them, file calls answer
    /// `FILE_UPLOAD_UNAVAILABLE`).
    pub fn with_files(mut self, ports: FilePorts) -> Self {
        self.files = Some(ports);
        self
    }

    /// The blob store, when files are configured.
    pub fn blob_store(&self) -> Option<&Arc<dyn BlobStore>> {
        self.files.as_ref().map(|f| &f.blobs)
    }

    pub(crate) fn file_ports(&self) -> Result<&FilePorts, AppError> {
        self.files
            .as_ref()
            .ok_or(AppError::BadRequest("FILE_UPLOAD_UNAVAILABLE"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_quota_holds_the_largest_file() {
        let limits = UploadLimits::default();
        assert!(limits.quota.max_pending_bytes >= MAX_FILE_BYTES);
        assert!(
            limits.quota.max_pending_files >= 20,
            "an album of 10 with thumbnails"
        );
    }
}
