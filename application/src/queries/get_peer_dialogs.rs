//! `messages.getPeerDialogs`: the caller's dialogs with the named peers, and the account state.

use domain::{limits, DomainError, UserId};
use serde::Deserialize;

use crate::error::AppError;
use crate::tl::{InputPeer, PeerDialogs};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "_")]
pub enum InputDialogPeer {
    #[serde(rename = "inputDialogPeer")]
    Peer { peer: InputPeer },
    #[serde(rename = "inputDialogPeerFolder")]
    Folder { folder_id: i32 },
}

#[derive(Debug, Clone, Deserialize)]
pub struct GetPeerDialogs {
    pub peers: Vec<InputDialogPeer>,
}

impl App {
    pub async fn get_peer_dialogs(
        &self,
        caller: &Caller,
        req: GetPeerDialogs,
    ) -> Result<PeerDialogs, AppError> {
        let owner = caller.user_id;
        if req.peers.len() > limits::MAX_PEER_DIALOGS {
            return Err(DomainError::LimitInvalid.into());
        }
        let mut peers: Vec<UserId> = Vec::with_capacity(req.peers.len());
        for p in &req.peers {
            match p {
                InputDialogPeer::Peer { peer } => {
                    peers.push(self.chat_peer(owner, peer)?.user_id(owner))
                }
                InputDialogPeer::Folder { .. } => return Err(DomainError::PeerIdInvalid.into()),
            }
        }
        let rows = self.store.dialogs_of_peers(owner, &peers).await?;
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
}
