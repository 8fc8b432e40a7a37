use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;

/// The owner blocked or unblocked `peer_id`. TL: `updatePeerBlocked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerBlocked {
    pub peer_id: UserId,
    pub blocked: bool,
    pub date: i32,
}

impl EventKind for PeerBlocked {
    const KIND: &'static str = "peer_blocked";
    const VERSION: i16 = 1;
}
