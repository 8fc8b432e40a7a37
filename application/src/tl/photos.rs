//! The answers of the `photos.*` methods: `photos.photo`, `photos.photos` / `photos.photosSlice`.

use serde::Serialize;

use super::{TlPhoto, User};

/// TL `photoEmpty`: what `photos.updateProfilePhoto` answers when no photo is current any more.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "photoEmpty")]
pub struct PhotoEmpty {
    pub id: i64,
}

/// TL `Photo`: a photo or `photoEmpty`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AnyPhoto {
    Photo(TlPhoto),
    Empty(PhotoEmpty),
}

/// TL `photos.photo`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "photos.photo")]
pub struct PhotosPhoto {
    pub photo: AnyPhoto,
    pub users: Vec<User>,
}

/// TL `photos.Photos`: every photo, or a page of them with the total.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum PhotosPage {
    #[serde(rename = "photos.photos")]
    All {
        photos: Vec<TlPhoto>,
        users: Vec<User>,
    },
    #[serde(rename = "photos.photosSlice")]
    Slice {
        count: i32,
        photos: Vec<TlPhoto>,
        users: Vec<User>,
    },
}
