//! TL `MessageMedia`, `Photo`, `Document` and their sizes and attributes, as clients are shown
//! them: every photo and document with a fresh `file_reference` and this server's `dc_id`.

use domain::access_hash::AccessHashKey;
use domain::media::document_attributes::DocumentAttributes;
use domain::media::{file_reference, Document, MessageMedia, Photo, PhotoSize, THIS_DC};
use serde::Serialize;
use serde_json::{json, Value};

/// What showing media needs: the key file references are made with, and the time they are
/// issued at.
#[derive(Clone, Copy)]
pub struct FileRefs<'a> {
    pub key: &'a AccessHashKey,
    /// Unix seconds.
    pub now: i32,
}

impl<'a> FileRefs<'a> {
    pub fn now(key: &'a AccessHashKey) -> Self {
        Self {
            key,
            now: crate::clock::unix_now(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum TlPhotoSize {
    #[serde(rename = "photoSize")]
    Size {
        #[serde(rename = "type")]
        kind: String,
        w: i32,
        h: i32,
        size: i64,
    },
    #[serde(rename = "photoStrippedSize")]
    Stripped {
        #[serde(rename = "type")]
        kind: String,
        /// Hex, as TL `bytes` are in JSON.
        bytes: String,
    },
}

fn sizes(stripped: &[u8], sizes: &[PhotoSize]) -> Vec<TlPhotoSize> {
    let mut out = Vec::with_capacity(sizes.len() + 1);
    if !stripped.is_empty() {
        out.push(TlPhotoSize::Stripped {
            kind: "i".into(),
            bytes: hex::encode(stripped),
        });
    }
    out.extend(sizes.iter().map(|s| TlPhotoSize::Size {
        kind: s.kind_str(),
        w: s.w,
        h: s.h,
        size: s.size,
    }));
    out
}

/// TL `photo`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "photo")]
pub struct TlPhoto {
    pub id: i64,
    pub access_hash: i64,
    /// Hex.
    pub file_reference: String,
    pub date: i32,
    pub sizes: Vec<TlPhotoSize>,
    pub dc_id: i32,
}

impl TlPhoto {
    pub fn of(p: &Photo, refs: FileRefs<'_>) -> Self {
        Self {
            id: p.id.get(),
            access_hash: p.access_hash,
            file_reference: hex::encode(file_reference::issue(refs.key, p.id, refs.now)),
            date: p.date,
            sizes: sizes(&p.stripped, &p.sizes),
            dc_id: THIS_DC,
        }
    }
}

/// TL `document`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "document")]
pub struct TlDocument {
    pub id: i64,
    pub access_hash: i64,
    pub file_reference: String,
    pub date: i32,
    pub mime_type: String,
    pub size: i64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thumbs: Vec<TlPhotoSize>,
    pub dc_id: i32,
    pub attributes: Vec<Value>,
}

/// A duration TL types as `double` (layer 152's `documentAttributeVideo` has an `int`): a whole
/// number is written as an integer so either encodes.
fn seconds(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// The TL attributes of a document, in a stable order.
pub fn tl_attributes(a: &DocumentAttributes) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(s) = &a.image_size {
        out.push(json!({"_": "documentAttributeImageSize", "w": s.w, "h": s.h}));
    }
    if a.animated {
        out.push(json!({"_": "documentAttributeAnimated"}));
    }
    if let Some(s) = &a.sticker {
        out.push(
            json!({"_": "documentAttributeSticker", "mask": s.mask, "alt": s.alt,
            "stickerset": {"_": "inputStickerSetEmpty"}}),
        );
    }
    if let Some(v) = &a.video {
        let mut o = json!({"_": "documentAttributeVideo", "round_message": v.round_message,
            "supports_streaming": v.supports_streaming, "nosound": v.nosound,
            "duration": seconds(v.duration), "w": v.w, "h": v.h});
        if let Some(p) = v.preload_prefix_size {
            o["preload_prefix_size"] = json!(p);
        }
        if let Some(t) = v.video_start_ts {
            o["video_start_ts"] = seconds(t);
        }
        if let Some(c) = &v.video_codec {
            o["video_codec"] = json!(c);
        }
        out.push(o);
    }
    if let Some(au) = &a.audio {
        let mut o =
            json!({"_": "documentAttributeAudio", "voice": au.voice, "duration": au.duration});
        if let Some(t) = &au.title {
            o["title"] = json!(t);
        }
        if let Some(p) = &au.performer {
            o["performer"] = json!(p);
        }
        if !au.waveform.is_empty() {
            o["waveform"] = json!(hex::encode(&au.waveform));
        }
        out.push(o);
    }
    if let Some(name) = &a.file_name {
        out.push(json!({"_": "documentAttributeFilename", "file_name": name}));
    }
    if a.has_stickers {
        out.push(json!({"_": "documentAttributeHasStickers"}));
    }
    out
}

impl TlDocument {
    pub fn of(d: &Document, refs: FileRefs<'_>) -> Self {
        Self {
            id: d.id.get(),
            access_hash: d.access_hash,
            file_reference: hex::encode(file_reference::issue(refs.key, d.id, refs.now)),
            date: d.date,
            mime_type: d.mime_type.clone(),
            size: d.size,
            thumbs: sizes(&d.stripped, &d.thumbs),
            dc_id: THIS_DC,
            attributes: tl_attributes(&d.attributes),
        }
    }
}

/// TL `MessageMedia`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum TlMessageMedia {
    #[serde(rename = "messageMediaPhoto")]
    Photo {
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        spoiler: bool,
        photo: TlPhoto,
    },
    #[serde(rename = "messageMediaDocument")]
    Document {
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        spoiler: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        video: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        round: bool,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        voice: bool,
        document: TlDocument,
    },
}

impl TlMessageMedia {
    pub fn of(m: &MessageMedia, refs: FileRefs<'_>) -> Self {
        match m {
            MessageMedia::Photo { photo, spoiler } => Self::Photo {
                spoiler: *spoiler,
                photo: TlPhoto::of(photo, refs),
            },
            MessageMedia::Document { document, spoiler } => {
                let a = &document.attributes;
                Self::Document {
                    spoiler: *spoiler,
                    video: a.video.as_ref().is_some_and(|v| !v.round_message) && !a.animated,
                    round: a.is_round(),
                    voice: a.is_voice(),
                    document: TlDocument::of(document, refs),
                }
            }
        }
    }
}
