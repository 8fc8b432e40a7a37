//! Media: the identities of stored file bytes and the rules about them (docs/media.md).

pub mod blob_key;

pub use blob_key::BlobKey;
