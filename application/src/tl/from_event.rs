//! The TL update each logged event stands for: one mapping shared by `updates.getDifference` and
//! live pushes, so a device sees the same thing whichever way it learns of a change.

use domain::events::UserEvent;
use domain::UserId;

use super::{Message, Peer, Update};
use crate::ports::StoredEvent;

/// The update for one event, with the event's pts and pts_count.
pub fn update_for_event(stored: &StoredEvent) -> Update {
    let pts = stored.pts.get();
    let pts_count = stored.pts_count;
    match &stored.event {
        UserEvent::NewMessage(e) => Update::NewMessage { message: Message::from(&e.message), pts, pts_count },
        UserEvent::EditMessage(e) => Update::EditMessage { message: Message::from(&e.message), pts, pts_count },
        UserEvent::DeleteMessages(e) => {
            Update::DeleteMessages { messages: e.ids.iter().map(|id| id.get()).collect(), pts, pts_count }
        }
        UserEvent::ReadHistoryInbox(e) => Update::ReadHistoryInbox {
            folder_id: 0,
            peer: Peer::user(e.peer_id),
            max_id: e.max_id.get(),
            still_unread_count: e.still_unread_count,
            pts,
            pts_count,
        },
        UserEvent::ReadHistoryOutbox(e) => {
            Update::ReadHistoryOutbox { peer: Peer::user(e.peer_id), max_id: e.max_id.get(), pts, pts_count }
        }
        UserEvent::ReadMessageContents(e) => Update::ReadMessagesContents {
            messages: e.ids.iter().map(|id| id.get()).collect(),
            pts,
            pts_count,
            date: e.date,
        },
        UserEvent::PeerBlocked(e) => Update::PeerBlocked { peer_id: Peer::user(e.peer_id), blocked: e.blocked },
    }
}

/// Users an event mentions, so an answer can carry their `user` objects.
pub fn users_of_event(event: &UserEvent) -> Vec<UserId> {
    match event {
        UserEvent::NewMessage(e) => super::message::users_of_message(&e.message),
        UserEvent::EditMessage(e) => super::message::users_of_message(&e.message),
        UserEvent::ReadHistoryInbox(e) => vec![e.peer_id],
        UserEvent::ReadHistoryOutbox(e) => vec![e.peer_id],
        UserEvent::PeerBlocked(e) => vec![e.peer_id],
        UserEvent::DeleteMessages(_) | UserEvent::ReadMessageContents(_) => Vec::new(),
    }
}
