use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::message::OwnerMessage;

/// The owner's copy of a message was edited; the payload is the whole message after the edit.
/// TL: `updateEditMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EditMessage {
    pub message: OwnerMessage,
}

impl EventKind for EditMessage {
    const KIND: &'static str = "edit_message";
    const VERSION: i16 = 1;
}
