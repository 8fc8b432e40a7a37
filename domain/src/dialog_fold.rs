//! A user's dialog list folded from that user's events in memory: the analysts' time travel
//! (`ptslog events state --at-pts`). It follows the `dialogs` projection rule for rule (top message,
//! unread count, read watermarks, folder, pins, manual unread mark), but over plain maps instead of
//! tables, so it needs no database and can stop at any pts.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::events::{DeleteMessages, UserEvent};
use crate::ids::{BoxId, Pts, UserId};
use crate::message::OwnerMessage;

/// One dialog as the owner's list had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DialogState {
    pub peer_id: UserId,
    /// 0 main list, 1 archive.
    pub folder_id: i16,
    /// 0 when no message is left.
    pub top_message: i32,
    pub top_message_date: i32,
    pub read_inbox_max_id: i32,
    pub read_outbox_max_id: i32,
    pub unread_count: i32,
    pub unread_mark: bool,
    /// Position among the folder's pins (smaller first), `None` when not pinned.
    pub pinned_order: Option<i32>,
}

impl DialogState {
    fn new(peer_id: UserId) -> Self {
        Self {
            peer_id,
            folder_id: 0,
            top_message: 0,
            top_message_date: 0,
            read_inbox_max_id: 0,
            read_outbox_max_id: 0,
            unread_count: 0,
            unread_mark: false,
            pinned_order: None,
        }
    }

    pub fn pinned(&self) -> bool {
        self.pinned_order.is_some()
    }
}

/// The owner's copy of one message, as far as the dialog list cares.
#[derive(Debug, Clone, Copy)]
struct BoxEntry {
    out: bool,
    date: i32,
    deleted: bool,
}

/// The fold. Feed it one user's events in pts order with [`DialogFold::apply`].
#[derive(Debug, Default)]
pub struct DialogFold {
    dialogs: HashMap<UserId, DialogState>,
    /// Which chat each box id is in (deleted ones too: a deletion names ids only).
    chat_of: HashMap<BoxId, UserId>,
    /// Each chat's boxes by id, so the top and the unread count cost what they read, not the
    /// whole history.
    chats: HashMap<UserId, BTreeMap<BoxId, BoxEntry>>,
    pts: i32,
}

impl DialogFold {
    pub fn new() -> Self {
        Self::default()
    }

    /// The pts of the last event applied.
    pub fn pts(&self) -> i32 {
        self.pts
    }

    pub fn apply(&mut self, pts: Pts, event: &UserEvent) {
        self.pts = pts.get();
        match event {
            UserEvent::NewMessage(e) => self.new_message(&e.message),
            UserEvent::DeleteMessages(e) => self.delete(e),
            UserEvent::ReadHistoryInbox(e) => {
                let max_id = e.max_id.get();
                if let Some(d) = self.dialogs.get(&e.peer_id) {
                    let read = d.read_inbox_max_id.max(max_id);
                    let unread = self.unread_after(e.peer_id, read);
                    if let Some(d) = self.dialogs.get_mut(&e.peer_id) {
                        d.read_inbox_max_id = read;
                        d.unread_count = unread;
                        d.unread_mark = false;
                    }
                }
            }
            UserEvent::ReadHistoryOutbox(e) => {
                if let Some(d) = self.dialogs.get_mut(&e.peer_id) {
                    d.read_outbox_max_id = d.read_outbox_max_id.max(e.max_id.get());
                }
            }
            UserEvent::DialogPinned(e) => {
                // A new pin goes on top: one less than the smallest position of the folder's pins.
                let top = self
                    .dialogs
                    .values()
                    .filter(|d| d.folder_id == e.folder_id)
                    .filter_map(|d| d.pinned_order)
                    .min()
                    .unwrap_or(1)
                    - 1;
                if let Some(d) = self
                    .dialogs
                    .get_mut(&e.peer_id)
                    .filter(|d| d.folder_id == e.folder_id)
                {
                    d.pinned_order = e.pinned.then_some(top);
                }
            }
            UserEvent::PinnedDialogs(e) => {
                for d in self.dialogs.values_mut() {
                    if d.folder_id == e.folder_id {
                        d.pinned_order = None;
                    }
                }
                for (i, peer) in e.order.iter().enumerate() {
                    if let Some(d) = self
                        .dialogs
                        .get_mut(peer)
                        .filter(|d| d.folder_id == e.folder_id)
                    {
                        d.pinned_order = Some(i as i32 + 1);
                    }
                }
            }
            UserEvent::DialogUnreadMark(e) => {
                if let Some(d) = self.dialogs.get_mut(&e.peer_id) {
                    d.unread_mark = e.unread;
                }
            }
            UserEvent::FolderPeers(e) => {
                // A dialog that changes folder leaves the old folder's pinned list.
                for f in &e.folder_peers {
                    if let Some(d) = self.dialogs.get_mut(&f.peer_id) {
                        if d.folder_id != f.folder_id {
                            d.folder_id = f.folder_id;
                            d.pinned_order = None;
                        }
                    }
                }
            }
            UserEvent::EditMessage(_)
            | UserEvent::ReadMessageContents(_)
            | UserEvent::PeerBlocked(_)
            | UserEvent::DialogFilter(_)
            | UserEvent::DialogFilterOrder(_)
            | UserEvent::DialogFilterTags(_)
            | UserEvent::ContactSaved(_)
            | UserEvent::ContactDeleted(_)
            | UserEvent::ContactsReset(_)
            | UserEvent::PeerSettings(_)
            | UserEvent::NotifySettings(_)
            | UserEvent::ProfilePhotoChanged(_) => {}
        }
    }

