//! TL objects of dialog organization: dialog peers, folder peers, dialog filters, peer settings and
//! contacts.

use domain::access_hash::AccessHashKey;
use domain::events::{DialogFilterRules, PeerSettingsFlags};
use domain::UserId;
use serde::Serialize;
use serde_json::Value;

use super::{Peer, User};

/// TL `dialogPeer`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "dialogPeer")]
pub struct DialogPeer {
    pub peer: Peer,
}

impl DialogPeer {
    pub fn user(id: UserId) -> Self {
        Self {
            peer: Peer::user(id),
        }
    }
}

/// TL `folderPeer`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "folderPeer")]
pub struct FolderPeer {
    pub peer: Peer,
    pub folder_id: i32,
}

/// TL `textWithEntities`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "textWithEntities")]
pub struct TextWithEntities {
    pub text: String,
    pub entities: Vec<domain::message_entity::MessageEntity>,
}

/// TL `inputPeerUser` as the owner names a peer (its own access hash), or `inputPeerSelf`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum OwnInputPeer {
    #[serde(rename = "inputPeerSelf")]
    SelfPeer,
    #[serde(rename = "inputPeerUser")]
    User { user_id: i64, access_hash: i64 },
}

impl OwnInputPeer {
    pub fn of(viewer: UserId, peer: UserId, keys: &AccessHashKey) -> Self {
        if peer == viewer {
            OwnInputPeer::SelfPeer
        } else {
            OwnInputPeer::User {
                user_id: peer.get(),
                access_hash: keys.for_pair(viewer, peer),
            }
        }
    }
}

/// TL `dialogFilter`, or `dialogFilterDefault` (the "All chats" entry).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum DialogFilter {
    #[serde(rename = "dialogFilterDefault")]
    Default,
    #[serde(rename = "dialogFilter")]
    Filter {
        contacts: bool,
        non_contacts: bool,
        groups: bool,
        broadcasts: bool,
        bots: bool,
        exclude_muted: bool,
        exclude_read: bool,
        exclude_archived: bool,
        title_noanimate: bool,
        id: i32,
        title: TextWithEntities,
        #[serde(skip_serializing_if = "Option::is_none")]
        emoticon: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        color: Option<i32>,
        pinned_peers: Vec<OwnInputPeer>,
        include_peers: Vec<OwnInputPeer>,
        exclude_peers: Vec<OwnInputPeer>,
    },
}

impl DialogFilter {
    /// The filter as `viewer` (its owner) sees it: peers carry the owner's access hashes.
    pub fn of(viewer: UserId, f: &DialogFilterRules, keys: &AccessHashKey) -> Self {
        let peers = |ids: &[UserId]| {
            ids.iter()
                .map(|p| OwnInputPeer::of(viewer, *p, keys))
                .collect()
        };
        DialogFilter::Filter {
            contacts: f.contacts,
            non_contacts: f.non_contacts,
            groups: f.groups,
            broadcasts: f.broadcasts,
            bots: f.bots,
            exclude_muted: f.exclude_muted,
            exclude_read: f.exclude_read,
            exclude_archived: f.exclude_archived,
            title_noanimate: f.title_noanimate,
            id: f.id,
            title: TextWithEntities {
                text: f.title.clone(),
                entities: f.title_entities.clone(),
            },
            emoticon: f.emoticon.clone(),
            color: f.color,
            pinned_peers: peers(&f.pinned_peers),
            include_peers: peers(&f.include_peers),
            exclude_peers: peers(&f.exclude_peers),
        }
    }
}

/// `messages.dialogFilters`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messages.dialogFilters")]
pub struct DialogFilters {
    pub tags_enabled: bool,
    pub filters: Vec<DialogFilter>,
}

/// TL `peerSettings` (only the flags a private chat between two accounts can have here).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "_", rename = "peerSettings")]
pub struct PeerSettings {
    pub report_spam: bool,
    pub add_contact: bool,
    pub block_contact: bool,
}

impl From<&PeerSettingsFlags> for PeerSettings {
    fn from(f: &PeerSettingsFlags) -> Self {
        Self {
            report_spam: f.report_spam,
            add_contact: f.add_contact,
            block_contact: f.block_contact,
        }
    }
}

/// `messages.peerSettings`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messages.peerSettings")]
pub struct MessagesPeerSettings {
    pub settings: PeerSettings,
    pub chats: Vec<Value>,
    pub users: Vec<User>,
}

/// TL `contact`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "contact")]
pub struct Contact {
    pub user_id: i64,
    pub mutual: bool,
}

/// `contacts.contacts` or `contacts.contactsNotModified`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Contacts {
    #[serde(rename = "contacts.contacts")]
    All {
        contacts: Vec<Contact>,
        saved_count: i32,
        users: Vec<User>,
    },
    #[serde(rename = "contacts.contactsNotModified")]
    NotModified,
}

/// TL `importedContact`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "importedContact")]
pub struct ImportedContact {
    pub user_id: i64,
    pub client_id: i64,
}

/// `contacts.importedContacts`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "contacts.importedContacts")]
pub struct ImportedContacts {
    pub imported: Vec<ImportedContact>,
    pub popular_invites: Vec<Value>,
    pub retry_contacts: Vec<i64>,
    pub users: Vec<User>,
}
