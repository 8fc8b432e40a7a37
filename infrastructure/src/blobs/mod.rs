//! The blob store adapters (docs/media.md, "Storage"): the local file system (default) and S3.
//! Each also keeps the staging area of pending upload parts.

pub mod fs;
pub mod s3;

pub use fs::FsBlobStore;
pub use s3::{S3BlobStore, S3Settings};