    /// Creates the dialog (again, in folder 0, if it had been removed) or moves its top up.
    fn new_message(&mut self, m: &OwnerMessage) {
        self.chat_of.insert(m.id, m.peer_id);
        self.chats.entry(m.peer_id).or_default().insert(
            m.id,
            BoxEntry {
                out: m.out,
                date: m.date,
                deleted: false,
            },
        );
        let id = m.id.get();
        match self.dialogs.get_mut(&m.peer_id) {
            None => {
                let mut d = DialogState::new(m.peer_id);
                d.top_message = id;
                d.top_message_date = m.date;
                d.unread_count = i32::from(!m.out);
                self.dialogs.insert(m.peer_id, d);
            }
            Some(d) => {
                if !m.out && id > d.read_inbox_max_id {
                    d.unread_count += 1;
                }
                if id > d.top_message {
                    d.top_message = id;
                    d.top_message_date = m.date;
                }
            }
        }
    }

    fn delete(&mut self, e: &DeleteMessages) {
        let mut peers: Vec<UserId> = Vec::new();
        for id in &e.ids {
            let Some(peer) = self.chat_of.get(id).copied() else {
                continue;
            };
            if let Some(b) = self.chats.get_mut(&peer).and_then(|c| c.get_mut(id)) {
                b.deleted = true;
            }
            if !peers.contains(&peer) {
                peers.push(peer);
            }
        }
        if let Some(clear) = &e.clear_history {
            if !peers.contains(&clear.peer_id) {
                peers.push(clear.peer_id);
            }
        }
        for peer in peers {
            let Some(read) = self.dialogs.get(&peer).map(|d| d.read_inbox_max_id) else {
                continue;
            };
            let top = self.top_of(peer);
            let unread = self.unread_after(peer, read);
            if let Some(d) = self.dialogs.get_mut(&peer) {
                (d.top_message, d.top_message_date) = top.unwrap_or((0, 0));
                d.unread_count = unread;
            }
        }
        if let Some(clear) = e.clear_history.as_ref().filter(|c| !c.just_clear) {
            if self.top_of(clear.peer_id).is_none() {
                self.dialogs.remove(&clear.peer_id);
            }
        }
    }

    /// The newest visible message of a chat: (id, date).
    fn top_of(&self, peer: UserId) -> Option<(i32, i32)> {
        self.chats
            .get(&peer)?
            .iter()
            .rev()
            .find(|(_, b)| !b.deleted)
            .map(|(id, b)| (id.get(), b.date))
    }

    /// Visible incoming messages of a chat above `read`.
    fn unread_after(&self, peer: UserId, read: i32) -> i32 {
        let Some(chat) = self.chats.get(&peer) else {
            return 0;
        };
        let above = match read.checked_add(1).and_then(BoxId::new) {
            Some(first) => chat.range(first..),
            None if read < 1 => chat.range(..),
            None => return 0,
        };
        above.filter(|(_, b)| !b.deleted && !b.out).count() as i32
    }

