//! `users.getFullUser`: one user with the caller's chat with them, its peer settings (the action
//! bar) and notification settings, as `messages.getPeerSettings` and `account.getNotifySettings`
//! answer them.

use domain::DomainError;
use serde::Deserialize;

use crate::commands::contacts::peer_settings_flags;
use crate::error::AppError;
use crate::tl::{
    FileRefs, InputUser, PeerNotifySettings, PeerSettings, TlPhoto, UserFull, UsersUserFull,
};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetFullUser {
    pub id: InputUser,
}

impl App {
    /// `USER_ID_INVALID` for `inputUserEmpty` and accounts that do not exist; a wrong access hash
    /// is `PEER_ID_INVALID`, as everywhere.
    pub async fn get_full_user(
        &self,
        caller: &Caller,
        req: GetFullUser,
    ) -> Result<UsersUserFull, AppError> {
        let owner = caller.user_id;
        let id = self
            .input_user(owner, &req.id)?
            .ok_or(DomainError::UserIdInvalid)?;
        // users_for reads the owner's contact entry too: `contact` says whether the owner has the
        // user as a contact, which is what the action bar depends on.
        let user = self
            .users_for(owner, [id])
            .await?
            .into_iter()
            .next()
            .ok_or(DomainError::UserIdInvalid)?;
        let is_self = id == owner;
        let hidden = !is_self && self.store.peer_bar_hidden(owner, id).await?;
        let flags = peer_settings_flags(is_self, !is_self && user.contact, hidden);
        let notify = self.store.notify_settings(owner, id).await?;
        // Only when the user shows one: most users have none, and their answer costs no read.
        let profile_photo = match user.photo {
            Some(_) => self
                .store
                .profile_photos(id)
                .await?
                .first()
                .map(|p| TlPhoto::of(p, FileRefs::now(&self.keys))),
            None => None,
        };
        Ok(UsersUserFull {
            full_user: UserFull {
                id: user.id,
                settings: PeerSettings::from(&flags),
                notify_settings: PeerNotifySettings::from(&notify),
                common_chats_count: 0,
                profile_photo,
            },
            chats: Vec::new(),
            users: vec![user],
        })
    }
}
