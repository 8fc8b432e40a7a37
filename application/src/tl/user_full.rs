//! `users.userFull` and its `userFull`.

use serde::Serialize;
use serde_json::Value;

use super::{PeerNotifySettings, PeerSettings, User};

/// TL `userFull`: what this server keeps about a chat with one user.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "userFull")]
pub struct UserFull {
    pub id: i64,
    pub settings: PeerSettings,
    pub notify_settings: PeerNotifySettings,
    pub common_chats_count: i32,
    /// The user's current profile photo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_photo: Option<super::TlPhoto>,
}

/// `users.userFull`: the `userFull` and the `user` it is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "users.userFull")]
pub struct UsersUserFull {
    pub full_user: UserFull,
    pub chats: Vec<Value>,
    pub users: Vec<User>,
}
