//! The TL update each logged event stands for: one mapping shared by `updates.getDifference` and
//! live pushes, so a device sees the same thing whichever way it learns of a change.

use domain::access_hash::AccessHashKey;
use domain::events::UserEvent;
use domain::UserId;

use super::{
    DialogFilter, DialogPeer, FileRefs, FolderPeer, Message, NotifyPeer, Peer, PeerNotifySettings,
    PeerSettings, Update,
};
use crate::ports::StoredEvent;

/// The update for one event, with the event's pts and pts_count. `keys` give the input peers an
/// update carries (a dialog filter's peers) the owner's access hashes.
pub fn update_for_event(stored: &StoredEvent, keys: &AccessHashKey) -> Update {
    let pts = stored.pts.get();
    let pts_count = stored.pts_count;
    match &stored.event {
        UserEvent::NewMessage(e) => Update::NewMessage {
            message: Message::render(&e.message, FileRefs::now(keys)),
            pts,
            pts_count,
        },
        UserEvent::EditMessage(e) => Update::EditMessage {
            message: Message::render(&e.message, FileRefs::now(keys)),
            pts,
            pts_count,
        },
        UserEvent::DeleteMessages(e) => Update::DeleteMessages {
            messages: e.ids.iter().map(|id| id.get()).collect(),
            pts,
            pts_count,
        },
        UserEvent::ReadHistoryInbox(e) => Update::ReadHistoryInbox {
            folder_id: 0,
            peer: Peer::user(e.peer_id),
            max_id: e.max_id.get(),
            still_unread_count: e.still_unread_count,
            pts,
            pts_count,
        },
        UserEvent::ReadHistoryOutbox(e) => Update::ReadHistoryOutbox {
            peer: Peer::user(e.peer_id),
            max_id: e.max_id.get(),
            pts,
            pts_count,
        },
        UserEvent::ReadMessageContents(e) => Update::ReadMessagesContents {
            messages: e.ids.iter().map(|id| id.get()).collect(),
            pts,
            pts_count,
            date: e.date,
        },
        UserEvent::PeerBlocked(e) => Update::PeerBlocked {
            peer_id: Peer::user(e.peer_id),
            blocked: e.blocked,
            blocked_my_stories_from: e.my_stories_from,
        },
        UserEvent::DialogPinned(e) => Update::DialogPinned {
            pinned: e.pinned,
            folder_id: (e.folder_id != 0).then_some(i32::from(e.folder_id)),
            peer: DialogPeer::user(e.peer_id),
        },
        UserEvent::PinnedDialogs(e) => Update::PinnedDialogs {
            folder_id: (e.folder_id != 0).then_some(i32::from(e.folder_id)),
            order: e.order.iter().map(|p| DialogPeer::user(*p)).collect(),
        },
        UserEvent::DialogUnreadMark(e) => Update::DialogUnreadMark {
            unread: e.unread,
            peer: DialogPeer::user(e.peer_id),
        },
        UserEvent::FolderPeers(e) => Update::FolderPeers {
            folder_peers: e
                .folder_peers
                .iter()
                .map(|f| FolderPeer {
                    peer: Peer::user(f.peer_id),
                    folder_id: i32::from(f.folder_id),
                })
                .collect(),
            pts,
            pts_count,
        },
        UserEvent::DialogFilter(e) => Update::DialogFilter {
            id: e.id,
            filter: e
                .filter
                .as_ref()
                .map(|f| DialogFilter::of(stored.user_id, f, keys)),
        },
        UserEvent::DialogFilterOrder(e) => Update::DialogFilterOrder {
            order: e.order.clone(),
        },
        UserEvent::DialogFilterTags(_) => Update::DialogFilters {},
        UserEvent::ContactSaved(e) => Update::PeerSettings {
            peer: Peer::user(e.user_id),
            settings: PeerSettings::from(&e.settings),
        },
        UserEvent::ContactDeleted(e) => Update::PeerSettings {
            peer: Peer::user(e.user_id),
            settings: PeerSettings::from(&e.settings),
        },
        UserEvent::PeerSettings(e) => Update::PeerSettings {
            peer: Peer::user(e.peer_id),
            settings: PeerSettings::from(&e.settings),
        },
        UserEvent::ContactsReset(_) => Update::ContactsReset {},
        UserEvent::NotifySettings(e) => Update::NotifySettings {
            peer: NotifyPeer {
                peer: Peer::user(e.peer_id),
            },
            notify_settings: PeerNotifySettings::from(&e.settings),
        },
        // The user whose photo changed is the owner; the answer's users carry the new photo.
        UserEvent::ProfilePhotoChanged(_) => Update::User {
            user_id: stored.user_id.get(),
        },
    }
}

/// Users an event of `owner`'s log mentions, so an answer can carry their `user` objects.
pub fn users_of_event(owner: UserId, event: &UserEvent) -> Vec<UserId> {
    match event {
        UserEvent::NewMessage(e) => super::message::users_of_message(&e.message),
        UserEvent::EditMessage(e) => super::message::users_of_message(&e.message),
        UserEvent::ReadHistoryInbox(e) => vec![e.peer_id],
        UserEvent::ReadHistoryOutbox(e) => vec![e.peer_id],
        UserEvent::PeerBlocked(e) => vec![e.peer_id],
        UserEvent::DialogPinned(e) => vec![e.peer_id],
        UserEvent::PinnedDialogs(e) => e.order.clone(),
        UserEvent::DialogUnreadMark(e) => vec![e.peer_id],
        UserEvent::FolderPeers(e) => e.folder_peers.iter().map(|f| f.peer_id).collect(),
        UserEvent::DialogFilter(e) => e
            .filter
            .iter()
            .flat_map(|f| {
                f.pinned_peers
                    .iter()
                    .chain(&f.include_peers)
                    .chain(&f.exclude_peers)
                    .copied()
            })
            .collect(),
        UserEvent::ContactSaved(e) => vec![e.user_id],
        UserEvent::ContactDeleted(e) => vec![e.user_id],
        UserEvent::PeerSettings(e) => vec![e.peer_id],
        UserEvent::NotifySettings(e) => vec![e.peer_id],
        UserEvent::DeleteMessages(_)
        | UserEvent::ReadMessageContents(_)
        | UserEvent::DialogFilterOrder(_)
        | UserEvent::DialogFilterTags(_)
        | UserEvent::ContactsReset(_) => Vec::new(),
        // The owner: its `user` (self) with the new photo.
        UserEvent::ProfilePhotoChanged(_) => vec![owner],
    }
}
