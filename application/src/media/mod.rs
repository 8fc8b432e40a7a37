//! Media's ports and shared types: where blobs live, how photos are cut into sizes, and the
//! uploaded file a media message refers to (docs/media.md).

pub mod blob_port;
pub mod catalog_port;
pub mod file_ports;
pub mod input_file;
pub mod pending_uploads_port;
pub mod photo_port;
pub mod staging_port;

pub use blob_port::{BlobChunks, BlobError, BlobStore};
pub use catalog_port::{MediaCatalog, StoredMedia};
pub use file_ports::{FilePorts, UploadLimits};
pub use input_file::{InputFile, UploadedFile};
pub use pending_uploads_port::{
    PartRecorded, PendingFile, PendingPart, PendingUploads, UploadQuota,
};
pub use photo_port::{PhotoError, PhotoProcessor, PhotoSizeImage, ProcessedPhoto};
pub use staging_port::{PartStaging, StagedPart};

use std::sync::Arc;

/// What making media from uploads needs: the blob store the sizes go to and the photo processor
/// (given with [`crate::App::with_media_making`]).
#[derive(Clone)]
pub struct MediaMaking {
    pub blobs: Arc<dyn BlobStore>,
    pub photos: Arc<dyn PhotoProcessor>,
}
