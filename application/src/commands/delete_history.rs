//! `messages.deleteHistory`: deletes a private chat's history newest first in batches of 1000; an
//! answer with `offset > 0` asks the client to call again. Without `just_clear` the dialog goes away
//! once empty (and comes back with the next message). "Delete chat" on a chat that is already
//! empty (cleared with `just_clear`) removes its dialog with an empty batch, which takes one pts
//! like every event, so every device of the owner learns it (live or by getDifference).

use domain::events::{ClearHistory, DeleteMessages as DeleteEvent, UserEvent};
use domain::{limits, BoxId, DomainError, UserId};
use serde::Deserialize;

use crate::error::AppError;
use crate::ports::{Origin, WriteTx};
use crate::tl::{AffectedHistory, InputPeer};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct DeleteHistory {
    #[serde(default)]
    pub just_clear: bool,
    #[serde(default)]
    pub revoke: bool,
    pub peer: InputPeer,
    #[serde(default)]
    pub max_id: i32,
    /// Accepted for compatibility; the seed keeps date bounds a no-op for now.
    #[serde(default)]
    pub min_date: Option<i32>,
    #[serde(default)]
    pub max_date: Option<i32>,
}

impl App {
    pub async fn delete_history(
        &self,
        caller: &Caller,
        req: DeleteHistory,
    ) -> Result<AffectedHistory, AppError> {
        let owner = caller.user_id;
        let peer = self.chat_peer(owner, &req.peer)?.user_id(owner);
        let revoke = req.revoke && peer != owner;

        let mut tx = self.store.begin().await?;
        let locked = tx.lock_users(&[owner, peer]).await?;
        if !locked.contains(&peer) {
            return Err(DomainError::PeerIdInvalid.into());
        }
        let batch = limits::MAX_DELETE_HISTORY_BATCH as i64;
        // TL's max_id is the newest message to delete (TDLib sends the last message's id and
        // expects it gone); `newest_ids` takes an exclusive bound. 0 (or int4's end) is no bound.
        let below = if req.max_id > 0 && req.max_id < i32::MAX {
            req.max_id + 1
        } else {
            0
        };
        let mut ids = tx.newest_ids(owner, peer, below, batch + 1).await?;
        let more = ids.len() as i64 > batch;
        ids.truncate(limits::MAX_DELETE_HISTORY_BATCH);
        let origin = Origin::from(caller);
        if ids.is_empty() {
            return remove_empty_dialogs(tx, owner, peer, revoke, &req, origin).await;
        }
        if revoke && tx.is_blocked(peer, owner).await? {
            return Err(DomainError::DeleteMessagesForbidden.into());
        }

        let mut theirs: Vec<BoxId> = Vec::new();
        if revoke {
            let mine = tx.messages(owner, &ids).await?;
            for m in mine {
                if let Some(copy) = tx.message_by_shared_id(peer, m.message_id).await? {
                    theirs.push(copy.id);
                }
            }
        }
        let pts_count = ids.len() as i32;
        let clear = ClearHistory {
            peer_id: peer,
            just_clear: req.just_clear,
        };
        let pts = tx
            .append(
                owner,
                UserEvent::DeleteMessages(DeleteEvent {
                    ids,
                    clear_history: Some(clear),
                }),
                origin,
            )
            .await?;
        if !theirs.is_empty() {
            let clear = ClearHistory {
                peer_id: owner,
                just_clear: req.just_clear,
            };
            tx.append(
                peer,
                UserEvent::DeleteMessages(DeleteEvent {
                    ids: theirs,
                    clear_history: Some(clear),
                }),
                origin,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(AffectedHistory {
            pts: pts.get(),
            pts_count,
            offset: i32::from(more),
        })
    }
}

/// Nothing is left to delete: without `just_clear` an empty dialog still goes away, by a
/// `delete_messages` with no ids and `clear_history` (the dialogs projection removes a dialog once
/// no message is left). With `revoke` the peer's dialog with the owner goes too if it is empty as
/// well (a peer who still has messages keeps them: revoke only reaches copies of messages still in
/// the owner's box). No dialog, or `just_clear`: nothing is appended.
async fn remove_empty_dialogs(
    mut tx: Box<dyn WriteTx>,
    owner: UserId,
    peer: UserId,
    revoke: bool,
    req: &DeleteHistory,
    origin: Origin,
) -> Result<AffectedHistory, AppError> {
    let pts = tx.current_pts(owner)?;
    let unchanged = AffectedHistory {
        pts: pts.get(),
        pts_count: 0,
        offset: 0,
    };
    // A bounded delete (max_id) that found nothing below it says nothing about the whole chat.
    if req.just_clear || (req.max_id > 0 && tx.has_messages_besides(owner, peer, &[]).await?) {
        return Ok(unchanged);
    }
    let mine = tx.dialog(owner, peer).await?.is_some();
    let theirs = revoke
        && tx.dialog(peer, owner).await?.is_some()
        && !tx.has_messages_besides(peer, owner, &[]).await?;
    if theirs && tx.is_blocked(peer, owner).await? {
        return Err(DomainError::DeleteMessagesForbidden.into());
    }
    let empty = |peer_id| {
        UserEvent::DeleteMessages(DeleteEvent {
            ids: Vec::new(),
            clear_history: Some(ClearHistory {
                peer_id,
                just_clear: false,
            }),
        })
    };
    let mut answer = unchanged;
    if mine {
        let pts = tx.append(owner, empty(peer), origin).await?;
        answer = AffectedHistory {
            pts: pts.get(),
            pts_count: 1,
            offset: 0,
        };
    }
    if theirs {
        tx.append(peer, empty(owner), origin).await?;
    }
    if mine || theirs {
        tx.commit().await?;
    }
    Ok(answer)
}
