//! Turning what a client named into owner-scoped ids, and the users an answer mentions into `user`
//! objects for that viewer. Every handler goes through here, so access hashes are checked in one place.

use std::collections::BTreeSet;

use domain::entities::Entities;
use domain::limits::MAX_MESSAGE_ENTITIES;
use domain::message_entity::MessageEntity;
use domain::peer::ChatPeer;
use domain::{DomainError, UserId};
use serde_json::Value;

use crate::error::AppError;
use crate::tl::{InputMentionName, InputPeer, InputUser, User};
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

    /// Entities a client sent, typed and checked against the text (`text_utf16_len`): each must be
    /// exactly a known constructor with its fields. `inputMessageEntityMentionName` names its user
    /// with the caller's access hash and is stored as `messageEntityMentionName`; a
    /// `messageEntityMentionName` from a client (a bare user id, no access hash) is refused, so a
    /// message can only mention users its sender can reach.
    pub(crate) fn entities(
        &self,
        caller: UserId,
        raw: Vec<Value>,
        text_utf16_len: usize,
    ) -> Result<Entities, AppError> {
        let typed = self.typed_entities(caller, raw)?;
        Ok(Entities::parse(typed, text_utf16_len)?)
    }

    /// [`App::entities`] but for the check against the text, for a text known only later (an
    /// edit's, once its message is read under the lock): `Entities::parse` does that.
    pub(crate) fn typed_entities(
        &self,
        caller: UserId,
        raw: Vec<Value>,
    ) -> Result<Vec<MessageEntity>, AppError> {
        if raw.len() > MAX_MESSAGE_ENTITIES {
            return Err(DomainError::EntitiesTooLong.into());
        }
        let mut typed = Vec::with_capacity(raw.len());
        for entity in raw {
            match entity.get("_").and_then(Value::as_str) {
                Some("inputMessageEntityMentionName") => {
                    let InputMentionName::Mention {
                        offset,
                        length,
                        user_id,
                    } = serde_json::from_value(entity).map_err(|_| DomainError::EntityInvalid)?;
                    let user_id = self
                        .input_user(caller, &user_id)
                        .ok()
                        .flatten()
                        .ok_or(DomainError::EntityMentionUserInvalid)?;
                    typed.push(MessageEntity::MentionName {
                        offset,
                        length,
                        user_id,
                    });
                }
                Some("messageEntityMentionName") => {
                    return Err(DomainError::EntityMentionUserInvalid.into())
                }
                _ => typed.push(Entities::entity_from_json(entity)?),
            }
        }
        Ok(typed)
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
        // The records and the viewer's contact links in one round trip. The viewer's own names for
        // its contacts replace the users' names (seed: contact names are owner-view data).
        let mut seen = self.store.users_seen_by(viewer, &ids).await?;
        // In id order whatever order the rows came in (a rebuilt table returns them in another),
        // so the same state always gives the same answer.
        seen.sort_unstable_by_key(|s| s.record.id);
        Ok(seen
            .iter()
            .map(|s| {
                User::for_viewer(viewer, &s.record, &self.keys)
                    .with_contact(s.contact.as_ref(), s.has_viewer)
            })
            .collect())
    }
}
