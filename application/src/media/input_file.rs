//! `InputFile`: a file the client uploaded in parts (upload.saveFilePart / saveBigFilePart),
//! named in a media message; and what it became once its parts were put together.

use domain::media::BlobKey;
use serde::Deserialize;

use crate::tl::long;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "_")]
pub enum InputFile {
    /// Uploaded with upload.saveFilePart (under 10 MB); the md5 may be empty.
    #[serde(rename = "inputFile")]
    Small {
        #[serde(deserialize_with = "long")]
        id: i64,
        parts: i32,
        name: String,
        #[serde(default)]
        md5_checksum: String,
    },
    /// Uploaded with upload.saveBigFilePart.
    #[serde(rename = "inputFileBig")]
    Big {
        #[serde(deserialize_with = "long")]
        id: i64,
        parts: i32,
        name: String,
    },
}

impl InputFile {
    pub fn id(&self) -> i64 {
        match self {
            Self::Small { id, .. } | Self::Big { id, .. } => *id,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Self::Small { name, .. } | Self::Big { name, .. } => name,
        }
    }
}

/// An upload put together and stored: complete in the blob store before any event names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedFile {
    pub key: BlobKey,
    pub size: u64,
    /// The client's file name (as sent in the InputFile, validated).
    pub name: String,
}
