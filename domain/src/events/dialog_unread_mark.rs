use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;

/// The owner set or cleared the manual unread mark of the dialog with `peer_id`.
/// TL: `updateDialogUnreadMark`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DialogUnreadMark {
    pub peer_id: UserId,
    pub unread: bool,
}

impl EventKind for DialogUnreadMark {
    const KIND: &'static str = "dialog_unread_mark";
    const VERSION: i16 = 1;
}
