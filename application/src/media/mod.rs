//! Media's ports and shared types: where blobs live, how photos are cut into sizes, and the
//! uploaded file a media message refers to (docs/media.md).

pub mod blob_port;
pub mod input_file;
pub mod photo_port;

pub use blob_port::{BlobError, BlobStore};
pub use input_file::{InputFile, UploadedFile};
pub use photo_port::{PhotoError, PhotoProcessor, PhotoSizeImage, ProcessedPhoto};
