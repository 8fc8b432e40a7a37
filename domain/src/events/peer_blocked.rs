use serde::{Deserialize, Serialize};

use super::{EventKind, Payload};
use crate::ids::UserId;

/// The owner blocked or unblocked `peer_id`. TL: `updatePeerBlocked`.
///
/// Version 2 records `my_stories_from`: the client asked only to hide the owner's stories from the
/// peer (`contacts.block {my_stories_from}`). ptslog has no stories, so such a block still blocks
/// fully, as every version-1 block did; the flag keeps what the client asked for so the TL update
/// echoes it and a later stories list can be rebuilt from the log. Version 1 lacked it and reads as
/// `false` (see [`PeerBlockedV1`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerBlocked {
    pub peer_id: UserId,
    pub blocked: bool,
    /// Only the owner's stories were meant (Telegram's `blocked_my_stories_from`).
    pub my_stories_from: bool,
    /// Unix seconds.
    pub date: i32,
}

impl EventKind for PeerBlocked {
    const KIND: &'static str = "peer_blocked";
    const VERSION: i16 = 2;

    fn read_version<'de, D: Payload<'de>>(
        version: i16,
        payload: D,
    ) -> Result<Self, serde_json::Error> {
        match version {
            1 => PeerBlockedV1::deserialize(payload).map(Self::from),
            _ => Self::deserialize(payload),
        }
    }
}

/// `peer_blocked` as version 1 stored it: no `my_stories_from`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerBlockedV1 {
    pub peer_id: UserId,
    pub blocked: bool,
    /// Unix seconds.
    pub date: i32,
}

/// The upcast: every version-1 block was a full block.
impl From<PeerBlockedV1> for PeerBlocked {
    fn from(v1: PeerBlockedV1) -> Self {
        Self {
            peer_id: v1.peer_id,
            blocked: v1.blocked,
            my_stories_from: false,
            date: v1.date,
        }
    }
}
