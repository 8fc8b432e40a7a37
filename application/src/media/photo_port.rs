//! The port photos are decoded and cut into the sizes clients expect through (the `image`
//! crate in infrastructure). CPU-bound: callers run it off the async workers.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PhotoError {
    /// Not an image the processor reads (`IMAGE_PROCESS_FAILED`).
    #[error("not a readable image")]
    NotAnImage,
    /// Too small, too large or too elongated to be a photo (`PHOTO_INVALID_DIMENSIONS`).
    #[error("photo dimensions {width}x{height} refused")]
    InvalidDimensions { width: u32, height: u32 },
}

/// One stored size of a photo: `kind` is Telegram's size letter (`s`, `m`, `x`, `y`, `w`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhotoSizeImage {
    pub kind: char,
    pub width: u32,
    pub height: u32,
    /// JPEG bytes of this size.
    pub jpeg: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessedPhoto {
    /// The source's dimensions.
    pub width: u32,
    pub height: u32,
    /// The sizes the source allows, smallest first (never larger than the source).
    pub sizes: Vec<PhotoSizeImage>,
    /// The `i` size: a tiny JPEG with its standard header stripped (photoStrippedSize).
    pub stripped: Vec<u8>,
}

pub trait PhotoProcessor: Send + Sync {
    fn process(&self, bytes: &[u8]) -> Result<ProcessedPhoto, PhotoError>;
}
