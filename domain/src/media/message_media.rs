//! The media a message carries: a snapshot of the photo or document as it was when the message
//! was sent, so every read of the message has it without a join.

use serde::{Deserialize, Serialize};

use super::{Document, MediaId, Photo};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageMedia {
    Photo {
        photo: Photo,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        spoiler: bool,
    },
    Document {
        document: Document,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        spoiler: bool,
    },
}

/// What kind of media a message has, for search filters (`inputMessagesFilter…`) and for
/// `media_unread`. Stored in the read model as [`MediaClass::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaClass {
    Photo,
    Video,
    /// A round video note.
    Round,
    /// A voice note.
    Voice,
    /// Audio that is not a voice note.
    Music,
    /// An animation (GIF or silent MP4).
    Gif,
    Sticker,
    /// Any other file.
    File,
}

impl MediaClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Photo => "photo",
            Self::Video => "video",
            Self::Round => "round",
            Self::Voice => "voice",
            Self::Music => "music",
            Self::Gif => "gif",
            Self::Sticker => "sticker",
            Self::File => "file",
        }
    }
}

impl MessageMedia {
    pub fn id(&self) -> MediaId {
        match self {
            Self::Photo { photo, .. } => photo.id,
            Self::Document { document, .. } => document.id,
        }
    }

    pub fn class(&self) -> MediaClass {
        let d = match self {
            Self::Photo { .. } => return MediaClass::Photo,
            Self::Document { document, .. } => &document.attributes,
        };
        if d.sticker.is_some() {
            MediaClass::Sticker
        } else if d.animated {
            MediaClass::Gif
        } else if d.is_round() {
            MediaClass::Round
        } else if d.video.is_some() {
            MediaClass::Video
        } else if d.is_voice() {
            MediaClass::Voice
        } else if d.audio.is_some() {
            MediaClass::Music
        } else {
            MediaClass::File
        }
    }

    /// Whether the recipient's copy starts with its contents unread: voice and round video notes,
    /// until `messages.readMessageContents` (Telegram's rule).
    pub fn unread_for_recipient(&self) -> bool {
        matches!(self.class(), MediaClass::Voice | MediaClass::Round)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::{BlobKey, DocumentAttributes};

    fn doc(attrs: serde_json::Value) -> MessageMedia {
        let attributes = DocumentAttributes::parse(serde_json::from_value(attrs).unwrap()).unwrap();
        MessageMedia::Document {
            document: Document::new(
                MediaId::new(1).unwrap(),
                1,
                1,
                "audio/ogg",
                10,
                BlobKey::of(b"x"),
                attributes,
                vec![],
                vec![],
            )
            .unwrap(),
            spoiler: false,
        }
    }

    #[test]
    fn only_voice_and_round_notes_start_unread() {
        let voice =
            doc(serde_json::json!([{"_": "documentAttributeAudio", "voice": true, "duration": 1}]));
        assert_eq!(voice.class(), MediaClass::Voice);
        assert!(voice.unread_for_recipient());
        let round = doc(
            serde_json::json!([{"_": "documentAttributeVideo", "round_message": true, "duration": 1, "w": 1, "h": 1}]),
        );
        assert_eq!(round.class(), MediaClass::Round);
        assert!(round.unread_for_recipient());
        let music = doc(serde_json::json!([{"_": "documentAttributeAudio", "duration": 1}]));
        assert_eq!(music.class(), MediaClass::Music);
        assert!(!music.unread_for_recipient());
        let video = doc(
            serde_json::json!([{"_": "documentAttributeVideo", "duration": 1, "w": 1, "h": 1}]),
        );
        assert_eq!(video.class(), MediaClass::Video);
        let gif = doc(
            serde_json::json!([{"_": "documentAttributeVideo", "duration": 1, "w": 1, "h": 1}, {"_": "documentAttributeAnimated"}]),
        );
        assert_eq!(gif.class(), MediaClass::Gif);
        assert_eq!(doc(serde_json::json!([])).class(), MediaClass::File);
        let v = serde_json::to_value(&voice).unwrap();
        assert_eq!(v["type"], "document");
        assert_eq!(serde_json::from_value::<MessageMedia>(v).unwrap(), voice);
    }
}
