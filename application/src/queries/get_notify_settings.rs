//! `account.getNotifySettings`: a chat's notification settings as the owner set them.

use serde::Deserialize;

use crate::commands::notify_settings::InputNotifyPeer;
use crate::error::AppError;
use crate::tl::PeerNotifySettings;
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetNotifySettings {
    pub peer: InputNotifyPeer,
}

impl App {
    /// `peerNotifySettings` with the fields the owner set; nothing set (and the peer classes, which
    /// keep no settings here) is an empty `peerNotifySettings`: the client's defaults apply.
    pub async fn get_notify_settings(
        &self,
        caller: &Caller,
        req: GetNotifySettings,
    ) -> Result<PeerNotifySettings, AppError> {
        let owner = caller.user_id;
        Ok(match self.notify_peer(owner, &req.peer).await? {
            Some(peer) => PeerNotifySettings::from(&self.store.notify_settings(owner, peer).await?),
            None => PeerNotifySettings::default(),
        })
    }
}
