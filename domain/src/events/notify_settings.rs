use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;

/// A chat's notification settings as the owner set them (TL `inputPeerNotifySettings`); a field
/// left out is not set (the client's default applies).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct PeerNotify {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show_previews: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silent: Option<bool>,
    /// Unix time until which the chat is muted; muted while it is in the future.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mute_until: Option<i32>,
}

impl PeerNotify {
    /// Whether the chat is muted at `now` (unix seconds).
    pub fn muted_at(&self, now: i32) -> bool {
        self.mute_until.is_some_and(|until| until > now)
    }

    /// Nothing set: the same as having no settings at all.
    pub fn is_default(&self) -> bool {
        *self == PeerNotify::default()
    }
}

/// `account.updateNotifySettings` for the chat with `peer_id`: the settings after the change
/// replace the previous ones. TL: `updateNotifySettings`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotifySettings {
    pub peer_id: UserId,
    pub settings: PeerNotify,
}

impl EventKind for NotifySettings {
    const KIND: &'static str = "notify_settings";
    const VERSION: i16 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn muted_only_while_mute_until_is_ahead() {
        let s = PeerNotify {
            mute_until: Some(100),
            ..PeerNotify::default()
        };
        assert!(s.muted_at(99));
        assert!(!s.muted_at(100));
        assert!(!PeerNotify::default().muted_at(0));
        assert!(PeerNotify::default().is_default());
        assert_eq!(
            serde_json::to_value(s).unwrap(),
            serde_json::json!({"mute_until": 100})
        );
    }
}
