use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::BoxId;

/// The owner opened the contents (media, reactions) of these messages. TL: `updateReadMessagesContents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadMessageContents {
    pub ids: Vec<BoxId>,
    pub date: i32,
}

impl EventKind for ReadMessageContents {
    const KIND: &'static str = "read_message_contents";
    const VERSION: i16 = 1;
}
