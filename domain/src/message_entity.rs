//! One formatting entity (`messageEntityBold` …) with exactly the fields its TL constructor has.
//! Unknown constructors, unknown fields and over-long strings do not parse, so nothing a client
//! adds to an entity reaches the log. The JSON form is the TL object's, which is also what earlier
//! releases stored (they kept the client's object as sent).

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize};

use crate::ids::UserId;
use crate::limits::{MAX_ENTITY_LANGUAGE_BYTES, MAX_ENTITY_URL_BYTES};

/// A string of at most `MAX` bytes without control characters (jsonb cannot hold NUL, and no URL
/// or language tag has any; it also keeps JSON escaping to at most two bytes a byte).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BoundedString<const MAX: usize>(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a string longer than {max} bytes or holding a control character")]
pub struct BoundedStringError {
    pub max: usize,
}

impl<const MAX: usize> BoundedString<MAX> {
    pub fn new(raw: impl Into<String>) -> Result<Self, BoundedStringError> {
        let raw = raw.into();
        if raw.len() > MAX || raw.chars().any(char::is_control) {
            return Err(BoundedStringError { max: MAX });
        }
        Ok(Self(raw))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<const MAX: usize> TryFrom<String> for BoundedString<MAX> {
    type Error = BoundedStringError;
    fn try_from(raw: String) -> Result<Self, BoundedStringError> {
        Self::new(raw)
    }
}

impl<const MAX: usize> From<BoundedString<MAX>> for String {
    fn from(s: BoundedString<MAX>) -> String {
        s.0
    }
}

impl<const MAX: usize> JsonSchema for BoundedString<MAX> {
    fn schema_name() -> Cow<'static, str> {
        format!("StringOfAtMost{MAX}Bytes").into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // JSON Schema counts code points; a string of MAX bytes has at most MAX of them.
        json_schema!({ "type": "string", "maxLength": MAX })
    }
}

/// `messageEntityTextUrl.url`.
pub type EntityUrl = BoundedString<MAX_ENTITY_URL_BYTES>;
/// `messageEntityPre.language`.
pub type EntityLanguage = BoundedString<MAX_ENTITY_LANGUAGE_BYTES>;

/// A TL `long` held in a JSON number, also read from a decimal string (JavaScript clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Long(pub i64);

impl<'de> Deserialize<'de> for Long {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(i64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Long(n)),
            Raw::Text(s) => s
                .parse()
                .map(Long)
                .map_err(|_| serde::de::Error::custom("invalid long")),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A formatting entity as messages carry it. `inputMessageEntityMentionName` is not one: the
/// application resolves it (owner-scoped) into [`MessageEntity::MentionName`] before this type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "_", deny_unknown_fields)]
pub enum MessageEntity {
    #[serde(rename = "messageEntityUnknown")]
    Unknown { offset: i32, length: i32 },
    #[serde(rename = "messageEntityMention")]
    Mention { offset: i32, length: i32 },
    #[serde(rename = "messageEntityHashtag")]
    Hashtag { offset: i32, length: i32 },
    #[serde(rename = "messageEntityBotCommand")]
    BotCommand { offset: i32, length: i32 },
    #[serde(rename = "messageEntityUrl")]
    Url { offset: i32, length: i32 },
    #[serde(rename = "messageEntityEmail")]
    Email { offset: i32, length: i32 },
    #[serde(rename = "messageEntityBold")]
    Bold { offset: i32, length: i32 },
    #[serde(rename = "messageEntityItalic")]
    Italic { offset: i32, length: i32 },
    #[serde(rename = "messageEntityCode")]
    Code { offset: i32, length: i32 },
    #[serde(rename = "messageEntityPre")]
    Pre {
        offset: i32,
        length: i32,
        language: EntityLanguage,
    },
    #[serde(rename = "messageEntityTextUrl")]
    TextUrl {
        offset: i32,
        length: i32,
        url: EntityUrl,
    },
    #[serde(rename = "messageEntityMentionName")]
    MentionName {
        offset: i32,
        length: i32,
        user_id: UserId,
    },
    #[serde(rename = "messageEntityPhone")]
    Phone { offset: i32, length: i32 },
    #[serde(rename = "messageEntityCashtag")]
    Cashtag { offset: i32, length: i32 },
    #[serde(rename = "messageEntityUnderline")]
    Underline { offset: i32, length: i32 },
    #[serde(rename = "messageEntityStrike")]
    Strike { offset: i32, length: i32 },
    #[serde(rename = "messageEntityBankCard")]
    BankCard { offset: i32, length: i32 },
    #[serde(rename = "messageEntitySpoiler")]
    Spoiler { offset: i32, length: i32 },
    #[serde(rename = "messageEntityCustomEmoji")]
    CustomEmoji {
        offset: i32,
        length: i32,
        document_id: Long,
    },
    #[serde(rename = "messageEntityBlockquote")]
    Blockquote {
        offset: i32,
        length: i32,
        #[serde(default, skip_serializing_if = "is_false")]
        collapsed: bool,
    },
}

impl MessageEntity {
    /// `(offset, length)` in UTF-16 code units of the text.
    pub fn span(&self) -> (i32, i32) {
        use MessageEntity::*;
        match *self {
            Unknown { offset, length }
            | Mention { offset, length }
            | Hashtag { offset, length }
            | BotCommand { offset, length }
            | Url { offset, length }
            | Email { offset, length }
            | Bold { offset, length }
            | Italic { offset, length }
            | Code { offset, length }
            | Pre { offset, length, .. }
            | TextUrl { offset, length, .. }
            | MentionName { offset, length, .. }
            | Phone { offset, length }
            | Cashtag { offset, length }
            | Underline { offset, length }
            | Strike { offset, length }
            | BankCard { offset, length }
            | Spoiler { offset, length }
            | CustomEmoji { offset, length, .. }
            | Blockquote { offset, length, .. } => (offset, length),
        }
    }

