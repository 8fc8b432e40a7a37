use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;

/// The whole pinned list of folder `folder_id`, in order, after `messages.reorderPinnedDialogs`: the
/// peers listed are pinned in this order, every other dialog of the folder is unpinned.
/// TL: `updatePinnedDialogs` with `order`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PinnedDialogs {
    pub folder_id: i16,
    pub order: Vec<UserId>,
}

impl EventKind for PinnedDialogs {
    const KIND: &'static str = "pinned_dialogs";
    const VERSION: i16 = 1;
}
