//! `folders.editPeerFolders`: moving dialogs between the main list (0) and the archive (1). A new
//! message does not move a chat out of the archive (see docs/json-api.md).

use domain::events::{FolderPeer, FolderPeers, UserEvent};
use domain::{limits, DomainError, UserId};
use serde::Deserialize;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::Origin;
use crate::queries::get_dialogs::folder;
use crate::tl::{InputPeer, Updates};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct InputFolderPeer {
    pub peer: InputPeer,
    pub folder_id: i32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EditPeerFolders {
    pub folder_peers: Vec<InputFolderPeer>,
}

impl App {
    /// Answers `updates` with one `updateFolderPeers` (none when nothing moved).
    pub async fn edit_peer_folders(
        &self,
        caller: &Caller,
        req: EditPeerFolders,
    ) -> Result<Updates, AppError> {
        let owner = caller.user_id;
        if req.folder_peers.len() > limits::MAX_PEER_DIALOGS {
            return Err(DomainError::LimitInvalid.into());
        }
        let mut wanted: Vec<FolderPeer> = Vec::with_capacity(req.folder_peers.len());
        for fp in &req.folder_peers {
            let folder_id = folder(Some(fp.folder_id))?;
            let peer_id = self.chat_peer(owner, &fp.peer)?.user_id(owner);
            wanted.retain(|w| w.peer_id != peer_id);
            wanted.push(FolderPeer { peer_id, folder_id });
        }
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let mut moved = Vec::new();
        for w in wanted {
            let d = tx
                .dialog(owner, w.peer_id)
                .await?
                .ok_or(DomainError::PeerHistoryEmpty)?;
            if d.folder_id != w.folder_id {
                moved.push(w);
            }
        }
        let mut updates = Vec::new();
        let mut users: Vec<UserId> = Vec::new();
        if !moved.is_empty() {
            users = moved.iter().map(|m| m.peer_id).collect();
            let event = UserEvent::FolderPeers(FolderPeers {
                folder_peers: moved,
            });
            let pts = tx
                .append(owner, event.clone(), Origin::from(caller))
                .await?;
            tx.commit().await?;
            let stored = crate::ports::StoredEvent {
                user_id: owner,
                pts,
                pts_count: event.pts_count(),
                event,
                origin: Origin::from(caller),
                date: unix_now(),
            };
            updates.push(crate::tl::update_for_event(&stored, &self.keys));
        }
        let users = self.users_for(owner, users).await?;
        Ok(Updates::Updates {
            updates,
            users,
            chats: Vec::new(),
            date: unix_now(),
            seq: 0,
        })
    }
}
