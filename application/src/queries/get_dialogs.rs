//! `messages.getDialogs`: the dialog list of a folder by seek pagination on (top date, top id, peer).

use domain::events::FilterSubject;
use domain::message::OwnerMessage;
use domain::{limits, DomainError, UserId};
use serde::Deserialize;

use crate::error::AppError;
use crate::ports::{DialogCursor, DialogRecord};
use crate::tl::{long, users_of_message, Dialog, Dialogs, InputPeer, Message};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetDialogs {
    #[serde(default)]
    pub exclude_pinned: bool,
    #[serde(default)]
    pub folder_id: Option<i32>,
    #[serde(default)]
    pub offset_date: i32,
    #[serde(default)]
    pub offset_id: i32,
    #[serde(default = "empty_peer")]
    pub offset_peer: InputPeer,
    #[serde(default)]
    pub limit: i32,
    #[serde(default, deserialize_with = "long")]
    pub hash: i64,
}

fn empty_peer() -> InputPeer {
    InputPeer::Empty
}

/// Telegram's list hash: folds each number into a running 64-bit value.
pub fn fold_hash(acc: u64, value: u64) -> u64 {
    let mut h = acc;
    h ^= h >> 21;
    h ^= h << 35;
    h ^= h >> 4;
    h.wrapping_add(value)
}

/// (peer, top message, its date) of dialogs, the input of the list hash.
fn hash_rows(rows: &[DialogRecord]) -> Vec<(i64, i32, i32)> {
    rows.iter()
        .map(|d| (d.peer_id.get(), d.top_message, d.top_message_date))
        .collect()
}

/// The hash of a dialog list in list order.
fn list_hash(rows: impl IntoIterator<Item = (i64, i32, i32)>) -> i64 {
    rows.into_iter().fold(0u64, |acc, (peer, top, date)| {
        fold_hash(
            fold_hash(fold_hash(acc, peer as u64), top as u64),
            date as u64,
        )
    }) as i64
}

/// A folder id the dialog list knows: 0 (main list) or 1 (archive).
pub(crate) fn folder(raw: Option<i32>) -> Result<i16, DomainError> {
    match raw.unwrap_or(0) {
        0 => Ok(0),
        1 => Ok(1),
        _ => Err(DomainError::FolderIdInvalid),
    }
}

impl App {
    pub async fn get_dialogs(&self, caller: &Caller, req: GetDialogs) -> Result<Dialogs, AppError> {
        let owner = caller.user_id;
        let filter_id = req.folder_id.filter(|f| *f >= 2);
        let folder_id = if filter_id.is_some() {
            0
        } else {
            folder(req.folder_id)?
        };
        let limit = if req.limit <= 0 {
            limits::MAX_DIALOGS_LIMIT
        } else {
            req.limit.min(limits::MAX_DIALOGS_LIMIT)
        };
        let offset_peer = match &req.offset_peer {
            InputPeer::Empty => 0,
            other => self
                .chat_peer(owner, other)
                .map_err(|_| DomainError::OffsetPeerIdInvalid)?
                .user_id(owner)
                .get(),
        };
        // The cursor is exclusive: without an offset peer, the dialog whose top is exactly
        // (offset_date, offset_id) was on the previous page, so no peer id may tie past it.
        let cursor = (req.offset_date > 0 || req.offset_id > 0).then_some(DialogCursor {
            top_message_date: req.offset_date,
            top_message: req.offset_id,
            peer_id: offset_peer,
        });
        if let Some(id) = filter_id {
            return self
                .get_filtered_dialogs(owner, id, req.exclude_pinned, cursor, limit, req.hash)
                .await;
        }

        // Pinned dialogs lead the folder's list (unless excluded) and are left out of the pages
        // that follow; offsets come from the last unpinned dialog of a page. The pins, the page
        // (with room for leaving the pins out), the folder's count and the top messages are one
        // round trip (docs/performance.md, "Reads").
        let extra_for_pins = cursor.is_some() || req.exclude_pinned;
        let list = self
            .store
            .dialog_list(owner, folder_id, cursor, limit, extra_for_pins)
            .await?;
        let pinned = list.pinned;
        let is_pinned = |peer: UserId| pinned.iter().any(|p| p.peer_id == peer);
        let mut count = list.count;
        if req.exclude_pinned {
            count -= pinned.len() as i64;
        }
        if req.hash != 0 {
            let rows = self.store.dialogs_hash_input(owner, folder_id).await?;
            let lead = if req.exclude_pinned {
                Vec::new()
            } else {
                hash_rows(&pinned)
            };
            let rest = rows
                .into_iter()
                .filter(|(peer, _, _)| !pinned.iter().any(|p| p.peer_id.get() == *peer));
            if list_hash(lead.into_iter().chain(rest)) == req.hash {
                return Ok(Dialogs::NotModified { count });
            }
        }
        let mut page = Vec::new();
        if cursor.is_none() && !req.exclude_pinned {
            page.extend(pinned.iter().cloned());
        }
        let room = (limit as usize).saturating_sub(page.len());
        page.extend(
            list.page
                .into_iter()
                .filter(|d| !is_pinned(d.peer_id))
                .take(room),
        );
        let (dialogs, messages, users) = self
            .dialog_bundle_with(owner, &page, Some(&list.top_messages))
            .await?;
        if cursor.is_none() && (page.len() as i64) >= count {
            Ok(Dialogs::All {
                dialogs,
                messages,
                chats: Vec::new(),
                users,
            })
        } else {
            Ok(Dialogs::Slice {
                count,
                dialogs,
                messages,
                chats: Vec::new(),
                users,
            })
        }
    }

