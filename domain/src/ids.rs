//! Identifier newtypes. Each can only hold a value that is valid for what it names.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::error::DomainError;

/// An account. Always positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct UserId(i64);

impl UserId {
    pub fn new(raw: i64) -> Result<Self, DomainError> {
        if raw > 0 {
            Ok(Self(raw))
        } else {
            Err(DomainError::PeerIdInvalid)
        }
    }
    pub fn get(self) -> i64 {
        self.0
    }
}

impl TryFrom<i64> for UserId {
    type Error = DomainError;
    fn try_from(raw: i64) -> Result<Self, DomainError> {
        Self::new(raw)
    }
}

impl From<UserId> for i64 {
    fn from(id: UserId) -> i64 {
        id.0
    }
}

impl std::fmt::Display for UserId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A position in one account's update log. `Pts(0)` is "nothing yet".
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub struct Pts(i32);

impl Pts {
    pub const ZERO: Pts = Pts(0);
    pub fn new(raw: i32) -> Option<Self> {
        (raw >= 0).then_some(Self(raw))
    }
    pub fn get(self) -> i32 {
        self.0
    }
    /// The pts after `count` more steps. The log is bounded by int4; running out is a hard error
    /// rather than a silent wrap.
    pub fn advance(self, count: i32) -> Option<Pts> {
        self.0.checked_add(count).map(Pts)
    }
}

/// A message id as one owner sees it (TDesktop's message id). Always positive, int4 like TL's `int`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "i32", into = "i32")]
pub struct BoxId(i32);

impl BoxId {
    pub fn new(raw: i32) -> Option<Self> {
        (raw > 0).then_some(Self(raw))
    }
    /// Client-supplied ids arrive as JSON numbers; ids `<= 0` or beyond int32 are dropped (seed: Delete Flow).
    pub fn from_client(raw: i64) -> Option<Self> {
        i32::try_from(raw).ok().and_then(Self::new)
    }
    pub fn get(self) -> i32 {
        self.0
    }
}

impl TryFrom<i32> for BoxId {
    type Error = DomainError;
    fn try_from(raw: i32) -> Result<Self, DomainError> {
        Self::new(raw).ok_or(DomainError::MessageIdInvalid)
    }
}

impl From<BoxId> for i32 {
    fn from(id: BoxId) -> i32 {
        id.0
    }
}

/// The identity of one private message shared by every owner's box of it (never shown to clients).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct MessageId(pub i64);

/// The JSON Schemas of the ids say what the newtypes enforce: positive, and int4 for box ids.
impl JsonSchema for UserId {
    fn schema_name() -> Cow<'static, str> {
        "UserId".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "format": "int64", "minimum": 1})
    }
}

impl JsonSchema for BoxId {
    fn schema_name() -> Cow<'static, str> {
        "BoxId".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "format": "int32", "minimum": 1, "maximum": i32::MAX})
    }
}

/// The device (authorization) a change came from; pushes skip it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct AuthKeyId(pub i64);

/// The session on a device a change came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct SessionId(pub i64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_positive() {
        assert!(UserId::new(1).is_ok());
        assert_eq!(UserId::new(0), Err(DomainError::PeerIdInvalid));
        assert_eq!(UserId::new(-5), Err(DomainError::PeerIdInvalid));
    }

    #[test]
    fn client_box_ids_outside_int32_or_not_positive_are_dropped() {
        assert_eq!(BoxId::from_client(0), None);
        assert_eq!(BoxId::from_client(-1), None);
        assert_eq!(
            BoxId::from_client(i32::MAX as i64).map(BoxId::get),
            Some(i32::MAX)
        );
        assert_eq!(BoxId::from_client(i32::MAX as i64 + 1), None);
    }

    #[test]
    fn pts_advance_refuses_overflow() {
        assert_eq!(Pts::new(5).and_then(|p| p.advance(2)), Pts::new(7));
        assert_eq!(Pts::new(i32::MAX).and_then(|p| p.advance(1)), None);
    }
}
