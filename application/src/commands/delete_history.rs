//! `messages.deleteHistory`: deletes a private chat's history newest first in batches of 1000; an
//! answer with `offset > 0` asks the client to call again. Without `just_clear` the dialog goes away
//! once empty (and comes back with the next message).

use domain::events::{ClearHistory, DeleteMessages as DeleteEvent, UserEvent};
use domain::{limits, BoxId, DomainError};
use serde::Deserialize;

use crate::error::AppError;
use crate::ports::Origin;
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
        if ids.is_empty() {
            let pts = tx.current_pts(owner)?;
            return Ok(AffectedHistory {
                pts: pts.get(),
                pts_count: 0,
                offset: 0,
            });
        }
        if revoke && tx.is_blocked(peer, owner).await? {
            return Err(DomainError::DeleteMessagesForbidden.into());
        }

        let origin = Origin::from(caller);
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
