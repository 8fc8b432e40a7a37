//! The formatting entities of one text: typed [`MessageEntity`] values, at most
//! [`MAX_MESSAGE_ENTITIES`], each lying inside the text it formats.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::error::DomainError;
use crate::limits::MAX_MESSAGE_ENTITIES;
use crate::message_entity::MessageEntity;

/// Entities checked against the UTF-16 length of the text they belong to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct Entities(Vec<MessageEntity>);

impl Entities {
    pub fn empty() -> Self {
        Self(Vec::new())
    }

    /// Checks typed entities against the text's length (UTF-16 code units).
    pub fn parse(raw: Vec<MessageEntity>, text_utf16_len: usize) -> Result<Self, DomainError> {
        if raw.len() > MAX_MESSAGE_ENTITIES {
            return Err(DomainError::EntitiesTooLong);
        }
        for entity in &raw {
            let (offset, length) = entity.span();
            let (offset, length) = (i64::from(offset), i64::from(length));
            if offset < 0 || length <= 0 || offset + length > text_utf16_len as i64 {
                return Err(DomainError::EntityBoundsInvalid);
            }
        }
        Ok(Self(raw))
    }

    /// Reads one entity a client sent as a TL JSON object: `ENTITY_INVALID` unless it is exactly a
    /// known constructor with its fields.
    pub fn entity_from_json(raw: Value) -> Result<MessageEntity, DomainError> {
        serde_json::from_value(raw).map_err(|_| DomainError::EntityInvalid)
    }

    /// Entities a client sent as TL JSON objects (no `inputMessageEntityMentionName`: the
    /// application resolves those first).
    pub fn from_json(raw: Vec<Value>, text_utf16_len: usize) -> Result<Self, DomainError> {
        if raw.len() > MAX_MESSAGE_ENTITIES {
            return Err(DomainError::EntitiesTooLong);
        }
        let typed = raw
            .into_iter()
            .map(Self::entity_from_json)
            .collect::<Result<Vec<_>, _>>()?;
        Self::parse(typed, text_utf16_len)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn as_slice(&self) -> &[MessageEntity] {
        &self.0
    }
    pub fn into_vec(self) -> Vec<MessageEntity> {
        self.0
    }
}

/// Reads stored entities, leaving out any that today's [`MessageEntity`] cannot read. Releases
/// before entities were typed stored the client's objects as sent, so an old row may hold an
/// `inputMessageEntityMentionName` or extra fields; formatting is cosmetic, so such an entity is
/// dropped on read and the message itself stays readable (docs/events.md, Versioning).
pub fn stored_entities<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<MessageEntity>, D::Error> {
    let raw = Vec::<Value>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entity_must_lie_inside_the_text() {
        let inside = vec![json!({"_":"messageEntityBold","offset":0,"length":5})];
        assert!(Entities::from_json(inside, 5).is_ok());
        let outside = vec![json!({"_":"messageEntityBold","offset":1,"length":5})];
        assert_eq!(
            Entities::from_json(outside, 5),
            Err(DomainError::EntityBoundsInvalid)
        );
        let huge = vec![json!({"_":"messageEntityBold","offset":i32::MAX,"length":i32::MAX})];
        assert_eq!(
            Entities::from_json(huge, 5),
            Err(DomainError::EntityBoundsInvalid)
        );
    }

    #[test]
    fn nul_inside_an_entity_is_rejected() {
        let raw = vec![json!({"_":"messageEntityTextUrl","offset":0,"length":1,"url":"a\u{0}b"})];
        assert_eq!(Entities::from_json(raw, 5), Err(DomainError::EntityInvalid));
    }

    #[test]
    fn unknown_constructor_is_rejected() {
        let raw = vec![json!({"_":"messageEntityNope","offset":0,"length":1})];
        assert_eq!(Entities::from_json(raw, 5), Err(DomainError::EntityInvalid));
    }

    #[test]
    fn an_extra_field_at_any_depth_is_rejected() {
        let mut deep = json!(1);
        for _ in 0..124 {
            deep = json!({ "x": deep });
        }
        let raw = vec![json!({"_":"messageEntityBold","offset":0,"length":1,"extra":deep})];
        assert_eq!(Entities::from_json(raw, 5), Err(DomainError::EntityInvalid));
    }

    #[test]
    fn entity_count_limit() {
        let one = json!({"_":"messageEntityBold","offset":0,"length":1});
        assert!(Entities::from_json(vec![one.clone(); MAX_MESSAGE_ENTITIES], 1).is_ok());
        assert_eq!(
            Entities::from_json(vec![one; MAX_MESSAGE_ENTITIES + 1], 1),
            Err(DomainError::EntitiesTooLong)
        );
    }

    #[test]
    fn stored_entities_keep_what_today_reads() {
        #[derive(Deserialize)]
        struct Row {
            #[serde(deserialize_with = "stored_entities")]
            entities: Vec<MessageEntity>,
        }
        let row: Row = serde_json::from_value(json!({"entities": [
            {"_":"messageEntityBold","offset":0,"length":1},
            {"_":"inputMessageEntityMentionName","offset":0,"length":1,"user_id":{"_":"inputUserSelf"}},
            {"_":"messageEntityItalic","offset":0,"length":1,"odd":true}
        ]}))
        .unwrap();
        assert_eq!(
            row.entities,
            vec![MessageEntity::Bold {
                offset: 0,
                length: 1
            }]
        );
    }
}
