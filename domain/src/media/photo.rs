//! A stored photo: its identity, the sizes it was cut into (each its own blob) and the stripped
//! thumbnail clients show while a size downloads.

use serde::{Deserialize, Serialize};

use super::blob_key_serde::hex_bytes;
use super::limits::{MAX_MEDIA_DIMENSION, MAX_PHOTO_SIZES, MAX_STRIPPED_THUMB_BYTES};
use super::{BlobKey, MediaId};
use crate::error::DomainError;

/// Telegram's size letters: `s` 100, `m` 320, `x` 800, `y` 1280, `w` 2560 px boxes, and `a`–`d`
/// for the crops of profile photos. `i` is the stripped thumbnail and never a stored size.
pub const PHOTO_SIZE_KINDS: &[char] = &['s', 'm', 'x', 'y', 'w', 'a', 'b', 'c', 'd'];

/// One size of a photo (TL `photoSize`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhotoSize {
    /// The size letter, one of [`PHOTO_SIZE_KINDS`].
    pub kind: char,
    pub w: i32,
    pub h: i32,
    /// Bytes of this size's JPEG.
    pub size: i64,
    pub blob: BlobKey,
}

impl PhotoSize {
    pub fn new(kind: char, w: i32, h: i32, size: i64, blob: BlobKey) -> Result<Self, DomainError> {
        let dim = 1..=MAX_MEDIA_DIMENSION;
        if !PHOTO_SIZE_KINDS.contains(&kind) || !dim.contains(&w) || !dim.contains(&h) || size <= 0
        {
            return Err(DomainError::PhotoInvalidDimensions);
        }
        Ok(Self {
            kind,
            w,
            h,
            size,
            blob,
        })
    }

    /// The TL `type` string.
    pub fn kind_str(&self) -> String {
        self.kind.to_string()
    }
}

/// A photo (TL `photo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Photo {
    pub id: MediaId,
    /// Random, per photo: the proof, with the id, that a client was shown it.
    pub access_hash: i64,
    /// Unix seconds.
    pub date: i32,
    /// Smallest first; at least one.
    pub sizes: Vec<PhotoSize>,
    /// The `i` size: a tiny JPEG without its standard header (TL `photoStrippedSize`), hex.
    #[serde(default, with = "hex_bytes", skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "String")]
    pub stripped: Vec<u8>,
}

impl Photo {
    pub fn new(
        id: MediaId,
        access_hash: i64,
        date: i32,
        sizes: Vec<PhotoSize>,
        stripped: Vec<u8>,
    ) -> Result<Self, DomainError> {
        if sizes.is_empty() || sizes.len() > MAX_PHOTO_SIZES {
            return Err(DomainError::PhotoInvalidDimensions);
        }
        if stripped.len() > MAX_STRIPPED_THUMB_BYTES {
            return Err(DomainError::PhotoInvalidDimensions);
        }
        Ok(Self {
            id,
            access_hash,
            date,
            sizes,
            stripped,
        })
    }

    /// The size a download names by its letter.
    pub fn size(&self, kind: &str) -> Option<&PhotoSize> {
        let mut chars = kind.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return None;
        };
        self.sizes.iter().find(|s| s.kind == c)
    }

    /// The largest size (what "the photo" means when no size is named).
    pub fn largest(&self) -> &PhotoSize {
        // `new` refuses a photo without sizes; a stored one has at least one.
        self.sizes
            .iter()
            .max_by_key(|s| i64::from(s.w) * i64::from(s.h))
            .unwrap_or(&self.sizes[0])
    }

    /// The smallest size (a small profile photo, `inputPeerPhotoFileLocation` without `big`).
    pub fn smallest(&self) -> &PhotoSize {
        self.sizes
            .iter()
            .min_by_key(|s| i64::from(s.w) * i64::from(s.h))
            .unwrap_or(&self.sizes[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(kind: char) -> PhotoSize {
        PhotoSize::new(kind, 90, 60, 1000, BlobKey::of(&[kind as u8])).unwrap()
    }

    #[test]
    fn sizes_and_photos_are_bounded() {
        let k = BlobKey::of(b"a");
        assert!(PhotoSize::new('i', 1, 1, 1, k).is_err());
        assert!(PhotoSize::new('x', 0, 1, 1, k).is_err());
        assert!(PhotoSize::new('x', MAX_MEDIA_DIMENSION, MAX_MEDIA_DIMENSION, 1, k).is_ok());
        assert!(PhotoSize::new('x', MAX_MEDIA_DIMENSION + 1, 1, 1, k).is_err());
        let id = MediaId::new(1).unwrap();
        assert!(Photo::new(id, 1, 1, vec![], vec![]).is_err());
        let full: Vec<_> = (0..MAX_PHOTO_SIZES).map(|_| size('s')).collect();
        assert!(Photo::new(id, 1, 1, full.clone(), vec![]).is_ok());
        let mut over = full;
        over.push(size('m'));
        assert!(Photo::new(id, 1, 1, over, vec![]).is_err());
        assert!(Photo::new(id, 1, 1, vec![size('s')], vec![0; MAX_STRIPPED_THUMB_BYTES]).is_ok());
        assert!(Photo::new(
            id,
            1,
            1,
            vec![size('s')],
            vec![0; MAX_STRIPPED_THUMB_BYTES + 1]
        )
        .is_err());
    }

    #[test]
    fn a_size_is_found_by_its_letter_and_the_largest_is_the_biggest() {
        let id = MediaId::new(1).unwrap();
        let mut big = size('x');
        big.w = 800;
        let p = Photo::new(id, 1, 1, vec![size('s'), big.clone()], vec![1, 2]).unwrap();
        assert_eq!(p.size("x"), Some(&big));
        assert_eq!(p.size("xx"), None);
        assert_eq!(p.size(""), None);
        assert_eq!(p.largest(), &big);
        assert_eq!(p.smallest(), &size('s'));
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["stripped"], "0102");
        assert_eq!(serde_json::from_value::<Photo>(v).unwrap(), p);
    }
}
