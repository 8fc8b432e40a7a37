use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::{BoxId, UserId};

/// The owner read incoming messages from `peer_id` up to `max_id`. TL: `updateReadHistoryInbox`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadHistoryInbox {
    pub peer_id: UserId,
    pub max_id: BoxId,
    /// Incoming messages still unread after this read.
    pub still_unread_count: i32,
}

impl EventKind for ReadHistoryInbox {
    const KIND: &'static str = "read_history_inbox";
    const VERSION: i16 = 1;
}
