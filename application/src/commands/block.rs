//! `contacts.block` / `contacts.unblock`: the caller's block list, the private-chat privacy gate.
//! Blocking twice (or unblocking someone not blocked) changes nothing and appends nothing.

use domain::events::{PeerBlocked, UserEvent};
use domain::peer::ChatPeer;
use domain::DomainError;
use serde::Deserialize;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::Origin;
use crate::tl::InputPeer;
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct Block {
    #[serde(default)]
    pub my_stories_from: bool,
    pub id: InputPeer,
}

impl App {
    /// Answers TL `Bool` (always true, as Telegram does).
    pub async fn set_blocked(
        &self,
        caller: &Caller,
        req: Block,
        blocked: bool,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let peer = match self.chat_peer(owner, &req.id)? {
            ChatPeer::SelfChat => return Err(DomainError::ContactIdInvalid.into()),
            ChatPeer::User(p) => p,
        };
        let mut tx = self.store.begin().await?;
        // Only the owner's own block list changes; the peer's log is untouched.
        tx.lock_users(&[owner]).await?;
        if self.store.users(&[peer]).await?.is_empty() {
            return Err(DomainError::PeerIdInvalid.into());
        }
        if tx.is_blocked(owner, peer).await? == blocked {
            return Ok(true);
        }
        let event = PeerBlocked {
            peer_id: peer,
            blocked,
            my_stories_from: req.my_stories_from,
            date: unix_now(),
        };
        tx.append(owner, UserEvent::PeerBlocked(event), Origin::from(caller))
            .await?;
        tx.commit().await?;
        Ok(true)
    }
}
