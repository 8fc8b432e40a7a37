use serde::{Deserialize, Serialize};

use super::message_v1::NewMessageV1;
use super::{EventKind, Payload};
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

    fn read_version<'de, D: Payload<'de>>(
        version: i16,
        payload: D,
    ) -> Result<Self, serde_json::Error> {
        match version {
            1 => NewMessageV1::deserialize(payload).map(Self::from),
            _ => Self::deserialize(payload),
        }
    }
}
