//! Peers a private-chat command can name.

use crate::ids::UserId;

/// A resolved private-chat peer as the caller named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatPeer {
    /// Saved Messages: the caller's chat with themselves.
    SelfChat,
    /// Another account.
    User(UserId),
}

impl ChatPeer {
    /// The user id of the other side, the caller itself for Saved Messages.
    pub fn user_id(self, caller: UserId) -> UserId {
        match self {
            ChatPeer::SelfChat => caller,
            ChatPeer::User(u) => u,
        }
    }

    pub fn from_user_id(caller: UserId, other: UserId) -> Self {
        if caller == other {
            ChatPeer::SelfChat
        } else {
            ChatPeer::User(other)
        }
    }
}