    /// The user a `messageEntityMentionName` names.
    pub fn mentioned_user(&self) -> Option<UserId> {
        match self {
            MessageEntity::MentionName { user_id, .. } => Some(*user_id),
            _ => None,
        }
    }

    /// The most bytes one entity takes in a payload: its longest string, escaped (`"` and `\\`
    /// take two bytes; control characters are refused), plus the JSON around it (constructor
    /// name, keys, two 11-character ints). Used to size [`crate::limits::MAX_EVENT_PAYLOAD_BYTES`].
    pub const MAX_JSON_BYTES: usize = MAX_ENTITY_URL_BYTES * 2 + 128;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_json_is_the_tl_object() {
        let bold = MessageEntity::Bold {
            offset: 1,
            length: 2,
        };
        assert_eq!(
            serde_json::to_value(&bold).unwrap(),
            json!({"_": "messageEntityBold", "offset": 1, "length": 2})
        );
        let quote: MessageEntity = serde_json::from_value(
            json!({"_": "messageEntityBlockquote", "offset": 0, "length": 1, "collapsed": false}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&quote).unwrap(),
            json!({"_": "messageEntityBlockquote", "offset": 0, "length": 1})
        );
        let emoji: MessageEntity = serde_json::from_value(
            json!({"_": "messageEntityCustomEmoji", "offset": 0, "length": 1, "document_id": "5368324170671202286"}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&emoji).unwrap()["document_id"],
            json!(5368324170671202286i64)
        );
    }

    #[test]
    fn unknown_fields_and_constructors_do_not_parse() {
        for bad in [
            json!({"_": "messageEntityBold", "offset": 0, "length": 1, "x": {"y": 1}}),
            json!({"_": "messageEntityBold", "offset": 0, "length": 1, "url": "a"}),
            json!({"_": "messageEntityNope", "offset": 0, "length": 1}),
            json!({"_": "inputMessageEntityMentionName", "offset": 0, "length": 1, "user_id": {"_": "inputUserSelf"}}),
            json!({"_": "messageEntityPre", "offset": 0, "length": 1}),
            json!({"_": "messageEntityMentionName", "offset": 0, "length": 1, "user_id": 0}),
            json!({"offset": 0, "length": 1}),
        ] {
            assert!(
                serde_json::from_value::<MessageEntity>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn url_length_limit() {
        let url = |n: usize| json!({"_": "messageEntityTextUrl", "offset": 0, "length": 1, "url": "u".repeat(n)});
        assert!(serde_json::from_value::<MessageEntity>(url(MAX_ENTITY_URL_BYTES)).is_ok());
        assert!(serde_json::from_value::<MessageEntity>(url(MAX_ENTITY_URL_BYTES + 1)).is_err());
        // Bytes, not code points: 1024 two-byte characters fill it.
        let wide = json!({"_": "messageEntityTextUrl", "offset": 0, "length": 1, "url": "é".repeat(MAX_ENTITY_URL_BYTES / 2 + 1)});
        assert!(serde_json::from_value::<MessageEntity>(wide).is_err());
        for control in ["a\u{0}b", "a\nb", "\u{7f}"] {
            let bad =
                json!({"_": "messageEntityTextUrl", "offset": 0, "length": 1, "url": control});
            assert!(
                serde_json::from_value::<MessageEntity>(bad).is_err(),
                "{control:?}"
            );
        }
    }

    #[test]
    fn language_length_limit() {
        let pre = |n: usize| json!({"_": "messageEntityPre", "offset": 0, "length": 1, "language": "r".repeat(n)});
        assert!(serde_json::from_value::<MessageEntity>(pre(MAX_ENTITY_LANGUAGE_BYTES)).is_ok());
        assert!(
            serde_json::from_value::<MessageEntity>(pre(MAX_ENTITY_LANGUAGE_BYTES + 1)).is_err()
        );
    }

    #[test]
    fn the_largest_entity_fits_its_budget() {
        // The worst case: a URL of MAX bytes that JSON escapes two-fold.
        let url = "\"".repeat(MAX_ENTITY_URL_BYTES);
        let e = MessageEntity::TextUrl {
            offset: i32::MAX,
            length: i32::MIN,
            url: EntityUrl::new(url).unwrap(),
        };
        assert!(serde_json::to_vec(&e).unwrap().len() <= MessageEntity::MAX_JSON_BYTES);
    }
}
