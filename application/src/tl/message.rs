use domain::message::OwnerMessage;
use domain::message_entity::MessageEntity;
use serde::Serialize;
use serde_json::Value;

use super::{FileRefs, Peer, TlMessageMedia, User};

/// TL `message` (private text messages only).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "message")]
pub struct Message {
    pub out: bool,
    pub mentioned: bool,
    pub media_unread: bool,
    pub silent: bool,
    pub noforwards: bool,
    pub id: i32,
    pub from_id: Peer,
    pub peer_id: Peer,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fwd_from: Option<MessageFwdHeader>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<MessageReplyHeader>,
    pub date: i32,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media: Option<TlMessageMedia>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<MessageEntity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit_date: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grouped_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messageFwdHeader")]
pub struct MessageFwdHeader {
    pub from_id: Peer,
    pub date: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messageReplyHeader")]
pub struct MessageReplyHeader {
    pub quote: bool,
    pub reply_to_msg_id: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote_text: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quote_entities: Vec<MessageEntity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote_offset: Option<i32>,
}

impl Message {
    /// The owner's copy as TL; its media (if any) with file references issued by `refs`.
    pub fn render(m: &OwnerMessage, refs: FileRefs<'_>) -> Self {
        Message {
            out: m.out,
            mentioned: false,
            media_unread: m.media_unread,
            silent: m.silent,
            noforwards: m.noforwards,
            id: m.id.get(),
            from_id: Peer::user(m.from_id),
            peer_id: Peer::user(m.peer_id),
            fwd_from: m.fwd_from.as_ref().map(|f| MessageFwdHeader {
                from_id: Peer::user(f.from_id),
                date: f.date,
            }),
            reply_to: m.reply_to.as_ref().map(|r| MessageReplyHeader {
                quote: r.quote_text.is_some(),
                reply_to_msg_id: r.reply_to_msg_id.get(),
                quote_text: r.quote_text.clone(),
                quote_entities: r.quote_entities.clone(),
                quote_offset: r.quote_offset,
            }),
            date: m.date,
            message: m.text.clone(),
            media: m
                .media
                .as_ref()
                .map(|media| TlMessageMedia::of(media, refs)),
            entities: m.entities.clone(),
            edit_date: m.edit_date,
            grouped_id: m.grouped_id,
        }
    }
}

/// TL `messageEmpty`: what `messages.getMessages` answers for an id the caller does not have.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "messageEmpty")]
pub struct MessageEmpty {
    pub id: i32,
}

/// A `Message` in a list: a message or an empty slot.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MessageItem {
    Message(Message),
    Empty(MessageEmpty),
}

/// `messages.messages` or `messages.messagesSlice`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Messages {
    #[serde(rename = "messages.messages")]
    All {
        messages: Vec<MessageItem>,
        chats: Vec<Value>,
        users: Vec<User>,
    },
    #[serde(rename = "messages.messagesSlice")]
    Slice {
        count: i64,
        messages: Vec<MessageItem>,
        chats: Vec<Value>,
        users: Vec<User>,
    },
}

/// Users a message mentions: its sender, its chat, the author of what it forwards and the users
/// its mention entities name (the sender could reach each, with its own access hash).
pub fn users_of_message(m: &OwnerMessage) -> Vec<domain::UserId> {
    let mut ids = vec![m.from_id, m.peer_id];
    if let Some(f) = &m.fwd_from {
        ids.push(f.from_id);
    }
    let quoted = m.reply_to.iter().flat_map(|r| &r.quote_entities);
    ids.extend(
        m.entities
            .iter()
            .chain(quoted)
            .filter_map(MessageEntity::mentioned_user),
    );
    ids
}
