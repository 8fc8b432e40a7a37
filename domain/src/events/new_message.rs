use serde::{Deserialize, Serialize};

use super::message_v1::NewMessageV1;
use super::EventKind;
use crate::message::OwnerMessage;

/// A message appeared in the owner's box (sent, received or forwarded). TL: `updateNewMessage`.
///
/// Version 2: the message may carry media and an album id (`OwnerMessage::media`,
/// `grouped_id`); version 1 had neither (see [`NewMessageV1`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewMessage {
    pub message: OwnerMessage,
}

impl EventKind for NewMessage {
    const KIND: &'static str = "new_message";
    const VERSION: i16 = 2;

    fn read_version(version: i16, payload: serde_json::Value) -> Result<Self, serde_json::Error> {
        match version {
            1 => serde_json::from_value::<NewMessageV1>(payload).map(Self::from),
            _ => serde_json::from_value(payload),
        }
    }
}
