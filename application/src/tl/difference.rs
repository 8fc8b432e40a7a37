use serde::Serialize;
use serde_json::Value;

use super::{Message, Update, User};

/// `updates.state`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "_", rename = "updates.state")]
pub struct State {
    pub pts: i32,
    pub qts: i32,
    pub date: i32,
    pub seq: i32,
    pub unread_count: i32,
}

/// `updates.difference`, `updates.differenceSlice` or `updates.differenceEmpty`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Difference {
    #[serde(rename = "updates.differenceEmpty")]
    Empty { date: i32, seq: i32 },
    #[serde(rename = "updates.difference")]
    Full {
        new_messages: Vec<Message>,
        new_encrypted_messages: Vec<Value>,
        other_updates: Vec<Update>,
        chats: Vec<Value>,
        users: Vec<User>,
        state: State,
    },
    #[serde(rename = "updates.differenceSlice")]
    Slice {
        new_messages: Vec<Message>,
        new_encrypted_messages: Vec<Value>,
        other_updates: Vec<Update>,
        chats: Vec<Value>,
        users: Vec<User>,
        intermediate_state: State,
    },
}
