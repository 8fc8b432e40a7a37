//! Media: the identities of stored file bytes, the photos and documents made of them, what a
//! message carries, and the rules about them (docs/media.md).

pub mod blob_key;
mod blob_key_serde;
pub mod caption;
pub mod document;
pub mod document_attributes;
pub mod download_range;
pub mod file_error;
pub mod file_reference;
pub mod limits;
pub mod media_id;
pub mod message_media;
pub mod photo;
pub mod photo_sizes;
pub mod profile_photos;
pub mod upload_parts;

pub use blob_key::BlobKey;
pub use caption::Caption;
pub use document::Document;
pub use document_attributes::{DocumentAttributes, InputDocumentAttribute};
pub use download_range::DownloadRange;
pub use file_error::FileError;
pub use media_id::MediaId;
pub use message_media::{MediaClass, MessageMedia};
pub use photo::{Photo, PhotoSize};
pub use upload_parts::UploadKind;

/// The DC id this server calls itself. Every photo and document says it (`dc_id`), and
/// `help.getConfig` lists it at the server's address, so clients download from the connection
/// they have instead of asking for another DC's authorization.
pub const THIS_DC: i32 = 2;
