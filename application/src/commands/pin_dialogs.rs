//! `messages.toggleDialogPin` and `messages.reorderPinnedDialogs`: the pinned list of each folder
//! (main list, archive), with Telegram's per-folder limits. A repeat that changes nothing appends
//! nothing.

use domain::events::{DialogPinned, PinnedDialogs, UserEvent};
use domain::{limits, DomainError, UserId};
use serde::Deserialize;

use crate::error::AppError;
use crate::ports::Origin;
use crate::queries::get_dialogs::folder;
use crate::queries::get_peer_dialogs::InputDialogPeer;
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct ToggleDialogPin {
    #[serde(default)]
    pub pinned: bool,
    pub peer: InputDialogPeer,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReorderPinnedDialogs {
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub folder_id: i32,
    pub order: Vec<InputDialogPeer>,
}

/// Most pinned dialogs a folder may hold.
pub(crate) fn pin_limit(folder_id: i16) -> usize {
    if folder_id == 1 {
        limits::MAX_PINNED_DIALOGS_ARCHIVE
    } else {
        limits::MAX_PINNED_DIALOGS_MAIN
    }
}

impl App {
    /// The private chat an `InputDialogPeer` names (folders are not dialogs one can act on here).
    pub(crate) fn dialog_peer(
        &self,
        owner: UserId,
        peer: &InputDialogPeer,
    ) -> Result<UserId, AppError> {
        match peer {
            InputDialogPeer::Peer { peer } => Ok(self.chat_peer(owner, peer)?.user_id(owner)),
            InputDialogPeer::Folder { .. } => Err(DomainError::PeerIdInvalid.into()),
        }
    }

    /// Answers TL `Bool`.
    pub async fn toggle_dialog_pin(
        &self,
        caller: &Caller,
        req: ToggleDialogPin,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let peer = self.dialog_peer(owner, &req.peer)?;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let dialog = tx
            .dialog(owner, peer)
            .await?
            .ok_or(DomainError::PeerHistoryEmpty)?;
        if dialog.pinned == req.pinned {
            return Ok(true);
        }
        if req.pinned
            && tx.pinned_peers(owner, dialog.folder_id).await?.len() >= pin_limit(dialog.folder_id)
        {
            return Err(DomainError::PinnedDialogsTooMuch.into());
        }
        let event = DialogPinned {
            peer_id: peer,
            folder_id: dialog.folder_id,
            pinned: req.pinned,
        };
        tx.append(owner, UserEvent::DialogPinned(event), Origin::from(caller))
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Answers TL `Bool`. The new pinned list is `order` (each must be a dialog of the folder), then,
    /// unless `force`, the dialogs pinned before but not listed, in their previous order.
    pub async fn reorder_pinned_dialogs(
        &self,
        caller: &Caller,
        req: ReorderPinnedDialogs,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let folder_id = folder(Some(req.folder_id))?;
        let mut listed: Vec<UserId> = Vec::with_capacity(req.order.len());
        for p in &req.order {
            let peer = self.dialog_peer(owner, p)?;
            if !listed.contains(&peer) {
                listed.push(peer);
            }
        }
        if listed.len() > pin_limit(folder_id) {
            return Err(DomainError::PinnedDialogsTooMuch.into());
        }
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        for peer in &listed {
            match tx.dialog(owner, *peer).await? {
                Some(d) if d.folder_id == folder_id => {}
                _ => return Err(DomainError::PeerHistoryEmpty.into()),
            }
        }
        let current = tx.pinned_peers(owner, folder_id).await?;
        let mut order = listed;
        if !req.force {
            order.extend(
                current
                    .iter()
                    .copied()
                    .filter(|p| !order.contains(p))
                    .collect::<Vec<_>>(),
            );
        }
        if order.len() > pin_limit(folder_id) {
            return Err(DomainError::PinnedDialogsTooMuch.into());
        }
        if order == current {
            return Ok(true);
        }
        tx.append(
            owner,
            UserEvent::PinnedDialogs(PinnedDialogs { folder_id, order }),
            Origin::from(caller),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}
