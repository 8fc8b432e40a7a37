use serde::Serialize;
use serde_json::Value;

use super::{Peer, User};

/// `messages.affectedMessages`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messages.affectedMessages")]
pub struct AffectedMessages {
    pub pts: i32,
    pub pts_count: i32,
}

/// `messages.affectedHistory`: `offset > 0` means "call again for the next batch".
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messages.affectedHistory")]
pub struct AffectedHistory {
    pub pts: i32,
    pub pts_count: i32,
    pub offset: i32,
}

/// `outboxReadDate`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "_", rename = "outboxReadDate")]
pub struct OutboxReadDate {
    pub date: i32,
}

/// `peerBlocked`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "peerBlocked")]
pub struct PeerBlocked {
    pub peer_id: Peer,
    pub date: i32,
}

/// `contacts.blocked` or `contacts.blockedSlice`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Blocked {
    #[serde(rename = "contacts.blocked")]
    All {
        blocked: Vec<PeerBlocked>,
        chats: Vec<Value>,
        users: Vec<User>,
    },
    #[serde(rename = "contacts.blockedSlice")]
    Slice {
        count: i64,
        blocked: Vec<PeerBlocked>,
        chats: Vec<Value>,
        users: Vec<User>,
    },
}

/// `contacts.resolvedPeer`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "contacts.resolvedPeer")]
pub struct ResolvedPeer {
    pub peer: Peer,
    pub chats: Vec<Value>,
    pub users: Vec<User>,
}
