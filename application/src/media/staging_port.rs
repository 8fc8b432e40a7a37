//! The port the bytes of pending upload parts are kept behind until the file is used
//! (upload.saveFilePart → an `inputFile` in a media message). The blob store adapters implement
//! it in an area of their own (a folder, a key prefix), apart from the content-addressed blobs:
//! parts are named by who uploads them, not by their content, and are deleted once used.

use async_trait::async_trait;
use domain::UserId;

use super::blob_port::BlobError;

/// One write of one part: a re-sent part gets a new `nonce`, so two writes of the same part
/// racing each other never share a name, and the bookkeeping names the one that won.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagedPart {
    pub user: UserId,
    pub file_id: i64,
    pub part: i32,
    pub nonce: i64,
}

#[async_trait]
pub trait PartStaging: Send + Sync {
    /// Stores a part's bytes, visible under its name only once complete.
    async fn put_part(&self, name: &StagedPart, bytes: Vec<u8>) -> Result<(), BlobError>;
    /// The part's bytes, or `None` when nothing is staged under that name.
    async fn read_part(&self, name: &StagedPart) -> Result<Option<Vec<u8>>, BlobError>;
    /// Removes one staged part (one replaced by a re-send); an absent one is no error.
    async fn delete_part(&self, name: &StagedPart) -> Result<(), BlobError>;
    /// Removes everything staged for the file: its parts and any a failed write left behind.
    async fn delete_file(&self, user: UserId, file_id: i64) -> Result<(), BlobError>;
}
