//! The port photos and documents are kept behind once made: each by its id, with the account
//! that uploaded it, so `inputMediaPhoto` / `inputMediaDocument` and downloads can be checked
//! against what the caller may see.

use async_trait::async_trait;
use domain::media::{Document, MediaId, Photo};
use domain::UserId;

use crate::ports::StoreError;

/// A photo or document as stored, with its uploader.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredMedia {
    Photo { photo: Photo, owner: UserId },
    Document { document: Document, owner: UserId },
}

impl StoredMedia {
    pub fn owner(&self) -> UserId {
        match self {
            Self::Photo { owner, .. } | Self::Document { owner, .. } => *owner,
        }
    }
}

#[async_trait]
pub trait MediaCatalog: Send + Sync {
    /// A new id for a photo or document (never reused).
    async fn next_media_id(&self) -> Result<MediaId, StoreError>;
    /// Records a photo whose every size is already in the blob store.
    async fn put_photo(&self, owner: UserId, photo: &Photo) -> Result<(), StoreError>;
    /// Records a document whose file (and thumbnail) is already in the blob store.
    async fn put_document(&self, owner: UserId, document: &Document) -> Result<(), StoreError>;
    async fn photo(&self, id: MediaId) -> Result<Option<StoredMedia>, StoreError>;
    async fn document(&self, id: MediaId) -> Result<Option<StoredMedia>, StoreError>;
    /// Whether `viewer` may see the media: it uploaded it, or one of its messages it has not
    /// deleted carries it.
    async fn visible_to(&self, viewer: UserId, id: MediaId) -> Result<bool, StoreError>;
}
