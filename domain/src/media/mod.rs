//! Media: the identities of stored file bytes and the rules about them (docs/media.md).

pub mod blob_key;
pub mod download_range;
pub mod file_error;
pub mod photo_sizes;
pub mod upload_parts;

pub use blob_key::BlobKey;
pub use download_range::DownloadRange;
pub use file_error::FileError;
pub use upload_parts::UploadKind;
