use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;
use crate::message_entity::MessageEntity;

/// A custom dialog filter (folder) as the owner defined it. Ids start at 2 (0 is "All chats",
/// 1 the archive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DialogFilterRules {
    pub id: i32,
    pub title: String,
    #[serde(default, deserialize_with = "crate::entities::stored_entities")]
    pub title_entities: Vec<MessageEntity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoticon: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<i32>,
    #[serde(default)]
    pub contacts: bool,
    #[serde(default)]
    pub non_contacts: bool,
    #[serde(default)]
    pub groups: bool,
    #[serde(default)]
    pub broadcasts: bool,
    #[serde(default)]
    pub bots: bool,
    #[serde(default)]
    pub exclude_muted: bool,
    #[serde(default)]
    pub exclude_read: bool,
    #[serde(default)]
    pub exclude_archived: bool,
    #[serde(default)]
    pub title_noanimate: bool,
    #[serde(default)]
    pub pinned_peers: Vec<UserId>,
    #[serde(default)]
    pub include_peers: Vec<UserId>,
    #[serde(default)]
    pub exclude_peers: Vec<UserId>,
}

/// A filter was created or replaced (`filter` present) or deleted (absent).
/// TL: `updateDialogFilter`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DialogFilter {
    pub id: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<DialogFilterRules>,
}

impl EventKind for DialogFilter {
    const KIND: &'static str = "dialog_filter";
    const VERSION: i16 = 1;
}

/// The order of the owner's filters (`messages.updateDialogFiltersOrder`).
/// TL: `updateDialogFilterOrder`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DialogFilterOrder {
    pub order: Vec<i32>,
}

impl EventKind for DialogFilterOrder {
    const KIND: &'static str = "dialog_filter_order";
    const VERSION: i16 = 1;
}

/// Folder tags were turned on or off (`messages.toggleDialogFilterTags`). TL: `updateDialogFilters`
/// (which has no fields: clients reload `messages.getDialogFilters`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DialogFilterTags {
    pub enabled: bool,
}

impl EventKind for DialogFilterTags {
    const KIND: &'static str = "dialog_filter_tags";
    const VERSION: i16 = 1;
}

/// What a filter looks at in one dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterSubject {
    pub peer: UserId,
    /// The peer is one of the owner's contacts (Saved Messages counts as one).
    pub contact: bool,
    pub folder_id: i16,
    pub unread_count: i32,
    pub unread_mark: bool,
    /// The owner's notification settings mute the chat now.
    pub muted: bool,
}

impl DialogFilterRules {
    /// Whether the dialog belongs to this filter. Excluded peers never do; pinned and included peers
    /// always do otherwise; the rest must match a category (contacts / non-contacts; private chats
    /// are never groups, channels or bots) and pass the exclusions (muted, archived, read).
    pub fn includes(&self, d: &FilterSubject) -> bool {
        if self.exclude_peers.contains(&d.peer) {
            return false;
        }
        if self.pinned_peers.contains(&d.peer) || self.include_peers.contains(&d.peer) {
            return true;
        }
        let category = if d.contact {
            self.contacts
        } else {
            self.non_contacts
        };
        if !category {
            return false;
        }
        if self.exclude_muted && d.muted {
            return false;
        }
        if self.exclude_archived && d.folder_id == 1 {
            return false;
        }
        if self.exclude_read && d.unread_count == 0 && !d.unread_mark {
            return false;
        }
        true
    }

    /// Whether anything at all can match (Telegram's `FILTER_INCLUDE_EMPTY` otherwise).
    pub fn includes_something(&self) -> bool {
        !self.pinned_peers.is_empty()
            || !self.include_peers.is_empty()
            || self.contacts
            || self.non_contacts
            || self.groups
            || self.broadcasts
            || self.bots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> DialogFilterRules {
        serde_json::from_value(serde_json::json!({"id": 2, "title": "t"})).unwrap()
    }

    #[test]
    fn explicit_peers_beat_categories_and_exclusions_beat_everything() {
        let a = UserId::new(5).unwrap();
        let subject = FilterSubject {
            peer: a,
            contact: false,
            folder_id: 1,
            unread_count: 0,
            unread_mark: false,
            muted: false,
        };
        let mut r = rules();
        assert!(!r.includes(&subject));
        r.non_contacts = true;
        assert!(r.includes(&subject));
        r.exclude_archived = true;
        assert!(!r.includes(&subject));
        r.include_peers = vec![a];
        assert!(r.includes(&subject));
        r.exclude_peers = vec![a];
        assert!(!r.includes(&subject));
    }

    #[test]
    fn exclude_muted_leaves_out_muted_chats_unless_included() {
        let a = UserId::new(5).unwrap();
        let muted = FilterSubject {
            peer: a,
            contact: true,
            folder_id: 0,
            unread_count: 1,
            unread_mark: false,
            muted: true,
        };
        let mut r = rules();
        r.contacts = true;
        assert!(r.includes(&muted));
        r.exclude_muted = true;
        assert!(!r.includes(&muted));
        assert!(r.includes(&FilterSubject {
            muted: false,
            ..muted
        }));
        r.pinned_peers = vec![a];
        assert!(r.includes(&muted), "pinned peers are always in");
    }
}
