use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;

/// The owner pinned or unpinned the dialog with `peer_id` in folder `folder_id` (0 main, 1 archive).
/// A new pin goes to the top of the folder's pinned list. TL: `updateDialogPinned`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DialogPinned {
    pub peer_id: UserId,
    pub folder_id: i16,
    pub pinned: bool,
}

impl EventKind for DialogPinned {
    const KIND: &'static str = "dialog_pinned";
    const VERSION: i16 = 1;
}
