//! `messages.markDialogUnread`: the manual unread mark. Reading the history clears it (the
//! `read_history_inbox` projection does).

use domain::events::{DialogUnreadMark, UserEvent};
use domain::DomainError;
use serde::Deserialize;

use crate::error::AppError;
use crate::ports::Origin;
use crate::queries::get_peer_dialogs::InputDialogPeer;
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct MarkDialogUnread {
    #[serde(default)]
    pub unread: bool,
    pub peer: InputDialogPeer,
}

impl App {
    /// Answers TL `Bool`.
    pub async fn mark_dialog_unread(
        &self,
        caller: &Caller,
        req: MarkDialogUnread,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let peer = self.dialog_peer(owner, &req.peer)?;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let dialog = tx
            .dialog(owner, peer)
            .await?
            .ok_or(DomainError::PeerHistoryEmpty)?;
        if dialog.unread_mark == req.unread {
            return Ok(true);
        }
        let event = DialogUnreadMark {
            peer_id: peer,
            unread: req.unread,
        };
        tx.append(
            owner,
            UserEvent::DialogUnreadMark(event),
            Origin::from(caller),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}
