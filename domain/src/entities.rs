//! Formatting entities (`messageEntityBold` …). They are kept as their TL JSON objects, but only after
//! checking that each is a known entity shape lying inside the text it formats.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::DomainError;
use crate::limits::MAX_MESSAGE_ENTITIES;

/// Entity constructors a private text message may carry.
const KNOWN_ENTITIES: &[&str] = &[
    "messageEntityUnknown",
    "messageEntityMention",
    "messageEntityHashtag",
    "messageEntityBotCommand",
    "messageEntityUrl",
    "messageEntityEmail",
    "messageEntityBold",
    "messageEntityItalic",
    "messageEntityCode",
    "messageEntityPre",
    "messageEntityTextUrl",
    "messageEntityMentionName",
    "inputMessageEntityMentionName",
    "messageEntityPhone",
    "messageEntityCashtag",
    "messageEntityUnderline",
    "messageEntityStrike",
    "messageEntityBankCard",
    "messageEntitySpoiler",
    "messageEntityCustomEmoji",
    "messageEntityBlockquote",
];

/// Entities checked against the UTF-16 length of the text they belong to.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Entities(Vec<Value>);

impl Entities {
    pub fn empty() -> Self {
        Self(Vec::new())
    }

    pub fn parse(raw: Vec<Value>, text_utf16_len: usize) -> Result<Self, DomainError> {
        if raw.len() > MAX_MESSAGE_ENTITIES {
            return Err(DomainError::EntitiesTooLong);
        }
        for entity in &raw {
            let obj = entity.as_object().ok_or(DomainError::EntityInvalid)?;
            // jsonb cannot hold NUL; no real entity carries one.
            if has_nul(entity) {
                return Err(DomainError::EntityInvalid);
            }
            let kind = obj
                .get("_")
                .and_then(Value::as_str)
                .ok_or(DomainError::EntityInvalid)?;
            if !KNOWN_ENTITIES.contains(&kind) {
                return Err(DomainError::EntityInvalid);
            }
            let offset = obj
                .get("offset")
                .and_then(Value::as_i64)
                .ok_or(DomainError::EntityInvalid)?;
            let length = obj
                .get("length")
                .and_then(Value::as_i64)
                .ok_or(DomainError::EntityInvalid)?;
            if offset < 0 || length <= 0 || offset + length > text_utf16_len as i64 {
                return Err(DomainError::EntityBoundsInvalid);
            }
        }
        Ok(Self(raw))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn as_slice(&self) -> &[Value] {
        &self.0
    }
    pub fn into_vec(self) -> Vec<Value> {
        self.0
    }
}

fn has_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entity_must_lie_inside_the_text() {
        let inside = vec![json!({"_":"messageEntityBold","offset":0,"length":5})];
        assert!(Entities::parse(inside, 5).is_ok());
        let outside = vec![json!({"_":"messageEntityBold","offset":1,"length":5})];
        assert_eq!(
            Entities::parse(outside, 5),
            Err(DomainError::EntityBoundsInvalid)
        );
    }

    #[test]
    fn nul_inside_an_entity_is_rejected() {
        let raw = vec![json!({"_":"messageEntityTextUrl","offset":0,"length":1,"url":"a\u{0}b"})];
        assert_eq!(Entities::parse(raw, 5), Err(DomainError::EntityInvalid));
    }

    #[test]
    fn unknown_constructor_is_rejected() {
        let raw = vec![json!({"_":"messageEntityNope","offset":0,"length":1})];
        assert_eq!(Entities::parse(raw, 5), Err(DomainError::EntityInvalid));
    }

    #[test]
    fn entity_count_limit() {
        let one = json!({"_":"messageEntityBold","offset":0,"length":1});
        assert!(Entities::parse(vec![one.clone(); MAX_MESSAGE_ENTITIES], 1).is_ok());
        assert_eq!(
            Entities::parse(vec![one; MAX_MESSAGE_ENTITIES + 1], 1),
            Err(DomainError::EntitiesTooLong)
        );
    }
}
