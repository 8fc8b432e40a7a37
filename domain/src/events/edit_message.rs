use serde::{Deserialize, Serialize};

use super::message_v1::EditMessageV1;
use super::{EventKind, Payload};
use crate::message::OwnerMessage;

/// The owner's copy of a message was edited; the payload is the whole message after the edit.
/// TL: `updateEditMessage`.
///
/// Version 2: the message may carry media (a caption edit keeps it, an edit with new media
/// replaces it) and an album id; version 1 had neither (see [`EditMessageV1`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EditMessage {
    pub message: OwnerMessage,
}

impl EventKind for EditMessage {
    const KIND: &'static str = "edit_message";
    const VERSION: i16 = 2;

    fn read_version<'de, D: Payload<'de>>(
        version: i16,
        payload: D,
    ) -> Result<Self, serde_json::Error> {
        match version {
            1 => EditMessageV1::deserialize(payload).map(Self::from),
            _ => Self::deserialize(payload),
        }
    }
}
