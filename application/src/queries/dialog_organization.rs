//! Reads of dialog organization: `messages.getPinnedDialogs`, `messages.getDialogUnreadMarks`,
//! `messages.getDialogFilters`, `contacts.getContacts`, `messages.getPeerSettings`.

use domain::UserId;
use serde::Deserialize;

use crate::commands::contacts::peer_settings_flags;
use crate::error::AppError;
use crate::queries::get_dialogs::{fold_hash, folder};
use crate::tl::{
    long, Contact, Contacts, DialogFilter, DialogFilters, DialogPeer, InputPeer,
    MessagesPeerSettings, PeerDialogs, PeerSettings,
};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetPinnedDialogs {
    #[serde(default)]
    pub folder_id: i32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GetContacts {
    #[serde(default, deserialize_with = "long")]
    pub hash: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GetPeerSettings {
    pub peer: InputPeer,
}

/// Telegram's contacts hash: the contact user ids, ascending, folded.
pub fn contacts_hash(ids: &[UserId]) -> i64 {
    ids.iter()
        .fold(0u64, |acc, id| fold_hash(acc, id.get() as u64)) as i64
}

impl App {
    pub async fn get_pinned_dialogs(
        &self,
        caller: &Caller,
        req: GetPinnedDialogs,
    ) -> Result<PeerDialogs, AppError> {
        let owner = caller.user_id;
        let folder_id = folder(Some(req.folder_id))?;
        let rows = self.store.pinned_dialogs(owner, folder_id).await?;
        let (dialogs, messages, users) = self.dialog_bundle(owner, &rows).await?;
        let state = self.state_of(owner).await?;
        Ok(PeerDialogs {
            dialogs,
            messages,
            chats: Vec::new(),
            users,
            state,
        })
    }

    /// Vector of `dialogPeer`.
    pub async fn get_dialog_unread_marks(
        &self,
        caller: &Caller,
    ) -> Result<Vec<DialogPeer>, AppError> {
        let peers = self.store.unread_marked(caller.user_id).await?;
        Ok(peers.into_iter().map(DialogPeer::user).collect())
    }

    /// `dialogFilterDefault` first, then the account's filters in its order.
    pub async fn get_dialog_filters(&self, caller: &Caller) -> Result<DialogFilters, AppError> {
        let owner = caller.user_id;
        let set = self.store.dialog_filters(owner).await?;
        let mut filters = vec![DialogFilter::Default];
        filters.extend(
            set.filters
                .iter()
                .map(|f| DialogFilter::of(owner, f, &self.keys)),
        );
        Ok(DialogFilters {
            tags_enabled: set.tags_enabled,
            filters,
        })
    }

    pub async fn get_contacts(
        &self,
        caller: &Caller,
        req: GetContacts,
    ) -> Result<Contacts, AppError> {
        let owner = caller.user_id;
        let contacts = self.store.contacts(owner).await?;
        let ids: Vec<UserId> = contacts.iter().map(|c| c.user_id).collect();
        if req.hash != 0 && contacts_hash(&ids) == req.hash {
            return Ok(Contacts::NotModified);
        }
        let (_, theirs) = self.store.contact_links(owner, &ids).await?;
        let list = ids
            .iter()
            .map(|id| Contact {
                user_id: id.get(),
                mutual: theirs.contains(id),
            })
            .collect();
        let saved_count = contacts.iter().filter(|c| c.imported).count() as i32;
        let users = self.users_for(owner, ids).await?;
        Ok(Contacts::All {
            contacts: list,
            saved_count,
            users,
        })
    }

    pub async fn get_peer_settings(
        &self,
        caller: &Caller,
        req: GetPeerSettings,
    ) -> Result<MessagesPeerSettings, AppError> {
        let owner = caller.user_id;
        let peer = self.existing_chat_peer(owner, &req.peer).await?;
        let is_self = peer == owner;
        let (mine, _) = if is_self {
            (Vec::new(), Vec::new())
        } else {
            self.store.contact_links(owner, &[peer]).await?
        };
        let hidden = !is_self && self.store.peer_bar_hidden(owner, peer).await?;
        let flags = peer_settings_flags(is_self, !mine.is_empty(), hidden);
        let users = self.users_for(owner, [peer]).await?;
        Ok(MessagesPeerSettings {
            settings: PeerSettings::from(&flags),
            chats: Vec::new(),
            users,
        })
    }
}
