//! The id of a stored photo or document: positive, handed out by the server (never a client's).

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(try_from = "i64", into = "i64")]
pub struct MediaId(#[schemars(range(min = 1))] i64);

impl MediaId {
    pub fn new(raw: i64) -> Option<Self> {
        (raw > 0).then_some(Self(raw))
    }
    pub fn get(self) -> i64 {
        self.0
    }
}

impl TryFrom<i64> for MediaId {
    type Error = &'static str;
    fn try_from(raw: i64) -> Result<Self, &'static str> {
        Self::new(raw).ok_or("a media id is positive")
    }
}

impl From<MediaId> for i64 {
    fn from(id: MediaId) -> i64 {
        id.0
    }
}
