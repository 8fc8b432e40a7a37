use serde::Serialize;
use serde_json::Value;

use super::{
    DialogFilter, DialogPeer, FolderPeer, Message, NotifyPeer, Peer, PeerNotifySettings,
    PeerSettings, User,
};

/// TL `Update` constructors ptslog produces.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Update {
    #[serde(rename = "updateMessageID")]
    MessageId { id: i32, random_id: i64 },
    #[serde(rename = "updateNewMessage")]
    NewMessage {
        message: Message,
        pts: i32,
        pts_count: i32,
    },
    #[serde(rename = "updateEditMessage")]
    EditMessage {
        message: Message,
        pts: i32,
        pts_count: i32,
    },
    #[serde(rename = "updateDeleteMessages")]
    DeleteMessages {
        messages: Vec<i32>,
        pts: i32,
        pts_count: i32,
    },
    #[serde(rename = "updateReadHistoryInbox")]
    ReadHistoryInbox {
        folder_id: i32,
        peer: Peer,
        max_id: i32,
        still_unread_count: i32,
        pts: i32,
        pts_count: i32,
    },
    #[serde(rename = "updateReadHistoryOutbox")]
    ReadHistoryOutbox {
        peer: Peer,
        max_id: i32,
        pts: i32,
        pts_count: i32,
    },
    #[serde(rename = "updateReadMessagesContents")]
    ReadMessagesContents {
        messages: Vec<i32>,
        pts: i32,
        pts_count: i32,
        date: i32,
    },
    #[serde(rename = "updatePeerBlocked")]
    PeerBlocked {
        peer_id: Peer,
        blocked: bool,
        /// A TL `true` flag, shown only when set (clients without stories never see it).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        blocked_my_stories_from: bool,
    },
    #[serde(rename = "updateDialogPinned")]
    DialogPinned {
        pinned: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        folder_id: Option<i32>,
        peer: DialogPeer,
    },
    #[serde(rename = "updatePinnedDialogs")]
    PinnedDialogs {
        #[serde(skip_serializing_if = "Option::is_none")]
        folder_id: Option<i32>,
        order: Vec<DialogPeer>,
    },
    #[serde(rename = "updateDialogUnreadMark")]
    DialogUnreadMark { unread: bool, peer: DialogPeer },
    #[serde(rename = "updateFolderPeers")]
    FolderPeers {
        folder_peers: Vec<FolderPeer>,
        pts: i32,
        pts_count: i32,
    },
    #[serde(rename = "updateDialogFilter")]
    DialogFilter {
        id: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        filter: Option<DialogFilter>,
    },
    #[serde(rename = "updateDialogFilterOrder")]
    DialogFilterOrder { order: Vec<i32> },
    #[serde(rename = "updateDialogFilters")]
    DialogFilters {},
    #[serde(rename = "updatePeerSettings")]
    PeerSettings { peer: Peer, settings: PeerSettings },
    /// Something shown of a user changed (its profile photo): the client reads it again from the
    /// answer's users. No pts.
    #[serde(rename = "updateUser")]
    User { user_id: i64 },
    #[serde(rename = "updateContactsReset")]
    ContactsReset {},
    #[serde(rename = "updateNotifySettings")]
    NotifySettings {
        peer: NotifyPeer,
        notify_settings: PeerNotifySettings,
    },
}

impl Update {
    /// Whether the TL constructor has `pts` and `pts_count` (clients check those for gaps; an update
    /// without them is applied at once, whatever the pts).
    pub fn carries_pts(&self) -> bool {
        match self {
            Update::NewMessage { .. }
            | Update::EditMessage { .. }
            | Update::DeleteMessages { .. }
            | Update::ReadHistoryInbox { .. }
            | Update::ReadHistoryOutbox { .. }
            | Update::ReadMessagesContents { .. }
            | Update::FolderPeers { .. } => true,
            Update::MessageId { .. }
            | Update::PeerBlocked { .. }
            | Update::DialogPinned { .. }
            | Update::PinnedDialogs { .. }
            | Update::DialogUnreadMark { .. }
            | Update::DialogFilter { .. }
            | Update::DialogFilterOrder { .. }
            | Update::DialogFilters {}
            | Update::PeerSettings { .. }
            | Update::ContactsReset {}
            | Update::NotifySettings { .. }
            | Update::User { .. } => false,
        }
    }
}

/// TL `Updates` constructors ptslog answers with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Updates {
    #[serde(rename = "updateShortSentMessage")]
    ShortSentMessage {
        out: bool,
        id: i32,
        pts: i32,
        pts_count: i32,
        date: i32,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        entities: Vec<domain::message_entity::MessageEntity>,
    },
    #[serde(rename = "updates")]
    Updates {
        updates: Vec<Update>,
        users: Vec<User>,
        chats: Vec<Value>,
        date: i32,
        seq: i32,
    },
    #[serde(rename = "updatesTooLong")]
    TooLong,
}
