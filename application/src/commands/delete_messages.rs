//! `messages.deleteMessages`: soft-deletes the caller's boxes; with `revoke`, the other owner's boxes
//! of the same messages too. Each affected owner gets its own `updateDeleteMessages`.

use std::collections::{BTreeMap, BTreeSet};

use domain::events::{DeleteMessages as DeleteEvent, UserEvent};
use domain::{limits, BoxId, DomainError, UserId};
use serde::Deserialize;

use crate::error::AppError;
use crate::ports::Origin;
use crate::tl::AffectedMessages;
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct DeleteMessages {
    #[serde(default)]
    pub revoke: bool,
    pub id: Vec<i64>,
}

impl App {
    pub async fn delete_messages(
        &self,
        caller: &Caller,
        req: DeleteMessages,
    ) -> Result<AffectedMessages, AppError> {
        if req.id.len() > limits::MAX_DELETE_MESSAGE_IDS {
            return Err(DomainError::MessageIdsTooMuch.into());
        }
        // Ids <= 0 or beyond int32 cannot name a box: dropped, as the seed says.
        let ids: Vec<BoxId> = req
            .id
            .iter()
            .filter_map(|raw| BoxId::from_client(*raw))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let owner = caller.user_id;

        // Which chats the ids are in decides whom to lock. A box's peer never changes, but a box
        // named by the client may be created between this unlocked read and the lock; then the
        // locked re-read finds a peer we did not lock, and we start over with it included.
        let mut peers: BTreeSet<UserId> = BTreeSet::new();
        if req.revoke && !ids.is_empty() {
            peers.extend(
                self.store
                    .messages(owner, &ids)
                    .await?
                    .into_iter()
                    .map(|m| m.peer_id),
            );
        }
        for _attempt in 0..3 {
            let mut lock: Vec<UserId> = peers.iter().copied().collect();
            lock.push(owner);
            let mut tx = self.store.begin().await?;
            tx.lock_users(&lock).await?;
            let mine = tx.messages(owner, &ids).await?;
            if mine.is_empty() {
                let pts = tx.current_pts(owner)?;
                return Ok(AffectedMessages {
                    pts: pts.get(),
                    pts_count: 0,
                });
            }
            if req.revoke {
                let unlocked: Vec<UserId> = mine
                    .iter()
                    .map(|m| m.peer_id)
                    .filter(|p| !peers.contains(p) && *p != owner)
                    .collect();
                if !unlocked.is_empty() {
                    peers.extend(unlocked);
                    continue;
                }
            }

            let mut theirs: BTreeMap<UserId, Vec<BoxId>> = BTreeMap::new();
            if req.revoke {
                for m in &mine {
                    if m.peer_id == owner {
                        continue;
                    }
                    if tx.is_blocked(m.peer_id, owner).await? {
                        return Err(DomainError::DeleteMessagesForbidden.into());
                    }
                    if let Some(copy) = tx.message_by_shared_id(m.peer_id, m.message_id).await? {
                        theirs.entry(m.peer_id).or_default().push(copy.id);
                    }
                }
            }

            let origin = Origin::from(caller);
            let my_ids: Vec<BoxId> = mine.iter().map(|m| m.id).collect();
            let pts_count = my_ids.len() as i32;
            let pts = tx
                .append(
                    owner,
                    UserEvent::DeleteMessages(DeleteEvent {
                        ids: my_ids,
                        clear_history: None,
                    }),
                    origin,
                )
                .await?;
            for (peer, ids) in theirs {
                tx.append(
                    peer,
                    UserEvent::DeleteMessages(DeleteEvent {
                        ids,
                        clear_history: None,
                    }),
                    origin,
                )
                .await?;
            }
            tx.commit().await?;
            return Ok(AffectedMessages {
                pts: pts.get(),
                pts_count,
            });
        }
        Err(AppError::Store(crate::ports::StoreError::Bug(
            "delete_messages: the set of chats kept changing".into(),
        )))
    }
}
