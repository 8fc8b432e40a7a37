//! What a client says about a document (TL `DocumentAttribute`s), kept as sent once checked: at
//! most one of each kind, every string and number within its limit.

use serde::{Deserialize, Serialize};

use super::blob_key_serde::hex_bytes;
use super::limits::*;
use crate::error::DomainError;

/// One attribute as the client sent it (the application reads the TL object into this).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputDocumentAttribute {
    #[serde(rename = "documentAttributeFilename")]
    Filename { file_name: String },
    #[serde(rename = "documentAttributeImageSize")]
    ImageSize { w: i32, h: i32 },
    #[serde(rename = "documentAttributeVideo")]
    Video {
        #[serde(default)]
        round_message: bool,
        #[serde(default)]
        supports_streaming: bool,
        #[serde(default)]
        nosound: bool,
        duration: f64,
        w: i32,
        h: i32,
        #[serde(default)]
        preload_prefix_size: Option<i32>,
        #[serde(default)]
        video_start_ts: Option<f64>,
        #[serde(default)]
        video_codec: Option<String>,
    },
    #[serde(rename = "documentAttributeAudio")]
    Audio {
        #[serde(default)]
        voice: bool,
        duration: i32,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        performer: Option<String>,
        /// Hex, as TL `bytes` are in JSON.
        #[serde(default)]
        waveform: Option<String>,
    },
    #[serde(rename = "documentAttributeAnimated")]
    Animated {},
    #[serde(rename = "documentAttributeSticker")]
    Sticker {
        #[serde(default)]
        mask: bool,
        alt: String,
        /// ptslog has no sticker sets: whatever set is named, none is kept.
        #[serde(default)]
        stickerset: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        mask_coords: Option<serde::de::IgnoredAny>,
    },
    #[serde(rename = "documentAttributeHasStickers")]
    HasStickers {},
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ImageSize {
    pub w: i32,
    pub h: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VideoAttribute {
    #[serde(default)]
    pub round_message: bool,
    #[serde(default)]
    pub supports_streaming: bool,
    #[serde(default)]
    pub nosound: bool,
    /// Seconds.
    pub duration: f64,
    pub w: i32,
    pub h: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preload_prefix_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_start_ts: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_codec: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AudioAttribute {
    #[serde(default)]
    pub voice: bool,
    /// Seconds.
    pub duration: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performer: Option<String>,
    /// Hex.
    #[serde(default, with = "hex_bytes", skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "String")]
    pub waveform: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StickerAttribute {
    #[serde(default)]
    pub mask: bool,
    pub alt: String,
}

/// A document's attributes, at most one of each kind.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DocumentAttributes {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_size: Option<ImageSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<VideoAttribute>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioAttribute>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub animated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sticker: Option<StickerAttribute>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub has_stickers: bool,
}

fn invalid() -> DomainError {
    DomainError::MediaInvalid
}

/// A client string: within `max` code points (or bytes, with `bytes`), no control characters.
fn text(raw: String, max: usize, bytes: bool) -> Result<String, DomainError> {
    let len = if bytes {
        raw.len()
    } else {
        raw.chars().count()
    };
    if len > max || raw.chars().any(char::is_control) {
        return Err(invalid());
    }
    Ok(raw)
}

fn dimension(v: i32) -> Result<i32, DomainError> {
    // 0 is what clients send when they do not know a video's size.
    if !(0..=MAX_MEDIA_DIMENSION).contains(&v) {
        return Err(invalid());
    }
    Ok(v)
}

fn seconds(v: f64) -> Result<f64, DomainError> {
    if !v.is_finite() || !(0.0..=MAX_MEDIA_DURATION_SECS).contains(&v) {
        return Err(invalid());
    }
    Ok(v)
}

/// The name a file is stored under: its last path component (a client's `C:\x\y.pdf` or
/// `/tmp/y.pdf` is `y.pdf`), checked.
pub fn file_name(raw: String) -> Result<String, DomainError> {
    let last = raw
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .to_string();
    text(last, MAX_FILE_NAME_CODE_POINTS, false)
}

impl DocumentAttributes {
    pub fn parse(input: Vec<InputDocumentAttribute>) -> Result<Self, DomainError> {
        if input.len() > MAX_DOCUMENT_ATTRIBUTES {
            return Err(invalid());
        }
        let mut out = Self::default();
        fn once<T>(slot: &mut Option<T>, v: T) -> Result<(), DomainError> {
            if slot.is_some() {
                return Err(invalid());
            }
            *slot = Some(v);
            Ok(())
        }
        for a in input {
            match a {
                InputDocumentAttribute::Filename { file_name: name } => {
                    once(&mut out.file_name, file_name(name)?)?
                }
                InputDocumentAttribute::ImageSize { w, h } => once(
                    &mut out.image_size,
                    ImageSize {
                        w: dimension(w)?,
                        h: dimension(h)?,
                    },
                )?,
                InputDocumentAttribute::Video {
                    round_message,
                    supports_streaming,
                    nosound,
                    duration,
                    w,
                    h,
                    preload_prefix_size,
                    video_start_ts,
                    video_codec,
                } => once(
                    &mut out.video,
                    VideoAttribute {
                        round_message,
                        supports_streaming,
                        nosound,
                        duration: seconds(duration)?,
                        w: dimension(w)?,
                        h: dimension(h)?,
                        preload_prefix_size: match preload_prefix_size {
                            Some(p) if p < 0 => return Err(invalid()),
                            p => p,
                        },
                        video_start_ts: video_start_ts.map(seconds).transpose()?,
                        video_codec: video_codec
                            .map(|c| text(c, MAX_VIDEO_CODEC_BYTES, true))
                            .transpose()?,
                    },
                )?,
                InputDocumentAttribute::Audio {
                    voice,
                    duration,
                    title,
                    performer,
                    waveform,
                } => {
                    let waveform = match waveform {
                        None => Vec::new(),
                        Some(hex) => hex::decode(hex).map_err(|_| invalid())?,
                    };
                    if waveform.len() > MAX_WAVEFORM_BYTES {
                        return Err(invalid());
                    }
                    once(
                        &mut out.audio,
                        AudioAttribute {
                            voice,
                            duration: seconds(f64::from(duration))? as i32,
                            title: title
                                .map(|t| text(t, MAX_AUDIO_TEXT_CODE_POINTS, false))
                                .transpose()?,
                            performer: performer
                                .map(|t| text(t, MAX_AUDIO_TEXT_CODE_POINTS, false))
                                .transpose()?,
                            waveform,
                        },
                    )?
                }
                InputDocumentAttribute::Animated {} => {
                    if out.animated {
                        return Err(invalid());
                    }
                    out.animated = true;
                }
                InputDocumentAttribute::Sticker { mask, alt, .. } => once(
                    &mut out.sticker,
                    StickerAttribute {
                        mask,
                        alt: text(alt, MAX_STICKER_ALT_CODE_POINTS, false)?,
                    },
                )?,
                InputDocumentAttribute::HasStickers {} => out.has_stickers = true,
            }
        }
        Ok(out)
    }

    pub fn is_voice(&self) -> bool {
        self.audio.as_ref().is_some_and(|a| a.voice)
    }
    pub fn is_round(&self) -> bool {
        self.video.as_ref().is_some_and(|v| v.round_message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: serde_json::Value) -> Result<DocumentAttributes, DomainError> {
        DocumentAttributes::parse(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn attributes_are_kept_as_sent_once_checked() {
        let a = parse(serde_json::json!([
            {"_": "documentAttributeFilename", "file_name": "C:\\docs\\report.pdf"},
            {"_": "documentAttributeAudio", "voice": true, "duration": 3, "waveform": "0102"},
            {"_": "documentAttributeVideo", "round_message": true, "duration": 2.5, "w": 240, "h": 240},
            {"_": "documentAttributeAnimated"},
            {"_": "documentAttributeSticker", "alt": "😀", "stickerset": {"_": "inputStickerSetEmpty"}},
        ]))
        .unwrap();
        assert_eq!(a.file_name.as_deref(), Some("report.pdf"));
        assert!(a.is_voice() && a.is_round() && a.animated);
        assert_eq!(a.audio.as_ref().unwrap().waveform, vec![1, 2]);
        assert_eq!(a.sticker.as_ref().unwrap().alt, "😀");
        let back: DocumentAttributes =
            serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn every_attribute_is_bounded() {
        let name = |n: usize| serde_json::json!([{"_": "documentAttributeFilename", "file_name": "a".repeat(n)}]);
        assert!(parse(name(MAX_FILE_NAME_CODE_POINTS)).is_ok());
        assert_eq!(
            parse(name(MAX_FILE_NAME_CODE_POINTS + 1)),
            Err(DomainError::MediaInvalid)
        );
        assert!(parse(
            serde_json::json!([{"_": "documentAttributeFilename", "file_name": "a\nb"}])
        )
        .is_err());
        let two = serde_json::json!([{"_": "documentAttributeAnimated"}, {"_": "documentAttributeAnimated"}]);
        assert!(parse(two).is_err());
        let size =
            |w: i32| serde_json::json!([{"_": "documentAttributeImageSize", "w": w, "h": 1}]);
        assert!(parse(size(MAX_MEDIA_DIMENSION)).is_ok());
        assert!(parse(size(MAX_MEDIA_DIMENSION + 1)).is_err());
        assert!(parse(size(-1)).is_err());
        let wave = |n: usize| serde_json::json!([{"_": "documentAttributeAudio", "duration": 1, "waveform": "00".repeat(n)}]);
        assert!(parse(wave(MAX_WAVEFORM_BYTES)).is_ok());
        assert!(parse(wave(MAX_WAVEFORM_BYTES + 1)).is_err());
        let video = |d: f64| serde_json::json!([{"_": "documentAttributeVideo", "duration": d, "w": 1, "h": 1}]);
        assert!(parse(video(MAX_MEDIA_DURATION_SECS)).is_ok());
        assert!(parse(video(MAX_MEDIA_DURATION_SECS + 1.0)).is_err());
        let title = |n: usize| serde_json::json!([{"_": "documentAttributeAudio", "duration": 1, "title": "t".repeat(n)}]);
        assert!(parse(title(MAX_AUDIO_TEXT_CODE_POINTS)).is_ok());
        assert!(parse(title(MAX_AUDIO_TEXT_CODE_POINTS + 1)).is_err());
        let many: Vec<_> = (0..=MAX_DOCUMENT_ATTRIBUTES)
            .map(|_| serde_json::json!({"_": "documentAttributeHasStickers"}))
            .collect();
        assert!(parse(serde_json::Value::Array(many[1..].to_vec())).is_ok());
        assert!(parse(serde_json::Value::Array(many)).is_err());
    }
}
