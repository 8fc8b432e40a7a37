//! `messages.getDialogs`: the dialog list of a folder by seek pagination on (top date, top id, peer).

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
        let folder_id = folder(req.folder_id)?;
        let limit = if req.limit <= 0 { limits::MAX_DIALOGS_LIMIT } else { req.limit.min(limits::MAX_DIALOGS_LIMIT) };
        let offset_peer = match &req.offset_peer {
            InputPeer::Empty => 0,
            other => self.chat_peer(owner, other).map_err(|_| DomainError::OffsetPeerIdInvalid)?.user_id(owner).get(),
        };
        // The cursor is exclusive: without an offset peer, the dialog whose top is exactly
        // (offset_date, offset_id) was on the previous page, so no peer id may tie past it.
        let cursor = (req.offset_date > 0 || req.offset_id > 0).then_some(DialogCursor {
            top_message_date: req.offset_date,
            top_message: req.offset_id,
            peer_id: offset_peer,
        });

        let count = self.store.dialogs_count(owner, folder_id).await?;
        if req.hash != 0 {
            let rows = self.store.dialogs_hash_input(owner, folder_id).await?;
            let hash = rows.iter().fold(0u64, |acc, (peer, top, date)| {
                fold_hash(fold_hash(fold_hash(acc, *peer as u64), *top as u64), *date as u64)
            });
            if hash as i64 == req.hash {
                return Ok(Dialogs::NotModified { count });
            }
        }
        let page = self.store.dialogs_page(owner, folder_id, cursor, limit).await?;
        let (dialogs, messages, users) = self.dialog_bundle(owner, &page).await?;
        if cursor.is_none() && (page.len() as i64) >= count {
            Ok(Dialogs::All { dialogs, messages, chats: Vec::new(), users })
        } else {
            Ok(Dialogs::Slice { count, dialogs, messages, chats: Vec::new(), users })
        }
    }

    /// Dialogs with their top messages and the users both mention, as one viewer sees them.
    pub(crate) async fn dialog_bundle(
        &self,
        owner: UserId,
        page: &[DialogRecord],
    ) -> Result<(Vec<Dialog>, Vec<Message>, Vec<crate::tl::User>), AppError> {
        let tops: Vec<domain::BoxId> = page.iter().filter_map(|d| domain::BoxId::new(d.top_message)).collect();
        let top_messages = if tops.is_empty() { Vec::new() } else { self.store.messages(owner, &tops).await? };
        let mut mentioned: Vec<UserId> = page.iter().map(|d| d.peer_id).collect();
        mentioned.extend(top_messages.iter().flat_map(users_of_message));
        let users = self.users_for(owner, mentioned).await?;
        let dialogs = page.iter().map(Dialog::from).collect();
        let messages = top_messages.iter().map(Message::from).collect();
        Ok((dialogs, messages, users))
    }
}
