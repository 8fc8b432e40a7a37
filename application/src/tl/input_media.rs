//! TL `InputMedia`, `InputPhoto`, `InputDocument` and `InputSingleMedia`: the media a request
//! names. Constructors ptslog does not serve (geo points, polls, dice, …) are told apart so they are
//! refused with `MEDIA_INVALID` rather than as malformed requests.

use domain::media::InputDocumentAttribute;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::long;
use crate::media::InputFile;

/// `InputPhoto`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputPhoto {
    #[serde(rename = "inputPhotoEmpty")]
    Empty {},
    #[serde(rename = "inputPhoto")]
    Photo {
        #[serde(deserialize_with = "long")]
        id: i64,
        #[serde(deserialize_with = "long")]
        access_hash: i64,
        /// Hex.
        #[serde(default)]
        file_reference: String,
    },
}

/// `InputDocument`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputDocument {
    #[serde(rename = "inputDocumentEmpty")]
    Empty {},
    #[serde(rename = "inputDocument")]
    Document {
        #[serde(deserialize_with = "long")]
        id: i64,
        #[serde(deserialize_with = "long")]
        access_hash: i64,
        #[serde(default)]
        file_reference: String,
    },
}

/// The `InputMedia` constructors ptslog serves.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputMedia {
    #[serde(rename = "inputMediaUploadedPhoto")]
    UploadedPhoto {
        #[serde(default)]
        spoiler: bool,
        file: InputFile,
        #[serde(default)]
        stickers: Option<IgnoredAny>,
        #[serde(default)]
        ttl_seconds: Option<i32>,
        #[serde(default)]
        live_photo: bool,
    },
    #[serde(rename = "inputMediaUploadedDocument")]
    UploadedDocument {
        #[serde(default)]
        nosound_video: bool,
        #[serde(default)]
        force_file: bool,
        #[serde(default)]
        spoiler: bool,
        file: InputFile,
        #[serde(default)]
        thumb: Option<InputFile>,
        #[serde(default)]
        mime_type: String,
        #[serde(default)]
        attributes: Vec<InputDocumentAttribute>,
        #[serde(default)]
        stickers: Option<IgnoredAny>,
        #[serde(default)]
        video_cover: Option<IgnoredAny>,
        #[serde(default)]
        video_timestamp: Option<i32>,
        #[serde(default)]
        ttl_seconds: Option<i32>,
    },
    #[serde(rename = "inputMediaPhoto")]
    Photo {
        #[serde(default)]
        spoiler: bool,
        id: InputPhoto,
        #[serde(default)]
        ttl_seconds: Option<i32>,
        #[serde(default)]
        live_photo: bool,
    },
    #[serde(rename = "inputMediaDocument")]
    Document {
        #[serde(default)]
        spoiler: bool,
        id: InputDocument,
        #[serde(default)]
        video_cover: Option<IgnoredAny>,
        #[serde(default)]
        video_timestamp: Option<i32>,
        #[serde(default)]
        ttl_seconds: Option<i32>,
        #[serde(default)]
        query: Option<String>,
    },
}

/// What a request's `media` is.
#[derive(Debug, Clone, PartialEq)]
pub enum MediaRequest {
    /// `inputMediaEmpty` (or, in an edit, `inputMediaWebPage`, which ptslog treats as no media).
    None,
    Media(InputMedia),
}

impl MediaRequest {
    /// Reads a request's `media`: a constructor ptslog does not serve, or one that does not read as
    /// its TL shape, is `MEDIA_INVALID`.
    pub fn parse(raw: Value) -> Result<Self, domain::DomainError> {
        match raw.get("_").and_then(Value::as_str) {
            Some("inputMediaEmpty" | "inputMediaWebPage") => Ok(Self::None),
            Some(
                "inputMediaUploadedPhoto"
                | "inputMediaUploadedDocument"
                | "inputMediaPhoto"
                | "inputMediaDocument",
            ) => serde_json::from_value(raw)
                .map(Self::Media)
                .map_err(|_| domain::DomainError::MediaInvalid),
            _ => Err(domain::DomainError::MediaInvalid),
        }
    }
}

/// `inputSingleMedia`: one item of an album.
#[derive(Debug, Clone, Deserialize)]
pub struct InputSingleMedia {
    pub media: Value,
    #[serde(deserialize_with = "long")]
    pub random_id: i64,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub entities: Option<Vec<Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn served_media_parse_and_others_are_media_invalid() {
        let photo = json!({"_": "inputMediaUploadedPhoto",
            "file": {"_": "inputFile", "id": 1, "parts": 1, "name": "a.jpg", "md5_checksum": ""}});
        assert!(matches!(
            MediaRequest::parse(photo),
            Ok(MediaRequest::Media(InputMedia::UploadedPhoto { .. }))
        ));
        let doc = json!({"_": "inputMediaDocument", "id": {"_": "inputDocument", "id": "5",
            "access_hash": 7, "file_reference": "00"}});
        assert!(matches!(
            MediaRequest::parse(doc),
            Ok(MediaRequest::Media(InputMedia::Document { .. }))
        ));
        assert_eq!(
            MediaRequest::parse(json!({"_": "inputMediaEmpty"})),
            Ok(MediaRequest::None)
        );
        for bad in [
            json!({"_": "inputMediaGeoPoint", "geo_point": {}}),
            json!({"_": "inputMediaUploadedPhoto"}),
            json!({"_": "inputMediaUploadedDocument", "file": {"_": "inputFile", "id": 1,
                "parts": 1, "name": "a"}, "mime_type": "a/b",
                "attributes": [{"_": "documentAttributeNope"}]}),
            json!(5),
        ] {
            assert_eq!(
                MediaRequest::parse(bad),
                Err(domain::DomainError::MediaInvalid)
            );
        }
    }
}
