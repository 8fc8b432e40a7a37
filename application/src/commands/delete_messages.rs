//! `messages.deleteMessages`: soft-deletes the caller's boxes; with `revoke`, the other owner's boxes
//! of the same messages too. Each affected owner gets its own `updateDeleteMessages`.

use std::collections::{BTreeMap, BTreeSet};

use domain::events::{DeleteMessages as DeleteEvent, UserEvent};
use domain::{limits, BoxId, DomainError, UserId};
use serde::Deserialize;

use super::batched_write::Write;
use crate::error::AppError;
use crate::ports::{Origin, StoreError, WriteTx};
use crate::tl::AffectedMessages;
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct DeleteMessages {
    #[serde(default)]
    pub revoke: bool,
    pub id: Vec<i64>,
}

/// A deletion waiting for its transaction, with the chats its boxes were in when last read.
#[derive(Debug, Clone)]
pub(crate) struct PreparedDelete {
    pub owner: UserId,
    /// The other accounts to lock (with `revoke`, the peers of the named boxes), ascending.
    pub peers: Vec<UserId>,
    pub ids: Vec<BoxId>,
    pub revoke: bool,
    pub origin: Origin,
}

impl PreparedDelete {
    /// The accounts its transaction locks.
    pub(crate) fn lock_set(&self) -> Vec<UserId> {
        let mut lock = self.peers.clone();
        lock.push(self.owner);
        lock
    }
}

/// What a deletion's locked run found.
#[derive(Debug)]
pub(crate) enum Deleted {
    Done(AffectedMessages),
    /// With `revoke`, a named box is in a chat whose account this transaction has not locked (it
    /// was created after the unlocked read): nothing was written; run again locking these too.
    MoreChats(Vec<UserId>),
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
        // locked run finds a peer we did not lock, and we start over with it included.
        let mut peers: BTreeSet<UserId> = BTreeSet::new();
        if req.revoke && !ids.is_empty() {
            peers.extend(
                self.store
                    .messages(owner, &ids)
                    .await?
                    .into_iter()
                    .map(|m| m.peer_id)
                    .filter(|p| *p != owner),
            );
        }
        for _attempt in 0..3 {
            let delete = Write::Delete(PreparedDelete {
                owner,
                peers: peers.iter().copied().collect(),
                ids: ids.clone(),
                revoke: req.revoke,
                origin: Origin::from(caller),
            });
            // Group commit takes writes between at most two accounts.
            let written = if peers.len() <= 1 {
                self.write(delete).await?
            } else {
                delete.run_alone(self.store.as_ref()).await?
            };
            match written.deleted()? {
                Deleted::Done(affected) => return Ok(affected),
                Deleted::MoreChats(more) => peers.extend(more),
            }
        }
        Err(AppError::Store(StoreError::Bug(
            "delete_messages: the set of chats kept changing".into(),
        )))
    }
}

/// The deletion's work inside a transaction that has locked its accounts; the caller commits.
pub(crate) async fn delete_locked(
    tx: &mut dyn WriteTx,
    d: &PreparedDelete,
) -> Result<Deleted, AppError> {
    let owner = d.owner;
    let mine = tx.messages(owner, &d.ids).await?;
    if mine.is_empty() {
        let pts = tx.current_pts(owner)?;
        return Ok(Deleted::Done(AffectedMessages {
            pts: pts.get(),
            pts_count: 0,
        }));
    }
    if d.revoke {
        let unlocked: BTreeSet<UserId> = mine
            .iter()
            .map(|m| m.peer_id)
            .filter(|p| !tx.holds(*p))
            .collect();
        if !unlocked.is_empty() {
            return Ok(Deleted::MoreChats(unlocked.into_iter().collect()));
        }
    }

    let mut theirs: BTreeMap<UserId, Vec<BoxId>> = BTreeMap::new();
    if d.revoke {
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

    let my_ids: Vec<BoxId> = mine.iter().map(|m| m.id).collect();
    let pts_count = my_ids.len() as i32;
    let pts = tx
        .append(
            owner,
            UserEvent::DeleteMessages(DeleteEvent {
                ids: my_ids,
                clear_history: None,
            }),
            d.origin,
        )
        .await?;
    for (peer, ids) in theirs {
        tx.append(
            peer,
            UserEvent::DeleteMessages(DeleteEvent {
                ids,
                clear_history: None,
            }),
            d.origin,
        )
        .await?;
    }
    Ok(Deleted::Done(AffectedMessages {
        pts: pts.get(),
        pts_count,
    }))
}
