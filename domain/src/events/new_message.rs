use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::message::OwnerMessage;

/// A message appeared in the owner's box (sent, received or forwarded). TL: `updateNewMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NewMessage {
    pub message: OwnerMessage,
}

impl EventKind for NewMessage {
    const KIND: &'static str = "new_message";
    const VERSION: i16 = 1;
}
