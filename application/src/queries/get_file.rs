//! `upload.getFile` for the media of messages: the location names a photo size or a document
//! (or one of its thumbnails) by id, access hash and file reference; the caller must be able to see
//! a message carrying it (or have uploaded it); a profile photo is named by its user and photo id
//! (`inputPeerPhotoFileLocation`) and open to anyone who can name the user; then the range is read with getFile's rules
//! (`read_file_part`: offsets and limits, memory bounded per call).

use domain::media::{Document, Photo};
use domain::DomainError;
use serde::{Deserialize, Serialize};

use crate::commands::media_input::MediaKind;
use crate::error::AppError;
use crate::media::StoredMedia;
use crate::tl::{long, InputPeer};
use crate::{App, Caller};

/// `InputFileLocation`: the constructors served for media.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputFileLocation {
    #[serde(rename = "inputPhotoFileLocation")]
    Photo {
        #[serde(deserialize_with = "long")]
        id: i64,
        #[serde(deserialize_with = "long")]
        access_hash: i64,
        #[serde(default)]
        file_reference: String,
        #[serde(default)]
        thumb_size: String,
    },
    #[serde(rename = "inputDocumentFileLocation")]
    Document {
        #[serde(deserialize_with = "long")]
        id: i64,
        #[serde(deserialize_with = "long")]
        access_hash: i64,
        #[serde(default)]
        file_reference: String,
        #[serde(default)]
        thumb_size: String,
    },
    #[serde(rename = "inputPeerPhotoFileLocation")]
    PeerPhoto {
        #[serde(default)]
        big: bool,
        peer: InputPeer,
        #[serde(deserialize_with = "long")]
        photo_id: i64,
    },
}

#[derive(Debug, Clone, Deserialize)]
pub struct GetFile {
    #[serde(default)]
    pub precise: bool,
    #[serde(default)]
    pub cdn_supported: bool,
    /// Read as a value first: a location ptslog does not serve is `FILE_ID_INVALID`, not a
    /// malformed request.
    pub location: serde_json::Value,
    #[serde(deserialize_with = "long")]
    pub offset: i64,
    pub limit: i32,
}

/// TL `storage.FileType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "_")]
pub enum FileType {
    #[serde(rename = "storage.fileUnknown")]
    Unknown,
    #[serde(rename = "storage.fileJpeg")]
    Jpeg,
    #[serde(rename = "storage.fileGif")]
    Gif,
    #[serde(rename = "storage.filePng")]
    Png,
    #[serde(rename = "storage.filePdf")]
    Pdf,
    #[serde(rename = "storage.fileMp3")]
    Mp3,
    #[serde(rename = "storage.fileMov")]
    Mov,
    #[serde(rename = "storage.fileMp4")]
    Mp4,
    #[serde(rename = "storage.fileWebp")]
    Webp,
}

impl FileType {
    /// The type of a document's file by its mime type.
    pub fn of_mime(mime: &str) -> Self {
        match mime {
            "image/jpeg" => Self::Jpeg,
            "image/gif" => Self::Gif,
            "image/png" => Self::Png,
            "application/pdf" => Self::Pdf,
            "audio/mpeg" | "audio/mp3" => Self::Mp3,
            "video/quicktime" => Self::Mov,
            "video/mp4" => Self::Mp4,
            "image/webp" => Self::Webp,
            _ => Self::Unknown,
        }
    }
}

/// TL `upload.file`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "upload.file")]
pub struct UploadFile {
    #[serde(rename = "type")]
    pub file_type: FileType,
    pub mtime: i32,
    pub bytes: crate::tl::Bytes,
}

/// The blob a location names, with what the answer says about it.
pub(crate) struct Located {
    pub key: domain::media::BlobKey,
    pub file_type: FileType,
    /// The document's mime type; `image/jpeg` for photo sizes and thumbnails.
    pub mime_type: String,
    pub mtime: i32,
}

/// What photo sizes and thumbnails are stored as.
const JPEG: &str = "image/jpeg";

