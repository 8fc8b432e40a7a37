use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::{BoxId, UserId};

/// `peer_id` read the owner's outgoing messages up to `max_id` (in the owner's ids) at `date`.
/// TL: `updateReadHistoryOutbox`; `messages.getOutboxReadDate` answers from these events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadHistoryOutbox {
    pub peer_id: UserId,
    pub max_id: BoxId,
    pub date: i32,
}

impl EventKind for ReadHistoryOutbox {
    const KIND: &'static str = "read_history_outbox";
    const VERSION: i16 = 1;
}
