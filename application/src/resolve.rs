//! Turning what a client named into owner-scoped ids, and the users an answer mentions into `user`
//! objects for that viewer. Every handler goes through here, so access hashes are checked in one place.

use std::collections::BTreeSet;

use domain::peer::ChatPeer;
use domain::{DomainError, UserId};

use crate::error::AppError;
use crate::tl::{InputPeer, InputUser, User};
use crate::App;

impl App {
    /// A private-chat peer: Saved Messages or another account named with the caller's access hash.
    /// Whether the account exists is checked when its sequence row is locked or its record loaded.
    pub(crate) fn chat_peer(&self, caller: UserId, peer: &InputPeer) -> Result<ChatPeer, AppError> {
        match peer {
            InputPeer::SelfPeer => Ok(ChatPeer::SelfChat),
            InputPeer::User {
                user_id,
                access_hash,
            } => {
                let target = UserId::new(*user_id)?;
                if target == caller {
                    return Ok(ChatPeer::SelfChat);
                }
                if !self.keys.verify(caller, target, *access_hash) {
                    return Err(DomainError::PeerIdInvalid.into());
                }
                Ok(ChatPeer::User(target))
            }
            _ => Err(DomainError::PeerIdInvalid.into()),
        }
    }

    /// Like [`App::chat_peer`], then confirms the account exists.
    pub(crate) async fn existing_chat_peer(
        &self,
        caller: UserId,
        peer: &InputPeer,
    ) -> Result<UserId, AppError> {
        let target = self.chat_peer(caller, peer)?.user_id(caller);
        if target != caller && self.store.users(&[target]).await?.is_empty() {
            return Err(DomainError::PeerIdInvalid.into());
        }
        Ok(target)
    }

    /// A user named by `InputUser`, with the caller's access hash. `None` for `inputUserEmpty`.
    pub(crate) fn input_user(
        &self,
        caller: UserId,
        user: &InputUser,
    ) -> Result<Option<UserId>, AppError> {
        match user {
            InputUser::Empty => Ok(None),
            InputUser::SelfUser => Ok(Some(caller)),
            InputUser::User {
                user_id,
                access_hash,
            } => {
                let target = UserId::new(*user_id).map_err(|_| DomainError::UserIdInvalid)?;
                // Like `inputPeerUser` (docs/json-api.md): a wrong access hash is PEER_ID_INVALID.
                if target != caller && !self.keys.verify(caller, target, *access_hash) {
                    return Err(DomainError::PeerIdInvalid.into());
                }
                Ok(Some(target))
            }
            InputUser::FromMessage {} => Err(DomainError::UserIdInvalid.into()),
        }
    }

    /// `user` objects for every id, as `viewer` sees them (unknown ids are left out).
    pub(crate) async fn users_for(
        &self,
        viewer: UserId,
        ids: impl IntoIterator<Item = UserId>,
    ) -> Result<Vec<User>, AppError> {
        let unique: BTreeSet<UserId> = ids.into_iter().collect();
        if unique.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<UserId> = unique.into_iter().collect();
        let records = self.store.users(&ids).await?;
        // The viewer's own names for its contacts replace the users' names (seed: contact names are
        // owner-view data).
        let (mine, theirs) = self.store.contact_links(viewer, &ids).await?;
        Ok(records
            .iter()
            .map(|r| {
                let contact = mine.iter().find(|c| c.user_id == r.id);
                User::for_viewer(viewer, r, &self.keys)
                    .with_contact(contact, theirs.contains(&r.id))
            })
            .collect())
    }
}