fn photo_size(p: &Photo, thumb_size: &str) -> Result<Located, AppError> {
    let size = if thumb_size.is_empty() {
        p.largest()
    } else {
        p.size(thumb_size).ok_or(DomainError::FileIdInvalid)?
    };
    Ok(Located {
        key: size.blob,
        file_type: FileType::Jpeg,
        mime_type: JPEG.to_string(),
        mtime: p.date,
    })
}

/// A profile photo by `inputPeerPhotoFileLocation`: `big` is the largest size, else the smallest
fn profile_photo_size(p: &Photo, big: bool) -> Located {
    let size = if big { p.largest() } else { p.smallest() };
    Located {
        key: size.blob,
        file_type: FileType::Jpeg,
        mime_type: JPEG.to_string(),
        mtime: p.date,
    }
}

fn document_part(d: &Document, thumb_size: &str) -> Result<Located, AppError> {
    if thumb_size.is_empty() {
        return Ok(Located {
            key: d.blob,
            file_type: FileType::of_mime(&d.mime_type),
            mime_type: d.mime_type.clone(),
            mtime: d.date,
        });
    }
    let thumb = d.thumb(thumb_size).ok_or(DomainError::FileIdInvalid)?;
    Ok(Located {
        key: thumb.blob,
        file_type: FileType::Jpeg,
        mime_type: JPEG.to_string(),
        mtime: d.date,
    })
}

impl App {
    /// Resolves a location to the blob it names, for `caller` (docs/media.md, "Access"); both
    /// upload.getFile and the JSON API's `GET /v1/files/...` come through here.
    pub(crate) async fn locate(
        &self,
        caller: &Caller,
        location: InputFileLocation,
    ) -> Result<Located, AppError> {
        match location {
            InputFileLocation::Photo {
                id,
                access_hash,
                file_reference,
                thumb_size,
            } => match self
                .visible_media(caller, id, access_hash, &file_reference, MediaKind::Photo)
                .await?
            {
                StoredMedia::Photo { photo, .. } => photo_size(&photo, &thumb_size),
                StoredMedia::Document { .. } => Err(DomainError::FileIdInvalid.into()),
            },
            InputFileLocation::Document {
                id,
                access_hash,
                file_reference,
                thumb_size,
            } => match self
                .visible_media(
                    caller,
                    id,
                    access_hash,
                    &file_reference,
                    MediaKind::Document,
                )
                .await?
            {
                StoredMedia::Document { document, .. } => document_part(&document, &thumb_size),
                StoredMedia::Photo { .. } => Err(DomainError::FileIdInvalid.into()),
            },
            InputFileLocation::PeerPhoto {
                big,
                peer,
                photo_id,
            } => {
                // Anyone who can name the user (its access hash for the caller) may download its
                // profile photos; a wrong hash is the same FILE_ID_INVALID as an unknown photo.
                let user = self
                    .chat_peer(caller.user_id, &peer)
                    .map_err(|_| DomainError::FileIdInvalid)?
                    .user_id(caller.user_id);
                let photos = self.store.profile_photos(user).await?;
                let photo = photos
                    .iter()
                    .find(|p| p.id.get() == photo_id)
                    .ok_or(DomainError::FileIdInvalid)?;
                Ok(profile_photo_size(photo, big))
            }
        }
    }

    pub async fn get_file(&self, caller: &Caller, req: GetFile) -> Result<UploadFile, AppError> {
        // No CDN: the file always comes from this server, whatever cdn_supported says.
        let location: InputFileLocation =
            serde_json::from_value(req.location).map_err(|_| DomainError::FileIdInvalid)?;
        let located = self.locate(caller, location).await?;
        let bytes = self
            .read_file_part(&located.key, req.offset, req.limit, req.precise)
            .await?;
        Ok(UploadFile {
            file_type: located.file_type,
            mtime: located.mtime,
            bytes: crate::tl::Bytes(bytes),
        })
    }
}
