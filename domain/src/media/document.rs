//! A stored document: any file, with its mime type, the client's attributes and thumbnails.

use serde::{Deserialize, Serialize};

use super::blob_key_serde::hex_bytes;
use super::limits::{MAX_MIME_TYPE_BYTES, MAX_PHOTO_SIZES, MAX_STRIPPED_THUMB_BYTES};
use super::{BlobKey, DocumentAttributes, MediaId, PhotoSize};
use crate::error::DomainError;

/// What a document is when the client names no type.
pub const DEFAULT_MIME_TYPE: &str = "application/octet-stream";

/// `type/subtype` in lower case, RFC 6838's restricted names (what `Content-Type` may carry).
pub fn mime_type(raw: &str) -> Result<String, DomainError> {
    let raw = raw.trim().to_ascii_lowercase();
    if raw.is_empty() {
        return Ok(DEFAULT_MIME_TYPE.to_string());
    }
    let name = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match raw.split_once('/') {
        Some((t, sub)) if raw.len() <= MAX_MIME_TYPE_BYTES && name(t) && name(sub) => Ok(raw),
        _ => Err(DomainError::MediaInvalid),
    }
}

/// A document (TL `document`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Document {
    pub id: MediaId,
    /// Random, per document.
    pub access_hash: i64,
    /// Unix seconds.
    pub date: i32,
    pub mime_type: String,
    /// Bytes of the file.
    pub size: i64,
    pub blob: BlobKey,
    pub attributes: DocumentAttributes,
    /// A thumbnail the client sent with the file, cut like a photo (usually one `m` size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thumbs: Vec<PhotoSize>,
    /// The thumbnail's stripped `i` size, hex.
    #[serde(default, with = "hex_bytes", skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "String")]
    pub stripped: Vec<u8>,
}

impl Document {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: MediaId,
        access_hash: i64,
        date: i32,
        mime: &str,
        size: i64,
        blob: BlobKey,
        attributes: DocumentAttributes,
        thumbs: Vec<PhotoSize>,
        stripped: Vec<u8>,
    ) -> Result<Self, DomainError> {
        if size < 0 || thumbs.len() > MAX_PHOTO_SIZES || stripped.len() > MAX_STRIPPED_THUMB_BYTES {
            return Err(DomainError::MediaInvalid);
        }
        Ok(Self {
            id,
            access_hash,
            date,
            mime_type: mime_type(mime)?,
            size,
            blob,
            attributes,
            thumbs,
            stripped,
        })
    }

    /// The thumbnail a download names by its letter.
    pub fn thumb(&self, kind: &str) -> Option<&PhotoSize> {
        let mut chars = kind.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return None;
        };
        self.thumbs.iter().find(|s| s.kind == c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::limits::MAX_MIME_TYPE_BYTES;

    #[test]
    fn mime_types_are_checked_and_lower_cased() {
        assert_eq!(mime_type("").unwrap(), DEFAULT_MIME_TYPE);
        assert_eq!(mime_type("Image/JPEG").unwrap(), "image/jpeg");
        assert_eq!(
            mime_type("application/vnd.ms-excel").unwrap(),
            "application/vnd.ms-excel"
        );
        assert!(mime_type("text").is_err());
        assert!(mime_type("text/").is_err());
        assert!(mime_type("a/b c").is_err());
        assert!(mime_type("a/b\r\nX: y").is_err());
        let at = format!("a/{}", "b".repeat(MAX_MIME_TYPE_BYTES - 2));
        assert!(mime_type(&at).is_ok());
        assert!(mime_type(&format!("{at}b")).is_err());
    }

    #[test]
    fn sizes_are_not_negative() {
        let id = MediaId::new(1).unwrap();
        let k = BlobKey::of(b"");
        let attrs = DocumentAttributes::default();
        assert!(Document::new(id, 1, 1, "", 0, k, attrs.clone(), vec![], vec![]).is_ok());
        assert!(Document::new(id, 1, 1, "", -1, k, attrs, vec![], vec![]).is_err());
    }
}
