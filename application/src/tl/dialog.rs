use domain::events::PeerNotify;
use serde::Serialize;
use serde_json::Value;

use super::{Message, Peer, User};
use crate::ports::DialogRecord;

/// TL `peerNotifySettings`: the fields the owner set (none: the client's defaults).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(tag = "_", rename = "peerNotifySettings")]
pub struct PeerNotifySettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show_previews: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mute_until: Option<i32>,
}

impl From<&PeerNotify> for PeerNotifySettings {
    fn from(s: &PeerNotify) -> Self {
        Self {
            show_previews: s.show_previews,
            silent: s.silent,
            mute_until: s.mute_until,
        }
    }
}

/// TL `notifyPeer`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "notifyPeer")]
pub struct NotifyPeer {
    pub peer: Peer,
}

/// TL `dialog`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "dialog")]
pub struct Dialog {
    pub pinned: bool,
    pub unread_mark: bool,
    pub peer: Peer,
    pub top_message: i32,
    pub read_inbox_max_id: i32,
    pub read_outbox_max_id: i32,
    pub unread_count: i32,
    pub unread_mentions_count: i32,
    pub unread_reactions_count: i32,
    pub notify_settings: PeerNotifySettings,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder_id: Option<i32>,
}

impl From<&DialogRecord> for Dialog {
    fn from(d: &DialogRecord) -> Self {
        Dialog {
            pinned: d.pinned,
            unread_mark: d.unread_mark,
            peer: Peer::user(d.peer_id),
            top_message: d.top_message,
            read_inbox_max_id: d.read_inbox_max_id,
            read_outbox_max_id: d.read_outbox_max_id,
            unread_count: d.unread_count,
            unread_mentions_count: 0,
            unread_reactions_count: 0,
            notify_settings: PeerNotifySettings::from(&d.notify),
            folder_id: (d.folder_id != 0).then_some(d.folder_id as i32),
        }
    }
}

/// `messages.dialogs`, `messages.dialogsSlice` or `messages.dialogsNotModified`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Dialogs {
    #[serde(rename = "messages.dialogs")]
    All {
        dialogs: Vec<Dialog>,
        messages: Vec<Message>,
        chats: Vec<Value>,
        users: Vec<User>,
    },
    #[serde(rename = "messages.dialogsSlice")]
    Slice {
        count: i64,
        dialogs: Vec<Dialog>,
        messages: Vec<Message>,
        chats: Vec<Value>,
        users: Vec<User>,
    },
    #[serde(rename = "messages.dialogsNotModified")]
    NotModified { count: i64 },
}

/// `messages.peerDialogs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messages.peerDialogs")]
pub struct PeerDialogs {
    pub dialogs: Vec<Dialog>,
    pub messages: Vec<Message>,
    pub chats: Vec<Value>,
    pub users: Vec<User>,
    pub state: super::State,
}
