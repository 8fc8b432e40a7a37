//! `account.updateNotifySettings`: a chat's notification settings (mute, silent, previews) as an
//! event of the owner's log, so every device agrees, dialog filters with `exclude_muted` apply it and
//! a new message knows whether it may take the chat out of the archive.

use domain::events::{NotifySettings, PeerNotify, UserEvent};
use domain::{DomainError, UserId};
use serde::Deserialize;

use crate::error::AppError;
use crate::ports::Origin;
use crate::tl::InputPeer;
use crate::{App, Caller};

/// TL `InputNotifyPeer`. Only single chats have settings here; the peer classes (users, chats,
/// broadcasts) have no stored defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "_")]
pub enum InputNotifyPeer {
    #[serde(rename = "inputNotifyPeer")]
    Peer { peer: InputPeer },
    #[serde(rename = "inputNotifyUsers")]
    Users {},
    #[serde(rename = "inputNotifyChats")]
    Chats {},
    #[serde(rename = "inputNotifyBroadcasts")]
    Broadcasts {},
}

/// TL `inputPeerNotifySettings` (sounds and story settings are not kept).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct InputPeerNotifySettings {
    #[serde(default)]
    pub show_previews: Option<bool>,
    #[serde(default)]
    pub silent: Option<bool>,
    #[serde(default)]
    pub mute_until: Option<i32>,
}

impl From<InputPeerNotifySettings> for PeerNotify {
    fn from(s: InputPeerNotifySettings) -> Self {
        PeerNotify {
            show_previews: s.show_previews,
            silent: s.silent,
            mute_until: s.mute_until,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct UpdateNotifySettings {
    pub peer: InputNotifyPeer,
    pub settings: InputPeerNotifySettings,
}

impl App {
    /// The chat an `inputNotifyPeer` names (an existing account, or Saved Messages); the peer
    /// classes are `None`.
    pub(crate) async fn notify_peer(
        &self,
        owner: UserId,
        peer: &InputNotifyPeer,
    ) -> Result<Option<UserId>, AppError> {
        match peer {
            InputNotifyPeer::Peer { peer } => Ok(Some(self.existing_chat_peer(owner, peer).await?)),
            InputNotifyPeer::Users {}
            | InputNotifyPeer::Chats {}
            | InputNotifyPeer::Broadcasts {} => Ok(None),
        }
    }

    /// Answers TL `Bool`. The given settings replace the chat's settings; the same settings again
    /// append nothing.
    pub async fn update_notify_settings(
        &self,
        caller: &Caller,
        req: UpdateNotifySettings,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        // Defaults of whole peer classes are not kept: refused rather than silently dropped.
        let peer = self
            .notify_peer(owner, &req.peer)
            .await?
            .ok_or(DomainError::PeerIdInvalid)?;
        let settings = PeerNotify::from(req.settings);
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        if tx.notify_settings(owner, peer).await? == settings {
            return Ok(true);
        }
        let event = NotifySettings {
            peer_id: peer,
            settings,
        };
        tx.append(
            owner,
            UserEvent::NotifySettings(event),
            Origin::from(caller),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}