    /// The dialogs in list order: by folder, the pinned first (by position), then by top message
    /// date, top message and peer, newest first (as `messages.getDialogs` lists them).
    pub fn dialogs(&self) -> Vec<DialogState> {
        let mut all: Vec<DialogState> = self.dialogs.values().cloned().collect();
        all.sort_by(|a, b| {
            a.folder_id
                .cmp(&b.folder_id)
                .then_with(|| match (a.pinned_order, b.pinned_order) {
                    (Some(x), Some(y)) => x.cmp(&y).then(a.peer_id.cmp(&b.peer_id)),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => (b.top_message_date, b.top_message, b.peer_id).cmp(&(
                        a.top_message_date,
                        a.top_message,
                        a.peer_id,
                    )),
                })
        });
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{
        ClearHistory, DialogPinned, FolderPeer, FolderPeers, NewMessage, ReadHistoryInbox,
    };
    use crate::ids::MessageId;

    fn user(n: i64) -> UserId {
        UserId::new(n).unwrap()
    }

    fn msg(id: i32, peer: i64, out: bool) -> UserEvent {
        UserEvent::NewMessage(NewMessage {
            message: OwnerMessage {
                id: BoxId::new(id).unwrap(),
                message_id: MessageId(id as i64),
                peer_id: user(peer),
                from_id: if out { user(1) } else { user(peer) },
                out,
                date: 100 + id,
                text: "x".into(),
                entities: Vec::new(),
                silent: false,
                noforwards: false,
                reply_to: None,
                fwd_from: None,
                media_unread: false,
                random_id: None,
                edit_date: None,
                media: None,
                grouped_id: None,
            },
        })
    }

    fn fold(events: &[UserEvent]) -> DialogFold {
        let mut f = DialogFold::new();
        for (i, e) in events.iter().enumerate() {
            f.apply(Pts::new(i as i32 + 1).unwrap(), e);
        }
        f
    }

    #[test]
    fn unread_counts_follow_messages_reads_and_deletes() {
        let f = fold(&[
            msg(1, 2, false),
            msg(2, 2, false),
            msg(3, 2, true),
            msg(4, 3, false),
            UserEvent::ReadHistoryInbox(ReadHistoryInbox {
                peer_id: user(2),
                max_id: BoxId::new(1).unwrap(),
                still_unread_count: 1,
            }),
            UserEvent::DeleteMessages(DeleteMessages {
                ids: vec![BoxId::new(3).unwrap()],
                clear_history: None,
            }),
        ]);
        let d = f.dialogs();
        assert_eq!(d.len(), 2);
        let two = d.iter().find(|d| d.peer_id == user(2)).unwrap();
        assert_eq!(
            (two.top_message, two.unread_count, two.read_inbox_max_id),
            (2, 1, 1)
        );
        let three = d.iter().find(|d| d.peer_id == user(3)).unwrap();
        assert_eq!((three.top_message, three.unread_count), (4, 1));
        assert_eq!(d[0].peer_id, user(3), "newest first");
        assert_eq!(f.pts(), 6);
    }

    #[test]
    fn clearing_history_removes_the_dialog_and_pins_and_folders_apply() {
        let f = fold(&[
            msg(1, 2, false),
            msg(2, 3, false),
            msg(3, 4, false),
            UserEvent::DeleteMessages(DeleteMessages {
                ids: vec![BoxId::new(1).unwrap()],
                clear_history: Some(ClearHistory {
                    peer_id: user(2),
                    just_clear: false,
                }),
            }),
            UserEvent::DialogPinned(DialogPinned {
                peer_id: user(3),
                folder_id: 0,
                pinned: true,
            }),
            UserEvent::DialogPinned(DialogPinned {
                peer_id: user(4),
                folder_id: 0,
                pinned: true,
            }),
            UserEvent::FolderPeers(FolderPeers {
                folder_peers: vec![FolderPeer {
                    peer_id: user(3),
                    folder_id: 1,
                }],
            }),
        ]);
        let d = f.dialogs();
        assert_eq!(
            d.iter()
                .map(|d| (d.peer_id.get(), d.folder_id, d.pinned()))
                .collect::<Vec<_>>(),
            vec![(4, 0, true), (3, 1, false)]
        );
    }
}
