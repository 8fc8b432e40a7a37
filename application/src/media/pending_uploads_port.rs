//! The port the bookkeeping of pending uploads is kept behind (Postgres): which parts of which
//! file an account has saved, their sizes, and the files already put together. Owner-scoped:
//! every call names the account, and a `file_id` means nothing outside it. Times are unix
//! seconds; a file untouched since before `expired_before` counts as gone.

use async_trait::async_trait;
use domain::media::{BlobKey, UploadKind};
use domain::UserId;

use crate::ports::StoreError;

/// One saved part as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingPart {
    pub part: i32,
    pub size: u32,
    /// The staged write that holds its bytes ([`super::StagedPart::nonce`]).
    pub nonce: i64,
}

/// What one account may hold in pending parts at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadQuota {
    pub max_pending_bytes: u64,
    pub max_pending_files: u32,
}

/// The outcome of recording a part; on anything but `Saved` nothing was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartRecorded {
    /// Recorded; `replaced` is the nonce of the earlier write of the same part, now unused.
    Saved { replaced: Option<i64> },
    /// The account's pending bytes or files would go over its quota.
    OverQuota,
    /// The file was begun as the other kind, or as a big file of another total.
    KindChanged,
    /// A small file's parts would add up to more than `SMALL_FILE_MAX_BYTES`.
    SmallFileTooBig,
}

/// A pending file as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingFile {
    pub kind: UploadKind,
    /// Ascending by part number.
    pub parts: Vec<PendingPart>,
    /// Set once put together: the blob and its length (a repeated take answers it again).
    pub taken: Option<(BlobKey, u64)>,
}

#[async_trait]
pub trait PendingUploads: Send + Sync {
    /// Records a saved part (replacing an earlier write of it) within the quota, in one
    /// transaction per account so parallel parts are counted exactly. A file that expired or
    /// was already taken starts over.
    async fn record_part(
        &self,
        user: UserId,
        file_id: i64,
        kind: UploadKind,
        part: PendingPart,
        now: i64,
        expired_before: i64,
        quota: UploadQuota,
    ) -> Result<PartRecorded, StoreError>;

    /// The account's file, unless absent or expired.
    async fn pending_file(
        &self,
        user: UserId,
        file_id: i64,
        expired_before: i64,
    ) -> Result<Option<PendingFile>, StoreError>;

    /// Marks the file put together as `key` (its parts' records are dropped, freeing the quota).
    async fn mark_taken(
        &self,
        user: UserId,
        file_id: i64,
        key: &BlobKey,
        size: u64,
        now: i64,
    ) -> Result<(), StoreError>;

    /// Drops up to `max` files untouched since before `expired_before` and answers them, so
    /// their staged bytes can be deleted.
    async fn sweep(&self, expired_before: i64, max: u32) -> Result<Vec<(UserId, i64)>, StoreError>;
}
