use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::{BoxId, UserId};

/// Messages left the owner's box. `pts_count` is the number of ids (1 for an empty batch, which only
/// removes an empty dialog). TL: `updateDeleteMessages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeleteMessages {
    /// The owner's box ids, each one that really was visible before.
    pub ids: Vec<BoxId>,
    /// Set when the deletion is a batch of `messages.deleteHistory`: what becomes of the dialog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_history: Option<ClearHistory>,
}

/// The dialog part of a `messages.deleteHistory` batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClearHistory {
    pub peer_id: UserId,
    /// `just_clear`: keep the (now empty) dialog; otherwise it is removed once no message is left.
    pub just_clear: bool,
}

impl EventKind for DeleteMessages {
    const KIND: &'static str = "delete_messages";
    const VERSION: i16 = 1;
}