    /// `getDialogs` with `folder_id` ≥ 2: the dialogs of that custom filter, its pinned peers first,
    /// over both folders; `count` and `hash` are of the filtered list.
    async fn get_filtered_dialogs(
        &self,
        owner: UserId,
        filter_id: i32,
        exclude_pinned: bool,
        cursor: Option<DialogCursor>,
        limit: i32,
        hash: i64,
    ) -> Result<Dialogs, AppError> {
        let set = self.store.dialog_filters(owner).await?;
        let rules = set
            .filters
            .into_iter()
            .find(|f| f.id == filter_id)
            .ok_or(DomainError::FolderIdInvalid)?;
        let contacts = self.store.contacts(owner).await?;
        let all = self.store.all_dialogs(owner).await?;
        let now = crate::clock::unix_now();
        let matched: Vec<DialogRecord> = all
            .into_iter()
            .filter(|d| {
                rules.includes(&FilterSubject {
                    peer: d.peer_id,
                    contact: d.peer_id == owner || contacts.iter().any(|c| c.user_id == d.peer_id),
                    folder_id: d.folder_id,
                    unread_count: d.unread_count,
                    unread_mark: d.unread_mark,
                    muted: d.notify.muted_at(now),
                })
            })
            .map(|mut d| {
                d.pinned = rules.pinned_peers.contains(&d.peer_id);
                d
            })
            .collect();
        let mut lead: Vec<DialogRecord> = Vec::new();
        if !exclude_pinned {
            for p in &rules.pinned_peers {
                if let Some(d) = matched.iter().find(|d| d.peer_id == *p) {
                    lead.push(d.clone());
                }
            }
        }
        let rest: Vec<DialogRecord> = matched.into_iter().filter(|d| !d.pinned).collect();
        let count = (lead.len() + rest.len()) as i64;
        if hash != 0 && list_hash(hash_rows(&lead).into_iter().chain(hash_rows(&rest))) == hash {
            return Ok(Dialogs::NotModified { count });
        }
        let mut page = Vec::new();
        if cursor.is_none() {
            page.extend(lead);
        }
        let room = (limit as usize).saturating_sub(page.len());
        page.extend(
            rest.into_iter()
                .filter(|d| match cursor {
                    None => true,
                    Some(c) => {
                        (d.top_message_date, d.top_message, d.peer_id.get())
                            < (c.top_message_date, c.top_message, c.peer_id)
                    }
                })
                .take(room),
        );
        let (dialogs, messages, users) = self.dialog_bundle(owner, &page).await?;
        if cursor.is_none() && (page.len() as i64) >= count {
            Ok(Dialogs::All {
                dialogs,
                messages,
                chats: Vec::new(),
                users,
            })
        } else {
            Ok(Dialogs::Slice {
                count,
                dialogs,
                messages,
                chats: Vec::new(),
                users,
            })
        }
    }

    /// Dialogs with their top messages and the users both mention, as one viewer sees them.
    pub(crate) async fn dialog_bundle(
        &self,
        owner: UserId,
        page: &[DialogRecord],
    ) -> Result<(Vec<Dialog>, Vec<Message>, Vec<crate::tl::User>), AppError> {
        self.dialog_bundle_with(owner, page, None).await
    }

    /// [`App::dialog_bundle`] with the top messages already read (any superset of the page's, in
    /// any order), or read here when `None`.
    pub(crate) async fn dialog_bundle_with(
        &self,
        owner: UserId,
        page: &[DialogRecord],
        read: Option<&[OwnerMessage]>,
    ) -> Result<(Vec<Dialog>, Vec<Message>, Vec<crate::tl::User>), AppError> {
        let tops: Vec<domain::BoxId> = page
            .iter()
            .filter_map(|d| domain::BoxId::new(d.top_message))
            .collect();
        let top_messages: Vec<OwnerMessage> = match read {
            // In the page's order, as `messages` answers them.
            Some(read) => tops
                .iter()
                .filter_map(|id| read.iter().find(|m| m.id == *id).cloned())
                .collect(),
            None if tops.is_empty() => Vec::new(),
            None => self.store.messages(owner, &tops).await?,
        };
        let mut mentioned: Vec<UserId> = page.iter().map(|d| d.peer_id).collect();
        mentioned.extend(top_messages.iter().flat_map(users_of_message));
        let users = self.users_for(owner, mentioned).await?;
        let dialogs = page.iter().map(Dialog::from).collect();
        let messages = top_messages
            .iter()
            .map(|m| Message::render(m, self.file_refs()))
            .collect();
        Ok((dialogs, messages, users))
    }
}
