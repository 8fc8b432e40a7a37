use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;

/// The action-bar flags of a private chat (TL `peerSettings`) as they stood after an event.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct PeerSettingsFlags {
    #[serde(default)]
    pub report_spam: bool,
    #[serde(default)]
    pub add_contact: bool,
    #[serde(default)]
    pub block_contact: bool,
}

/// The owner saved `user_id` as a contact under these names (added, imported or renamed).
/// `imported` is set for `contacts.importContacts` (counted in `saved_count` until
/// `contacts.resetSaved`). TL: `updatePeerSettings` with the peer's settings after the change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContactSaved {
    pub user_id: UserId,
    pub first_name: String,
    pub last_name: String,
    pub phone: String,
    #[serde(default)]
    pub imported: bool,
    pub date: i32,
    pub settings: PeerSettingsFlags,
}

impl EventKind for ContactSaved {
    const KIND: &'static str = "contact_saved";
    const VERSION: i16 = 1;
}

/// The owner deleted the contact `user_id`. TL: `updatePeerSettings` with the settings after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContactDeleted {
    pub user_id: UserId,
    pub settings: PeerSettingsFlags,
}

impl EventKind for ContactDeleted {
    const KIND: &'static str = "contact_deleted";
    const VERSION: i16 = 1;
}

/// `contacts.resetSaved`: the imported phone book is forgotten (`saved_count` becomes 0); the
/// contact list itself stays. TL: `updateContactsReset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContactsReset {}

impl EventKind for ContactsReset {
    const KIND: &'static str = "contacts_reset";
    const VERSION: i16 = 1;
}

/// The peer settings (action bar) of the chat with `peer_id` changed; `bar_hidden` after
/// `messages.hidePeerSettingsBar`. TL: `updatePeerSettings`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PeerSettings {
    pub peer_id: UserId,
    pub bar_hidden: bool,
    pub settings: PeerSettingsFlags,
}

impl EventKind for PeerSettings {
    const KIND: &'static str = "peer_settings";
    const VERSION: i16 = 1;
}
